"""The capture rules in one place: one batched enumerator of the legal moves, on rank counts (numpy only).

A move plays one card and either lays it or captures (RULES.md sections 3 and 6):

- ``EQUAL``: the table holds cards of the played card's rank; the move takes one of them (and no sum may be taken);
- ``ACE_ALL``: under ``rules.ace_takes_all``, an ace with no ace on a non-empty table takes the whole table;
- ``SUM``: otherwise, any set of two or more table cards whose values add up to the card's value;
- ``FIFTEEN``: under ``rules.fifteens`` (cirulla), any set of one or more table cards whose values add up to 15 with
  the played card's value, beside the equal-rank captures or sums (an ace that takes all has no other move);
- ``LAY``: nothing can be taken; the card stays on the table.

Which moves exist depends only on the *rank counts* of the table, so ``enumerate_moves`` lists move *classes*:
a card and, for a sum or a fifteen, a rank multiset (a partition of the card's value, or of 15 minus it: an index
into ``MoveTables.p_count``, fifteens after the sums).
One class stands for every choice of suits within its ranks; ``expand_captures`` lists those concrete captured-card
sets. The core's ``legal_moves`` / ``enumerate_captures`` (exact card sets) and
``agents.baselines.features.generate_moves`` (one candidate per class, best suits by weight) are both built on
``enumerate_moves``; the core's ``move_classes`` is its state-level face. The reference engine
(``scopa_env.oracle.reference``) enumerates captures on its own: it is the oracle these are tested against
(``tests/test_moves.py``).

In the CHOOSE phase (some table cards already picked), a class is listed only if it can still include the picked
cards (``picked_counts``), and ``expand_captures`` lists only the sets that contain them.

This module imports only ``rules`` and ``captures`` (it knows nothing of ``State``): ``scopa_env.engine.core`` builds on
it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from itertools import combinations

import numpy as np
import numpy.typing as npt

from scopa_env.rules import Rules
from scopa_env.rules.captures import partitions

__all__ = [
    "FIFTEEN_TOTAL",
    "MAX_PER_RANK",
    "MoveClasses",
    "MoveKind",
    "MoveTables",
    "enumerate_moves",
    "expand_captures",
    "move_tables",
]

MAX_PER_RANK = 4
"""Cards of one rank in a deck (one per suit)."""
_NIBBLE = 4
"""Bits per rank in the packed rank counts (a count 0..4 plus a guard bit, see ``MoveTables.guard``)."""


class MoveKind(IntEnum):
    """Kinds of move class (int8 codes in ``MoveClasses.kind``)."""

    LAY = 0
    EQUAL = 1
    SUM = 2
    ACE_ALL = 3
    FIFTEEN = 4


# plain ints: enum attribute look-ups are slow
_LAY, _EQUAL, _SUM, _ACE_ALL, _FIFTEEN = (int(k) for k in MoveKind)
_Ints = npt.NDArray[np.intp]
_Bools = npt.NDArray[np.bool_]
_Pairs = tuple[_Ints, _Ints, _Ints, _Ints, _Ints, _Bools, _Bools]
"""``_pairs``' result: ``(pr, pc, rank, value, table_cards, equal, ace_all)``."""
_Classes = tuple[_Ints, _Ints, npt.NDArray[np.int8], _Bools]
"""Move classes sorted by pair: ``(pair, part, kind, ace)``, the class's pair (index into ``_Pairs``' arrays), its
partition (-1: none), its ``MoveKind``, it is an ace taking all."""
FIFTEEN_TOTAL = 15
"""A fifteen (cirulla): the played card and the cards it takes add up to this."""


