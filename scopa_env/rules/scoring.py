"""Batched hand scoring (RULES.md section 4), the end-of-match check (section 5) and the two hand margins.

A side's *margin* is its hand points against the other sides'; with two sides both margins below are the plain
difference, with three or more they differ:

- ``margin_vs_best_other``: minus the best other side's points (the rewards of the envs, ``reward="points"``);
- ``margin_vs_mean_of_others``: minus the mean of the other sides' points (the value the search agents maximise).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scopa_env.rules import Rules
from scopa_env.rules.cirulla import CirullaHook
from scopa_env.rules.variant import ScopaHook, hook_class

__all__ = [
    "CIRULLA_POINT_FIELDS",
    "NUM_POINT_FIELDS",
    "POINT_FIELDS",
    "margin_vs_best_other",
    "margin_vs_mean_of_others",
    "match_results",
    "match_winners",
    "point_fields",
    "score_hands",
]

POINT_FIELDS = ScopaHook.point_fields
"""Last axis of ``score_hands``' result: ``carte denari settebello primiera scope total``."""
NUM_POINT_FIELDS = len(POINT_FIELDS)
CIRULLA_POINT_FIELDS = CirullaHook.point_fields
"""Last axis of ``score_hands``' result under cirulla's rules: ``POINT_FIELDS`` with napoli, grande and knocks before
the total."""
NAPOLI_RUN = ("4", "5", "6", "7", "J", "Q", "K")
"""Coins that extend a napoli (Ad 2d 3d), in order: each further one in unbroken sequence scores 1 more."""
GRANDE = ("J", "Q", "K")
"""The coins that make a grande (5 points)."""


def point_fields(rules: Rules) -> tuple[str, ...]:
    """Names of the last axis of ``score_hands``' result (and of the core's ``StepInfo.hand_points``) for ``rules``:
    ``carte denari settebello primiera scope total``, or for cirulla ``... scope napoli grande knocks total``: its
    family's (``scopa_env.rules.variant``)."""
    return hook_class(rules).point_fields


def _award(rules: Rules, values: npt.NDArray[np.integer], majority_of: int | None = None) -> npt.NDArray[np.int16]:
    """(n, S) points for one category: 1 to the side strictly ahead (or every side sharing a positive lead)."""
    top = values.max(axis=1, keepdims=True)
    is_top = values == top
    if rules.shared_lead_scores:
        win = is_top & (top > 0)
    elif majority_of is not None and rules.majority_needed:
        win = 2 * values > majority_of
    else:
        win = is_top & (is_top.sum(axis=1, keepdims=True) == 1) & (top > 0)
    return win.astype(np.int16)


def score_hands(
    rules: Rules,
    piles: npt.NDArray[np.bool_],
    scope: npt.NDArray[np.integer],
    knock_points: npt.NDArray[np.integer] | None = None,
) -> npt.NDArray[np.int16]:
    """Score hands: piles (n, S, D) bool and scope (n, S) -> (n, S, F) int16 in ``point_fields(rules)`` order
    (F = 6, or 9 for cirulla, which adds napoli, grande and the ``knock_points`` (n, S) of each side)."""
    deck = rules.deck
    n, num_sides, num_cards = piles.shape
    r = deck.num_ranks
    by_suit = piles.reshape(n, num_sides, 4, r)
    carte = piles.sum(axis=2)
    denari = by_suit[:, :, 0, :].sum(axis=2)
    settebello = piles[:, :, deck.settebello].astype(np.int16)
    seven = deck.ranks.index("7")
    if rules.simple_primiera:
        prim_values = by_suit[:, :, :, seven].sum(axis=2)
    else:
        best = (by_suit * deck.primiera[:r]).max(axis=3)  # (n, S, 4)
        prim_values = np.where((best > 0).all(axis=2), best.sum(axis=2), 0)
    fields = point_fields(rules)
    out = np.zeros((n, num_sides, len(fields)), dtype=np.int16)
    out[:, :, 0] = _award(rules, carte, num_cards)
    out[:, :, 1] = _award(rules, denari, r)
    out[:, :, 2] = _award(rules, settebello)
    out[:, :, 3] = _award(rules, prim_values)
    out[:, :, 4] = scope
    if "napoli" in fields:  # cirulla's fields
        coins = by_suit[:, :, 0, :]  # (n, S, R)
        if rules.napoli_grande:
            ranks = deck.ranks
            base = coins[:, :, [ranks.index(x) for x in "A23"]].all(axis=2)
            run = np.cumprod(coins[:, :, [ranks.index(x) for x in NAPOLI_RUN]], axis=2).sum(axis=2)
            out[:, :, 5] = np.where(base, 3 + run, 0)
            out[:, :, 6] = 5 * coins[:, :, [ranks.index(x) for x in GRANDE]].all(axis=2)
        if knock_points is not None:
            out[:, :, 7] = knock_points
    out[:, :, -1] = out[:, :, :-1].sum(axis=2)
    return out


def match_winners(rules: Rules, scores: npt.NDArray[np.integer]) -> npt.NDArray[np.int8]:
    """(n,) int8: the winning side for cumulative scores (n, S), or -1 while the match goes on."""
    top = scores.max(axis=1)
    unique = (scores == top[:, None]).sum(axis=1) == 1
    done = (top >= rules.target) & unique
    return np.where(done, scores.argmax(axis=1), -1).astype(np.int8)


def match_results(winner: npt.NDArray[np.integer], num_sides: int) -> npt.NDArray[np.int8]:
    """(n, S) +1 for the winning side, -1 for the others, all 0 where ``winner`` is -1 (no winner): the envs'
    ``reward="match"`` reward."""
    win = np.asarray(winner, dtype=np.int64)
    out = np.where(np.arange(num_sides)[None, :] == win[:, None], 1, -1).astype(np.int8)
    out[win < 0] = 0
    return out


def margin_vs_best_other(points: npt.NDArray[np.integer]) -> npt.NDArray[np.int32]:
    """(n, S) int32: each side's points minus the best of the other sides' points, from (n, S) hand points.

    Positive only for a side strictly ahead of every other; the envs pay it as the ``reward="points"`` reward.
    For points ``[5, 3, 1]``: ``[2, -2, -4]``.
    """
    pts = np.asarray(points, dtype=np.int32)
    num_sides = pts.shape[1]
    others = np.where(np.eye(num_sides, dtype=np.bool_)[None], np.iinfo(np.int32).min, pts[:, None, :])
    return pts - others.max(axis=2)


def margin_vs_mean_of_others(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(n, S) each side's points minus the mean of the other sides' points, from (n, S) float points (S >= 2).

    A row's margins add up to 0; the search agents (``agents.search.lookahead``, ``agents.search.pimc``) value
    positions by it.
    For points ``[5, 3, 1]``: ``[3, 0, -3]``.
    """
    s = values.shape[1]
    return values - (values.sum(axis=1, keepdims=True) - values) / (s - 1)
