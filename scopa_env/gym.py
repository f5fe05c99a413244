"""Single-agent views of Scopa: a Gymnasium env (``ScopaEnv``) and a batched stable-baselines3 ``VecEnv``.

A *learner* plays one seat (or, with ``partner="self"``, every seat of its side) and the other seats are played
by ``scopa_env.policy.Policy`` objects, called in batches between the learner's decisions. Both envs are thin
faces over ``scopa_env.learner.LearnerGames``, which maps seats to the learner, its partner and its opponents,
drives ``core.step`` and pays rewards from the core's ``StepInfo``; no rule of the game lives here. ``ScopaEnv``
plays its one game on ``SingleLearnerGame``, the same engine on the single-game fast path
(``scopa_env.single.SingleGame``, checked move for move against the core).

    env = ScopaEnv("classic", opponents="random")                 # gymnasium.Env, one game
    venv = ScopaVecEnv("classic", num_envs=1024, opponents="random", seed=0)   # SB3 VecEnv, 1024 games

Each env step is one decision of the learner; after it, the other seats act (each policy once per batch of the
games where it is to act) until every game is back at a learner decision or its episode has ended.

- ``reward="match"``: +1 / -1 / 0 at the end of the episode for a won / lost / undecided match (for hand
  episodes: the sign of the hand's margin). ``reward="points"``: at the end of every hand, the learner side's
  points minus the best opposing side's (the same rewards as ``scopa_env.aec``).
- ``episode="match"`` plays to the variant's target (truncated after ``max_hands`` hands); ``episode="hand"``
  ends after one hand, and the next episode is a fresh one-hand game.
- ``learner_seat``: ``"rotate"`` (slot i's k-th episode uses seat ``(i + k) % N``), ``"random"`` or a fixed seat.
- ``partner`` (team variants): ``"self"`` (the learner plays every seat of its side) or a ``Policy`` that plays
  the learner's teammates.
- Opponents come from a pool (``opponents`` or ``set_opponents``): each new episode draws one policy for all its
  opposing seats. At the end of an episode ``info`` carries ``episode_opponent`` (index in the pool the episode
  was drawn from), ``episode_pool`` (which pool: 0 for the constructor's, +1 per ``set_opponents``),
  ``episode_result`` (+1 / 0 / -1) and ``episode_margin`` (summed hand margins of the learner's side).
- ``mask_filter``: a callable ``f(rules, state, games, mask) -> mask`` that narrows the learner's legal mask of
  the given live games (rows of ``mask``; it may only remove legal actions). ``train.py``'s ``endgame`` passes
  ``agents.search.endgame.ExactEndgameMask(N)``: once a hand's last N plies are an open book, the learner's mask
  holds only the exact solver's best moves. The env itself holds no agent logic and imports nothing from ``agents``.
- An illegal learner action is replaced by a uniformly random legal one (``illegal="replace"``, flagged with
  ``info["illegal_action"]``), or raises (``illegal="raise"``); with masks (MaskablePPO) it never happens.

Seeding: ``ScopaEnv.reset(seed=s)`` plays the game of seed ``s`` and reseeds the env's generator and the policies;
``ScopaVecEnv(seed=s)`` starts game i from seed ``s + i``. Later episodes of a slot play the next game of the seed
chain (``shuffle.derive_seed``), so runs are reproducible. A game's seed fixes every hidden card (the other hands,
the stock order), so no ``info`` carries it (nor any other hidden state): ``ScopaEnv`` infos hold ``learner_seat``,
``illegal_action`` and, at the end of an episode, the ``episode_*`` keys; ``ScopaVecEnv`` infos the same (no
``learner_seat``) plus SB3's ``terminal_observation`` (the learner's own view) and ``TimeLimit.truncated``.
``get_attr`` gives ``learner_seat``, ``learner_side`` and ``opponent`` per game, never the seeds.

Benchmark: ``python bench/env_speed.py --env vec --batch 1024`` (``scopa_bench.env_speed.bench_vec_env``).
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

from scopa_env.aec import observation_bounds
from scopa_env.learner import (
    MAX_GAMES,
    MAX_SEED,
    EpisodeEnds,
    LearnerGames,
    MaskFilter,
    OpponentSpec,
    SingleLearnerGame,
    check_seed,
    validate_mask_filter,
)
from scopa_env.policy import Policy
from scopa_env.render import render_text
from scopa_env.rules import Rules, get_rules
from scopa_env.shuffle import derive_seed
from scopa_env.single import next_seed
from scopa_env.variant import hook_class

# The engine both envs drive (``LearnerGames`` and its types) lives in ``scopa_env.learner``; re-exported here.
__all__ = [
    "MAX_GAMES",
    "EpisodeEnds",
    "LearnerGames",
    "MaskFilter",
    "OpponentSpec",
    "ScopaEnv",
    "ScopaVecEnv",
    "make_registered",
    "validate_mask_filter",
]

StepReturn = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.bool_], list[dict[str, Any]]]
"""What ``ScopaVecEnv.step`` returns: (B, obs_size) observations, (B,) rewards, (B,) dones, B infos."""


def _episode_info(ends: EpisodeEnds, j: int) -> dict[str, Any]:
    return {
        "terminal_observation": ends.observation[j],
        "TimeLimit.truncated": bool(ends.truncated[j]),
        "episode_opponent": int(ends.opponent[j]),
        "episode_pool": int(ends.pool[j]),
        "episode_result": int(ends.result[j]),
        "episode_margin": int(ends.margin[j]),
    }


def _spaces(rules: Rules, max_hands: int) -> tuple[spaces.Box, spaces.Discrete]:
    low, high = observation_bounds(rules, max_hands)
    return spaces.Box(low=low, high=high, dtype=np.float32), spaces.Discrete(rules.num_actions)


# --------------------------------------------------------------------------------------------------- Gymnasium env


class ScopaEnv(gymnasium.Env[npt.NDArray[np.float32], np.int64]):
    """One game of Scopa from the learner's seat, the other seats played by policies; see the module docstring.

    Observation: ``Box`` of ``observation.observation_size(rules)`` float32 (``scopa_env.aec`` documents the layout).
    Action: ``Discrete(num_actions)``, a card id (or cirulla's ``stop`` / knocks, ``scopa_env.aec``'s *Cirulla*);
    ``action_masks()`` gives the legal ones (sb3-contrib MaskablePPO).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012
    _games_class: type[LearnerGames] = SingleLearnerGame
    """The engine: the single-game one; ``LearnerGames`` (batched core, B = 1) plays the same games, slower."""

    def __init__(
        self,
        variant: str | Rules = "classic",
        opponents: OpponentSpec | Sequence[OpponentSpec] = "random",
        *,
        probs: Sequence[float] | None = None,
        partner: Literal["self"] | OpponentSpec = "self",
        learner_seat: Literal["random", "rotate"] | int = "random",
        reward: Literal["match", "points"] = "match",
        episode: Literal["match", "hand"] = "match",
        max_hands: int = 100,
        illegal: Literal["replace", "raise"] = "replace",
        mask_filter: MaskFilter | None = None,
        render_mode: Literal["ansi", "human"] | None = None,
    ) -> None:
        self.rules = get_rules(variant)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        self.render_mode = render_mode
        # cirulla on the batched core: SingleLearnerGame's own RandomAgent draws know no knocks nor fifteens' picks
        single = hook_class(self.rules).single_learner
        games_class = self._games_class if single else LearnerGames
        self.games = games_class(
            self.rules,
            1,
            opponents,
            probs,
            partner,
            learner_seat,
            reward,
            episode,
            max_hands,
            illegal,
            autoreset=False,
            mask_filter=mask_filter,
        )
        self.games.finished[:] = True
        self._single = self.games if isinstance(self.games, SingleLearnerGame) else None
        """The engine when it is the single-game one (``step`` and ``action_masks`` take its scalar paths)."""
        obs_space, act_space = _spaces(self.rules, max_hands)
        self.observation_space = obs_space  # type: ignore[assignment]  # Box of float32, as declared
        self.action_space = act_space  # type: ignore[assignment]
        self._seed: int | None = None

    def set_opponents(
        self, policies: OpponentSpec | Sequence[OpponentSpec], probs: Sequence[float] | None = None
    ) -> None:
        """From the next episode on, draw the opponent from ``policies`` (with ``probs``)."""
        self.games.set_opponents(policies, probs)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """Start an episode: with ``seed``, the game of that seed (policies reseeded); else the next game."""
        if seed is not None:
            seed = check_seed("seed", seed, MAX_SEED)
        super().reset(seed=seed)
        if seed is not None:
            game_seed = seed
            self.games.reseed(game_seed)
        elif self._seed is not None:
            game_seed = next_seed(self._seed)  # shuffle.derive_seed
        else:
            game_seed = int(self.np_random.integers(MAX_SEED))
            self.games.reseed(game_seed)
        self._seed = game_seed
        single = self._single
        if single is not None:
            single.start_seed(game_seed)
            obs = single.observe_one()
        else:
            self.games.start(np.zeros(1, dtype=np.intp), np.array([game_seed], dtype=np.uint64))
            obs = self.games.observe()[0]
        if self.render_mode == "human":
            self.render()
        return obs, self._info()

    def step(self, action: int | np.integer) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Play the learner's action, then the other seats up to its next decision or the end of the episode."""
        single = self._single
        if single is not None:  # a legal action on the single game: Python scalars, the same results as below
            a = action if type(action) is int else int(action) if isinstance(action, np.integer) else -1
            played = single.play_legal(a)  # None if not legal (no action is once the episode is over)
            if played is not None:
                obs, gain, ended = played
                details: dict[str, Any] = {"learner_seat": single.seat}
                if ended:
                    _, truncated, result, margin, opponent, pool = ended[0]
                    details["TimeLimit.truncated"] = truncated
                    details["episode_opponent"] = opponent
                    details["episode_pool"] = pool
                    details["episode_result"] = result
                    details["episode_margin"] = margin
                    terminated = not truncated
                else:  # not finished: obs is the seat to act's
                    terminated = truncated = False
                if self.render_mode == "human":
                    self.render()
                return obs, gain, terminated, truncated, details
        games = self.games
        if games.finished[0]:
            raise RuntimeError("the episode is over: call reset() before step()")
        try:
            act = np.asarray(action)
        except (TypeError, ValueError, OverflowError):
            act = np.asarray(None)
        if act.size != 1:
            raise ValueError(f"the action must be one card id, got {action!r} (shape {act.shape})")
        reward, ends, replaced = self.games.step(act.reshape(1))
        info = self._info()
        if replaced[0]:
            info["illegal_action"] = True
        if ends.idx.size:
            info.update(_episode_info(ends, 0))
            del info["terminal_observation"]
            obs, terminated, truncated = ends.observation[0], not bool(ends.truncated[0]), bool(ends.truncated[0])
        else:
            obs, terminated, truncated = self.games.observe()[0], False, False
        if self.render_mode == "human":
            self.render()
        return obs, float(reward[0]), terminated, truncated, info

    def _info(self) -> dict[str, Any]:
        return {"learner_seat": int(self.games.learner_seat[0])}

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """(num_actions,) bool: the learner's legal actions (all False once the episode is over)."""
        if self._single is not None:
            return self._single.learner_mask()
        return self.games.mask[0].copy()

    def render(self) -> str | None:  # type: ignore[override]  # gymnasium 1.2 types frames, not ansi text
        """``"ansi"``: a text picture from the learner's seat; ``"human"``: print it."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render() without a render_mode; pass render_mode='ansi' or 'human'.")
            return None
        text = render_text(self.rules, self.games.state, game=0, seat=int(self.games.learner_seat[0]))
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text


# --------------------------------------------------------------------------------------------------- SB3 VecEnv


class ScopaVecEnv(VecEnv):
    """``num_envs`` games of Scopa in one process for stable-baselines3; see the module docstring.

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
        if render_mode is not None and render_mode not in ("ansi", "human"):
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
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
        obs_space, act_space = _spaces(self.rules, max_hands)
        super().__init__(int(num_envs), obs_space, act_space)

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
            infos[i] = _episode_info(ends, j)
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
        if mode == "human":
            print(text + "\n")
            return None
        return text

    def _render_text(self, i: int) -> str:
        return render_text(self.rules, self.games.state, game=i, seat=int(self.games.learner_seat[i]))

    def _render_game(self, i: int) -> str | None:
        text = self._render_text(i)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text


def make_registered(id_variant: str, variant: str | Rules | None = None, **kwargs: Any) -> ScopaEnv:
    """The env behind every Gymnasium id (``scopa_env.registration``): ``ScopaEnv(id_variant, **kwargs)``.
    ``variant``, if given to ``gymnasium.make``, must be the id's own (an id names its variant: ``scopa/Classic-v0``
    with ``variant="scopa-a-quattro"`` would build a four-player env under the Classic id, and every log and
    checkpoint would say Classic)."""
    from scopa_env.registration import env_id
    from scopa_env.rules import VARIANTS

    if variant is not None:
        asked = get_rules(variant).name
        if asked != id_variant:
            raise ValueError(
                f"{env_id(id_variant)} is the {id_variant!r} env, but variant={asked!r} was given; make "
                f"{env_id(asked) if asked in VARIANTS else 'scopa_env.gym.ScopaEnv(variant=...)'} instead, or drop "
                "the variant keyword"
            )
    return ScopaEnv(id_variant, **kwargs)
