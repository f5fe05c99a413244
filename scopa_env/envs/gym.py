"""Single-agent views of Scopa: a Gymnasium env (``ScopaEnv``) and a batched stable-baselines3 ``VecEnv``.

``ScopaEnv`` lives here; ``ScopaVecEnv`` lives in ``scopa_env.envs.vec_env``, the one module of the package that imports
stable-baselines3 (and torch). ``from scopa_env.envs.gym import ScopaVecEnv`` imports it on first use, so importing this
module, or ``gymnasium.make("scopa/...")``, loads neither (nor PettingZoo).

A *learner* plays one seat (or, with ``partner="self"``, every seat of its side) and the other seats are played
by ``scopa_env.games.policy.Policy`` objects, called in batches between the learner's decisions. Both envs are thin
faces over one loop, ``scopa_env.games.learner.LearnerGames``, which maps seats to the learner, its partner and its
opponents, lets the other seats act and pays rewards (``learner.hand_outcome``); no rule of the game lives here.
``ScopaVecEnv`` runs it on the batched core; ``ScopaEnv`` runs every variant on
``scopa_env.games.learner_single.SingleLearnerGame``, the same loop on one game of the compiled kernel
(``scopa_env.engine.single.SingleGame``, checked move for move against the core).

    env = ScopaEnv("classic", opponents="random")                 # gymnasium.Env, one game
    venv = ScopaVecEnv("classic", num_envs=1024, opponents="random", seed=0)   # SB3 VecEnv, 1024 games

Each env step is one decision of the learner; after it, the other seats act (each policy once per batch of the
games where it is to act) until every game is back at a learner decision or its episode has ended.

- ``reward="match"``: +1 / -1 / 0 at the end of the episode for a won / lost / undecided match (for hand
  episodes: the sign of the hand's margin). ``reward="points"``: at the end of every hand, the learner side's
  points minus the best opposing side's (the same rewards as ``scopa_env.envs.aec``).
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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from scopa_env.engine.observation import observation_bounds
from scopa_env.engine.render import check_render_mode, render_text, show_text
from scopa_env.engine.single import next_seed
from scopa_env.games.learner import (
    MAX_GAMES,
    MAX_SEED,
    EpisodeEnds,
    LearnerGames,
    MaskFilter,
    OpponentSpec,
    check_seed,
    validate_mask_filter,
)
from scopa_env.games.learner_single import SingleLearnerGame
from scopa_env.rules import Rules, get_rules

if TYPE_CHECKING:
    from scopa_env.envs.vec_env import ScopaVecEnv
    from scopa_env.envs.vec_env import StepReturn as StepReturn

# The engine both envs drive (``LearnerGames`` and its types) lives in ``scopa_env.games.learner``; re-exported here.
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

_VEC_ENV_NAMES = ("ScopaVecEnv", "StepReturn")
"""Names of ``scopa_env.envs.vec_env`` still reachable here, where they were defined before it (``__getattr__``)."""


def __getattr__(name: str) -> Any:
    """``ScopaVecEnv`` and ``StepReturn``: imported from ``scopa_env.envs.vec_env`` (stable-baselines3, torch) when
    asked."""
    if name in _VEC_ENV_NAMES:
        from scopa_env.envs import vec_env

        return getattr(vec_env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------------- Gymnasium env


class ScopaEnv(gymnasium.Env[npt.NDArray[np.float32], np.int64]):
    """One game of Scopa from the learner's seat, the other seats played by policies; see the module docstring.

    Observation: ``Box`` of ``observation.observation_size(rules)`` float32 (``scopa_env.envs.aec`` documents the
    layout). Action: ``Discrete(num_actions)``, a card id (or cirulla's ``stop`` / knocks, ``scopa_env.envs.aec``'s
    *Cirulla*); ``action_masks()`` gives the legal ones (sb3-contrib MaskablePPO).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012
    _games_class: type[LearnerGames] = SingleLearnerGame
    """The loop's engine, for every variant: the single-game one; ``LearnerGames`` (batched core, B = 1) plays the same
    games, slower (``tests/test_single.py``'s reference)."""

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
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.games = self._games_class(
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
        low, high = observation_bounds(self.rules, max_hands)
        self.observation_space = spaces.Box(low=low, high=high, dtype=np.float32)  # type: ignore[assignment]
        self.action_space = spaces.Discrete(self.rules.num_actions)  # type: ignore[assignment]
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
                    terminated, truncated = _ended(details, ended[0])
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
            terminated, truncated = _ended(info, ends)
            obs = ends.observation[0]
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
        return show_text(text, self.render_mode)


def _ended(info: dict[str, Any], ends: EpisodeEnds) -> tuple[bool, bool]:
    """Add the first ended episode's ``info`` keys (not ``terminal_observation``: the step's observation is it) to
    ``info``; (terminated, truncated)."""
    info.update(ends.info(0))
    del info["terminal_observation"]
    truncated = info["TimeLimit.truncated"]
    return not truncated, truncated


def make_registered(id_variant: str, variant: str | Rules | None = None, **kwargs: Any) -> ScopaEnv:
    """The env behind every Gymnasium id (``scopa_env.envs.registration``): ``ScopaEnv(id_variant, **kwargs)``.
    ``variant``, if given to ``gymnasium.make``, must be the id's own (an id names its variant: ``scopa/Classic-v0``
    with ``variant="scopa-a-quattro"`` would build a four-player env under the Classic id, and every log and
    checkpoint would say Classic)."""
    from scopa_env.envs.registration import env_id
    from scopa_env.rules import VARIANTS

    if variant is not None:
        asked = get_rules(variant).name
        if asked != id_variant:
            raise ValueError(
                f"{env_id(id_variant)} is the {id_variant!r} env, but variant={asked!r} was given; make "
                f"{env_id(asked) if asked in VARIANTS else 'scopa_env.envs.gym.ScopaEnv(variant=...)'} instead, "
                "or drop the variant keyword"
            )
    return ScopaEnv(id_variant, **kwargs)
