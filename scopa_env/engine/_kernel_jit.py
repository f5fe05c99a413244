"""The compiled rules of the single-game kernel (numba, ``cache=True``): one game's deal, legal actions, step and
scoring. ``scopa_env.engine._kernel_observe`` compiles the observation on them, ``scopa_env.engine._kernel_calls`` the
envs' fused calls, the random player and the plies left, and ``agents.search.kernel_search`` the searches (candidates,
rollouts, max^n, the end game, the worlds): all of them call the public functions here (``step``, ``legal_bits``,
``complete_move``, ``popcount``, ...). ``scopa_env.engine.kernel`` is the face of the engine's part (it imports it on
first use, so that importing the rules core never loads numba).

One game is a (``STATE_SIZE``,) int64 array: card sets are bit masks (bit ``c`` for card ``c``), the seed is kept as
two 32-bit halves. The rules come in as ``rc`` (an int64 array of constants,
``scopa_env.engine.kernel._rules_constants``) and ``pc`` (the partitions of the capture rules, one row each: the cards
of each rank, then the number of cards, the rank bit mask and the counts packed 4 bits a rank). The offsets into the
state, a step's info and ``rc`` are named in ``scopa_env.engine._kernel_layout``. Everything here is written from the
batched core (``scopa_env.engine.core``) line by line; ``tests/test_kernel.py`` checks that the two agree move for move.

Constant arguments: numba compiles a callee once for each literal value a call passes (``True``, ``0``). So calls
here pass constants as plain values (``np.bool_(True)``, ``np.int64(0)``): ``complete_move`` compiles once, not four
times, and the kernel's first compile takes 24 s of CPU, not 35 (same code paths, same speed: see its commit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numba import njit as _njit

from scopa_env.engine._kernel_layout import (
    CHOOSE,
    CURRENT,
    DEAL_NO,
    DEALER,
    DECK,
    DONE,
    HAND_NO,
    HANDS,
    I_ACE_ALL,
    I_ACTED,
    I_CAPTURE,
    I_CARD,
    I_HAND_OVER,
    I_KNOCK,
    I_LEFT_SIDE,
    I_LEFTOVER,
    I_MATCH_OVER,
    I_MOVE_DONE,
    I_NEW_HAND,
    I_POINTS,
    I_SCOPA,
    I_SEAT,
    I_TTAKE,
    I_WINNER,
    INFO_SIZE,
    KNOCK,
    KNOCKP,
    LAST,
    PENDING,
    PHASE,
    PICKED,
    PILES,
    PLAY,
    R_ACE_ALL,
    R_CIRULLA,
    R_D,
    R_DEALS,
    R_FIF_BEGIN,
    R_FIF_LEN,
    R_GRANDE,
    R_KING,
    R_KNOCKS,
    R_LK_BEGIN,
    R_LK_LEN,
    R_MAJORITY,
    R_MATTA,
    R_N,
    R_NACTIONS,
    R_NAP,
    R_NAPOLI,
    R_NFIELDS,
    R_PRIM,
    R_R,
    R_RANKMASK,
    R_RUN,
    R_S,
    R_SETTE,
    R_SEVEN,
    R_SHARED,
    R_SIDE,
    R_SIMPLE_PRIM,
    R_SUM_BEGIN,
    R_SUM_LEN,
    R_TABLE,
    R_TARGET,
    R_TTAKE,
    R_VOID_ACES,
    R_VOID_KINGS,
    REVEALED,
    SCOPE,
    SCORES,
    SEED_HI,
    SEED_LO,
    SMAX,
    STATE_SIZE,
    STOCK,
    TABLE,
    TTAKE,
    WINNER,
)
from scopa_env.rules.shuffle import DEALER_STREAM, GOLDEN, HAND_STRIDE, mix64

_F = TypeVar("_F", bound=Callable[..., Any])


def njit(**options: object) -> Callable[[_F], _F]:
    """numba's ``njit`` with the kernel's options: cached on disk, and numpy's error model (no division-by-zero
    checks: the divisors are the rules' sizes, never 0)."""
    return _njit(**{"cache": True, "error_model": "numpy", **options})  # type: ignore[return-value,call-overload]


