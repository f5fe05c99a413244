"""Imitation warm start: teacher data is consistent, and fitting it makes the policy copy the teacher."""

from __future__ import annotations

import numpy as np
import torch

from agents.imitation import collect_teacher_data, pretrain_policy
from scopa_env import core


def test_teacher_data_is_consistent():
    data = collect_teacher_data("classic", "greedy", num_hands=20, seed=3, batch=8)
    n = len(data)
    assert n >= 20 * 36  # at least one decision per card played
    assert data.obs.shape == (n, core.observation_size("classic")) and data.mask.shape == (n, 40)
    assert data.mask[np.arange(n), data.action].all(), "the teacher only plays legal actions"
    # two sides, zero-sum margins: the returns of both sides of a hand cancel out on average
    assert abs(float(data.ret.mean())) < 1.5 and data.ret.std() > 0


def test_pretraining_copies_the_teacher():
    from sb3_contrib import MaskablePPO

    from scopa_env.gym import ScopaVecEnv

    torch.manual_seed(0)
    data = collect_teacher_data("classic", "greedy", num_hands=60, seed=0)
    venv = ScopaVecEnv("classic", num_envs=4, opponents="random", episode="hand", reward="points", seed=0)
    model = MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [32, 32]}, device="cpu", seed=0)
    before = pretrain_policy(model.policy, data, epochs=1, learning_rate=0.0)  # lr 0: measures the start
    after = pretrain_policy(model.policy, data, epochs=8, batch_size=512)
    assert after["accuracy"] > before["accuracy"] + 0.08  # many decisions have 1-3 legal actions
    assert after["policy_loss"] < before["policy_loss"]
