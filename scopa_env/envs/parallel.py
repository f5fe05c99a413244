"""Scopa as a PettingZoo ``ParallelEnv``: ``scopa_v0.parallel_env(variant="classic")``.

Scopa is turn-based, so the parallel face is the AEC env (``scopa_env.envs.aec``) stepped one move at a time: every
``step(actions)`` plays the action of the one agent to act, the agent whose ``action_mask`` has ones; every other
agent's action is ignored (any value, or none at all: it is a no-op, and all-zero masks make samplers return 0).

- ``reset(seed=None, options=None) -> (observations, infos)``; ``step(actions) -> (observations, rewards,
  terminations, truncations, infos)``, each a dict over the agents live before the step.
- Observations are the AEC ones: ``{"observation": (obs_size,) float32, "action_mask": (D,) int8}``, all-zero
  masks for the agents not to act. ``infos[agent]["action_mask"]`` repeats the mask (AgileRL-style loops read it
  there) and ``infos[agent]["acting"]`` says whether the agent is the one to act.
- Rewards are those paid by that step (``reward="match"`` or ``"points"``, as in the AEC env); every agent ends at
  once, so ``agents`` is empty after the last step.
- An illegal action of the acting agent (a card id not in its mask) ends the match, as ``scopa_v0.env`` does:
  -1 for that agent, 0 for the others, ``infos[agent]["illegal_action"] = True`` (``illegal="terminate"``, the
  default, which PettingZoo's ``parallel_seed_test`` needs: it samples actions without masks), or raises
  ``scopa_env.engine.core.IllegalActionError`` (``illegal="raise"``). An action that is not an integer card id raises
  ``TypeError``.
- ``reset(options={"state": saved})`` starts from a saved position (``scopa_env.records.state_io``), as in the AEC env.

Seeding is the AEC env's: ``reset(seed=s)`` plays the game of seed ``s``, a later ``reset()`` the next game of the
chain. No observation, info or attribute shows a hidden card or the seed.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv

from scopa_env.envs.aec import ENV_NAME, check_action, env_metadata, raw_env
from scopa_env.rules import Rules

__all__ = ["ILLEGAL_MODES", "parallel_env"]

ILLEGAL_MODES = ("terminate", "raise")

Obs = dict[str, npt.NDArray[Any]]


class parallel_env(ParallelEnv, EzPickle):  # type: ignore[type-arg]
    """Scopa for N seats as a PettingZoo parallel env (turn-based: one agent acts per step); see the module doc."""

    metadata: dict[str, Any] = env_metadata(parallelizable=True)  # PettingZoo reads it as a class attribute

    def __init__(
        self,
        variant: str | Rules = "classic",
        render_mode: Literal["ansi", "human"] | None = None,
        reward: Literal["match", "points"] = "match",
        max_hands: int = 100,
        illegal: Literal["terminate", "raise"] = "terminate",
    ) -> None:
        EzPickle.__init__(self, variant, render_mode, reward, max_hands, illegal)
        if illegal not in ILLEGAL_MODES:
            raise ValueError(f"illegal must be 'terminate' or 'raise', got {illegal!r}")
        self.illegal = illegal
        self._aec = raw_env(variant, render_mode=render_mode, reward=reward, max_hands=max_hands)
        self.rules = self._aec.rules
        self.render_mode = render_mode
        self.possible_agents = self._aec.possible_agents[:]
        self.agents: list[str] = []
        self.observation_spaces = self._aec.observation_spaces
        self.action_spaces = self._aec.action_spaces

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    @property
    def acting_agent(self) -> str | None:
        """The agent whose action the next ``step`` plays (None once the match is over or before ``reset``)."""
        return self._aec.agent_selection if self.agents else None

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Obs], dict[str, dict[str, Any]]]:
        """Start a match (the AEC env's ``reset``): observations and infos of every agent."""
        self._aec.reset(seed=seed, options=options)
        self.agents = self._aec.agents[:]
        obs = self._observe(self.agents)
        return obs, self._infos(obs)

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Obs], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """Play the acting agent's action (the other agents' actions are ignored)."""
        if not self.agents:
            raise RuntimeError("the match is over (or not started): call reset() first")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict of agent -> card id, got {type(actions).__name__}")
        aec = self._aec
        actor = aec.agent_selection
        if actor not in actions:
            raise ValueError(
                f"actions has no entry for {actor}, the agent to act (the one whose action_mask has ones); "
                f"got actions for {sorted(actions)}"
            )
        action = actions[actor]
        live = self.agents[:]
        if action is None:
            raise TypeError(f"{actor} is to act: its action must be a card id, got None")
        check_action(aec, action)
        legal = bool(aec._require_game().legal_bits() >> int(action) & 1)  # the game's own mask, no core.State
        illegal = False
        if legal:
            aec.step(int(action))
            rewards = {a: float(aec.rewards[a]) for a in live}
            terminations = {a: bool(aec.terminations[a]) for a in live}
            truncations = {a: bool(aec.truncations[a]) for a in live}
        elif self.illegal == "raise":
            aec.step(int(action))  # raises IllegalActionError naming the legal actions
            raise AssertionError("unreachable: the AEC env accepted an illegal action")
        else:
            illegal = True
            rewards = {a: (-1.0 if a == actor else 0.0) for a in live}
            terminations = dict.fromkeys(live, True)
            truncations = dict.fromkeys(live, False)
        if any(terminations.values()) or any(truncations.values()):
            self.agents = []
        obs = self._observe(live, over=not self.agents)
        infos = self._infos(obs)
        if illegal:
            infos[actor]["illegal_action"] = True
        return obs, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """As the AEC env: ``"ansi"`` returns the table as text, ``"human"`` prints it."""
        return self._aec.render()

    def close(self) -> None:
        """Nothing to release."""

    def state(self) -> np.ndarray:
        raise NotImplementedError(
            "Scopa has no global observation that hides nothing: the game state holds hidden cards. Save a game "
            "with scopa_env.records.state_io instead"
        )

    def __str__(self) -> str:
        return ENV_NAME

    def _observe(self, agents: list[str], over: bool = False) -> dict[str, Obs]:
        obs = {a: self._aec.observe(a) for a in agents}
        if over:  # the match has ended (won, truncated or by an illegal action): nobody is to act
            for o in obs.values():
                o["action_mask"] = np.zeros_like(o["action_mask"])
        return obs

    @staticmethod
    def _infos(obs: dict[str, Obs]) -> dict[str, dict[str, Any]]:
        return {
            a: {"action_mask": o["action_mask"].copy(), "acting": bool(o["action_mask"].any())} for a, o in obs.items()
        }
