"""The suit symmetry of scopa: the three suits other than coins play alike, so permuting them is a free relabelling.

Coins (denari) count for the coins point and hold the settebello; cups, swords and clubs differ in nothing the rules
look at (primiera takes the best card of every suit alike). A position with those three suits permuted is another
position of the same game with the same values, moves relabelled. ``distil --augment`` uses it: every epoch each
training row is seen under one of the 6 permutations, drawn at random, so the network is fitted on six times the
positions the search labelled and learns the symmetry instead of memorising one labelling.

``columns(rules, perm)`` gives the observation's columns for a permuted position: the card blocks (hand, table,
pending, picked, unseen, every side's pile) are relabelled, the rest (scores, counts, the per-value ``plays``) stay.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.engine import observation
from scopa_env.rules import Rules

__all__ = ["CARD_BLOCKS", "columns", "permute_rows", "suit_permutations"]

CARD_BLOCKS = ("hand", "table", "pending", "picked", "unseen", "piles")
"""The observation blocks indexed by card id (``piles``: one run of card ids per side)."""


def suit_permutations(rules: Rules) -> list[npt.NDArray[np.int64]]:
    """The 6 relabellings of the card ids that permute the three suits other than the settebello's (identity
    first): ``perm[c]`` is card ``c``'s new id. Raises for variants whose observation has other card-indexed blocks
    (cirulla's)."""
    if rules.fifteens or rules.num_actions != rules.num_cards:
        raise ValueError(f"the suit symmetry is defined for scopa's observation and actions; {rules.name} differs")
    deck = rules.deck
    suit, rank = np.asarray(deck.suit, dtype=np.int64), np.asarray(deck.rank, dtype=np.int64)
    coins = int(suit[deck.settebello])
    others = sorted(set(suit.tolist()) - {coins})
    ids = {(int(s), int(r)): c for c, (s, r) in enumerate(zip(suit, rank, strict=True))}
    out = []
    for order in permutations(others):
        move = {coins: coins, **dict(zip(others, order, strict=True))}
        out.append(np.array([ids[(move[int(suit[c])], int(rank[c]))] for c in range(rules.num_cards)], dtype=np.int64))
    return out


def columns(rules: Rules, perm: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Observation columns ``cols`` such that ``obs[:, cols]`` is the observation of the position relabelled by
    ``perm`` (``suit_permutations``)."""
    d = rules.num_cards
    inverse = np.argsort(perm)
    cols = np.arange(observation.observation_size(rules), dtype=np.int64)
    for name, start, stop, _ in observation.observation_layout(rules):
        if name in CARD_BLOCKS:
            for lo in range(start, stop, d):
                cols[lo : lo + d] = lo + inverse
    return cols


def permute_rows(
    rules: Rules, arrays: dict[str, npt.NDArray[Any]], rng: np.random.Generator
) -> dict[str, npt.NDArray[Any]]:
    """New arrays, each row relabelled by one of the ``suit_permutations`` drawn at random: ``obs`` by ``columns``
    (columns past the observation's, such as ``agents.nets.sweep_inputs``, must be suit-blind: they stay),
    the per-action arrays (``mask``, ``targets``, anything else of width ``num_actions``) by the card relabelling,
    the integer ``action`` through it."""
    perms = suit_permutations(rules)
    n = len(next(iter(arrays.values())))
    which = rng.integers(0, len(perms), size=n)
    out = {k: np.empty_like(v) for k, v in arrays.items()}
    for p, perm in enumerate(perms):
        rows = np.flatnonzero(which == p)
        inverse = np.argsort(perm)
        for k, v in arrays.items():
            if k == "obs":  # columns past the observation's (derived, suit-blind inputs) stay
                cols = columns(rules, perm)
                cols = np.concatenate([cols, np.arange(cols.size, v.shape[1])])
                out[k][rows] = v[rows][:, cols]
            elif k == "action":
                out[k][rows] = perm[v[rows]]
            else:
                out[k][rows] = v[rows][:, inverse]
    return out
