"""Imitation warm start: teacher data is consistent, and fitting it makes the policy copy the teacher."""

from __future__ import annotations

import numpy as np
import torch

from agents.training.imitation import collect_teacher_data, pretrain_policy
from scopa_env.engine import core, observation


def test_teacher_data_is_consistent():
    data = collect_teacher_data("classic", "greedy", num_hands=20, seed=3, batch=8)
    n = len(data)
    assert n >= 20 * 36  # at least one decision per card played
    assert data.obs.shape == (n, observation.observation_size("classic")) and data.mask.shape == (n, 40)
    assert data.mask[np.arange(n), data.action].all(), "the teacher only plays legal actions"
    # two sides, zero-sum margins: the returns of both sides of a hand cancel out on average
    assert abs(float(data.ret.mean())) < 1.5 and data.ret.std() > 0


def test_pretraining_copies_the_teacher():
    from sb3_contrib import MaskablePPO

    from scopa_env.envs.gym import ScopaVecEnv

    torch.manual_seed(0)
    data = collect_teacher_data("classic", "greedy", num_hands=60, seed=0)
    venv = ScopaVecEnv("classic", num_envs=4, opponents="random", episode="hand", reward="points", seed=0)
    model = MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [32, 32]}, device="cpu", seed=0)
    before = pretrain_policy(model.policy, data, epochs=1, learning_rate=0.0)  # lr 0: measures the start
    after = pretrain_policy(model.policy, data, epochs=8, batch_size=512)
    assert after["accuracy"] > before["accuracy"] + 0.08  # many decisions have 1-3 legal actions
    assert after["policy_loss"] < before["policy_loss"]


def test_distillation_pulls_the_actor_toward_the_solver_and_leaves_the_critic():
    from sb3_contrib import MaskablePPO

    from agents.base import make_agent
    from agents.search.endgame import open_endgame_rows, solve_open
    from agents.training.imitation import distill_actions
    from scopa_env.envs.gym import ScopaVecEnv
    from scopa_env.games.policy import ActBatch
    from scopa_env.rules import get_rules

    rules = get_rules("classic")
    state = core.reset(rules, np.arange(256, dtype=np.uint64))
    greedy = make_agent("greedy", rules, seed=0)
    chunks = []
    for _ in range(40):  # greedy self-play to the end of the first hand, labelling every open end game
        games = np.arange(256)
        rows = open_endgame_rows(rules, state, games, 8)
        obs, mask = observation.observe(rules, state), core.legal_action_mask(rules, state)
        if rows.size:
            chunks.append((obs[rows], mask[rows], solve_open(rules, state, rows)))
        core.step(rules, state, greedy.act(ActBatch(rules, obs, mask, state, games)))
    obs, mask, act = (np.concatenate([c[i] for c in chunks]) for i in range(3))
    assert len(act) > 500 and mask[np.arange(len(act)), act].all()
    torch.manual_seed(0)
    venv = ScopaVecEnv("classic", num_envs=4, opponents="random", episode="hand", reward="points", seed=0)
    model = MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [64, 64]}, device="cpu", seed=0)
    critic = {
        k: v.clone() for k, v in model.policy.state_dict().items() if k.startswith(("value_net", "mlp_extractor.value"))
    }
    first = distill_actions(model.policy, obs, mask, act, batch_size=256, seed=0)
    for i in range(15):
        last = distill_actions(model.policy, obs, mask, act, batch_size=256, seed=i + 1)
    assert last["loss"] < 0.8 * first["loss"] and last["accuracy"] > first["accuracy"] + 0.08, (first, last)
    state_dict = model.policy.state_dict()
    assert all(torch.equal(v, state_dict[k]) for k, v in critic.items())  # only the actor moved