class MoveTables:
    """Per-rules constants: card ranks and values, and every capture by sum as a rank multiset (a partition).

    Partitions ``p`` of every value ``t`` in 2..R into parts below ``t`` with at most ``MAX_PER_RANK`` of each, in
    ``captures.partitions`` order within a value, values ascending: ``p_count[p]`` (cards of each rank),
    ``p_target[p]`` (``t``), ``p_cards[p]`` (cards taken). ``fit_parts[fit_start[t, m] : + fit_len[t, m]]`` are the
    partitions of ``t`` that use only the ranks of bit mask ``m`` (ranks below ``t`` present on a table).

    Under ``rules.fifteens`` the fifteens follow the sums (indices ``num_sum_parts`` on): every partition of
    ``15 - v`` into card values (one part or more) for each card value ``v``, with ``p_target`` = 15 - v;
    ``f_parts[f_start[v, m] : + f_len[v, m]]`` are the fifteens of a card of value ``v`` that use only the ranks of
    bit mask ``m`` (any rank present on a table).
    """

    def __init__(self, rules: Rules) -> None:
        deck = rules.deck
        r = deck.num_ranks
        if r * _NIBBLE > 62:
            raise ValueError(f"move tables: at most 15 ranks fit the packed rank counts, got {r}")
        self.num_ranks = r
        self.num_cards = rules.num_cards
        self.ace_takes_all = rules.ace_takes_all
        self.rank = deck.rank.astype(np.intp)
        self.value = deck.value.astype(np.intp)
        counts: list[list[int]] = []
        targets: list[int] = []

        def add_partitions(t: int, largest: int) -> None:
            """Each partition of ``t`` into values up to ``largest`` that a deck holds (rank counts, target t)."""
            for parts in partitions(t, largest):
                c = [0] * r
                for p in parts:
                    c[p - 1] += 1
                if max(c) <= MAX_PER_RANK:
                    counts.append(c)
                    targets.append(t)

        for t in range(2, r + 1):
            add_partitions(t, t - 1)
        self.num_sum_parts = len(counts)
        self.fifteens = rules.fifteens
        if rules.fifteens:  # every multiset of table cards that makes 15 with a card of value v, v ascending
            for v in range(1, r + 1):
                t = FIFTEEN_TOTAL - v
                if t > 0:
                    add_partitions(t, min(t, r))
        self.p_count = np.array(counts, dtype=np.intp)  # (P, R)
        self.p_target = np.array(targets, dtype=np.intp)  # (P,)
        self.p_cards = self.p_count.sum(axis=1)  # (P,)
        self.rank_bits = np.int64(1) << np.arange(r, dtype=np.int64)  # (R,)
        self.p_bits = (self.p_count > 0).astype(np.int64) @ self.rank_bits  # (P,) ranks a partition uses
        # Rank counts packed 4 bits a rank; a guard bit (8) above each count finds "count >= needed" for every
        # rank with one subtraction: ((have | guard) - need) & guard == guard.
        self.pack = np.int64(1) << (_NIBBLE * np.arange(r, dtype=np.int64))  # (R,)
        self.guard = np.int64((8 * self.pack).sum())
        self.p_packed = self.p_count.astype(np.int64) @ self.pack  # (P,)
        self.pack_f = self.pack.astype(np.float64)  # exact: packed counts stay below 2**53
        self.rank_bits_f = self.rank_bits.astype(np.float32)
        self.ones = np.ones(r, dtype=np.float32)
        # Sum partitions are sorted by target: where each target's segment starts, and its length (by value 0..R).
        sum_target = self.p_target[: self.num_sum_parts]
        self.sum_targets = np.unique(sum_target)
        self.seg_start = np.searchsorted(sum_target, self.sum_targets)
        self.seg_begin = np.searchsorted(sum_target, np.arange(r + 1))
        self.seg_len = np.searchsorted(sum_target, np.arange(r + 1), side="right") - self.seg_begin
        # For each target t and set of ranks below t present on a table (bit mask): the partitions of t that use
        # only those ranks, as a flat list with offsets (CSR), so the enumerator expands only these.
        masks = np.arange(1 << (r - 1), dtype=np.int64)
        segs = ((t, np.arange(self.seg_begin[t], self.seg_begin[t] + self.seg_len[t])) for t in range(2, r + 1))
        self.fit_start, self.fit_len, self.fit_parts = _fits(self.p_bits, segs, masks, r + 1)
        if rules.fifteens:
            self._fifteen_fits(r)
        self.below = (np.int64(1) << np.maximum(np.arange(r + 1) - 1, 0)) - 1  # ranks with value < t, by t
        self.opt_start, self.opt_len, self.opt_masks = _suit_choices()

    def _fifteen_fits(self, r: int) -> None:
        """``f_start``, ``f_len``, ``f_parts``: the fifteens of each card value by the ranks present (CSR)."""
        fif = np.arange(self.num_sum_parts, self.p_target.size)
        segs = ((v, fif[self.p_target[fif] == FIFTEEN_TOTAL - v]) for v in range(1, r + 1))
        masks = np.arange(1 << r, dtype=np.int64)  # values without a fifteen keep empty rows
        self.f_start, self.f_len, self.f_parts = _fits(self.p_bits, ((v, s) for v, s in segs if s.size), masks, r + 1)


