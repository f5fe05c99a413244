"""Deterministic, batch-invariant shuffles: the deck order of hand ``h`` of the game seeded ``s``.

Every game carries its own 64-bit seed; the deck order of each hand (and of each re-deal after a void deal) is a
pure function of ``(seed, hand_no, attempt)``, so a batch of B games equals B games played one at a time, and the
reference engine deals exactly the same cards as the batched core. Uses a SplitMix64 hash (Steele et al. 2014).

Dealing convention (RULES.md is silent on the physical order; this is the project's choice): the shuffled deck is
dealt from the front: first the table cards, then each player in turn order starting with the player after the
dealer, each receiving their whole packet of the deal at once; later deals continue from the stock the same way.

SplitMix64 is written once, here: ``mix64`` is plain arithmetic on uint64 values, which numpy runs on arrays
(``splitmix64``, the functions below) and the compiled kernel compiles with numba
(``scopa_env.engine._kernel_jit.splitmix``), with the streams' constants below, so that both deal the same cards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEALER_STREAM",
    "GOLDEN",
    "HAND_STRIDE",
    "MIX1",
    "MIX2",
    "NEXT_GAME_STREAM",
    "derive_seed",
    "first_dealer",
    "mix64",
    "shuffled_decks",
    "splitmix64",
]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
"""splitmix64's increment (2**64 / the golden ratio): also the stride between a key's derived streams."""
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
"""SplitMix64's first multiplier."""
MIX2 = np.uint64(0x94D049BB133111EB)
"""SplitMix64's second multiplier."""
HAND_STRIDE = np.uint64(1_000_003)
"""What a hand's number is multiplied by before its re-deal attempt is added (a deck's key: ``shuffled_decks``)."""
DEALER_STREAM = np.uint64(0xD1CE)
"""What a seed is xor-ed with to draw the first dealer (``first_dealer``)."""
NEXT_GAME_STREAM = np.uint64(0x5C0FA)
"""What a seed is xor-ed with to derive the next game's seed (``derive_seed``)."""
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)


def mix64(x: Any) -> Any:
    """The SplitMix64 finaliser of ``x + GOLDEN``: plain uint64 arithmetic (wrapping), on numpy arrays or scalars and,
    compiled by numba, on the kernel's uint64 values. numpy warns of the wrap: call ``splitmix64``."""
    z = x + GOLDEN
    z = (z ^ (z >> _S30)) * MIX1
    z = (z ^ (z >> _S27)) * MIX2
    return z ^ (z >> _S31)


def splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The SplitMix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        return mix64(x)  # type: ignore[no-any-return]


def _as_u64(a: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    arr = np.asarray(a)
    if arr.dtype != np.uint64:
        arr = arr.astype(np.int64).astype(np.uint64)
    return arr


def shuffled_decks(
    seeds: npt.ArrayLike, hand_no: npt.ArrayLike, attempt: npt.ArrayLike, num_cards: int
) -> npt.NDArray[np.int8]:
    """(n, num_cards) int8: the deck order for each game's hand ``hand_no`` and re-deal ``attempt``."""
    s = _as_u64(seeds).reshape(-1)
    h = _as_u64(hand_no).reshape(-1)
    a = _as_u64(attempt).reshape(-1)
    with np.errstate(over="ignore"):
        key = mix64(mix64(s ^ mix64(h * HAND_STRIDE + a)))
        cards = np.arange(num_cards, dtype=np.uint64)
        keys = mix64(key[:, None] + cards[None, :] * GOLDEN)
    return np.argsort(keys, axis=1, kind="stable").astype(np.int8)


def first_dealer(seeds: npt.ArrayLike, num_players: int) -> npt.NDArray[np.int8]:
    """(n,) int8: the first hand's dealer, drawn from each game's seed."""
    s = _as_u64(seeds).reshape(-1)
    return (splitmix64(s ^ DEALER_STREAM) % np.uint64(num_players)).astype(np.int8)


def derive_seed(seeds: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """(n,) uint64: the seed of the next game after an automatic reset."""
    return splitmix64(_as_u64(seeds).reshape(-1) ^ NEXT_GAME_STREAM)