KNOCK_SUM_LIMIT = 9
NO_END = 10**6

_U32 = np.uint64(32)


@njit(cache=True)
def popcount(x: int) -> int:
    """Set bits of a non-negative int64 below 2**62."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=True)
def lowbit(x: int) -> int:
    """Index of the lowest set bit of x > 0."""
    return popcount((x & -x) - 1)


splitmix = njit(cache=True)(mix64)
"""``shuffle.mix64`` (SplitMix64) compiled: of one uint64."""


@njit(cache=True)
def game_seed(st: np.ndarray) -> np.uint64:
    """The game's match seed, from its two 32-bit halves."""
    return (np.uint64(st[SEED_HI]) << _U32) | np.uint64(st[SEED_LO])


@njit(cache=True)
def _deck_order(seed: np.uint64, hand_no: int, attempt: int, d: int, out: np.ndarray) -> None:
    """``shuffle.shuffled_decks`` of one game into ``out[:d]``."""
    key = splitmix(splitmix(seed ^ splitmix(np.uint64(hand_no) * HAND_STRIDE + np.uint64(attempt))))
    keys = np.empty(d, dtype=np.uint64)
    for c in range(d):
        keys[c] = splitmix(key + np.uint64(c) * GOLDEN)
    order = np.argsort(keys, kind="mergesort")
    for c in range(d):
        out[c] = order[c]


@njit(cache=True)
def rank_counts(rc: np.ndarray, cards: int, out: np.ndarray) -> None:
    """Cards of each rank in ``cards`` into ``out[:R]``."""
    r = rc[R_R]
    for k in range(r):
        out[k] = popcount(cards & rc[R_RANKMASK + k])


# ----------------------------------------------------------------------------------------------- dealing


@njit(cache=True)
def new_match(rc: np.ndarray, st: np.ndarray, seed_lo: int, seed_hi: int) -> None:
    """``core.reset`` of one game: the match of the seed ``seed_hi << 32 | seed_lo``."""
    for i in range(STATE_SIZE):
        st[i] = 0
    st[SEED_LO] = seed_lo
    st[SEED_HI] = seed_hi
    st[WINNER] = -1
    st[HAND_NO] = 0
    st[DEALER] = np.int64(splitmix(game_seed(st) ^ DEALER_STREAM) % np.uint64(rc[R_N]))
    start_hand(rc, st)


@njit(cache=True)
def start_hand(rc: np.ndarray, st: np.ndarray) -> None:
    """``core._start_hands`` of one game: shuffle (re-dealing void deals), lay the table, deal the first round."""
    n, s, d, r = rc[R_N], rc[R_S], rc[R_D], rc[R_R]
    k = rc[R_TABLE]
    seed = game_seed(st)
    attempt = 0
    deck = st[DECK : DECK + d]
    while True:
        _deck_order(seed, st[HAND_NO], np.int64(attempt), d, deck)
        void = False
        if k > 0 and (rc[R_VOID_KINGS] or rc[R_VOID_ACES]):
            kings = 0
            aces = 0
            for i in range(k):
                rk = deck[i] % r
                kings += rk == rc[R_KING]
                aces += rk == 0
            void = (rc[R_VOID_KINGS] != 0 and kings >= 3) or (rc[R_VOID_ACES] != 0 and aces >= 2)
        if not void:
            break
        attempt += 1
    for i in range(n):
        st[HANDS + i] = 0
        st[REVEALED + i] = 0
    for i in range(s):
        st[PILES + i] = 0
        st[SCOPE + i] = 0
        st[KNOCKP + i] = 0
    st[PICKED] = 0
    st[LAST] = -1
    st[PENDING] = -1
    st[PHASE] = PLAY
    table = 0
    for i in range(k):
        table |= 1 << deck[i]
    st[TABLE] = table
    st[STOCK] = k
    st[DEAL_NO] = 0
    st[TTAKE] = 0
    if rc[R_TTAKE] and k > 0:
        _take_initial_table(rc, st)
    _deal_round(rc, st)
    st[CURRENT] = (st[DEALER] + 1) % n
    if rc[R_KNOCKS]:
        _next_knocker(rc, st, -1)