def _fits(
    p_bits: npt.NDArray[np.int64],
    segs: Iterable[tuple[int, npt.NDArray[np.intp]]],
    masks: npt.NDArray[np.int64],
    rows: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """For each ``(row, seg)`` of ``segs`` (partitions, by index) and each set of ranks present on a table (a bit
    mask of ``masks``): the partitions of ``seg`` that use only those ranks, as a flat list with offsets (CSR):
    ``start`` and ``len`` (rows, masks) into ``parts``; rows not in ``segs`` stay empty (0, 0)."""
    start = np.zeros((rows, masks.size), dtype=np.intp)
    length = np.zeros((rows, masks.size), dtype=np.intp)
    flat: list[npt.NDArray[np.intp]] = []
    at = 0
    for row, seg in segs:
        ok = (p_bits[seg][:, None] & ~masks[None, :]) == 0  # (partitions of seg, masks)
        length[row] = ok.sum(axis=0)
        start[row] = at + np.concatenate([[0], np.cumsum(length[row])[:-1]])
        _, pi = np.nonzero(ok.T)
        flat.append(seg[pi])
        at += pi.size
    parts = np.concatenate(flat).astype(np.intp) if flat else np.zeros(0, dtype=np.intp)
    return start, length, parts


def _suit_choices() -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int64]]:
    """The suit choices within one rank, as CSR over ``key = (present * 5 + k) * 16 + required``: every subset of
    the suit bit mask ``present`` with ``k`` suits that contains the suit bit mask ``required``."""
    num_keys = 16 * (MAX_PER_RANK + 1) * 16
    start = np.zeros(num_keys, dtype=np.intp)
    length = np.zeros(num_keys, dtype=np.intp)
    flat: list[int] = []
    for present in range(16):
        suits = [s for s in range(4) if present >> s & 1]
        for k in range(MAX_PER_RANK + 1):
            for required in range(16):
                key = (present * (MAX_PER_RANK + 1) + k) * 16 + required
                start[key] = len(flat)
                for chosen in combinations(suits, k):
                    mask = sum(1 << s for s in chosen)
                    if mask & required == required:
                        flat.append(mask)
                length[key] = len(flat) - start[key]
    return start, length, np.array(flat, dtype=np.int64)


@lru_cache(maxsize=32)
def move_tables(rules: Rules) -> MoveTables:
    """The ``MoveTables`` of a variant (built once per process)."""
    return MoveTables(rules)


@dataclass
class MoveClasses:
    """Move classes of n positions, flattened: the classes of position i are ``starts[i]:starts[i+1]``, ordered
    by card, then partition index. One class per (card, kind, rank multiset); see the module doc."""

    row: npt.NDArray[np.intp]
    """(m,) the position (row of the batch) of each class."""
    card: npt.NDArray[np.int64]
    """(m,) card played."""
    kind: npt.NDArray[np.int8]
    """(m,) ``MoveKind``."""
    part: npt.NDArray[np.intp]
    """(m,) the partition taken (index into ``MoveTables.p_count``), -1 unless the kind is SUM or FIFTEEN."""
    num_taken: npt.NDArray[np.intp]
    """(m,) table cards captured (0 for a lay)."""
    scopa: npt.NDArray[np.bool_]
    """(m,) the move sweeps the table and scores a scopa (never on the hand's last play nor by an ace sweep)."""
    starts: npt.NDArray[np.intp]
    """(n + 1,) segment offsets."""
    last_play: npt.NDArray[np.bool_]
    """(n,) per position: the move to make is the hand's last play (as passed to ``enumerate_moves``)."""
    counts: npt.NDArray[np.integer]
    """(n, R) per position: table cards of each rank (as passed to ``enumerate_moves``)."""

    def __len__(self) -> int:
        return int(self.row.size)


