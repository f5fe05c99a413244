"""Warm start by imitation: clone a teacher agent's decisions into a MaskablePPO policy before self-play.

The teacher (e.g. ``expert``) plays every seat of many games on the batched core; each decision gives one
example ``(observation, legal mask, teacher action, return)``, where the return is the hand's points margin of the
acting seat's side (the quantity ``train.py`` rewards with ``reward="points"``, ``episode="hand"``, gamma 1).
The policy's actor is fitted by cross-entropy on the masked logits and its critic by mean squared error on the
returns, so PPO starts from the teacher's play with a matching value function instead of from random play.

    data = collect_teacher_data("classic", "expert", num_hands=20_000, seed=0)
    losses = pretrain_policy(model.policy, data, epochs=3)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from agents.base import ActBatch, make_agent
from scopa_env import core
from scopa_env.rules import Rules, get_rules

__all__ = ["TeacherData", "collect_teacher_data", "pretrain_policy"]


@dataclass
class TeacherData:
    """Teacher decisions, one row each."""

    obs: npt.NDArray[np.float32]
    """(n, obs_size) observation of the acting seat."""
    mask: npt.NDArray[np.bool_]
    """(n, num_cards) legal actions."""
    action: npt.NDArray[np.int64]
    """(n,) the teacher's action."""
    ret: npt.NDArray[np.float32]
    """(n,) hand points margin of the acting seat's side (its side's points minus the best other side's)."""

    def __len__(self) -> int:
        return int(self.action.shape[0])


def collect_teacher_data(
    rules: Rules | str,
    teacher: str,
    num_hands: int,
    seed: int = 0,
    batch: int = 512,
    progress: Callable[[int], None] | None = None,
) -> TeacherData:
    """Play ``num_hands`` hands (one hand per game, seeds ``seed, seed+1, ...``) with ``teacher`` in every seat."""
    rules = get_rules(rules)
    agent = make_agent(teacher, rules, seed=seed)
    side_of = np.array(rules.seat_side)
    chunks: list[tuple[Any, ...]] = []
    for lo in range(0, num_hands, batch):
        seeds = np.arange(seed + lo, seed + min(num_hands, lo + batch), dtype=np.uint64)
        state = core.reset(rules, seeds)
        b = seeds.size
        obs_l, mask_l, act_l, game_l, side_l = [], [], [], [], []
        margin = np.zeros((b, rules.num_sides), dtype=np.float32)
        live = np.ones(b, dtype=np.bool_)
        while live.any():
            g = np.flatnonzero(live)
            mask = core.legal_action_mask(rules, state)[g]
            obs = core.observe(rules, state)[g]
            acts = np.zeros(b, dtype=np.int64)
            acts[g] = agent.act(ActBatch(rules, obs, mask, state, g))
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(acts[g])
            game_l.append(g)
            side_l.append(side_of[state.current[g]])
            info = core.step(rules, state, acts, on_illegal="raise")
            ended = np.flatnonzero(info.hand_over & live)
            if ended.size:
                pts = info.hand_points[ended, :, -1].astype(np.float32)
                for s in range(rules.num_sides):  # own side's points minus the best other side's
                    others = np.delete(pts, s, axis=1).max(axis=1)
                    margin[ended, s] = pts[:, s] - others
                live[ended] = False
                state.phase[ended] = core.Phase.DONE
                if progress is not None:
                    progress(int(ended.size))
        games = np.concatenate(game_l)
        sides = np.concatenate(side_l)
        chunks.append((np.concatenate(obs_l), np.concatenate(mask_l), np.concatenate(act_l), margin[games, sides]))
    return TeacherData(*(np.concatenate([c[i] for c in chunks]) for i in range(4)))


def pretrain_policy(
    policy: Any,
    data: TeacherData,
    epochs: int = 3,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    value_coef: float = 0.5,
    seed: int = 0,
) -> dict[str, float]:
    """Fit an SB3 ``MaskableActorCriticPolicy`` to teacher data; returns the last epoch's mean losses and accuracy."""
    device = policy.device
    gen = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(data.obs)
    mask = torch.as_tensor(data.mask)
    act = torch.as_tensor(data.action)
    ret = torch.as_tensor(data.ret)
    opt = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    policy.set_training_mode(True)
    stats: dict[str, float] = {}
    n = len(data)
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        tot = {"policy_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
        batches = 0
        for lo in range(0, n, batch_size):
            idx = perm[lo : lo + batch_size]
            o, m, a, r = obs[idx].to(device), mask[idx].to(device), act[idx].to(device), ret[idx].to(device)
            features = policy.extract_features(o)
            pi_latent, vf_latent = policy.mlp_extractor(features)
            logits = policy.action_net(pi_latent).masked_fill(~m, -1e9)
            values = policy.value_net(vf_latent).squeeze(-1)
            p_loss = F.cross_entropy(logits, a)
            v_loss = F.mse_loss(values, r)
            loss = p_loss + value_coef * v_loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            tot["policy_loss"] += p_loss.item()
            tot["value_loss"] += v_loss.item()
            tot["accuracy"] += (logits.argmax(dim=1) == a).float().mean().item()
            batches += 1
        stats = {k: v / max(batches, 1) for k, v in tot.items()}
    policy.set_training_mode(False)
    return stats