@njit(cache=True)
def _take_initial_table(rc: np.ndarray, st: np.ndarray) -> None:
    r = rc[R_R]
    table = st[TABLE]
    total = 0
    t = table
    while t:
        c = lowbit(t)
        total += c % r + 1
        t &= t - 1
    matta = (table >> rc[R_MATTA]) & 1
    lo = total - 7 + 1 if matta else total
    hi = total - 7 + r if matta else total
    sc = 0
    if lo <= 15 <= hi:
        sc = 1
    if lo <= 30 <= hi:
        sc = 2
    if sc:
        side = rc[R_SIDE + st[DEALER]]
        st[PILES + side] |= table
        st[TABLE] = 0
        st[SCOPE + side] += sc
        st[LAST] = side
        st[TTAKE] = sc


@njit(cache=True)
def _deal_round(rc: np.ndarray, st: np.ndarray) -> None:
    n = rc[R_N]
    size = rc[R_DEALS + st[DEAL_NO]]
    pos = st[STOCK]
    for i in range(n):
        seat = (st[DEALER] + 1 + i) % n
        h = st[HANDS + seat]
        for j in range(size):
            h |= 1 << st[DECK + pos + i * size + j]
        st[HANDS + seat] = h
    st[STOCK] = pos + n * size


@njit(cache=True)
def knock_options(rc: np.ndarray, hand: int) -> tuple[bool, bool]:
    """Cirulla: (may knock by sum, may knock by three of a kind) for a hand."""
    if popcount(hand) != 3:
        return False, False
    r = rc[R_R]
    matta = rc[R_MATTA]
    total = 0
    counts = np.zeros(16, dtype=np.int64)
    h = hand
    while h:
        c = lowbit(h)
        h &= h - 1
        if c == matta:
            total += 1
        else:
            total += c % r + 1
            counts[c % r] += 1
    most = 0
    for k in range(r):
        most = max(most, counts[k])
    has_matta = (hand >> matta) & 1
    return total <= KNOCK_SUM_LIMIT, most >= 3 or (most >= 2 and has_matta == 1)


@njit(cache=True)
def _next_knocker(rc: np.ndarray, st: np.ndarray, after: int) -> None:
    n = rc[R_N]
    for j in range(after + 1, n):
        seat = (st[DEALER] + 1 + j) % n
        by_sum, tris = knock_options(rc, st[HANDS + seat])
        if by_sum or tris:
            st[CURRENT] = seat
            st[PHASE] = KNOCK
            return
    st[CURRENT] = (st[DEALER] + 1) % n
    st[PHASE] = PLAY


# ----------------------------------------------------------------------------------------------- captures


@njit(cache=True)
def _fits(pc: np.ndarray, p: int, counts: np.ndarray, r: int) -> bool:
    for k in range(r):
        if pc[p, k] > counts[k]:
            return False
    return True


@njit(cache=True)
def _covers(pc: np.ndarray, p: int, picked_counts: np.ndarray, r: int) -> bool:
    for k in range(r):
        if picked_counts[k] > pc[p, k]:
            return False
    return True


@njit(cache=True)
def _lookup(rc: np.ndarray, pc: np.ndarray, counts: np.ndarray, target: int) -> tuple[int, int, bool]:
    """``CaptureTable.lookup`` of one game: (partitions that fit, rank bit mask of their union, unique)."""
    r = rc[R_R]
    b = rc[R_LK_BEGIN + target]
    nparts = 0
    union = 0
    last = -1
    for p in range(b, b + rc[R_LK_LEN + target]):
        if _fits(pc, p, counts, r):
            nparts += 1
            union |= pc[p, r + 1]
            last = p
    unique = False
    if nparts == 1:
        used = 0
        for k in range(r):
            if (union >> k) & 1:
                used += counts[k]
        unique = used == pc[last, r]
    return nparts, union, unique


@njit(cache=True)
def _union_cards(rc: np.ndarray, union: int) -> int:
    out = 0
    for k in range(rc[R_R]):
        if (union >> k) & 1:
            out |= rc[R_RANKMASK + k]
    return out