def enumerate_moves(
    rules: Rules,
    playable: npt.NDArray[np.bool_],
    counts: npt.NDArray[np.integer],
    picked_counts: npt.NDArray[np.integer] | None = None,
    last_play: npt.NDArray[np.bool_] | None = None,
) -> MoveClasses:
    """Every legal move class of n positions, each given by the cards that may be played and the table's ranks.

    ``playable``: (n, D) bool, the cards that may be played (the hand; in the CHOOSE phase the pending card).
    ``counts``: (n, R) table cards of each rank. ``picked_counts``: (n, R) cards of each rank already picked in the
    CHOOSE phase (None: no picks), which a class must be able to include. ``last_play``: (n,) bool, the move is the
    hand's last play (never a scopa; None: no row is). A card with no capture is one LAY class.

    Under ``rules.fifteens`` a card's classes are its equal-rank capture (or else its sums), then its fifteens, in
    partition order; an ace that takes all has that class only.
    """
    tb = move_tables(rules)
    if tb.fifteens:
        return _enumerate_with_fifteens(tb, playable, np.asarray(counts), picked_counts, last_play)
    n = playable.shape[0]
    counts = np.asarray(counts)
    pairs = _pairs(tb, playable, counts)
    pr, _, _, value, _, equal, ace_all = pairs
    sums = np.flatnonzero(~equal & ~ace_all)
    # The partitions of each summing card's value that use only ranks on the table; keep those that fit.
    present = ((counts > 0) @ tb.rank_bits_f).astype(np.int64)  # (n,) ranks on each table
    t_sum = value[sums]
    fit = present[pr[sums]] & tb.below[t_sum]
    lens = tb.fit_len[t_sum, fit]
    pp_pair = np.repeat(sums, lens)
    offset = np.arange(pp_pair.size) - np.repeat(np.cumsum(lens) - lens, lens)
    pp_part = tb.fit_parts[np.repeat(tb.fit_start[t_sum, fit], lens) + offset]
    packed = (counts @ tb.pack_f).astype(np.int64)  # (n,)
    need = tb.p_packed[pp_part]
    pp_row = pr[pp_pair]
    fits = ((packed[pp_row] | tb.guard) - need) & tb.guard == tb.guard  # enough cards of every rank
    if picked_counts is not None:  # and every picked card is of a rank the partition takes, as many at most
        picked_packed = (np.asarray(picked_counts) @ tb.pack_f).astype(np.int64)
        fits &= ((need | tb.guard) - picked_packed[pp_row]) & tb.guard == tb.guard
    pp_pair, pp_part = pp_pair[fits], pp_part[fits]
    has_sum = np.zeros(pr.size, dtype=np.bool_)
    has_sum[pp_pair] = True
    single = np.flatnonzero(~has_sum)
    pair = np.concatenate([single, pp_pair])
    part = np.concatenate([np.full(single.size, -1, dtype=np.intp), pp_part])
    # By pair (row, then card), then partition: a pair's partitions are listed in ascending order already.
    order = np.argsort(pair, kind="stable")
    pair, part = pair[order], part[order]
    eq, ace = equal[pair], ace_all[pair]
    kind = np.where(eq, _EQUAL, np.where(ace, _ACE_ALL, np.where(part >= 0, _SUM, _LAY))).astype(np.int8)
    return _classes(tb, n, pairs, (pair, part, kind, ace), last_play, counts)


def _pairs(tb: MoveTables, playable: npt.NDArray[np.bool_], counts: npt.NDArray[np.integer]) -> _Pairs:
    """The pairs (position, card) that may be played, sorted by row then card: ``(pr, pc, rank, value,
    table_cards, equal, ace_all)``, each pair's row, card, its rank and value, the (n,) cards on each table, the
    pair has an equal-rank capture, it is an ace taking all."""
    d = playable.shape[1]
    flat = np.flatnonzero(playable)  # faster than a 2-D nonzero
    pr = flat // d
    pc = flat - pr * d
    rank, value = tb.rank[pc], tb.value[pc]
    # Float matmuls are exact here (small integers) and faster than integer reductions over short rows.
    table_cards = (counts @ tb.ones).astype(np.intp)
    equal = counts[pr, rank] > 0
    if tb.ace_takes_all:
        ace_all = (rank == 0) & ~equal & (table_cards[pr] > 0)
    else:
        ace_all = np.zeros(pr.size, dtype=np.bool_)
    return pr, pc, rank, value, table_cards, equal, ace_all


