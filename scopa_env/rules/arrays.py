"""Batched card-set helpers the core, its observation and cirulla's rules share (numpy only).

A card set is a (n, D) bool row per game (D = the deck's cards, suit-major: ``card = suit * R + rank``); a bit set
is a uint64 per game.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["hand_sizes", "low_bits", "rank_counts", "rows_any"]


def rank_counts(cards: npt.NDArray[np.bool_], num_ranks: int) -> npt.NDArray[np.uint8]:
    """(n, D) bool card masks -> (n, R) uint8 counts per rank (adds the four suit slices; faster than sum)."""
    v = cards.view(np.uint8).reshape(cards.shape[0], 4, num_ranks)
    return v[:, 0] + v[:, 1] + v[:, 2] + v[:, 3]


def rows_any(a: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """(n, k) bool -> (n,) any, reading 8 cards at a time when the row length allows."""
    if a.shape[1] % 8 == 0 and a.flags.c_contiguous:
        return np.asarray(a.view(np.uint64).any(axis=1))
    return np.asarray(a.any(axis=1))


def hand_sizes(hands: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """(B, N, D) bool -> (B, N) float32 card counts (a float matmul beats an integer reduction here)."""
    b, n, d = hands.shape
    return (hands.reshape(b * n, d).astype(np.float32) @ np.ones(d, dtype=np.float32)).reshape(b, n)


def low_bits(sets: npt.NDArray[np.uint64], k: int) -> npt.NDArray[np.bool_]:
    """(n,) uint64 bit sets -> (n, k) bool: bits 0 .. k-1 of each (unpacked from the low bytes; k <= 64)."""
    nbytes = (k + 7) // 8
    low = np.ascontiguousarray(sets, dtype="<u8").view(np.uint8).reshape(-1, 8)[:, :nbytes]
    return np.unpackbits(low, axis=1, bitorder="little")[:, :k].view(np.bool_)