@njit(cache=True)
def _sum_of_values(rc: np.ndarray, cards: int) -> int:
    r = rc[R_R]
    total = 0
    while cards:
        total += lowbit(cards) % r + 1
        cards &= cards - 1
    return total


@njit(cache=True)
def _choose_bits(rc: np.ndarray, pc: np.ndarray, st: np.ndarray) -> int:
    """``variant.ScopaHook._choose_mask`` of one game (not cirulla)."""
    r = rc[R_R]
    card = st[PENDING]
    table = st[TABLE]
    same = table & rc[R_RANKMASK + card % r]
    if same:
        return same
    picked = st[PICKED]
    avail = table & ~picked
    counts = np.zeros(16, dtype=np.int64)
    rank_counts(rc, avail, counts)
    target = card % r + 1 - _sum_of_values(rc, picked)
    _, union, _ = _lookup(rc, pc, counts, target)
    return avail & _union_cards(rc, union)


@njit(cache=True)
def _class_sets(rc: np.ndarray, table: int, picked: int, take: np.ndarray) -> tuple[int, int, int, bool]:
    """The concrete captures of one move class taking ``take[k]`` cards of each rank k and holding ``picked``:
    (how many, their union, the set when there is one, one of them is exactly ``picked``)."""
    r = rc[R_R]
    count = 1
    union = 0
    single = 0
    exact = True
    for k in range(r):
        present = table & rc[R_RANKMASK + k]
        req = picked & present
        np_ = popcount(present)
        nr = popcount(req)
        need = take[k]
        if nr > need or need > np_:
            return 0, 0, 0, False
        free = np_ - nr
        extra = need - nr
        # C(free, extra)
        ways = 1
        for i in range(extra):
            ways = ways * (free - i) // (i + 1)
        count *= ways
        if extra > 0:
            union |= present
        else:
            union |= req
        if extra == free:
            single |= present
        else:
            single |= req
        if need != nr:
            exact = False
    return count, union, single, exact


@njit(cache=True)
def cirulla_options(rc: np.ndarray, pc: np.ndarray, table: int, card: int, picked: int) -> tuple[int, int, int, bool]:
    """Cirulla: the legal captures of ``card`` on ``table`` that hold ``picked`` (``core._capture_options``):
    (how many, their union, the set when there is one, one of them is exactly ``picked``)."""
    r = rc[R_R]
    rank = card % r
    v = rank + 1
    counts = np.zeros(16, dtype=np.int64)
    pcounts = np.zeros(16, dtype=np.int64)
    rank_counts(rc, table, counts)
    rank_counts(rc, picked & table, pcounts)
    npicked = popcount(picked & table)
    ncards = popcount(table)
    equal = counts[rank] > 0
    ace_all = rc[R_ACE_ALL] != 0 and rank == 0 and not equal and ncards > 0
    equal_ok = equal and npicked == pcounts[rank] and pcounts[rank] <= 1
    take = np.zeros(16, dtype=np.int64)
    total = 0
    union = 0
    single = 0
    exact = False
    # the single class (equal rank, or an ace taking all), then the sums, then the fifteens
    for which in range(3):
        if which == 0:
            if not (equal_ok or ace_all):
                continue
            for k in range(r):
                take[k] = counts[k] if ace_all else (1 if k == rank else 0)
            b, n = 0, 1
        elif which == 1:
            if equal or ace_all:
                continue
            b, n = rc[R_SUM_BEGIN + v], rc[R_SUM_LEN + v]
        else:
            if ace_all:
                continue
            b, n = rc[R_FIF_BEGIN + v], rc[R_FIF_LEN + v]
        for p in range(b, b + n):
            if which > 0:
                if not (_fits(pc, p, counts, r) and _covers(pc, p, pcounts, r)):
                    continue
                for k in range(r):
                    take[k] = pc[p, k]
            c, u, s1, ex = _class_sets(rc, table, picked, take)
            total += c
            union |= u
            if c == 1:
                single = s1
            exact = exact or (ex and c > 0)
    return total, union, single, exact


