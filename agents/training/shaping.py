"""Potential-based reward shaping for the trainer's vector env (``train.py``'s ``shaping`` option).

``ShapedRewards(venv, rules, weight, gamma)`` wraps an SB3 ``VecEnv`` and adds ``weight * (gamma * phi(s') -
phi(s))`` to the learner's rewards, where ``phi`` is the own side's pile value minus the others' mean, read from
the observation (``potential_coefficients``). It lives in a module of its own (not ``train.py``) so that a run's
saved state names an importable class whether the run was started as ``python train.py`` or from Python.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import numpy.typing as npt
from stable_baselines3.common.vec_env import VecEnvWrapper

from scopa_env.engine import observation
from scopa_env.rules import Rules

__all__ = ["ShapedRewards", "potential_coefficients"]


def potential_coefficients(rules: Rules) -> npt.NDArray[np.float64]:
    """(obs_size,) ``c`` with potential ``phi(obs) = c @ obs``: own side's pile value minus the others' mean.

    A pile's value is the sum of ``agents.baselines.features.card_weights`` over its cards (rough hand points: carte,
    denari, settebello, primiera) plus one point per scopa. The potential reads only the observation, so it is a
    function of the learner's information state.
    """
    from agents.baselines.features import card_weights

    d, s = rules.num_cards, rules.num_sides
    blocks = {name: (start, stop) for name, start, stop, _ in observation.observation_layout(rules)}
    coef = np.zeros(observation.observation_size(rules), dtype=np.float64)
    side_sign = np.full(s, -1.0 / (s - 1))
    side_sign[0] = 1.0  # blocks list the own side first
    start, stop = blocks["piles"]
    if stop - start != s * d:
        raise RuntimeError(f"observation layout changed: piles block has {stop - start} entries, expected {s * d}")
    coef[start:stop] = (side_sign[:, None] * card_weights(rules)[None, :]).reshape(-1)
    start, stop = blocks["scope"]
    coef[start:stop] = side_sign * 10.0  # scope are stored / 10
    return coef


class ShapedRewards(VecEnvWrapper):  # type: ignore[misc]
    """Adds ``weight * (gamma * phi(s') - phi(s))`` to the learner's rewards, with ``phi = 0`` at episode ends.

    Potential-based shaping (Ng, Harada and Russell 1999) leaves the optimal policy unchanged: over an episode the
    extra rewards add up to ``-phi(first observation)``. It pays for a capture when it is made instead of at the
    end of the hand, which makes the early learning much faster. ``s`` and ``s'`` are consecutive learner
    decisions (the other seats' moves in between count too).
    """

    def __init__(self, venv: Any, rules: Rules, weight: float, gamma: float) -> None:
        super().__init__(venv)
        self.coef = potential_coefficients(rules) * float(weight)
        self.gamma = float(gamma)
        self.phi = np.zeros(venv.num_envs, dtype=np.float64)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "class_attributes"}  # holds unpicklable proxies

    def __setstate__(self, state: dict[str, Any]) -> None:  # VecEnvWrapper.__getattr__ would recurse in unpickling
        self.__dict__.update(state)
        self.class_attributes = dict(inspect.getmembers(self.__class__))

    def reset(self) -> Any:
        obs = self.venv.reset()
        self.phi = np.asarray(obs, dtype=np.float64) @ self.coef
        return obs

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        phi = np.asarray(obs, dtype=np.float64) @ self.coef
        shaped = rewards + self.gamma * np.where(dones, 0.0, phi) - self.phi
        self.phi = phi  # for an ended episode, obs is the first observation of the next one
        return obs, shaped.astype(np.float32), dones, infos
