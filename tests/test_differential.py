"""Differential tests: the batched core against the plain reference engine, move by move.

Both engines play the same seeded matches; at every decision a move is drawn uniformly from the reference's
legal moves and carried out in the core through the action interface (card, then capture picks). At every step
they must agree on: the observation of the seat to act (``core.observe`` against ``reference.observe``), the legal
moves (the core's ``legal_move_lists`` / ``legal_moves``, its PLAY mask and its CHOOSE masks), whether a choice is
needed, the capture made, the scopa flag, hands/table/piles, leftovers, hand points, scores, dealer
rotation and the winner. The default suite plays 500 matches per variant (observations compared in the first 100);
``-m slow`` plays 10,000 (observations compared in the first 1,000).
"""

from __future__ import annotations

import numpy as np
import pytest

from scopa_env import core
from scopa_env.reference import ReferenceGame, observe
from scopa_env.rules import VARIANTS, get_rules
from scopa_env.scoring import POINT_FIELDS


def _mask(ids, d: int) -> np.ndarray:
    m = np.zeros(d, dtype=bool)
    m[list(ids)] = True
    return m


def run_differential(
    variant: str, num_games: int, first_seed: int = 0, batch: int = 250, observed_games: int | None = None
) -> int:
    """Play ``num_games`` matches on both engines; observations are compared in the first ``observed_games``."""
    rules = get_rules(variant)
    d = rules.num_cards
    rng = np.random.default_rng(first_seed)
    decisions = 0
    n_observed = num_games if observed_games is None else observed_games
    for lo in range(0, num_games, batch):
        seeds = np.arange(first_seed + lo, first_seed + min(num_games, lo + batch))
        st = core.reset(rules, seeds)
        refs = [ReferenceGame(rules, int(s)) for s in seeds]
        b = len(refs)
        planned: list[tuple[int, frozenset[int]] | None] = [None] * b
        while not all(r.done for r in refs):
            # Compare states and choose the next action for each game.
            mask = core.legal_action_mask(rules, st)
            legal = core.legal_move_lists(rules, st)  # every game's legal_moves, enumerated together
            obs = core.observe(rules, st) if lo < n_observed else None
            actions = np.zeros(b, dtype=np.int64)
            for g, ref in enumerate(refs):
                if ref.done:
                    assert st.done[g]
                    continue
                assert not st.done[g]
                assert st.current[g] == ref.current and st.dealer[g] == ref.dealer
                if st.phase[g] == core.Phase.PLAY:
                    assert (st.hands[g] == np.array([_mask(h, d) for h in ref.hands])).all()
                    assert (st.table[g] == _mask(ref.table, d)).all()
                    assert (st.piles[g] == np.array([_mask(p, d) for p in ref.piles])).all()
                    assert st.scope[g].tolist() == ref.scope and st.scores[g].tolist() == ref.scores
                    moves = ref.legal_moves()
                    assert sorted(moves, key=lambda m: (m[0], sorted(m[1]))) == legal[g]
                    if decisions % 97 == 0:  # the one-game face lists the same moves
                        assert core.legal_moves(rules, st, g) == legal[g]
                    assert (mask[g] == _mask({c for c, _ in moves}, d)).all()
                    if obs is not None and lo + g < n_observed:
                        np.testing.assert_allclose(obs[g], observe(ref), atol=1e-6)
                    planned[g] = moves[int(rng.integers(len(moves)))]
                    actions[g] = planned[g][0]
                else:
                    card, cap = planned[g]
                    assert st.pending[g] == card
                    picked = set(np.flatnonzero(st.picked[g]).tolist())
                    assert picked < cap
                    options = [c for c2, c in ref.legal_moves() if c2 == card and picked <= c]
                    assert len(options) >= 2, "the core asks for a choice the reference does not have"
                    assert legal[g] == sorted(((card, c) for c in options), key=lambda m: sorted(m[1]))
                    assert (mask[g] == _mask(set().union(*options) - picked, d)).all()
                    if obs is not None and lo + g < n_observed:
                        np.testing.assert_allclose(obs[g], observe(ref, pending=card, picked=picked), atol=1e-6)
                    actions[g] = min(cap - picked)
                decisions += 1
            info = core.step(rules, st, actions)
            for g, ref in enumerate(refs):
                if ref.done or not info.move_done[g]:
                    if not ref.done:
                        # A choice is pending: the reference must have several captures for this card.
                        card, _ = planned[g]
                        assert len([1 for c2, _ in ref.legal_moves() if c2 == card]) >= 2
                    continue
                card, cap = planned[g]
                out = ref.play(card, cap)
                assert info.card[g] == card and set(np.flatnonzero(info.capture[g]).tolist()) == set(out["capture"])
                assert info.scopa[g] == out["scopa"] and info.seat[g] == out["seat"]
                assert info.hand_over[g] == out["hand_over"]
                if out["hand_over"]:
                    side, left = out["leftover"]
                    assert info.leftover_side[g] == (-1 if side is None or not left else side)
                    assert set(np.flatnonzero(info.leftover[g]).tolist()) == set(left)
                    for s, pts in enumerate(out["hand_points"]):
                        assert info.hand_points[g, s].tolist() == [pts[k] for k in POINT_FIELDS], (g, s)
                    assert info.final_scores[g].tolist() == ref.scores
                assert info.match_over[g] == out["match_over"]
                if out["match_over"]:
                    assert info.winner[g] == out["winner"] == st.winner[g]
    return decisions


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_core_matches_reference(variant):
    assert run_differential(variant, 500, observed_games=100) > 0


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_core_matches_reference_10k(variant):
    assert run_differential(variant, 10_000, first_seed=1_000_000, batch=500, observed_games=1_000) > 0
