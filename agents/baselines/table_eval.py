"""What a table offers, evaluated in batches: for each position the best weight ``k`` cards of each rank can be taken
for (``evaluate_tables``, a ``TableEval``), from per-rules gather tables (``feature_tables``) and per-weights lookups
(``static_lookup``), so the candidate moves of ``agents.baselines.features`` and the compiled searches weigh a
capture's best suits with a few gathers; ``hit_probability`` (the chance a hidden hand holds a card) and
``check_weights`` (a weight vector the evaluation can use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from scopa_env.rules import Rules
from scopa_env.rules.moves import MAX_PER_RANK, move_tables

__all__ = [
    "BIG",
    "FeatureTables",
    "TableEval",
    "check_weights",
    "evaluate_tables",
    "feature_tables",
    "hit_probability",
    "static_lookup",
]


BIG = 1e9
"""Stands for an impossible capture in the partition values."""


class FeatureTables:
    """Per-rules constants of the weight-dependent parts: the core's ``MoveTables`` (ranks, values, every sum
    capture as a rank multiset) plus the gather indices that weigh a partition's best suits."""

    def __init__(self, rules: Rules) -> None:
        mt = move_tables(rules)
        self.moves = mt
        r = mt.num_ranks
        self.num_ranks = r
        self.num_cards = mt.num_cards
        self.rank = mt.rank
        self.value = mt.value
        self.p_count = mt.p_count
        self.p_cards = mt.p_cards
        self.sum_targets = mt.sum_targets
        self.seg_start = mt.seg_start
        self.lookup_base = np.arange(r) * 2 * (MAX_PER_RANK + 1)  # (R,) row of each rank in the static lookups
        counts = mt.p_count
        width = int((counts > 0).sum(axis=1).max())
        # Gather index into topw flattened as (R + 1, MAX_PER_RANK + 1); rank R is an all-zero dummy column.
        flat = np.full((len(counts), width), r * (MAX_PER_RANK + 1), dtype=np.intp)
        for p, c in enumerate(counts.tolist()):
            used = [(k, n) for k, n in enumerate(c) if n]
            for j, (k, n) in enumerate(used):
                flat[p, j] = k * (MAX_PER_RANK + 1) + n
        self.p_flat = flat
        # Cirulla's fifteens follow the sums in the partition list, by the played card's value ascending.
        self.num_sum_parts = mt.num_sum_parts
        f_value = 15 - mt.p_target[mt.num_sum_parts :]
        self.f_values = np.unique(f_value)  # card values that have fifteens
        self.f_seg_start = np.searchsorted(f_value, self.f_values)


@lru_cache(maxsize=32)
def feature_tables(rules: Rules) -> FeatureTables:
    return FeatureTables(rules)


@lru_cache(maxsize=64)
def _no_hit_table(max_unseen: int, max_rank_count: int, max_hand: int) -> npt.NDArray[np.float64]:
    """[U, k, h] = C(U-k, h) / C(U, h): no card of a k-card rank among h cards drawn from U (0 if h > U)."""
    out = np.zeros((max_unseen + 1, max_rank_count + 1, max_hand + 1))
    for u in range(max_unseen + 1):
        for k in range(min(u, max_rank_count) + 1):
            for h in range(min(u, max_hand) + 1):
                out[u, k, h] = math.comb(u - k, h) / math.comb(u, h)
    return out


