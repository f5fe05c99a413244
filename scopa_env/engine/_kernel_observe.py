"""The compiled observation of the single-game kernel (numba, ``cache=True``): ``core.observe`` of one game for one
seat (the cards, scores, seats, the table's capture features and cirulla's blocks), written from
``scopa_env.engine.observation`` line by line on ``scopa_env.engine._kernel_jit``'s rules; ``tests/test_kernel.py``
checks that the two agree observation for observation.

numba keys this module's disk cache on its own file: ``scopa_env.engine.kernel.drop_stale_cache`` drops it when
``_kernel_jit.py`` (or ``_kernel_layout.py``, ``shuffle.py``) is newer.
"""

from __future__ import annotations

import numpy as np

from scopa_env.engine._kernel_jit import njit, popcount, rank_counts
from scopa_env.engine._kernel_layout import (
    CHOOSE,
    DEALER,
    HANDS,
    KNOCK,
    KNOCKP,
    LAST,
    PENDING,
    PHASE,
    PICKED,
    PILES,
    R_ACE_ALL,
    R_CIRULLA,
    R_D,
    R_FIFTEENS,
    R_MAXHAND,
    R_N,
    R_R,
    R_S,
    R_SETTE,
    R_SEVEN,
    R_SIDE,
    R_TARGET,
    REVEALED,
    SCOPE,
    SCORES,
    STOCK,
    TABLE,
)

FIFTEEN = 15
"""Cirulla's fifteens: the sum a capture by fifteen adds up to, with the card played."""


@njit(cache=True)
def _put_cards(out: np.ndarray, pos: int, cards: int, d: int) -> None:
    for c in range(d):
        out[pos + c] = np.float32((cards >> c) & 1)


@njit(cache=True)
def _sum_bits(counts: np.ndarray, r: int, top: int, skip_rank: int, skip: int) -> int:
    """Bit s set iff some of the cards (``counts``, less ``skip`` cards of ``skip_rank``) add up to s <= top."""
    keep = (1 << (top + 1)) - 1
    sums = 1
    for k in range(r):
        c = counts[k] - (skip if k == skip_rank else 0)
        for _ in range(c):
            sums = (sums | (sums << (k + 1))) & keep
    return sums


@njit(cache=True)
def _play_features(rc: np.ndarray, table: int, out: np.ndarray, pos: int) -> None:
    """``core._play_features`` (or ``_cirulla_play_features``) of one table into ``out[pos : pos + 1 + 4R]``."""
    r = rc[R_R]
    seven = rc[R_SEVEN]
    counts = np.zeros(16, dtype=np.int64)
    rank_counts(rc, table, counts)
    total = 0
    for k in range(r):
        total += counts[k] * (k + 1)
    sette_on = (table >> rc[R_SETTE]) & 1
    out[pos] = np.float32(total / 40.0)
    ace_rule = rc[R_ACE_ALL] != 0
    if not rc[R_FIFTEENS]:
        sums_without = _sum_bits(counts, r, r, seven, sette_on)
        sums = sums_without | (sums_without << (seven + 1)) if sette_on else sums_without
        for k in range(r):
            v = k + 1
            equal = counts[k] > 0
            by_sum = ((sums >> v) & 1) == 1 and not equal
            captures = equal or by_sum
            if k == seven:
                sette = sette_on == 1
            elif k > seven:
                sette = sette_on == 1 and by_sum and ((sums_without >> (v - (seven + 1))) & 1) == 1
            else:
                sette = False
            after = total - v if captures else total + v
            scopa = captures and after == 0
            if k == 0 and ace_rule and not equal and total > 0:
                captures, sette, after, scopa = True, sette or sette_on == 1, 0, False
            q = pos + 1 + 4 * k
            out[q] = np.float32(captures)
            out[q + 1] = np.float32(scopa)
            out[q + 2] = np.float32(sette)
            out[q + 3] = np.float32(after / 40.0)
        return
    sums_without = _sum_bits(counts, r, FIFTEEN, seven, sette_on)
    sums = sums_without | (sums_without << (seven + 1)) if sette_on else sums_without
    ace_all = ace_rule and counts[0] == 0 and total > 0
    for k in range(r):
        v = k + 1
        equal = counts[k] > 0
        by_sum = ((sums >> v) & 1) == 1 and not equal
        classic = equal or by_sum
        rest = min(max(FIFTEEN - v, 0), FIFTEEN)
        fifteen = ((sums >> rest) & 1) == 1 and v < FIFTEEN
        if k == 0 and ace_all:
            fifteen = False
        captures = classic or fifteen or (k == 0 and ace_all)
        scopa = (classic and total == v) or (fifteen and total + v == FIFTEEN)
        if k == 0 and ace_all:
            scopa = False
        sette = False
        if k == seven:
            sette = sette_on == 1
        elif k > seven:
            sette = sette_on == 1 and by_sum and ((sums_without >> (v - (seven + 1))) & 1) == 1
        if v <= FIFTEEN - (seven + 1):
            need = min(max(FIFTEEN - (seven + 1) - v, 0), FIFTEEN)
            sette = sette or (sette_on == 1 and fifteen and ((sums_without >> need) & 1) == 1)
        if k == 0 and ace_all:
            sette = sette or sette_on == 1
        if classic:
            after = total - v
        elif fifteen:
            after = total - (FIFTEEN - v)
        else:
            after = 0
        if not captures:
            after = total + v
        if k == 0 and ace_all:
            after = 0
        q = pos + 1 + 4 * k
        out[q] = np.float32(captures)
        out[q + 1] = np.float32(scopa)
        out[q + 2] = np.float32(sette)
        out[q + 3] = np.float32(after / 40.0)