@njit(cache=True)
def legal_bits(rc: np.ndarray, pc: np.ndarray, st: np.ndarray) -> int:
    """The legal actions as a bit mask (bit ``a`` for action ``a``; 0 once the match is over)."""
    phase = st[PHASE]
    d = rc[R_D]
    if phase == PLAY:
        return st[HANDS + st[CURRENT]]
    if phase == CHOOSE:
        if not rc[R_CIRULLA]:
            return _choose_bits(rc, pc, st)
        picked = st[PICKED]
        cnt, union, _, exact = cirulla_options(rc, pc, st[TABLE], st[PENDING], picked)
        out = union & ~picked
        if exact and cnt >= 2:
            out |= 1 << d
        return out
    if phase == KNOCK:
        by_sum, tris = knock_options(rc, st[HANDS + st[CURRENT]])
        return (1 << d) | (np.int64(by_sum) << (d + 1)) | (np.int64(tris) << (d + 2))
    return 0


@njit(cache=True)
def legal_mask(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, out: np.ndarray) -> None:
    """The legal actions as 0 / 1 into ``out[:num_actions]`` (bool or int8)."""
    bits = legal_bits(rc, pc, st)
    for a in range(rc[R_NACTIONS]):
        out[a] = (bits >> a) & 1


# ----------------------------------------------------------------------------------------------- scoring


@njit(cache=True)
def _award(rc: np.ndarray, values: np.ndarray, s: int, majority_of: int, out: np.ndarray, field: int, f: int) -> None:
    top = values[0]
    for i in range(1, s):
        top = max(top, values[i])
    n_top = 0
    for i in range(s):
        n_top += values[i] == top
    for i in range(s):
        if rc[R_SHARED]:
            win = values[i] == top and top > 0
        elif majority_of >= 0 and rc[R_MAJORITY]:
            win = 2 * values[i] > majority_of
        else:
            win = values[i] == top and n_top == 1 and top > 0
        out[I_POINTS + i * f + field] = win


@njit(cache=True)
def score_hand(rc: np.ndarray, st: np.ndarray, info: np.ndarray) -> None:
    """``scoring.score_hands`` of one hand into ``info[I_POINTS:]`` (S rows of F fields)."""
    s, d, r = rc[R_S], rc[R_D], rc[R_R]
    f = rc[R_NFIELDS]
    coins = (1 << r) - 1
    carte = np.zeros(SMAX, dtype=np.int64)
    denari = np.zeros(SMAX, dtype=np.int64)
    sette = np.zeros(SMAX, dtype=np.int64)
    prim = np.zeros(SMAX, dtype=np.int64)
    for i in range(s):
        p = st[PILES + i]
        carte[i] = popcount(p)
        denari[i] = popcount(p & coins)
        sette[i] = (p >> rc[R_SETTE]) & 1
        if rc[R_SIMPLE_PRIM]:
            prim[i] = popcount(p & rc[R_RANKMASK + rc[R_SEVEN]])
        else:
            total = 0
            ok = True
            for suit in range(4):
                m = (p >> (suit * r)) & coins
                best = 0
                for k in range(r):
                    if (m >> k) & 1:
                        best = max(best, rc[R_PRIM + k])
                if best == 0:
                    ok = False
                total += best
            prim[i] = total if ok else 0
    _award(rc, carte, s, d, info, np.int64(0), f)
    _award(rc, denari, s, r, info, np.int64(1), f)
    _award(rc, sette, s, np.int64(-1), info, np.int64(2), f)
    _award(rc, prim, s, np.int64(-1), info, np.int64(3), f)
    for i in range(s):
        info[I_POINTS + i * f + 4] = st[SCOPE + i]
        if rc[R_CIRULLA]:
            p = st[PILES + i]
            nap = 0
            gra = 0
            if rc[R_NAPOLI]:
                base = True
                for j in range(3):
                    base = base and ((p >> rc[R_NAP + j]) & 1) == 1
                if base:
                    run = 0
                    for j in range(7):
                        if (p >> rc[R_RUN + j]) & 1:
                            run += 1
                        else:
                            break
                    nap = 3 + run
                grande = True
                for j in range(3):
                    grande = grande and ((p >> rc[R_GRANDE + j]) & 1) == 1
                gra = 5 if grande else 0
            info[I_POINTS + i * f + 5] = nap
            info[I_POINTS + i * f + 6] = gra
            info[I_POINTS + i * f + 7] = st[KNOCKP + i]
        total = 0
        for j in range(f - 1):
            total += info[I_POINTS + i * f + j]
        info[I_POINTS + i * f + f - 1] = total