def hit_probability(unseen: npt.ArrayLike, rank_count: npt.ArrayLike, hand: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """P(a hand of ``hand`` cards dealt from ``unseen`` cards holds one of ``rank_count`` given cards).

    Hypergeometric, elementwise with broadcasting; a hand larger than the unseen set is clipped to it.
    """
    u = np.asarray(unseen, dtype=np.intp)
    k = np.asarray(rank_count, dtype=np.intp)
    h = np.minimum(np.asarray(hand, dtype=np.intp), u)
    table = _no_hit_table(52, MAX_PER_RANK, 52)
    return 1.0 - table[u, np.minimum(k, u), h]


def check_weights(rules: Rules, w: npt.ArrayLike) -> None:
    """Raise ``ValueError`` unless, in every rank, the three plain suits weigh the same and the coin no less.

    The capture heuristics take cards of a rank coins first (``evaluate_tables``); that is the most valuable
    order only for weights of this shape, which ``card_weights`` and ``dynamic_weights`` always have.
    """
    r = rules.deck.num_ranks
    w4 = np.asarray(w, dtype=np.float64).reshape(-1, 4, r)
    if not (
        np.allclose(w4[:, 1], w4[:, 2]) and np.allclose(w4[:, 1], w4[:, 3]) and (w4[:, 0] >= w4[:, 1] - 1e-9).all()
    ):
        raise ValueError(
            "card weights must give the coppe, spade and bastoni card of each rank the same weight and the denari "
            "card at least as much; build them with features.card_weights or features.dynamic_weights"
        )


@dataclass
class TableEval:
    """What the capture heuristics need to know about n tables, each with its own card weights.

    Within a rank, cards are taken in a fixed order: cards already picked (CHOOSE phase) first, then suit order,
    coins first, which is the most valuable order for weights accepted by ``check_weights``.
    """

    rules: Rules
    """The variant."""
    table: npt.NDArray[np.bool_]
    """(n, D) the tables."""
    picked: npt.NDArray[np.bool_] | None
    """(n, D) cards picked so far in the CHOOSE phase (None: no picks anywhere)."""
    counts: npt.NDArray[np.intp]
    """(n, R) table cards of each rank."""
    topw: npt.NDArray[np.float64]
    """(n, (R + 1) * 5) weight of the first k cards of rank r in taking order at ``r * 5 + k``; -BIG where
    impossible (fewer than k cards, or fewer than the cards of that rank already picked); rank R is a zero dummy."""
    num_cards: npt.NDArray[np.intp]
    """(n,) cards on the table."""
    total_weight: npt.NDArray[np.float64]
    """(n,) weight of all table cards."""

    def topw_at(self, rows: npt.NDArray[np.intp], ranks: npt.NDArray[np.intp], k: int) -> npt.NDArray[np.float64]:
        """Weight of the first ``k`` cards of ``ranks`` on the tables ``rows``."""
        return self.topw[rows, ranks * (MAX_PER_RANK + 1) + k]

    def part_values(self, rows: npt.NDArray[np.intp], parts: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        """(k,) weight a sum partition takes on a table (best suits); below -BIG/2 where it does not fit."""
        tb = feature_tables(self.rules)
        val = self.topw[rows[:, None], tb.p_flat[parts]].sum(axis=1)
        if self.picked is not None:  # a partition must also cover the picked cards of ranks it does not use
            pc = self._picked_counts()[rows]
            sel = np.flatnonzero(pc.any(axis=1))
            val[sel] -= BIG * (pc[sel] > tb.p_count[parts[sel]]).any(axis=1)
        return val

    def all_part_values(self) -> npt.NDArray[np.float64]:
        """(n, P) ``part_values`` of every partition on every table (no picks allowed)."""
        if self.picked is not None:
            raise ValueError("all_part_values is for tables without picked cards")
        return self.topw[:, feature_tables(self.rules).p_flat].sum(axis=2)

    def _picked_counts(self) -> npt.NDArray[np.intp]:
        n, r = self.table.shape[0], self.counts.shape[1]
        assert self.picked is not None
        return (self.picked & self.table).reshape(n, 4, r).sum(axis=1)

    def positions(self, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.integer]:
        """(k, D) each table card's place in its rank's taking order (MAX_PER_RANK for cards not on the table)."""
        r = self.counts.shape[1]
        t4 = self.table[rows].reshape(rows.size, 4, r)
        if self.picked is None:  # running count of the rank's cards over the suits, in uint8
            pos4 = t4.astype(np.int8)
            np.cumsum(pos4, axis=1, out=pos4)
            pos4 -= 1
        else:
            p4 = self.picked[rows].reshape(rows.size, 4, r) & t4
            u4 = t4 & ~p4
            first = p4.sum(axis=1, dtype=np.intp)[:, None, :]
            pos4 = np.where(p4, np.cumsum(p4, axis=1, dtype=np.intp) - 1, first + np.cumsum(u4, axis=1) - 1)
        return np.where(t4, pos4, np.int8(MAX_PER_RANK)).reshape(rows.size, -1)


_LOOKUPS: dict[tuple[Rules, bytes], tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]] = {}


def static_lookup(rules: Rules, w: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """For one weight vector: [rank, 2 * count + coin, k] the weight of the first k cards of that rank on a table
    holding ``count`` of them (``coin``: one is the coin), -BIG if k > count; and [rank, 2 * count + coin] the
    weight of all of them."""
    key = (rules, w.tobytes())
    hit = _LOOKUPS.get(key)
    if hit is not None:
        return hit
    r = rules.deck.num_ranks
    ks = np.arange(MAX_PER_RANK + 1)
    count = np.arange(2 * (MAX_PER_RANK + 1)) // 2
    coin = np.arange(2 * (MAX_PER_RANK + 1)) % 2
    w_coin, w_plain = w[:r, None, None], w[r : 2 * r, None, None]
    value = w_plain * ks + (coin[:, None] * (w_coin - w_plain)) * (ks >= 1) - BIG * (ks > count[:, None])
    value = np.where((coin[:, None] > count[:, None]), -BIG, value)  # a coin without a card: never looked up
    total = np.take_along_axis(value, np.broadcast_to(count[None, :, None], (r, count.size, 1)), axis=2)[:, :, 0]
    if len(_LOOKUPS) > 256:
        _LOOKUPS.clear()
    _LOOKUPS[key] = (value, total)
    return value, total


def evaluate_tables(
    rules: Rules,
    table: npt.NDArray[np.bool_],
    w: npt.NDArray[np.float64],
    picked: npt.NDArray[np.bool_] | None = None,
    counts: npt.NDArray[np.integer] | None = None,
) -> TableEval:
    """Rank counts and the best weights that k cards of each rank can bring, for tables (n, D).

    ``w``: (D,) or (n, D) card weights of the shape ``check_weights`` accepts. ``picked``: (n, D) cards already
    picked in the CHOOSE phase, which any capture must include. ``counts``: (n, R) the tables' cards of each rank
    when already known (``state_moves.move_classes(...).counts``), else counted here.
    """
    tb = feature_tables(rules)
    n, r, k1 = table.shape[0], tb.num_ranks, MAX_PER_RANK + 1
    t4 = table.reshape(n, 4, r)
    u4 = t4.view(np.uint8)
    if counts is None:
        counts = u4[:, 0] + u4[:, 1] + u4[:, 2] + u4[:, 3]
    rank_counts: npt.NDArray[np.intp] = counts.astype(np.intp)
    coin = t4[:, 0, :]
    ks = np.arange(k1)
    topw = np.zeros((n, r + 1, k1))
    if w.ndim == 1:  # one weight vector: look the answers up by (rank, count, coin on the table)
        lookup, lookup_total = static_lookup(rules, w)
        key = tb.lookup_base + 2 * rank_counts + u4[:, 0]
        topw[:, :r, :] = np.take(lookup.reshape(-1, k1), key, axis=0)
        total = np.take(lookup_total.reshape(-1), key).sum(axis=1)
    else:
        w_coin, w_plain = w[:, :r], w[:, r : 2 * r]  # (n, R)
        topw[:, :r, :] = w_plain[:, :, None] * ks + (coin * (w_coin - w_plain))[:, :, None] * (ks >= 1)
        topw[:, :r, :] -= BIG * (ks[None, None, :] > rank_counts[:, :, None])
        total = (rank_counts * w_plain).sum(axis=1) + (coin * (w_coin - w_plain)).sum(axis=1)
    has_picks = picked is not None and bool(picked.any())
    if has_picks:
        assert picked is not None
        rows = np.flatnonzero((picked & table).any(axis=1))
        p4 = picked[rows].reshape(rows.size, 4, r) & t4[rows]
        rest4 = t4[rows] & ~p4
        first = p4.sum(axis=1, dtype=np.intp)
        pos4 = np.where(p4, np.cumsum(p4, axis=1) - 1, first[:, None, :] + np.cumsum(rest4, axis=1) - 1)
        pos4 = np.where(t4[rows], pos4, MAX_PER_RANK)
        tw4 = np.where(t4[rows], np.broadcast_to(w, table.shape)[rows].reshape(rows.size, 4, r), 0.0)
        for k in range(1, k1):
            topw[rows, :r, k] = (tw4 * (pos4 < k)).sum(axis=1)
        topw[rows, :r, :] -= BIG * (
            (ks[None, None, :] < first[:, :, None]) | (ks[None, None, :] > rank_counts[rows, :, None])
        )
    return TableEval(
        rules=rules,
        table=table,
        picked=picked if has_picks else None,
        counts=rank_counts,
        topw=topw.reshape(n, -1),
        num_cards=rank_counts.sum(axis=1),
        total_weight=total,
    )