@njit(cache=True)
def observe(rc: np.ndarray, st: np.ndarray, seat: int, out: np.ndarray) -> None:
    """``core.observe`` of one game for ``seat`` into ``out`` (observation_size float32)."""
    n, s, d, r = rc[R_N], rc[R_S], rc[R_D], rc[R_R]
    own = rc[R_SIDE + seat]
    hand = st[HANDS + seat]
    table = st[TABLE]
    picked = st[PICKED]
    pend = (1 << st[PENDING]) if st[PENDING] >= 0 else 0
    seen = hand | table | picked | pend
    _put_cards(out, 0, hand, d)
    _put_cards(out, d, table, d)
    _put_cards(out, 2 * d, pend, d)
    _put_cards(out, 3 * d, picked, d)
    for i in range(s):
        p = st[PILES + (own + i) % s]
        seen |= p
        _put_cards(out, (5 + i) * d, p, d)
    unseen = ((1 << d) - 1) & ~seen
    if rc[R_CIRULLA]:
        for i in range(n):
            unseen &= ~st[REVEALED + i]
    _put_cards(out, 4 * d, unseen, d)
    pos = (5 + s) * d
    for i in range(s):
        out[pos + i] = np.float32(st[SCORES + (own + i) % s] / rc[R_TARGET])
        out[pos + s + i] = np.float32(st[SCOPE + (own + i) % s] / 10.0)
    pos += 2 * s
    out[pos] = np.float32((d - st[STOCK]) / d)
    pos += 1
    for i in range(n):
        out[pos + i] = np.float32(popcount(st[HANDS + (seat + i) % n]) / rc[R_MAXHAND])
    pos += n
    for i in range(2 * n + s + 1):
        out[pos + i] = 0.0
    out[pos + (st[DEALER] - seat) % n] = 1.0
    pos += n
    out[pos + seat] = 1.0
    pos += n
    last = st[LAST]
    out[pos + (s if last < 0 else (last - own) % s)] = 1.0
    pos += s + 1
    out[pos] = np.float32(st[PHASE] == CHOOSE)
    pos += 1
    _play_features(rc, table, out, pos)
    pos += 1 + 4 * r
    if not rc[R_CIRULLA]:
        return
    for i in range(n):
        _put_cards(out, pos + i * d, st[REVEALED + (seat + i) % n], d)
    pos += n * d
    for i in range(s):
        out[pos + i] = np.float32(st[KNOCKP + (own + i) % s] / 10.0)
    pos += s
    out[pos] = np.float32(st[PHASE] == KNOCK)
    pos += 1
    counts = np.zeros(16, dtype=np.int64)
    rank_counts(rc, table, counts)
    bits = _sum_bits(counts, r, FIFTEEN, 0, 0)
    for k in range(r):
        v = k + 1
        f = ((bits >> min(max(FIFTEEN - v, 0), FIFTEEN)) & 1) == 1 and v < FIFTEEN
        if k == 0 and rc[R_ACE_ALL]:
            f = f and counts[0] > 0
        out[pos + k] = np.float32(f)