# ----------------------------------------------------------------------------------------------- step


@njit(cache=True)
def clear_info(info: np.ndarray) -> None:
    for i in range(INFO_SIZE):
        info[i] = 0
    info[I_CARD] = -1
    info[I_LEFT_SIDE] = -1
    info[I_WINNER] = -1


@njit(cache=True)
def complete_move(
    rc: np.ndarray,
    st: np.ndarray,
    seat: int,
    card: int,
    capture: int,
    captures: bool | np.bool_,
    ace_all: bool | np.bool_,
    info: np.ndarray,
    next_hand: bool | np.bool_ = True,
) -> None:
    """The end of a move (``core.step`` once a move is done): the capture or the lay, scopa, next seat, a new
    deal or the end of the hand. The card has already left the hand. ``next_hand`` False: a hand that ends is
    scored and left in the DONE phase (a search never looks past it)."""
    n, d = rc[R_N], rc[R_D]
    side = rc[R_SIDE + seat]
    table = st[TABLE]
    if captures:
        table &= ~capture
        st[PILES + side] |= capture | (1 << card)
        st[LAST] = side
    else:
        table |= 1 << card
    st[TABLE] = table
    hands_empty = True
    for i in range(n):
        if st[HANDS + i]:
            hands_empty = False
    last_play = hands_empty and st[STOCK] >= d
    scopa = captures and table == 0 and not last_play and not ace_all
    if scopa:
        st[SCOPE + side] += 1
    st[PHASE] = PLAY
    st[PENDING] = -1
    st[PICKED] = 0
    st[CURRENT] = (seat + 1) % n
    info[I_MOVE_DONE] = 1
    info[I_CARD] = card
    info[I_CAPTURE] = capture if captures else 0
    info[I_SCOPA] = scopa
    info[I_ACE_ALL] = ace_all
    if hands_empty and not last_play:
        st[DEAL_NO] += 1
        _deal_round(rc, st)
        if rc[R_KNOCKS]:
            _next_knocker(rc, st, -1)
    if last_play:
        end_hand(rc, st, info, next_hand)


@njit(cache=True)
def end_hand(rc: np.ndarray, st: np.ndarray, info: np.ndarray, next_hand: bool | np.bool_ = True) -> None:
    """``core._end_hands`` of one game: leftovers, scoring, the match check and the next hand (``next_hand``
    False: scored only, and left in the DONE phase)."""
    s, n = rc[R_S], rc[R_N]
    f = rc[R_NFIELDS]
    last = st[LAST]
    left = st[TABLE]
    info[I_LEFTOVER] = left
    if last >= 0 and left:
        info[I_LEFT_SIDE] = last
        st[PILES + last] |= left
    st[TABLE] = 0
    score_hand(rc, st, info)
    info[I_HAND_OVER] = 1
    if not next_hand:
        st[PHASE] = DONE
        return
    top = -(1 << 30)
    for i in range(s):
        st[SCORES + i] += info[I_POINTS + i * f + f - 1]
        top = max(top, st[SCORES + i])
    n_top = 0
    win = -1
    for i in range(s):
        if st[SCORES + i] == top:
            n_top += 1
            if win < 0:
                win = i
    if not (top >= rc[R_TARGET] and n_top == 1):
        win = -1
    info[I_WINNER] = win
    st[WINNER] = win
    if win >= 0:
        info[I_MATCH_OVER] = 1
        st[PHASE] = DONE
    else:
        st[HAND_NO] += 1
        st[DEALER] = (st[DEALER] + 1) % n
        start_hand(rc, st)
        info[I_NEW_HAND] = 1
        if rc[R_TTAKE]:
            info[I_TTAKE] = st[TTAKE]


