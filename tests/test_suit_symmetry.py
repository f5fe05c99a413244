"""Tests of the suit symmetry (agents/training/suit_symmetry.py).

A position whose three non-coin suits are relabelled, built from the game state itself, must have exactly the
relabelled observation and legal moves, and play on identically under relabelled moves (the same scores); the
relabelled training rows must be those of such positions.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.training.suit_symmetry import columns, permute_rows, suit_permutations
from scopa_env.engine import core, observation
from scopa_env.rules import get_rules
from tests.test_observation import random_positions


def _relabel(state: core.State, perm: np.ndarray) -> core.State:
    """``state`` with every card ``c`` renamed ``perm[c]``."""
    out = state.copy()
    inverse = np.argsort(perm)
    for name in ("hands", "table", "piles", "picked", "revealed"):
        getattr(out, name)[...] = getattr(state, name)[..., inverse]
    out.deck[...] = perm[state.deck.astype(np.int64)]
    out.pending[...] = np.where(state.pending >= 0, perm[np.maximum(state.pending, 0)], -1)
    return out


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "scopa-a-quattro", "simple-3"])
def test_relabelled_positions_have_the_relabelled_observation_and_moves(variant: str) -> None:
    rules = get_rules(variant)
    perms = suit_permutations(rules)
    assert len(perms) == 6 and (perms[0] == np.arange(rules.num_cards)).all()
    assert len({tuple(p) for p in perms}) == 6
    coins = rules.deck.suit[rules.deck.settebello]
    for perm in perms:
        assert (perm[rules.deck.suit == coins] == np.flatnonzero(rules.deck.suit == coins)).all()  # coins stay
        assert (rules.deck.rank[perm] == rules.deck.rank).all()  # ranks stay
    state = random_positions(variant, 60, seed=3, choosing=True)
    obs, mask = observation.observe(rules, state), core.legal_action_mask(rules, state)
    rng = np.random.default_rng(0)
    for perm in perms[1:]:
        moved = _relabel(state, perm)
        np.testing.assert_array_equal(observation.observe(rules, moved), obs[:, columns(rules, perm)])
        np.testing.assert_array_equal(core.legal_action_mask(rules, moved), mask[:, np.argsort(perm)])
        # the two hands play on alike: the same scores after the same (relabelled) random moves (the next hand's deal
        # comes from the seed, not relabelled: each game stops when its hand is over)
        a, b, hand = state.copy(), moved, state.hand_no.copy()
        for _ in range(3 * rules.num_cards):
            m = core.legal_action_mask(rules, a)
            go = m.any(axis=1) & (a.hand_no == hand)
            if not go.any():
                break
            keys = rng.random(m.shape)
            keys[~m] = -1
            act = np.where(go, keys.argmax(axis=1), -1)
            core.step(rules, a, act, on_illegal="report")
            core.step(rules, b, np.where(act >= 0, perm[np.maximum(act, 0)], -1), on_illegal="report")
        assert (a.hand_no != hand).sum() >= 30  # half the hands or more were played out and scored
        np.testing.assert_array_equal(a.scores, b.scores)
        np.testing.assert_array_equal(a.scope, b.scope)


def test_permute_rows_relabels_every_array_of_a_row_alike() -> None:
    rules = get_rules("scopone-scientifico")
    state = random_positions("scopone-scientifico", 40, seed=8)
    obs, mask = observation.observe(rules, state), core.legal_action_mask(rules, state)
    action = np.where(mask.any(axis=1), mask.argmax(axis=1), 0)
    targets = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    out = permute_rows(
        rules, {"obs": obs, "mask": mask, "targets": targets, "action": action}, np.random.default_rng(1)
    )
    perms = suit_permutations(rules)
    for i in range(len(obs)):
        perm = next(p for p in perms if (out["obs"][i] == obs[i, columns(rules, p)]).all())
        assert (out["mask"][i] == mask[i, np.argsort(perm)]).all() and out["action"][i] == perm[action[i]]
        assert out["mask"][i, out["action"][i]] or not mask[i].any()
    assert not (out["obs"] == obs).all()  # some rows moved


def test_refuses_cirulla() -> None:
    with pytest.raises(ValueError, match="suit symmetry"):
        suit_permutations(get_rules("cirulla"))
