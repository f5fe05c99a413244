"""Cirulla in the envs: knocks and ``stop`` as actions, illegal knocks refused with the legal ones named, the learner
able to knock, and the vector env's masks sized ``rules.num_actions``. (The PettingZoo api/seed tests and Gymnasium's
check_env run over every variant in test_aec.py, test_parallel.py, test_gym.py and test_registration.py.)"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest

import scopa_env  # noqa: F401  (registers the ids)
from scopa_env import scopa_v0
from scopa_env.engine import core, observation
from scopa_env.envs.gym import ScopaEnv, ScopaVecEnv
from scopa_env.rules import get_rules

CIRULLA = get_rules("cirulla")
STOP, KNOCK_SUM, KNOCK_TRIS = 40, 41, 42


def _to_knock(env: Any, seed: int) -> np.ndarray:
    """Play the lowest legal action until some agent faces a KNOCK decision; its mask."""
    env.reset(seed=seed)
    for _ in range(2000):
        mask = env.observe(env.agent_selection)["action_mask"]
        if mask[STOP] and (mask[KNOCK_SUM] or mask[KNOCK_TRIS]) and not mask[:STOP].any():
            return mask
        env.step(int(np.flatnonzero(mask)[0]))
    raise AssertionError("no knock decision in 2000 steps")


def test_aec_refuses_an_illegal_knock_naming_the_legal_actions() -> None:
    env = scopa_v0.raw_env(variant="cirulla")
    assert env.action_space("player_0").n == 43 and env.observation_space("player_0")["action_mask"].shape == (43,)
    for seed in range(40):
        mask = _to_knock(env, seed)
        bad = KNOCK_TRIS if not mask[KNOCK_TRIS] else KNOCK_SUM if not mask[KNOCK_SUM] else None
        if bad is None:
            continue
        with pytest.raises(
            core.IllegalActionError, match=r"game 0 \(cirulla\).*knock.*is illegal.*phase KNOCK.*40 \(stop\)"
        ):
            env.step(bad)
        with pytest.raises(core.IllegalActionError, match="not a card id"):
            env.step(43)
        env.step(STOP)  # the refused actions changed nothing: the decision is still open
        break
    else:
        raise AssertionError("no position with an illegal knock found")


def test_wrapped_aec_ends_the_match_on_an_illegal_knock() -> None:
    env = scopa_v0.env(variant="cirulla")
    for seed in range(40):
        mask = _to_knock(env, seed)
        if not mask[KNOCK_TRIS]:
            break
    agent = env.agent_selection
    env.step(KNOCK_TRIS)  # PettingZoo's rule for classic games: the match ends, -1 for the offender
    assert all(env.terminations.values()) and env.rewards[agent] == -1


def test_the_gym_learner_knocks_and_stops() -> None:
    env = gymnasium.make("scopa/Cirulla-v0", opponents="greedy", episode="hand", reward="points")
    obs, _ = env.reset(seed=1)
    assert env.action_space.n == 43 and obs.shape == (observation.observation_size(CIRULLA),) == (429,)
    seen: set[int] = set()
    rng = np.random.default_rng(0)
    for _ in range(30):
        done = False
        while not done:
            mask = env.unwrapped.action_masks()
            assert mask.shape == (43,) and mask.any()
            legal = np.flatnonzero(mask)
            knocks = [a for a in legal if a in (KNOCK_SUM, KNOCK_TRIS)]
            action = int(knocks[0]) if knocks else int(rng.choice(legal))
            seen.add(action)
            obs, _, term, trunc, _ = env.step(action)
            assert env.observation_space.contains(obs)
            done = term or trunc
        env.reset()
    assert KNOCK_SUM in seen and STOP in seen


def test_vector_env_plays_cirulla_4_with_43_actions() -> None:
    venv = ScopaVecEnv("cirulla-4", 6, opponents="random", partner="self", seed=2, episode="hand", reward="points")
    obs = venv.reset()
    assert obs.shape == (6, observation.observation_size("cirulla-4"))
    ends = 0
    for _ in range(200):
        masks = venv.action_masks()
        assert masks.shape == (6, 43) and masks.any(axis=1).all()
        keys = np.where(masks, np.random.default_rng(ends).random(masks.shape), -1.0)
        obs, _, dones, _ = venv.step(keys.argmax(axis=1))
        ends += int(dones.sum())
    assert ends > 0
    assert isinstance(ScopaEnv("cirulla-3").games, type(venv.games))  # the batched engine, one game
