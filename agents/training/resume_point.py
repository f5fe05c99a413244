"""The trainer's exact resume: what a rollout boundary holds (``ResumePoint``: the weights, the optimizer and one
``agents.training.safe_state`` blob of the env, the league, the run's state, the model's counters and every random
state), taken by ``capture`` and written into ``last.zip`` by ``agents.training.trainer.Trainer``; ``rewind`` takes a
model interrupted mid-rollout back to its point, ``set_rng_states`` restores the random states on resume.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.training import safe_state

__all__ = ["MODEL_COUNTERS", "ResumePoint", "capture", "rewind", "rng_states", "set_rng_states"]

MODEL_COUNTERS = (
    "_n_updates",
    "_episode_num",
    "_last_obs",
    "_last_episode_starts",
    "_last_original_obs",
    "ep_info_buffer",
    "ep_success_buffer",
)
"""The ``MaskablePPO`` attributes besides weights and optimizer that a resumed run restores."""


@dataclass
class ResumePoint:
    """Everything needed to restart training exactly at the start of a rollout."""

    steps: int
    policy_state: dict[str, Any]
    optim_state: dict[str, Any]
    blob: bytes
    """``agents.training.safe_state`` file of the env, league, counters, model extras and random states."""


def rng_states() -> dict[str, Any]:
    """Python's, numpy's and torch's global random states."""
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_states(states: dict[str, Any]) -> None:
    """Restore the random states ``rng_states`` returned."""
    import torch

    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


def capture(model: Any, env: Any, league: Any, state: dict[str, Any], endgame_opt: Any) -> ResumePoint:
    """The state at this rollout boundary: weights, optimizer, and a safe_state blob of everything else (the env, the
    league, the run's ``state``, the random states, the model's counters, the end-game optimizer when there is one)."""
    blob = safe_state.dumps(
        {
            "env": env,
            "league": league,
            "state": state,
            "rng": rng_states(),
            "num_timesteps": int(model.num_timesteps),
            "model": {name: getattr(model, name) for name in MODEL_COUNTERS},
            "endgame_optimizer": None if endgame_opt is None else endgame_opt.state_dict(),
        }
    )
    return ResumePoint(
        int(model.num_timesteps),
        copy.deepcopy(model.policy.state_dict()),
        copy.deepcopy(model.policy.optimizer.state_dict()),
        blob,
    )


def rewind(model: Any, point: ResumePoint) -> None:
    """A model interrupted mid-rollout goes back to ``point``'s weights, optimizer and step count (a no-op at the
    point itself)."""
    if int(model.num_timesteps) != point.steps:
        model.policy.load_state_dict(point.policy_state)
        model.policy.optimizer.load_state_dict(point.optim_state)
        model.num_timesteps = point.steps
