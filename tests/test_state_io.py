"""State save / restore (issue 20, item 6): a game to JSON and back on every variant, continuing a restored game
like the original, batches from saved games and from a record's move prefix, clear errors for bad saves."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from agents.cli.record import play_random_records
from scopa_env import scopa_v0
from scopa_env.engine import core
from scopa_env.records.state_io import (
    StateFormatError,
    state_from_dict,
    state_from_json,
    state_from_record,
    state_to_dict,
    state_to_json,
)
from scopa_env.rules import VARIANTS, get_rules
from tests.helpers import play_on_alike, random_steps, same_state

VARIANT_NAMES = list(VARIANTS)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_round_trip_and_continue_identically(variant: str) -> None:
    rules = get_rules(variant)
    rng = np.random.default_rng(0)
    state = core.reset(rules, np.arange(4, dtype=np.uint64) + 100)
    random_steps(variant, state, int(rng.integers(20, 60)), rng)  # mid-game, some in the CHOOSE phase maybe
    texts = [state_to_json(rules, state, g) for g in range(4)]
    restored = state_from_json(texts, rules)
    same_state(restored, state)
    for g in range(4):
        same_state(state_from_json(texts[g]), state.take([g]))
    play_on_alike(rules, state, restored, rng, 300)  # continuing both with the same actions changes nothing
    same_state(restored, state)


def test_choose_phase_and_finished_games_round_trip() -> None:
    rules = get_rules("classic")
    state = core.reset(rules, np.arange(64, dtype=np.uint64))
    rng = np.random.default_rng(1)
    seen = set()
    for step in range(1500):
        for g in range(64):
            seen.add(core.Phase(int(state.phase[g])).name)
            if state.phase[g] != core.Phase.PLAY and (step % 5 == 0 or state.phase[g] == core.Phase.CHOOSE):
                same_state(state_from_json(state_to_json(rules, state, g)), state.take([g]))
        if state.done.all():
            break
        random_steps("classic", state, 1, rng)
    assert {"PLAY", "CHOOSE", "DONE"} <= seen


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "simple-6-teams"])
def test_aec_env_starts_from_a_saved_position(variant: str) -> None:
    rng = np.random.default_rng(2)
    a = scopa_v0.raw_env(variant=variant, reward="points")
    a.reset(seed=9)
    for _ in range(25):
        a.step(int(rng.choice(np.flatnonzero(a.observe(a.agent_selection)["action_mask"]))))
    saved = state_to_json(variant, a._state)
    b = scopa_v0.raw_env(variant=variant, reward="points")
    b.reset(options={"state": saved})
    assert b.agent_selection == a.agent_selection
    while a.agents:
        agent = a.agent_selection
        assert b.agent_selection == agent
        for x in a.possible_agents:
            oa, ob = a.observe(x), b.observe(x)
            assert np.array_equal(oa["observation"], ob["observation"])
            assert np.array_equal(oa["action_mask"], ob["action_mask"])
        assert a.rewards == b.rewards and a.terminations == b.terminations
        mask = a.observe(agent)["action_mask"]
        action = None if a.terminations[agent] or a.truncations[agent] else int(rng.choice(np.flatnonzero(mask)))
        a.step(action)
        b.step(action)
    a.reset()
    b.reset()  # the next game of the same seed chain
    assert np.array_equal(a.observe("player_0")["observation"], b.observe("player_0")["observation"])
    par = scopa_v0.parallel_env(variant=variant)
    obs, _ = par.reset(options={"state": saved})
    assert par.acting_agent is not None and obs[par.acting_agent]["action_mask"].any()


def test_aec_reset_refuses_bad_options() -> None:
    env = scopa_v0.raw_env(variant="classic")
    state = core.reset("classic", [5])
    with pytest.raises(ValueError, match="both a seed"):
        env.reset(seed=1, options={"state": state})
    with pytest.raises(StateFormatError, match="'scopa-d-assi' game"):
        env.reset(options={"state": state_to_json("scopa-d-assi", core.reset("scopa-d-assi", [1]))})
    with pytest.raises(ValueError, match="one game"):
        env.reset(options={"state": core.reset("classic", [1, 2])})
    env.reset(options={"state": state})  # a core.State is copied, not shared
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    same_state(state, core.reset("classic", [5]))
    env.reset(seed=0, options={"options": 1})  # other keys are ignored (PettingZoo's API test passes one)


def test_record_prefix() -> None:
    rules = get_rules("scopa-a-quattro")
    rec = next(iter(play_random_records(rules, 1, 0)))
    total = sum(len(h["moves"]) for h in rec["hands"])
    end = state_from_record(json.dumps(rec))
    assert end.done[0] and int(end.winner[0]) == rec["winner"]
    assert end.scores[0].tolist() == rec["hands"][-1]["scores"]
    first = len(rec["hands"][0]["moves"])
    after_hand = state_from_record(rec, moves=first)
    assert int(after_hand.hand_no[0]) == 1 and after_hand.scores[0].tolist() == rec["hands"][0]["scores"]
    assert state_from_record(rec, moves=0).hand_no[0] == 0
    same_state(state_from_record(rec, moves=0), core.reset(rules, [rec["seed"]]))
    mid = state_from_record(rec, moves=7)
    same_state(state_from_json(state_to_json(rules, mid)), mid)  # a record prefix saves like any position
    with pytest.raises(StateFormatError, match=f"0..{total}"):
        state_from_record(rec, moves=total + 1)
    bad = copy.deepcopy(rec)
    bad["hands"][0]["moves"][3]["seat"] = (bad["hands"][0]["moves"][3]["seat"] + 1) % 4
    with pytest.raises(StateFormatError, match="hand 0, move 3: seat"):
        state_from_record(bad, moves=10)
    bad = copy.deepcopy(rec)
    bad["seed"] = rec["seed"] + 1
    with pytest.raises(StateFormatError, match="record hand 0"):
        state_from_record(bad, moves=5)


def _saved(**changes: object) -> dict:
    state = core.reset("classic", [3])
    random_steps("classic", state, 5, np.random.default_rng(0))
    d = state_to_dict("classic", state)
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"variant": "cirulla"}, "not the key of the 'cirulla' rules"),  # cirulla loads now: a classic save is refused
        ({"variant": "classic-15"}, "rules_key"),
        ({"format": "other"}, "not a saved Scopa game"),
        ({"version": 99}, "version 99"),
        ({"extra": 1}, "unknown keys \\['extra'\\]"),
        ({"current": 2}, "'current' must be an integer 0..1"),
        ({"seed": -1}, "'seed'"),
        ({"phase": "BIDDING"}, "'phase' must be one of"),
        ({"table": ["Zz"]}, "'table'"),
        ({"stock_pos": 4}, "does not match deal"),
        ({"pending": "7d"}, "7d"),
        ({"winner": 0}, "'winner'"),
        ({"scores": [1]}, "'scores' must be a list of 2"),
        ({"scope": [True, 0]}, "'scope'"),
        ({"hands": [[], []]}, "is nowhere|no legal action"),
    ],
)
def test_bad_saves_are_refused_with_the_reason(changes: dict, message: str) -> None:
    with pytest.raises(StateFormatError, match=message):
        state_from_dict(_saved(**changes))


def test_bad_card_sets_and_inputs() -> None:
    d = _saved()
    card = d["deck"][-1]  # a stock card
    d2 = copy.deepcopy(d)
    d2["table"] = d2["table"] + [card]
    with pytest.raises(StateFormatError, match=f"card {card} is both in table and in the stock"):
        state_from_dict(d2)
    d3 = copy.deepcopy(d)
    seat = next(i for i, h in enumerate(d3["hands"]) if h)
    d3["hands"][seat] = d3["hands"][seat] + d3["hands"][seat][:1]
    with pytest.raises(StateFormatError, match="twice"):
        state_from_dict(d3)
    d4 = copy.deepcopy(d)
    d4["deck"] = d4["deck"][:-1]
    with pytest.raises(StateFormatError, match="all 40 cards"):
        state_from_dict(d4)
    with pytest.raises(StateFormatError, match="'simple-2' was expected"):
        state_from_json(json.dumps(d), "simple-2")
    with pytest.raises(StateFormatError, match="must be JSON"):
        state_from_json("{not json")
    with pytest.raises(StateFormatError, match="saved game 1"):
        state_from_json([d, {**d, "dealer": 7}])
    with pytest.raises(StateFormatError, match="empty list"):
        state_from_json([])
    with pytest.raises(ValueError, match="not started under the 'simple-2' rules"):
        state_to_json("simple-2", core.reset("classic", [1]))
