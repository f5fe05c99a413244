"""Tests of the sweep inputs (agents/nets/sweep_inputs.py).

The exposures are checked against the game state directly (the table's cards, the seat's hand and the captured
piles, with every capture found by brute force), not against the observation they are computed from; the hand-set
layers, folded in front of a network fitted on the observation plus the inputs, give that network's logits.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from agents.nets.sweep_inputs import compose, sweep_input_size, sweep_inputs, sweep_layers, unfold
from scopa_env.engine import core, observation
from scopa_env.rules import get_rules
from tests.test_observation import random_positions


def _expected(rules_name: str, state: core.State, g: int) -> np.ndarray:
    """The exposures and unseen counts of game ``g``'s acting seat, from the state."""
    rules = get_rules(rules_name)
    deck, r = rules.deck, rules.deck.num_ranks
    seat = int(state.current[g])
    unseen = ~(state.hands[g, seat] | state.table[g] | state.piles[g].any(axis=0))
    counts = np.bincount(np.asarray(deck.rank)[unseen], minlength=r).astype(np.float32)
    table = [int(deck.rank[c]) + 1 for c in np.flatnonzero(state.table[g])]
    exposure = np.zeros(r, dtype=np.float32)
    for v in range(1, r + 1):
        takes = v in table or any(sum(c) == v for k in range(2, len(table) + 1) for c in combinations(table, k))
        after = sum(table) - v if takes else sum(table) + v
        exposure[v - 1] = counts[after - 1] if 1 <= after <= r else 0.0
    return np.concatenate([exposure, counts]) / 4


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "scopa-a-quattro"])
def test_exposures_count_the_unseen_cards_that_take_the_whole_table_left(variant: str) -> None:
    rules = get_rules(variant)
    state = random_positions(variant, 200, seed=11)
    rows = np.flatnonzero(state.phase == core.Phase.PLAY)
    assert rows.size > 100
    got = sweep_inputs(rules, observation.observe(rules, state)[rows])
    assert got.shape == (rows.size, sweep_input_size(rules))
    want = np.stack([_expected(variant, state, int(g)) for g in rows])
    np.testing.assert_array_equal(got, want)
    assert (got[:, : rules.deck.num_ranks] > 0).any()  # tables that some unseen card sweeps do occur


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico"])
def test_folded_layers_give_the_fitted_networks_logits(variant: str) -> None:
    rules = get_rules(variant)
    obs = observation.observe(rules, random_positions(variant, 300, seed=5, choosing=False))
    assert obs.min() >= 0  # the hand-set layers pass the observation through a ReLU
    rng = np.random.default_rng(0)
    width = obs.shape[1] + sweep_input_size(rules)
    a = rules.num_actions
    fitted = [
        (rng.normal(size=(48, width)).astype(np.float32), rng.normal(size=48).astype(np.float32)),
        (rng.normal(size=(a, 48)).astype(np.float32), rng.normal(size=a).astype(np.float32)),
    ]

    def run(layers: list, x: np.ndarray) -> np.ndarray:
        for i, (w, b) in enumerate(layers):
            x = x @ w.T + b
            x = np.maximum(x, 0) if i < len(layers) - 1 else x
        return x

    want = run(fitted, np.concatenate([obs, sweep_inputs(rules, obs)], axis=1))
    folded = compose(rules, fitted)
    assert len(folded) == len(sweep_layers(rules)) + len(fitted) and folded[0][0].shape[1] == obs.shape[1]
    np.testing.assert_allclose(run(folded, obs), want, rtol=1e-5, atol=1e-4 * np.abs(want).max())
    # unfold gives the fitted layers back, for a fit that starts from the folded network (distil --init)
    back = unfold(rules, folded)
    assert len(back) == len(fitted)
    for (w, b), (fw, fb) in zip(back, fitted, strict=True):
        np.testing.assert_allclose(w, fw, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(b, fb)


def test_refuses_what_it_cannot_compute() -> None:
    with pytest.raises(ValueError, match="unseen and plays blocks"):
        sweep_layers(get_rules("cirulla"))
    rules = get_rules("classic")
    with pytest.raises(ValueError, match="observations"):
        sweep_inputs(rules, np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="inputs"):
        compose(rules, [(np.zeros((4, 3), np.float32), np.zeros(4, np.float32))])
    with pytest.raises(ValueError, match="hand-set sweep layers"):
        unfold(rules, [(np.zeros((4, 3), np.float32), np.zeros(4, np.float32))] * 5)