@njit(cache=True)
def step(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, action: int, info: np.ndarray) -> int:
    """``core.step`` of one game, in place: 1 when the action was taken, 0 when the match was already over (the
    action is ignored), -1 when it is illegal (nothing changes). ``info`` gets what the step did."""
    clear_info(info)
    phase = st[PHASE]
    seat = st[CURRENT]
    info[I_SEAT] = seat
    if phase == DONE:
        return 0
    d, r = rc[R_D], rc[R_R]
    if action < 0 or action >= rc[R_NACTIONS] or not (legal_bits(rc, pc, st) >> action) & 1:
        return -1
    info[I_ACTED] = 1
    yes, no, none = np.bool_(True), np.bool_(False), np.int64(0)  # constants as plain values (module docstring)
    if phase == KNOCK:
        kind = action - d
        side = rc[R_SIDE + seat]
        st[KNOCKP + side] += 0 if kind == 0 else (3 if kind == 1 else 10)
        if kind > 0:
            st[REVEALED + seat] = st[HANDS + seat]
        info[I_KNOCK] = kind
        _next_knocker(rc, st, (seat - st[DEALER] - 1) % rc[R_N])
        return 1
    table = st[TABLE]
    if rc[R_CIRULLA]:
        if phase == PLAY:
            card = action
            bit = 1 << card
            st[HANDS + seat] &= ~bit
            st[REVEALED + seat] &= ~bit
            st[PENDING] = card
            cnt, _, single, _ = cirulla_options(rc, pc, table, card, none)
            ace_all = rc[R_ACE_ALL] != 0 and card % r == 0 and (table & rc[R_RANKMASK + 0]) == 0 and table != 0
            if cnt == 1:
                complete_move(rc, st, seat, card, single, yes, ace_all, info, yes)
            elif cnt == 0:
                complete_move(rc, st, seat, card, none, no, no, info, yes)
            else:
                st[PHASE] = CHOOSE
            return 1
        card = st[PENDING]
        if action == d:  # stop: exactly the picked cards
            complete_move(rc, st, seat, card, st[PICKED], yes, no, info, yes)
            return 1
        st[PICKED] |= 1 << action
        cnt, _, single, _ = cirulla_options(rc, pc, table, card, st[PICKED])
        if cnt == 1:
            complete_move(rc, st, seat, card, single, yes, no, info, yes)
        return 1
    counts = np.zeros(16, dtype=np.int64)
    if phase == PLAY:
        card = action
        st[HANDS + seat] &= ~(1 << card)
        st[PENDING] = card
        rank = card % r
        rank_counts(rc, table, counts)
        if counts[rank] > 0:
            if counts[rank] == 1:
                complete_move(rc, st, seat, card, table & rc[R_RANKMASK + rank], yes, no, info, yes)
            else:
                st[PHASE] = CHOOSE
            return 1
        if rc[R_ACE_ALL] and rank == 0 and table != 0:
            complete_move(rc, st, seat, card, table, yes, yes, info, yes)
            return 1
        nparts, union, unique = _lookup(rc, pc, counts, rank + 1)
        if nparts == 0:
            complete_move(rc, st, seat, card, none, no, no, info, yes)
        elif unique:
            complete_move(rc, st, seat, card, _union_cards(rc, union) & table, yes, no, info, yes)
        else:
            st[PHASE] = CHOOSE
        return 1
    card = st[PENDING]
    picked = st[PICKED] | (1 << action)
    st[PICKED] = picked
    rank_counts(rc, table & ~picked, counts)
    target = card % r + 1 - _sum_of_values(rc, picked)
    _, union, unique = _lookup(rc, pc, counts, target)
    if target == 0 or unique:
        complete_move(rc, st, seat, card, picked | (_union_cards(rc, union) & table), yes, no, info, yes)
    return 1


@njit(cache=True)
def play(
    rc: np.ndarray, pc: np.ndarray, st: np.ndarray, action: int, info: np.ndarray
) -> tuple[int, int, int, int, int, int, int]:
    """``step``, returning (its code, the seat that acted, move done, card, capture, scopa, hand over) in one go (the
    envs' hot path)."""
    code = step(rc, pc, st, action, info)
    return code, info[I_SEAT], info[I_MOVE_DONE], info[I_CARD], info[I_CAPTURE], info[I_SCOPA], info[I_HAND_OVER]
