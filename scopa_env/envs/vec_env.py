"""The batched stable-baselines3 ``VecEnv`` of Scopa: ``ScopaVecEnv``, B games in one process (what ``train.py`` uses).

    venv = ScopaVecEnv("classic", num_envs=1024, opponents="random", seed=0)   # SB3 VecEnv, 1024 games

It is the batched face of ``scopa_env.games.learner.LearnerGames``, as ``scopa_env.envs.gym.ScopaEnv`` is its one-game
face: the arguments, the rewards, the seeding and the ``info`` keys are documented in ``scopa_env.envs.gym``'s docstring
and ``docs/envs.md``. This is the one module of ``scopa_env`` that imports stable-baselines3 (and through it torch), so
``import scopa_env`` and ``gymnasium.make("scopa/...")`` never load them; ``from scopa_env.envs.gym import ScopaVecEnv``
still works and imports this module on first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices

from scopa_env.engine.observation import observation_bounds
from scopa_env.engine.render import check_render_mode, render_text, show_text
from scopa_env.games.learner import MAX_SEED, LearnerGames, MaskFilter, OpponentSpec, check_seed
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.shuffle import derive_seed

__all__ = ["ScopaVecEnv", "StepReturn"]

StepReturn = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.bool_], list[dict[str, Any]]]
"""What ``ScopaVecEnv.step`` returns: (B, obs_size) observations, (B,) rewards, (B,) dones, B infos."""


class ScopaVecEnv(VecEnv):
    """``num_envs`` games of Scopa in one process for stable-baselines3; see ``scopa_env.envs.gym``'s docstring.

    Every step is one learner decision in every game. Masks: ``env_method("action_masks")`` (what sb3-contrib's
    MaskablePPO calls) or the ``action_masks()`` method, which returns a (num_envs, num_actions) bool array.
    """

    def __init__(
        self,
        variant: str | Rules = "classic",
        num_envs: int = 1,
        opponents: OpponentSpec | Sequence[OpponentSpec] = "random",
        *,
        probs: Sequence[float] | None = None,
        seed: int | None = None,
        reward: Literal["match", "points"] = "match",
        episode: Literal["match", "hand"] = "match",
        partner: Literal["self"] | OpponentSpec = "self",
        learner_seat: Literal["rotate", "random"] | int = "rotate",
        max_hands: int = 100,
        illegal: Literal["replace", "raise"] = "replace",
        mask_filter: MaskFilter | None = None,
        stacked_masks: bool = True,
        render_mode: Literal["ansi", "human"] | None = None,
    ) -> None:
        self.rules = get_rules(variant)
        if not isinstance(stacked_masks, (bool, np.bool_)):
            raise TypeError(f"stacked_masks must be True or False, got {stacked_masks!r}")
        self.stacked_masks = bool(stacked_masks)
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.games = LearnerGames(
            self.rules,
            num_envs,
            opponents,
            probs,
            partner,
            learner_seat,
            reward,
            episode,
            max_hands,
            illegal,
            mask_filter=mask_filter,
        )
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] % np.uint64(MAX_SEED // 2))
        self._base_seed = check_seed("seed", seed, MAX_SEED // 2)
        self._started = False
        self._actions: npt.NDArray[np.int64] | None = None
        low, high = observation_bounds(self.rules, max_hands)
        obs_space = spaces.Box(low=low, high=high, dtype=np.float32)
        super().__init__(int(num_envs), obs_space, spaces.Discrete(self.rules.num_actions))

    # ------------------------------------------------------------------------------------------------ league

    def set_opponents(
        self, policies: OpponentSpec | Sequence[OpponentSpec], probs: Sequence[float] | None = None
    ) -> None:
        """From now on each new episode draws its opponent from ``policies`` with ``probs`` (default uniform).

        Games in progress finish with their current opponent; ``info["episode_pool"]`` tells the pools apart.
        """
        self.games.set_opponents(policies, probs)

    @property
    def opponents(self) -> list[Policy]:
        """The current opponent pool."""
        return self.games.opponents

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """(num_envs, num_actions) bool: the learner's legal actions in every game."""
        return self.games.mask.copy()

    # ------------------------------------------------------------------------------------------------ VecEnv API

    def reset(self) -> npt.NDArray[np.float32]:
        """Start a new episode in every slot (the seeds of ``seed()``, else ``seed + i`` the first time)."""
        b = self.num_envs
        if any(s is not None for s in self._seeds):
            seeds = np.array([s if s is not None else self._base_seed + i for i, s in enumerate(self._seeds)])
            self.games.reseed(int(seeds[0]))
        elif not self._started:
            seeds = self._base_seed + np.arange(b)
            self.games.reseed(self._base_seed)
        else:
            seeds = derive_seed(self.games.state.seed)
        if any(s is not None and not 0 <= int(s) < MAX_SEED for s in self._seeds):
            raise ValueError(f"seeds must be integers in [0, 2**63), got {self._seeds}")
        self._started = True
        self._reset_seeds()
        self._reset_options()
        self.games.start(np.arange(b), np.asarray(seeds).astype(np.uint64))
        self.reset_infos = [{} for _ in range(b)]
        return self.games.observe()

    def step(self, actions: np.ndarray) -> StepReturn:
        """One learner action per game -> (observations, rewards, dones, infos), as ``VecEnv.step``."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> StepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() needs step_async(actions) first")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        reward, ends, replaced = self.games.step(self._actions)
        self._actions = None
        obs = self.games.observe()
        dones = np.zeros(self.num_envs, dtype=np.bool_)
        dones[ends.idx] = True
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for j, i in enumerate(ends.idx.tolist()):
            infos[i] = ends.info(j)
        if replaced.any():
            for i in np.flatnonzero(replaced).tolist():
                infos[i]["illegal_action"] = True
        return obs, reward, dones, infos

    def close(self) -> None:
        """Nothing to release."""

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Game i of the next ``reset()`` plays seed ``seed + i`` (env generator and policies reseeded)."""
        if seed is not None:
            seed = check_seed("seed", seed, MAX_SEED - self.num_envs + 1)
        return super().seed(seed)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``attr_name`` for each game: per-game arrays (``learner_seat``, ``opponent``...) or an env attribute."""
        idx = list(self._get_indices(indices))
        per_game: dict[str, npt.NDArray[Any]] = {
            "learner_seat": self.games.learner_seat,
            "learner_side": self.games.learner_side,
            "opponent": self.games.opponent,
        }
        if attr_name in per_game:
            return [per_game[attr_name][i].item() for i in idx]
        if attr_name == "action_masks":
            return [self._game_action_mask(i) for i in idx]
        if not hasattr(self, attr_name):
            raise AttributeError(f"ScopaVecEnv has no attribute {attr_name!r}")
        value = getattr(self, attr_name)
        return [value for _ in idx]

    def _game_action_mask(self, i: int) -> Any:
        def action_masks() -> npt.NDArray[np.bool_]:
            return self.games.mask[i].copy()

        return action_masks

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute shared by all games (they live in one env, so ``indices`` must cover all of them)."""
        idx = list(self._get_indices(indices))
        if sorted(idx) != list(range(self.num_envs)):
            raise ValueError(
                f"ScopaVecEnv's {self.num_envs} games share their attributes; set_attr({attr_name!r}) must cover "
                "every index (indices=None)"
            )
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Per-game methods: ``action_masks`` (one mask per game, as MaskablePPO expects) and ``render``."""
        if method_name == "action_masks":
            if indices is None and self.stacked_masks:
                return [self.games.mask.copy()]
            return [self.games.mask[i].copy() for i in self._get_indices(indices)]
        if method_name == "render":
            return [self._render_game(i) for i in self._get_indices(indices)]
        raise AttributeError(
            f"ScopaVecEnv.env_method supports 'action_masks' and 'render', not {method_name!r}; "
            "call methods of the vector env itself directly"
        )

    def env_is_wrapped(self, wrapper_class: type[gymnasium.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """The games are not gymnasium envs, so no wrapper: all False."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError("ScopaVecEnv renders text only: use render_mode='ansi' or 'human'")

    def render(self, mode: str | None = None) -> str | None:  # type: ignore[override]
        """Game 0 as text from the learner's seat: ``"ansi"`` returns it, ``"human"`` prints it."""
        mode = mode or self.render_mode
        if mode is None:
            warnings.warn("ScopaVecEnv.render() needs render_mode='ansi' or 'human'", stacklevel=2)
            return None
        text = self._render_text(0)
        return show_text(text, mode)

    def _render_text(self, i: int) -> str:
        return render_text(self.rules, self.games.state, game=i, seat=int(self.games.learner_seat[i]))

    def _render_game(self, i: int) -> str | None:
        return show_text(self._render_text(i), self.render_mode)