def _classes(
    tb: MoveTables, n: int, pairs: _Pairs, classes: _Classes, last_play: _Bools | None, counts: npt.NDArray[np.integer]
) -> MoveClasses:
    """The ``MoveClasses`` of n positions (``pairs``: ``_pairs``' result) from their classes, sorted by pair: the
    cards each takes, its scopa (none on ``last_play``), the segment offsets."""
    pr, pc, _, _, table_cards, _, _ = pairs
    pair, part, kind, ace = classes
    row, card = pr[pair], pc[pair].astype(np.int64)
    num_taken = np.where(part >= 0, tb.p_cards[part], (kind == _EQUAL).astype(np.intp))  # p_cards[-1] is never taken
    num_taken = np.where(ace, table_cards[row], num_taken)
    scopa = (num_taken == table_cards[row]) & (num_taken > 0) & ~ace
    if last_play is None:
        last_play = np.zeros(n, dtype=np.bool_)
    else:
        scopa &= ~last_play[row]
    starts = np.searchsorted(row, np.arange(n + 1))
    return MoveClasses(row, card, kind, part, num_taken, scopa, starts, last_play, counts)


def _fitting(
    tb: MoveTables,
    pr: npt.NDArray[np.intp],
    pairs: npt.NDArray[np.intp],
    start: npt.NDArray[np.intp],
    lens: npt.NDArray[np.intp],
    flat_parts: npt.NDArray[np.intp],
    packed: npt.NDArray[np.int64],
    picked_packed: npt.NDArray[np.int64] | None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The candidate partitions ``flat_parts[start[i] : + lens[i]]`` of each pair ``pairs[i]`` that the table's
    rank counts hold (and that can include the picked cards): ``(pair, partition)`` of each, by pair."""
    pp_pair = np.repeat(pairs, lens)
    offset = np.arange(pp_pair.size) - np.repeat(np.cumsum(lens) - lens, lens)
    pp_part = flat_parts[np.repeat(start, lens) + offset]
    need = tb.p_packed[pp_part]
    pp_row = pr[pp_pair]
    fits = ((packed[pp_row] | tb.guard) - need) & tb.guard == tb.guard
    if picked_packed is not None:
        fits &= ((need | tb.guard) - picked_packed[pp_row]) & tb.guard == tb.guard
    return pp_pair[fits], pp_part[fits]


def _enumerate_with_fifteens(
    tb: MoveTables,
    playable: npt.NDArray[np.bool_],
    counts: npt.NDArray[np.integer],
    picked_counts: npt.NDArray[np.integer] | None,
    last_play: npt.NDArray[np.bool_] | None,
) -> MoveClasses:
    """``enumerate_moves`` under ``rules.fifteens`` (cirulla): equal rank or sums, plus fifteens, or ace takes all."""
    n = playable.shape[0]
    pairs = _pairs(tb, playable, counts)
    pr, _, rank, value, _, equal, ace_all = pairs
    present = ((counts > 0) @ tb.rank_bits_f).astype(np.int64)
    packed = (counts @ tb.pack_f).astype(np.int64)
    picked_packed = None
    equal_ok = equal
    if picked_counts is not None:
        picked_counts = np.asarray(picked_counts)
        picked_packed = (picked_counts @ tb.pack_f).astype(np.int64)
        picked_total = (picked_counts @ tb.ones).astype(np.intp)
        picked_rank = picked_counts[pr, rank].astype(np.intp)
        equal_ok = equal & (picked_total[pr] == picked_rank) & (picked_rank <= 1)  # at most the one equal card
    sums = np.flatnonzero(~equal & ~ace_all)
    t_sum = value[sums]
    fit = present[pr[sums]] & tb.below[t_sum]
    s_pair, s_part = _fitting(
        tb, pr, sums, tb.fit_start[t_sum, fit], tb.fit_len[t_sum, fit], tb.fit_parts, packed, picked_packed
    )
    fif = np.flatnonzero(~ace_all)
    v_fif, m_fif = value[fif], present[pr[fif]]
    f_pair, f_part = _fitting(
        tb, pr, fif, tb.f_start[v_fif, m_fif], tb.f_len[v_fif, m_fif], tb.f_parts, packed, picked_packed
    )
    has_multi = np.zeros(pr.size, dtype=np.bool_)
    has_multi[s_pair] = True
    has_multi[f_pair] = True
    single = np.flatnonzero(equal_ok | ace_all | (~equal & ~has_multi))
    single_kind = np.where(equal[single], _EQUAL, np.where(ace_all[single], _ACE_ALL, _LAY))
    pair = np.concatenate([single, s_pair, f_pair])
    part = np.concatenate([np.full(single.size, -1, dtype=np.intp), s_part, f_part])
    kind = np.concatenate([single_kind, np.full(s_pair.size, _SUM), np.full(f_pair.size, _FIFTEEN)]).astype(np.int8)
    order = np.argsort(pair, kind="stable")  # by pair, then: the single class, sums, fifteens (partition order)
    pair, part, kind = pair[order], part[order], kind[order]
    return _classes(tb, n, pairs, (pair, part, kind, kind == _ACE_ALL), last_play, counts)


def expand_captures(
    rules: Rules,
    classes: MoveClasses,
    table: npt.NDArray[np.bool_],
    picked: npt.NDArray[np.bool_] | None = None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """Every concrete captured-card set of each class: ``(index, captured)``, ``index`` (k,) the class of each set
    (ascending), ``captured`` (k, D) its table cards (empty for a lay).

    ``table``: (n, D) the tables of the positions ``classes`` was enumerated for; ``picked``: (n, D) cards already
    picked (CHOOSE phase), which every set must contain (None: no picks). A sum class yields every choice of suits
    within its ranks; an equal-rank class one set per table card of that rank.
    """
    tb = move_tables(rules)
    r, m = tb.num_ranks, len(classes)
    rows = classes.row
    t4 = table[rows].reshape(m, 4, r)
    present = _suit_masks(t4)  # (m, R) suit bit mask of each rank on the table
    take = np.zeros((m, r), dtype=np.intp)  # cards of each rank the class takes
    kind = classes.kind
    is_sum = np.flatnonzero(classes.part >= 0)  # sums and fifteens
    take[is_sum] = tb.p_count[classes.part[is_sum]]
    eq = np.flatnonzero(kind == _EQUAL)
    take[eq, tb.rank[classes.card[eq]]] = 1
    ace = np.flatnonzero(kind == _ACE_ALL)
    if ace.size:
        take[ace] = t4[ace].sum(axis=1)
    key = present * ((MAX_PER_RANK + 1) * 16) + take * 16  # (m, R)
    if picked is not None:
        key += _suit_masks((picked[rows] & table[rows]).reshape(m, 4, r))
    choices = tb.opt_len[key]  # (m, R) suit choices of each rank
    radix = np.cumprod(choices, axis=1)  # (m, R): sets of each class over ranks 0..q
    total = radix[:, -1]  # (m,) sets of each class
    index = np.repeat(np.arange(m, dtype=np.intp), total)
    j = np.arange(index.size) - np.repeat(radix[:, -1].cumsum() - total, total)  # the set's number in its class
    below = radix[index] // choices[index]  # (k, R) mixed-radix place value of each rank, rank 0 first
    digit = (j[:, None] // below) % choices[index]
    masks = tb.opt_masks[tb.opt_start[key[index]] + digit]  # (k, R) suit bit mask taken from each rank
    captured = (masks[:, None, :] >> np.arange(4)[None, :, None]) & 1  # (k, 4, R)
    return index, captured.astype(np.bool_).reshape(index.size, 4 * r)


def _suit_masks(cards4: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """(m, 4, R) bool -> (m, R) the suit bit mask of the cards of each rank."""
    bits = cards4.view(np.uint8).astype(np.intp)
    return bits[:, 0] | (bits[:, 1] << 1) | (bits[:, 2] << 2) | (bits[:, 3] << 3)
