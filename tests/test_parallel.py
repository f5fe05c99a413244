"""The parallel env (issue 20, item 2): PettingZoo's parallel API and seed tests for every variant, the same games
as the AEC env, masks in the infos (an AgileRL-style loop), illegal actions, PettingZoo's converters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import parallel_to_aec

from scopa_env import scopa_v0
from scopa_env.engine import core
from scopa_env.rules import VARIANTS, get_rules

VARIANT_NAMES = list(VARIANTS)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_parallel_api_and_seed_tests(variant: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning of the API test fails
        parallel_api_test(scopa_v0.parallel_env(variant=variant, max_hands=2), num_cycles=400)
        parallel_seed_test(lambda: scopa_v0.parallel_env(variant=variant))


def _masks(obs: dict) -> dict[str, np.ndarray]:
    return {a: o["action_mask"] for a, o in obs.items()}


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "simple-6-teams"])
@pytest.mark.parametrize("reward", ["match", "points"])
def test_same_game_as_the_aec_env(variant: str, reward: str) -> None:
    par = scopa_v0.parallel_env(variant=variant, reward=reward, max_hands=3)
    aec = scopa_v0.raw_env(variant=variant, reward=reward, max_hands=3)
    obs, infos = par.reset(seed=5)
    aec.reset(seed=5)
    rng = np.random.default_rng(0)
    while par.agents:
        actor = aec.agent_selection
        for a in par.agents:
            want = aec.observe(a)
            assert np.array_equal(obs[a]["observation"], want["observation"])
            assert np.array_equal(obs[a]["action_mask"], want["action_mask"])
            assert np.array_equal(infos[a]["action_mask"], want["action_mask"])
            assert infos[a]["acting"] == (a == actor)
        legal = np.flatnonzero(obs[actor]["action_mask"])
        action = int(rng.choice(legal))
        others = {a: int(rng.integers(0, 40)) for a in par.agents if a != actor}  # ignored
        obs, rewards, terms, _truncs, infos = par.step({actor: action, **others})
        aec.step(action)
        for a in rewards:
            assert rewards[a] == aec.rewards[a]
        assert terms == {a: aec.terminations[a] for a in terms}
    assert all(aec.terminations.values()) or all(aec.truncations.values())
    assert par.agents == [] and all(not o["action_mask"].any() for o in obs.values())


def test_agilerl_style_loop_reads_masks_from_infos() -> None:
    """A loop that only knows ``infos[agent]["action_mask"]`` (AgileRL's convention), no SuperSuit."""
    env = scopa_v0.parallel_env(variant="scopa-a-quattro", reward="points")
    rng = np.random.default_rng(1)
    _, infos = env.reset(seed=0)
    steps, score = 0, dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {}
        for agent in env.agents:
            mask = infos[agent]["action_mask"]
            actions[agent] = int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0
        _obs, rewards, _terms, _truncs, infos = env.step(actions)
        for agent, r in rewards.items():
            score[agent] += r
        steps += 1
    assert steps > 40
    assert score["player_0"] == score["player_2"] == -score["player_1"] == -score["player_3"]


def test_illegal_action_terminates_or_raises() -> None:
    env = scopa_v0.parallel_env(variant="classic")
    obs, infos = env.reset(seed=2)
    actor = env.acting_agent
    bad = int(np.flatnonzero(obs[actor]["action_mask"] == 0)[0])
    obs, rewards, terms, _truncs, infos = env.step({actor: bad})
    assert rewards[actor] == -1.0 and sum(rewards.values()) == -1.0
    assert all(terms.values()) and env.agents == [] and infos[actor]["illegal_action"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step({actor: 0})
    strict = scopa_v0.parallel_env(variant="classic", illegal="raise")
    strict.reset(seed=2)
    with pytest.raises(core.IllegalActionError, match="legal actions"):
        strict.step({actor: bad})
    with pytest.raises(ValueError, match="no entry for"):
        strict.step({})
    with pytest.raises(TypeError, match="card id"):
        strict.step({actor: "7d"})
    with pytest.raises(ValueError, match="illegal must be"):
        scopa_v0.parallel_env(illegal="ignore")


def test_parallel_to_aec_plays_a_game() -> None:
    aec = parallel_to_aec(scopa_v0.parallel_env(variant="classic", max_hands=1))
    aec.reset(seed=4)
    rng = np.random.default_rng(0)
    for _agent in aec.agent_iter():
        obs, _reward, term, trunc, _info = aec.last()
        mask = obs["action_mask"]
        aec.step(None if term or trunc else (int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0))
    assert aec.agents == []


def test_render_and_no_hidden_state() -> None:
    env = scopa_v0.parallel_env(variant="classic", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text
    with pytest.raises(NotImplementedError, match="hidden"):
        env.state()
    assert get_rules("classic") == env.rules
