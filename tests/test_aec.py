"""The PettingZoo AEC env: PettingZoo's API and seed tests for every variant, rewards, rendering, seeding."""

from __future__ import annotations

import re
import warnings
from typing import Literal

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test, seed_test

import scopa_env.envs.aec
from scopa_env import scopa_v0
from scopa_env.engine import core, observation
from scopa_env.rules import VARIANTS, get_rules
from scopa_env.rules.shuffle import derive_seed

VARIANT_NAMES = list(VARIANTS)
TWO_SIDED = [v for v in VARIANT_NAMES if get_rules(v).num_sides == 2]
MULTI_SIDED = [v for v in VARIANT_NAMES if get_rules(v).num_sides > 2]

# api_test warns about every dict observation unless the env is one of PettingZoo's own classic games, which use
# the same {"observation", "action_mask"} convention; any other warning fails the test.
EXPECTED_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
)


def play_random(env: scopa_v0.raw_env, seed: int, rng: np.random.Generator) -> dict[str, list[float]]:
    """Play one game with random legal actions; every agent's rewards as seen by ``last()``, in order."""
    env.reset(seed=seed)
    seen: dict[str, list[float]] = {a: [] for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        seen[agent].append(reward)
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return seen


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_pettingzoo_api_test(variant: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(scopa_v0.env(variant=variant), num_cycles=200)
    unexpected = {str(w.message) for w in caught} - set(EXPECTED_WARNINGS)
    assert not unexpected


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_pettingzoo_seed_test(variant: str) -> None:
    seed_test(lambda: scopa_v0.env(variant=variant), num_cycles=200)


def test_agents_spaces_and_raw_env() -> None:
    env = scopa_v0.env(variant="scopone-scientifico")
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    assert env.action_space("player_0") == spaces.Discrete(40)
    size = observation.observation_size("scopone-scientifico")
    assert env.observation_space("player_3")["observation"].shape == (size,)
    assert env.observation_space("player_3")["action_mask"].dtype == np.int8
    assert isinstance(env.unwrapped, scopa_v0.raw_env)
    assert str(env.unwrapped) == "scopa_v0"
    assert scopa_v0.raw_env(variant="simple-8").action_space("player_7") == spaces.Discrete(52)


def test_mask_is_the_cores_for_the_agent_to_act_and_zero_for_the_others() -> None:
    env = scopa_v0.raw_env(variant="scopa-a-quattro")
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(60):
        assert env._state is not None
        legal = core.legal_action_mask(env.rules, env._state)[0]
        for agent in env.agents:
            mask = env.observe(agent)["action_mask"]
            expected = legal if agent == env.agent_selection else np.zeros_like(legal)
            assert np.array_equal(mask.astype(bool), expected)
        env.step(int(rng.choice(np.flatnonzero(legal))))


@pytest.mark.parametrize("variant", TWO_SIDED)
@pytest.mark.parametrize("reward", ["match", "points"])
def test_rewards_are_zero_sum_between_the_two_sides_and_every_seat_gets_its_final_reward(
    variant: str, reward: Literal["match", "points"]
) -> None:
    rules = get_rules(variant)
    env = scopa_v0.raw_env(variant=variant, reward=reward)
    rng = np.random.default_rng(1)
    for seed in range(2):
        env.reset(seed=seed)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        final: dict[str, float] = {}
        for agent in env.agent_iter():
            obs, cumulative, terminated, truncated, _ = env.last()
            if terminated or truncated:
                final[agent] = cumulative
                env.step(None)
                continue
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            step_rewards = [env.rewards[a] for a in env.possible_agents]
            by_side = [step_rewards[side[0]] for side in rules.sides]
            for seats in rules.sides:  # teammates share their side's reward
                assert all(step_rewards[s] == step_rewards[seats[0]] for s in seats)
            assert sum(by_side) == 0
            for a in env.possible_agents:
                totals[a] += env.rewards[a]
        assert env._state is not None
        assert set(final) == set(env.possible_agents)  # every seat passed through its terminal step
        winner = int(env._state.winner[0])
        for agent, total in totals.items():
            side = rules.seat_side[env.agent_name_mapping[agent]]
            if reward == "match":
                assert total == (1.0 if side == winner else -1.0)
                assert final[agent] == total  # the only reward of a match, seen by every seat at the end
            else:  # the sum of hand margins is the final score difference
                scores = env._state.scores[0]
                assert total == float(scores[side] - scores[1 - side])


@pytest.mark.parametrize("variant", MULTI_SIDED)
def test_match_reward_with_more_than_two_sides(variant: str) -> None:
    rules = get_rules(variant)
    env = scopa_v0.raw_env(variant=variant)
    seen = play_random(env, seed=2, rng=np.random.default_rng(2))
    assert env._state is not None
    winner = int(env._state.winner[0])
    assert winner >= 0
    for agent, rewards in seen.items():
        side = rules.seat_side[env.agent_name_mapping[agent]]
        assert sum(rewards) == (1.0 if side == winner else -1.0)
        assert rewards[-1] == sum(rewards)  # paid at the end, to every seat


def test_points_rewards_are_paid_at_the_end_of_each_hand_to_every_seat() -> None:
    env = scopa_v0.raw_env(variant="simple-3", reward="points")
    env.reset(seed=9)
    rng = np.random.default_rng(9)
    paid = 0
    while not any(env.terminations.values()):
        hands_before = env.hands_played
        obs = env.observe(env.agent_selection)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        values = sorted(env.rewards[a] for a in env.possible_agents)
        if env.hands_played == hands_before:
            assert values == [0.0, 0.0, 0.0]  # nothing is paid during a hand
            continue
        assert values[-1] >= 0  # the leader's margin over the best other side is never negative
        assert values[-2] <= 0  # and at most one side is strictly ahead
        paid += values[-1] > 0
    assert env.hands_played >= 2 and paid >= 1


def test_truncation_after_max_hands() -> None:
    env = scopa_v0.raw_env(variant="classic", max_hands=1)
    seen = play_random(env, seed=0, rng=np.random.default_rng(0))
    assert env.hands_played == 1
    assert all(sum(r) == 0.0 for r in seen.values())  # no winner, so no match reward
    assert all(env.truncations.values())
    for agent in env.possible_agents:  # the match is over: every mask is all zeros, the selected agent's too
        assert not env.observe(agent)["action_mask"].any()
    with pytest.raises(ValueError, match="max_hands"):
        scopa_v0.raw_env(max_hands=0)


def test_seeding_plays_the_game_of_the_seed_and_then_the_seed_chain() -> None:
    env = scopa_v0.raw_env()
    env.reset(seed=123)
    first = env.observe(env.agent_selection)["observation"]
    assert env._state is not None and int(env._state.seed[0]) == 123
    env.reset()
    assert int(env._state.seed[0]) == int(derive_seed(np.array([123], dtype=np.uint64))[0])
    env.reset(seed=123)
    assert np.array_equal(env.observe(env.agent_selection)["observation"], first)
    state = core.reset("classic", [123])
    assert np.array_equal(first, observation.observe("classic", state)[0])
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)


def test_illegal_moves_end_the_wrapped_game_and_raise_in_the_raw_env() -> None:
    env = scopa_v0.env()
    env.reset(seed=0)
    agent = env.agent_selection
    illegal = int(np.flatnonzero(env.observe(agent)["action_mask"] == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards[agent] == -1
    raw = scopa_v0.raw_env()
    raw.reset(seed=0)
    with pytest.raises(core.IllegalActionError, match="legal actions"):
        raw.step(illegal)


def test_render_ansi_and_human(capsys: pytest.CaptureFixture[str]) -> None:
    env = scopa_v0.env(render_mode="ansi")
    env.reset(seed=1)
    text = env.render()
    assert isinstance(text, str)
    assert "TABLE" in text and "scores" in text and "(you) *to act*" in text
    assert any(symbol in text for symbol in "♦♥♠♣")
    human = scopa_v0.env(render_mode="human")
    human.reset(seed=1)
    mask = human.observe(human.agent_selection)["action_mask"]
    human.step(int(np.flatnonzero(mask)[0]))  # renders after every step
    assert "TABLE" in capsys.readouterr().out
    with pytest.raises(ValueError, match="render_mode"):
        scopa_v0.raw_env(render_mode="rgb_array")  # type: ignore[arg-type]


def test_bad_arguments_say_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="'match', 'points'"):
        scopa_v0.raw_env(reward="score")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="known variants"):
        scopa_v0.raw_env(variant="briscola")


def test_docstring_observation_table_matches_the_core_layout() -> None:
    """The module docstring's index table for ``classic`` is the core's layout."""
    doc = scopa_env.envs.aec.__doc__
    assert doc is not None
    rows = re.findall(r"^\| (\w+) \| [^|]+ \| (\d+)(?:-(\d+))? \|", doc, flags=re.MULTILINE)
    table = [(name, int(lo), int(hi or lo) + 1) for name, lo, hi in rows if name != "actions"]
    layout = [(name, start, stop) for name, start, stop, _ in observation.observation_layout("classic")]
    assert table == layout


def test_raw_env_refuses_actions_that_are_not_card_ids() -> None:
    """``step(24.7)`` used to play card 24 and ``step("24")`` was accepted: only integers are card ids."""
    env = scopa_v0.raw_env()
    env.reset(seed=0)
    legal = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])
    for bad in (legal + 0.7, float(legal), str(legal), True, np.float64(legal), [legal], np.array([legal])):
        with pytest.raises(TypeError, match="must be a card id"):
            env.step(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="still playing"):
        env.step(None)
    for bad in (40, -1, 2**70, np.uint64(2**64 - 1)):
        with pytest.raises(core.IllegalActionError, match="not a card id"):
            env.step(bad)  # type: ignore[arg-type]
    assert env.observe(env.agent_selection)["action_mask"][legal]  # nothing was played
    env.step(np.array(legal))  # a 0-d integer array is an integer
    env.reset(seed=0)
    env.step(np.int8(legal))
    wrapped = scopa_v0.env()
    wrapped.reset(seed=0)
    with pytest.raises(TypeError, match="must be a card id"):
        wrapped.step(legal + 0.7)  # type: ignore[arg-type]
    with pytest.raises(core.IllegalActionError, match="not a card id"):
        wrapped.step(99)
    wrapped.step(legal)


def test_raw_env_step_before_reset_and_after_the_match_says_what_to_do() -> None:
    env = scopa_v0.raw_env()
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        env.step(0)  # was an AttributeError
    play_random(env, seed=1, rng=np.random.default_rng(1))
    assert env.agents == []
    for action in (0, None):
        with pytest.raises(RuntimeError, match=r"match is over.*reset\(\)"):
            env.step(action)  # was KeyError: 'player_0'
    with pytest.raises(ValueError, match="unknown agent 'player_7'; the agents are player_0, player_1"):
        env.observe("player_7")
    env.reset(seed=1)  # and the env plays again
    assert env.agents == env.possible_agents
