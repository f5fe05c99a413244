"""Capture look-up tables: which table cards can complete a capture, in O(1) per game.

A capture by sum takes a set of table cards whose values add up to the played card's value. Whether such sets
exist, which ranks they use and whether there is exactly one depends only on the *rank counts* of the available
table cards and on the target value. For a target ``t`` a rank of value ``r`` can appear at most ``t // r`` times,
so counts are capped at ``min(4, T // r)`` and encoded in mixed radix; every (target, key) pair is tabulated once
(a few hundred thousand entries for the 40-card deck) with a zeta transform (prefix sums over the count lattice)
of the integer partitions of ``t``:

- ``num_parts[t, key]``: how many distinct multisets of ranks (partitions of ``t``) fit in the counts;
- ``union[t, key]``: bit mask of the ranks used by any of them;
- ``sum_cards[t, key]``: total number of cards over those partitions (the size of the unique one when
  ``num_parts == 1``).

With several cards of one rank on the table a partition can be taken in several ways (which suit); a capture is
unique exactly when one partition fits and it uses every available card of each rank it touches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["CaptureTable", "capture_table", "partitions"]


@dataclass(frozen=True)
class CaptureTable:
    """Tabulated capture statistics for a deck of ``num_ranks`` ranks and targets ``0..max_target``."""

    num_ranks: int
    """Ranks of the deck; rank index r has value r + 1."""
    max_target: int
    """Largest value a capture may need to add up to."""
    caps: npt.NDArray[np.int32]
    """(num_ranks,) int32: count cap per rank."""
    weights: npt.NDArray[np.int32]
    """(num_ranks,) int32: mixed-radix weight of each rank in the key."""
    num_keys: int
    """Number of distinct keys."""
    num_parts: npt.NDArray[np.int16]
    """((max_target+1) * num_keys,) int16: partitions that fit, flat index ``t * num_keys + key``."""
    union: npt.NDArray[np.int32]
    """((max_target+1) * num_keys,) int32: rank bit mask of the fitting partitions."""
    sum_cards: npt.NDArray[np.int32]
    """((max_target+1) * num_keys,) int32: cards summed over the fitting partitions."""

    def lookup(
        self, counts: npt.NDArray[np.integer], target: npt.NDArray[np.integer]
    ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
        """For rank counts (n, num_ranks) and targets (n,): (num_parts, union, unique), each (n,)."""
        # Float matmuls are exact here (keys < 2**24) and much faster than integer reductions over short rows.
        capped = np.minimum(counts, self.caps).astype(np.float32)
        idx = (capped @ self.weights.astype(np.float32)).astype(np.int64) + target.astype(np.int64) * self.num_keys
        nparts = self.num_parts[idx]
        union = self.union[idx]
        unique = nparts == 1
        one = np.flatnonzero(unique)
        if one.size:  # a single partition is a single capture iff it uses every available card of its ranks
            in_union = _rank_bits(self.num_ranks)[union[one]]
            used = np.einsum("ij,ij->i", counts[one].astype(np.float32), in_union)
            unique[one] = used == self.sum_cards[idx[one]]
        return nparts, union, unique


@lru_cache(maxsize=4)
def _rank_bits(num_ranks: int) -> npt.NDArray[np.float32]:
    """(2**num_ranks, num_ranks) float32: the bits of every rank mask."""
    masks = np.arange(2**num_ranks)[:, None]
    return ((masks >> np.arange(num_ranks)) & 1).astype(np.float32)


def partitions(t: int, max_part: int) -> list[list[int]]:
    """Partitions of t into parts <= max_part, as non-increasing lists."""
    if t == 0:
        return [[]]
    out: list[list[int]] = []
    for p in range(min(t, max_part), 0, -1):
        out.extend([p, *rest] for rest in partitions(t - p, p))
    return out


def _prefix_in_place(a: npt.NDArray[np.int32], axis: int, op: np.ufunc) -> None:
    """Running ``op`` (add, or) along ``axis`` of ``a``, in place: slice i becomes op(slice i, slice i-1)."""
    here: list[int | slice] = [slice(None)] * a.ndim
    before: list[int | slice] = [slice(None)] * a.ndim
    for i in range(1, a.shape[axis]):
        here[axis], before[axis] = i, i - 1
        op(a[tuple(here)], a[tuple(before)], out=a[tuple(here)])


@lru_cache(maxsize=8)
def capture_table(num_ranks: int, max_target: int) -> CaptureTable:
    """Build (once per process) the capture table of a deck and maximum target."""
    caps = np.array([min(4, max_target // (r + 1)) for r in range(num_ranks)], dtype=np.int32)
    radix = caps + 1
    weights = np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int32)
    num_keys = int(np.prod(radix))
    shape = tuple(int(x) for x in radix[::-1])  # C order: last axis is rank 0 (weight 1)
    tables_n = np.zeros((max_target + 1, num_keys), dtype=np.int32)
    tables_u = np.zeros((max_target + 1, num_keys), dtype=np.int32)
    tables_c = np.zeros((max_target + 1, num_keys), dtype=np.int32)
    for t in range(max_target + 1):
        for parts in partitions(t, min(t, num_ranks)):
            counts = (
                np.bincount(np.array(parts, dtype=np.int64) - 1, minlength=num_ranks)
                if parts
                else np.zeros(num_ranks, dtype=np.int64)
            )
            if np.any(counts > caps):
                continue
            key = int(counts @ weights)
            tables_n[t, key] += 1
            tables_u[t, key] |= int(sum(1 << r for r in range(num_ranks) if counts[r]))
            tables_c[t, key] += int(counts.sum())
    # The zeta transform, in place and for every target at once: along each rank's axis, slice i takes in slice i-1.
    # (np.cumsum along the inner axes of the 13-rank deck's lattice took 2.7 s; these slice-wise adds take 0.3 s.)
    full = (max_target + 1, *shape)
    for table, op in ((tables_n, np.add), (tables_c, np.add), (tables_u, np.bitwise_or)):
        lattice = table.reshape(full)  # a view: the table is filled in place
        for axis in range(1, len(full)):
            _prefix_in_place(lattice, axis, op)
    return CaptureTable(
        num_ranks=num_ranks,
        max_target=max_target,
        caps=caps,
        weights=weights,
        num_keys=num_keys,
        num_parts=tables_n.reshape(-1).astype(np.int16),
        union=tables_u.reshape(-1),
        sum_cards=tables_c.reshape(-1),
    )
