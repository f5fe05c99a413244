"""Differential tests: the batched core against the plain reference engine, move by move.

Both engines play the same seeded matches; at every decision a move is drawn uniformly from the reference's
legal moves and carried out in the core through the action interface (card, then capture picks). At every step
they must agree on: the observation of the seat to act (``observation.observe`` against ``reference.observe``), the
legal moves (the core's ``legal_move_lists`` / ``legal_moves``, its PLAY mask and its CHOOSE masks), whether a choice is
needed, the capture made, the scopa flag, hands/table/piles, leftovers, hand points, scores, dealer
rotation and the winner. Each match draws its moves from its own generator (seeded with the match's seed). The
default suite plays ``FAST_SEEDS`` per variant (5 to 12 matches, about 2,000 decisions; observations compared in the
first third) and checks that they took every rule path the variant has (``rule_paths``: capture choices, scopa,
leftover, next hand, a tie at the top playing on, the match's end, ace takes all, void deals, shared leads);
``-m slow`` plays 10,000 (observations compared in the first 1,000). Cirulla's variants (``CIRULLA_VARIANTS``)
play 12 matches each (matches to 51 are long: about 4,000 decisions per variant; 2,000 matches under ``-m slow``)
with their knock decisions, ``stop`` and table takes compared too (``run_cirulla_differential``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from scopa_env.engine import core, observation, state_moves
from scopa_env.oracle.reference import ReferenceGame, is_ace_sweep, observe
from scopa_env.rules import CIRULLA_VARIANTS, Rules, get_rules
from scopa_env.rules.scoring import POINT_FIELDS, point_fields
from tests.helpers import SCOPA_VARIANTS


def _mask(ids, d: int) -> np.ndarray:
    m = np.zeros(d, dtype=bool)
    m[list(ids)] = True
    return m


def run_differential(
    variant: str, seeds: Sequence[int], batch: int = 250, observed_games: int | None = None
) -> Counter[str]:
    """Play the matches of ``seeds`` on both engines (each match's moves drawn from its own generator, seeded with
    its seed, so a match plays the same whatever else is played with it); observations are compared in the first
    ``observed_games``. Returns how often each rule path was compared (``_tally``'s names, and ``decisions``)."""
    rules = get_rules(variant)
    d = rules.num_cards
    decisions = 0
    paths: Counter[str] = Counter()
    n_observed = len(seeds) if observed_games is None else observed_games
    for lo, st, refs, rngs in _batches(rules, seeds, batch):
        b = len(refs)
        paths.update("void deal" for ref in refs if ref.attempt > 0)
        planned: list[tuple[int, frozenset[int]] | None] = [None] * b
        while not all(r.done for r in refs):
            # Compare states and choose the next action for each game.
            mask = core.legal_action_mask(rules, st)
            legal = state_moves.legal_move_lists(rules, st)  # every game's legal_moves, enumerated together
            obs = observation.observe(rules, st) if lo < n_observed else None
            actions = np.zeros(b, dtype=np.int64)
            for g, ref in enumerate(refs):
                if not _live_alike(st, g, ref):
                    continue
                if st.phase[g] == core.Phase.PLAY:
                    _same_cards(st, g, ref)
                    assert st.scope[g].tolist() == ref.scope and st.scores[g].tolist() == ref.scores
                    moves = ref.legal_moves()
                    assert sorted(moves, key=lambda m: (m[0], sorted(m[1]))) == legal[g]
                    if decisions % 97 == 0:  # the one-game face lists the same moves
                        assert state_moves.legal_moves(rules, st, g) == legal[g]
                    assert (mask[g] == _mask({c for c, _ in moves}, d)).all()
                    if obs is not None and lo + g < n_observed:
                        np.testing.assert_allclose(obs[g], observe(ref), atol=1e-6)
                    planned[g] = moves[int(rngs[g].integers(len(moves)))]
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
                    paths["choice"] += 1
                decisions += 1
            info = core.step(rules, st, actions)
            for g, ref in enumerate(refs):
                if ref.done or not info.move_done[g]:
                    if not ref.done:
                        # A choice is pending: the reference must have several captures for this card.
                        card, _ = planned[g]
                        assert len([1 for c2, _ in ref.legal_moves() if c2 == card]) >= 2
                    continue
                paths.update(_tally(ref, _play_alike(ref, planned[g], st, info, g, POINT_FIELDS)))
    paths["decisions"] = decisions
    return paths


def _tally(ref: ReferenceGame, out: dict[str, Any]) -> list[str]:
    """The rule paths that the move whose result is ``out`` took (``ref`` is its game after the move)."""
    rules = ref.rules
    paths = ["scopa"] * out["scopa"]
    if out["capture"] and is_ace_sweep(rules, out["card"], out["capture"]):
        paths.append("ace takes all")
    if not out["hand_over"]:
        return paths
    side, left = out["leftover"]
    if left:
        paths.append("leftover to the last capturer" if side is not None else "leftover stays")
    points = out["hand_points"]
    if rules.shared_lead_scores and any(sum(p[k] > 0 for p in points) > 1 for k in ("carte", "denari", "primiera")):
        paths.append("shared lead")
    if out["match_over"]:
        paths.append("match over")
    else:
        paths.append("next hand")
        if max(ref.scores) >= rules.target:
            paths.append("tie at the top plays on")
        if ref.attempt > 0:
            paths.append("void deal")
    return paths


def _batches(
    rules: Rules, seeds: Sequence[int], batch: int
) -> Iterator[tuple[int, core.State, list[ReferenceGame], list[np.random.Generator]]]:
    """The matches of ``seeds``, ``batch`` at a time: (index of the first, the core's batch, the reference's games,
    each game's generator of random moves)."""
    for lo in range(0, len(seeds), batch):
        some = np.asarray(seeds[lo : lo + batch], dtype=np.int64)
        yield (
            lo,
            core.reset(rules, some),
            [ReferenceGame(rules, int(s)) for s in some],
            [np.random.default_rng(int(s)) for s in some],
        )


def _live_alike(st: core.State, g: int, ref: ReferenceGame) -> bool:
    """Whether the match goes on: game ``g`` of ``st`` and the reference game are over together, or both go on with
    the same seat to play and the same dealer."""
    assert bool(st.done[g]) == ref.done
    if ref.done:
        return False
    assert st.current[g] == ref.current and st.dealer[g] == ref.dealer
    return True


def _same_cards(st: core.State, g: int, ref: ReferenceGame) -> None:
    """Game ``g`` of ``st`` has the reference game's hands, table and piles."""
    d = st.table.shape[1]
    assert (st.hands[g] == np.array([_mask(h, d) for h in ref.hands])).all()
    assert (st.table[g] == _mask(ref.table, d)).all()
    assert (st.piles[g] == np.array([_mask(p, d) for p in ref.piles])).all()


def _play_alike(
    ref: ReferenceGame,
    move: tuple[int, frozenset[int]] | None,
    st: core.State,
    info: Any,
    g: int,
    fields: Sequence[str],
) -> dict[str, Any]:
    """Play ``move`` on the reference game ``ref`` and check that the core's step (its ``info``, game ``g`` of
    ``st``) did the same: card, capture, scopa, seat, the hand's end (leftover, hand points in ``fields``, scores)
    and the match's; returns the reference's result."""
    assert move is not None
    card, cap = move
    out = ref.play(card, cap)
    assert info.card[g] == card and set(np.flatnonzero(info.capture[g]).tolist()) == set(out["capture"])
    assert info.scopa[g] == out["scopa"] and info.seat[g] == out["seat"]
    assert info.hand_over[g] == out["hand_over"]
    if out["hand_over"]:
        side, left = out["leftover"]
        assert info.leftover_side[g] == (-1 if side is None or not left else side)
        assert set(np.flatnonzero(info.leftover[g]).tolist()) == set(left)
        for s, pts in enumerate(out["hand_points"]):
            assert info.hand_points[g, s].tolist() == [pts[k] for k in fields], (g, s)
        assert info.final_scores[g].tolist() == ref.scores
    assert info.match_over[g] == out["match_over"]
    if out["match_over"]:
        assert info.winner[g] == out["winner"] == st.winner[g]
    return out


FAST_SEEDS = {
    "classic": [*range(10), 24],
    "classic-15": [*range(8), 26],
    "classic-21": [*range(6), 115],
    "scopa-d-assi": [*range(10), 15],
    "scopa-a-quattro": [*range(10), 20],
    "scopone-scientifico": [*range(10), 28],
    "simple-2": [*range(10), 32, 37],
    "simple-3": [*range(8), 12, 37],
    "simple-4": [*range(6), 37],
    "simple-5": [*range(4), 112],
    "simple-6": [*range(4), 129],
    "simple-8": [*range(3), 19, 31],
    "simple-4-teams": [*range(8), 32, 37],
    "simple-6-teams": [*range(6), 22, 37],
}
"""The default suite's differential matches per variant: the first seeds (about 2,000 decisions), then a seed whose
match has a hand ending with the lead tied at or above the target (play goes on) and, under ``void_on_kings``, one
with a void deal re-dealt (the last one or two seeds; found by playing the reference alone with each seed's own
moves). ``test_core_matches_reference`` checks that every rule path of the variant (``rule_paths``) was compared.
The 10,000-match version runs under ``-m slow``."""


def rule_paths(rules: Rules) -> set[str]:
    """The names of ``_tally``'s rule paths that matches of ``rules`` can take (all but ``leftover stays``: a hand
    where nobody captures)."""
    paths = {"choice", "scopa", "leftover to the last capturer", "next hand", "match over", "tie at the top plays on"}
    paths |= {"ace takes all"} if rules.ace_takes_all else set()
    paths |= {"void deal"} if rules.void_on_kings else set()
    return paths | ({"shared lead"} if rules.shared_lead_scores else set())


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_core_matches_reference(variant):
    seeds = FAST_SEEDS[variant]
    paths = run_differential(variant, seeds, observed_games=len(seeds) // 3)
    missing = rule_paths(get_rules(variant)) - set(paths)
    assert not missing, f"{variant}: FAST_SEEDS compare no {sorted(missing)} (pick seeds that do)"


@pytest.mark.slow
@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_core_matches_reference_10k(variant):
    paths = run_differential(variant, range(1_000_000, 1_010_000), batch=500, observed_games=1_000)
    missing = rule_paths(get_rules(variant)) - set(paths)
    assert not missing, f"{variant}: 10,000 matches compare no {sorted(missing)}"


# ------------------------------------------------------------------------------------------------------- cirulla


def _cirulla_reference_ready() -> bool:
    return hasattr(ReferenceGame, "knock_options")


def run_cirulla_differential(
    variant: str, seeds: Sequence[int], batch: int = 100, observed_games: int | None = None
) -> tuple[int, int, int, int]:
    """``run_differential`` for a cirulla variant (``CIRULLA_VARIANTS``), knocks included: at every KNOCK decision
    both engines must agree on the seat, its options (the core's mask: ``stop``, ``knock-sum``, ``knock-tris``),
    the revealed cards, knock points and the initial-table take; the knock is drawn uniformly among no knock and the
    legal kinds. In the CHOOSE phase ``stop`` must be legal exactly when the picked cards are a capture inside
    another; a planned capture strictly inside another ends with ``stop``. Returns (decisions, knocks, stops,
    initial tables taken)."""
    from scopa_env.oracle.reference_scoring import point_keys

    rules = CIRULLA_VARIANTS[variant]
    d = rules.num_cards
    stop = core.stop_action(rules)
    kinds = [None, "sum", "tris"]
    fields = point_fields(rules)
    assert set(point_keys(rules)) == set(fields)
    decisions = knocks = stops = takes = 0
    n_observed = len(seeds) if observed_games is None else observed_games
    for lo, st, refs, rngs in _batches(rules, seeds, batch):
        b = len(refs)
        planned: list[tuple[int, frozenset[int]] | None] = [None] * b
        knock_of: list[str | None] = [None] * b
        for g, ref in enumerate(refs):
            assert st.table_take[g] == (ref.table_take["scope"] if ref.table_take else 0)
            takes += ref.table_take is not None
        while not all(r.done for r in refs):
            mask = core.legal_action_mask(rules, st)
            legal = state_moves.legal_move_lists(rules, st)
            obs = observation.observe(rules, st) if lo < n_observed else None
            actions = np.zeros(b, dtype=np.int64)
            chosen = np.zeros((b, d), dtype=bool)
            for g, ref in enumerate(refs):
                if not _live_alike(st, g, ref):
                    continue
                observed = obs is not None and lo + g < n_observed
                if st.phase[g] in (core.Phase.PLAY, core.Phase.KNOCK):
                    _same_cards(st, g, ref)
                    assert (st.revealed[g] == np.array([_mask(r, d) for r in ref.revealed])).all()
                    assert st.knock_points[g].tolist() == ref.knock_points
                    assert st.scope[g].tolist() == ref.scope and st.scores[g].tolist() == ref.scores
                    assert st.last_capturer[g] == (-1 if ref.last_capturer is None else ref.last_capturer)
                if ref.phase == "knock":
                    assert st.phase[g] == core.Phase.KNOCK and legal[g] == []
                    options = ref.knock_options()
                    assert mask[g, :d].sum() == 0
                    assert mask[g, d:].tolist() == [True, "sum" in options, "tris" in options]
                    if observed:
                        np.testing.assert_allclose(obs[g], observe(ref), atol=1e-6)
                    knock_of[g] = [None, *options][int(rngs[g].integers(len(options) + 1))]
                    actions[g] = stop + kinds.index(knock_of[g])
                elif st.phase[g] == core.Phase.PLAY:
                    assert ref.phase == "play"
                    moves = ref.legal_moves()
                    assert sorted(moves, key=lambda m: (m[0], sorted(m[1]))) == legal[g]
                    assert (mask[g, :d] == _mask({c for c, _ in moves}, d)).all() and not mask[g, d:].any()
                    if observed:
                        np.testing.assert_allclose(obs[g], observe(ref), atol=1e-6)
                    planned[g] = moves[int(rngs[g].integers(len(moves)))]
                    actions[g] = planned[g][0]
                else:
                    assert st.phase[g] == core.Phase.CHOOSE
                    card, cap = planned[g]
                    assert st.pending[g] == card
                    picked = set(np.flatnonzero(st.picked[g]).tolist())
                    assert picked <= cap
                    options = [c for c2, c in ref.legal_moves() if c2 == card and picked <= c]
                    assert len(options) >= 2, "the core asks for a choice the reference does not have"
                    assert legal[g] == sorted(((card, c) for c in options), key=lambda m: sorted(m[1]))
                    assert (mask[g, :d] == _mask(set().union(*options) - picked, d)).all()
                    assert mask[g, stop] == (frozenset(picked) in options) and not mask[g, stop + 1 :].any()
                    if observed:
                        np.testing.assert_allclose(obs[g], observe(ref, pending=card, picked=picked), atol=1e-6)
                    actions[g] = stop if picked == cap else min(cap - picked)
                    stops += int(picked == cap)
                    chosen[g] = _mask(cap, d)
                decisions += 1
            choosing = st.phase == core.Phase.CHOOSE  # move_actions carries out the planned captures, stop included
            assert (state_moves.move_actions(st, actions, chosen)[choosing] == actions[choosing]).all()
            knocking = st.phase == core.Phase.KNOCK
            info = core.step(rules, st, actions)
            for g, ref in enumerate(refs):
                if ref.done:
                    continue
                if knocking[g]:
                    out = ref.knock(knock_of[g])
                    assert info.seat[g] == out["seat"] and info.knock[g] == kinds.index(knock_of[g])
                    assert not info.move_done[g]
                    knocks += knock_of[g] is not None
                    continue
                if not info.move_done[g]:
                    card, _ = planned[g]
                    assert len([1 for c2, _ in ref.legal_moves() if c2 == card]) >= 2
                    continue
                out = _play_alike(ref, planned[g], st, info, g, fields)
                if out["hand_over"] and not ref.done:
                    assert info.new_hand[g]
                    assert info.table_take[g] == (ref.table_take["scope"] if ref.table_take else 0)
                    takes += ref.table_take is not None
    return decisions, knocks, stops, takes


_NO_CIRULLA_REFERENCE = "the reference engine has no cirulla yet (ReferenceGame.knock_options is missing)"


@pytest.mark.skipif(not _cirulla_reference_ready(), reason=_NO_CIRULLA_REFERENCE)
@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_core_matches_reference_cirulla(variant):
    decisions, knocks, stops, takes = run_cirulla_differential(variant, range(12), observed_games=4)
    assert decisions > 0 and knocks > 0 and stops > 0 and takes > 0


@pytest.mark.slow
@pytest.mark.skipif(not _cirulla_reference_ready(), reason=_NO_CIRULLA_REFERENCE)
@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_core_matches_reference_cirulla_2k(variant):
    assert run_cirulla_differential(variant, range(1_000_000, 1_002_000), batch=250, observed_games=300)[0] > 0
