"""The two hand margins of ``scopa_env.rules.scoring``: against the best other side and against the mean of the
others."""

from __future__ import annotations

import numpy as np

from scopa_env.rules.scoring import margin_vs_best_other, margin_vs_mean_of_others


def test_margins_differ_with_three_sides() -> None:
    # Three sides scored 5, 3 and 1 points in the hand.
    points = np.array([[5, 3, 1]])
    best = margin_vs_best_other(points)
    assert best.dtype == np.int32
    assert best.tolist() == [[5 - 3, 3 - 5, 1 - 5]]  # [2, -2, -4]: only the leader is positive
    mean = margin_vs_mean_of_others(points.astype(np.float64))
    assert mean.tolist() == [[5 - 2.0, 3 - 3.0, 1 - 4.0]]  # [3, 0, -3]: the middle side is even
    assert mean.sum() == 0.0


def test_margins_agree_with_two_sides() -> None:
    points = np.array([[4, 1], [2, 2], [0, 3]])
    expected = [[3, -3], [0, 0], [-3, 3]]
    assert margin_vs_best_other(points).tolist() == expected
    assert margin_vs_mean_of_others(points.astype(np.float64)).tolist() == expected


def test_margin_vs_best_other_ties_for_the_lead() -> None:
    # Two sides share the lead: neither is ahead of the best other side.
    assert margin_vs_best_other(np.array([[4, 4, 1]])).tolist() == [[0, 0, -3]]
