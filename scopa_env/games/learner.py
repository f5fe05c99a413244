"""The engine under the single-agent envs: B games where a learner plays against batched policies.

``LearnerGames`` holds B games in one ``core.State``. It maps every game's seats to the learner (with
``partner="self"``, every seat of its side), a partner policy and the opponents drawn from a pool, lets the other
seats act (one ``Policy.act`` call per policy and round) until each game is back at a learner decision, pays the
rewards from the core's ``StepInfo`` and reports the episodes that ended (``EpisodeEnds``). ``scopa_env.envs.gym``'s
``ScopaEnv`` (one game) and ``scopa_env.envs.vec_env``'s ``ScopaVecEnv`` (B games, stable-baselines3) are thin faces
over it; the arguments and the rewards are documented there and in ``docs/envs.md``. No rule of the game lives
here, and nothing here imports ``agents``, gymnasium or pettingzoo.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core, observation
from scopa_env.engine.observation import validate_max_hands
from scopa_env.engine.single import SingleGame, SingleStep, bits_of, int64_key, next_seed
from scopa_env.games.driver import decide
from scopa_env.games.policy import Policy, RandomAgent, resolve_policy
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_best_other, match_results
from scopa_env.rules.shuffle import derive_seed

__all__ = [
    "EPISODE_MODES",
    "ILLEGAL_MODES",
    "MAX_GAMES",
    "MAX_SEED",
    "REWARD_MODES",
    "EpisodeEnds",
    "LearnerGames",
    "MaskFilter",
    "OpponentSpec",
    "SingleLearnerGame",
    "check_seed",
    "validate_mask_filter",
    "validate_max_hands",
    "validate_reward",
]

OpponentSpec = Policy | str
"""A policy object, or an agent spec string (e.g. ``"random"``; others through
``scopa_env.games.policy.resolve_policy``)."""
MaskFilter = Callable[[Rules, core.State, npt.NDArray[np.intp], npt.NDArray[np.bool_]], npt.NDArray[np.bool_]]
"""``f(rules, state, games, mask) -> mask``: narrows the learner's legal mask of the live ``games``."""
REWARD_MODES = ("match", "points")
"""Values of the ``reward`` argument (of these envs and of ``scopa_env.envs.aec``)."""
EPISODE_MODES = ("match", "hand")
ILLEGAL_MODES = ("replace", "raise")
MAX_SEED = 2**63
"""Game seeds are 0 <= seed < MAX_SEED (they are stored as uint64 in the core)."""


MAX_GAMES = 2**20
"""Most games one ``LearnerGames`` (so one ``ScopaVecEnv``) holds: about 3 KiB each with observations and masks."""


def check_seed(name: str, seed: Any, limit: int) -> int:
    """``seed`` as an int in ``[0, limit)``; ``TypeError`` / ``ValueError`` naming ``name`` otherwise."""
    bound = f"2**{limit.bit_length() - 1}" if limit & (limit - 1) == 0 else str(limit)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name} must be an integer in [0, {bound}), got {seed!r} of type {type(seed).__name__}")
    if not 0 <= int(seed) < limit:
        raise ValueError(f"{name} must be an integer in [0, {bound}), got {seed}")
    return int(seed)


def validate_reward(reward: str) -> str:
    """Return ``reward`` if it names a reward mode, else raise a ``ValueError`` listing them."""
    if reward not in REWARD_MODES:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {reward!r}")
    return reward


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return str(value)


def validate_mask_filter(mask_filter: Any) -> MaskFilter | None:
    """``mask_filter`` if it is None or callable; TypeError otherwise."""
    if mask_filter is not None and not callable(mask_filter):
        raise TypeError(
            "mask_filter must be None or a callable f(rules, state, games, mask) -> mask (e.g. "
            f"agents.search.endgame.ExactEndgameMask(8)), got {type(mask_filter).__name__}"
        )
    return mask_filter  # type: ignore[no-any-return]


def _as_policy(spec: OpponentSpec, rules: Rules, what: str) -> Policy:
    """A ``Policy`` for ``rules`` from a policy or a spec string; raises if it was built for another variant."""
    if isinstance(spec, str):
        return resolve_policy(spec, rules, None, what)
    if not isinstance(spec, Policy):
        raise TypeError(
            f"{what} must be a scopa_env.games.policy.Policy or an agent spec string such as 'random', "
            f"got {type(spec).__name__}"
        )
    if getattr(spec, "rules", rules) != rules:
        raise ValueError(
            f"{what} {spec!r} was built for variant {spec.rules.name!r}, but the env plays {rules.name!r}; "
            f"build it with the env's rules"
        )
    return spec


_PLAY = int(core.Phase.PLAY)
_CHOOSE = int(core.Phase.CHOOSE)
_empty, _F32, _BOOL = np.empty, np.dtype(np.float32), np.dtype(np.bool_)
_STATE_FIELDS = tuple(f.name for f in fields(core.State))


def _take(state: core.State, idx: npt.NDArray[np.intp]) -> core.State:
    """The games ``idx`` of ``state`` as a new state (like ``State.take``, with one copy instead of two)."""
    return core.State(**{name: getattr(state, name)[idx] for name in _STATE_FIELDS})


def _policy_seed(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, np.uint64)[0] % np.uint64(MAX_SEED))


@dataclass
class EpisodeEnds:
    """The episodes that ended during one step, one row per ended game (``idx`` are game slots)."""

    idx: npt.NDArray[np.intp]
    """(n,) game slots whose episode ended."""
    observation: npt.NDArray[np.float32]
    """(n, obs_size) the learner seat's observation after the last move: the final position of a match; for a
    hand episode the core has already scored the hand and dealt the next one (which is never played)."""
    truncated: npt.NDArray[np.bool_]
    """(n,) the match was cut off after ``max_hands`` hands (no winner)."""
    result: npt.NDArray[np.int8]
    """(n,) +1 win, 0 draw or undecided, -1 loss for the learner's side (hand episodes: sign of the margin)."""
    margin: npt.NDArray[np.int32]
    """(n,) learner side's hand points minus the best opposing side's, summed over the episode's hands."""
    opponent: npt.NDArray[np.int32]
    """(n,) index of the episode's opponent in the pool it was drawn from."""
    pool: npt.NDArray[np.int32]
    """(n,) which pool: 0 for the constructor's, +1 for every ``set_opponents`` call."""

    def info(self, j: int) -> dict[str, Any]:
        """The ``info`` keys of row ``j``'s ended episode, as the envs report them (``terminal_observation`` and
        ``TimeLimit.truncated`` are stable-baselines3's names; ``ScopaEnv`` drops the first)."""
        return {
            "terminal_observation": self.observation[j],
            "TimeLimit.truncated": bool(self.truncated[j]),
            "episode_opponent": int(self.opponent[j]),
            "episode_pool": int(self.pool[j]),
            "episode_result": int(self.result[j]),
            "episode_margin": int(self.margin[j]),
        }


class LearnerGames:
    """B games in one core state where a learner plays against batched policies (the engine of both envs).

    Every game is always either at a learner decision or, without ``autoreset``, finished and waiting for
    ``start``. ``step`` applies one learner action per game and lets the other seats act until that holds again.
    """

    def __init__(
        self,
        rules: Rules | str,
        num_games: int,
        opponents: OpponentSpec | Sequence[OpponentSpec] = "random",
        probs: Sequence[float] | None = None,
        partner: Literal["self"] | OpponentSpec = "self",
        learner_seat: Literal["rotate", "random"] | int = "rotate",
        reward: Literal["match", "points"] = "match",
        episode: Literal["match", "hand"] = "match",
        max_hands: int = 100,
        illegal: Literal["replace", "raise"] = "replace",
        autoreset: bool = True,
        mask_filter: MaskFilter | None = None,
    ) -> None:
        self.rules = rules = get_rules(rules)
        if (
            isinstance(num_games, bool)
            or not isinstance(num_games, (int, np.integer))
            or not 1 <= num_games <= MAX_GAMES
        ):
            raise ValueError(
                f"the number of games (num_envs) must be an integer in 1..{MAX_GAMES} (about 3 KiB of memory each), "
                f"got {num_games!r}"
            )
        self.num_games = b = int(num_games)
        self.reward = validate_reward(reward)
        self.episode = _check_choice("episode", episode, EPISODE_MODES)
        self.max_hands = validate_max_hands(max_hands)
        self.illegal = _check_choice("illegal", illegal, ILLEGAL_MODES)
        self.autoreset = bool(autoreset)
        self.mask_filter = validate_mask_filter(mask_filter)
        n = rules.num_players
        if isinstance(learner_seat, str):
            _check_choice("learner_seat", learner_seat, ("rotate", "random"))
        elif (
            isinstance(learner_seat, bool)
            or not isinstance(learner_seat, (int, np.integer))
            or not (0 <= learner_seat < n)
        ):
            raise ValueError(f"learner_seat must be 'rotate', 'random' or a seat 0..{n - 1}, got {learner_seat!r}")
        self.learner_seat_mode = learner_seat
        self.side_of = np.array(rules.seat_side, dtype=np.int8)
        self._side_seats = np.zeros((rules.num_sides, n), dtype=np.bool_)  # (S, N) seats of each side
        for s, seats in enumerate(rules.sides):
            self._side_seats[s, list(seats)] = True
        self.rng = np.random.default_rng()
        self._actors: list[Policy | None] = []
        self._pool: list[int] = []
        self._pool_probs = np.ones(1)
        self.pool_generation = -1
        self.set_opponents(opponents, probs)
        if isinstance(partner, str) and partner == "self":
            self._partner = -1
        else:
            if max(len(side) for side in rules.sides) < 2:
                raise ValueError(
                    f"variant {rules.name!r} has no teams, so there is no partner to play; use partner='self' "
                    "(or a team variant such as 'scopa-a-quattro')"
                )
            self._partner = self._register(_as_policy(partner, rules, "partner"))
        self._ar = np.arange(b)
        self.state = core.reset(rules, np.arange(b, dtype=np.uint64))
        self.seat_actor = np.zeros((b, n), dtype=np.int32)
        """(B, N) who plays each seat: -1 the learner, else an index in the actor registry."""
        self.learner_seat = np.zeros(b, dtype=np.int8)
        """(B,) the learner's seat (with ``partner='self'``, its side's other seats are learner seats too)."""
        self.learner_side = np.zeros(b, dtype=np.int8)
        self.opponent = np.zeros(b, dtype=np.int32)
        """(B,) pool index of each game's opponent."""
        self.opponent_pool = np.zeros(b, dtype=np.int32)
        self.episodes = np.zeros(b, dtype=np.int64)
        """(B,) episodes started in each slot."""
        self.hands = np.zeros(b, dtype=np.int32)
        self.margin = np.zeros(b, dtype=np.int32)
        self.reward_acc = np.zeros(b, dtype=np.float32)
        self.finished = np.zeros(b, dtype=np.bool_)
        """(B,) episode over and not restarted (only without ``autoreset``)."""
        self._ending = np.zeros(b, dtype=np.bool_)
        self._result = np.zeros(b, dtype=np.int8)
        self._truncated = np.zeros(b, dtype=np.bool_)
        self._ends: list[EpisodeEnds] = []
        self.mask = np.zeros((b, rules.num_actions), dtype=np.bool_)
        self._obs_size = observation.observation_size(rules)
        """(B, A) legal actions of the learner in each game (all False for a finished game); A = ``num_actions``."""

    # ------------------------------------------------------------------------------------------------ policies

    def _register(self, policy: Policy) -> int:
        for i, p in enumerate(self._actors):
            if p is policy:
                return i
        for i, p in enumerate(self._actors):
            if p is None:
                self._actors[i] = policy
                return i
        self._actors.append(policy)
        return len(self._actors) - 1

    @property
    def opponents(self) -> list[Policy]:
        """The current opponent pool."""
        return [p for p in (self._actors[i] for i in self._pool) if p is not None]

    def set_opponents(
        self, policies: OpponentSpec | Sequence[OpponentSpec], probs: Sequence[float] | None = None
    ) -> None:
        """From now on each new episode draws its opponent from ``policies`` (with ``probs``, default uniform).

        Episodes already running keep their opponent until they end.
        """
        if isinstance(policies, (Policy, str)):
            pool = [policies]
        else:
            try:
                pool = list(policies)
            except TypeError:
                raise TypeError(
                    f"opponents must be a Policy, an agent spec string such as 'random', or a list of them, "
                    f"got {type(policies).__name__}"
                ) from None
        if not pool:
            raise ValueError("the opponent pool is empty: give at least one policy (e.g. 'random')")
        if probs is None:
            p = np.full(len(pool), 1.0 / len(pool))
        else:
            try:
                p = np.asarray(probs, dtype=np.float64)
            except (TypeError, ValueError):
                p = np.full(0, np.nan)
            if p.shape != (len(pool),) or (p < 0).any() or not np.isfinite(p).all() or p.sum() <= 0:
                raise ValueError(
                    f"probs must be {len(pool)} non-negative numbers with a positive sum (one per policy), got {probs}"
                )
            p = p / p.sum()
        policies_ = [_as_policy(x, self.rules, "opponent") for x in pool]
        self._pool = [self._register(x) for x in policies_]
        self._pool_probs = p
        self.pool_generation += 1
        self._release_unused()

    def _release_unused(self) -> None:
        """Forget policies that no game, pool or partner refers to any more."""
        used = set(self._pool)
        if getattr(self, "_partner", -1) >= 0:
            used.add(self._partner)
        if hasattr(self, "seat_actor"):
            used.update(int(x) for x in np.unique(self.seat_actor) if x >= 0)
        for i in range(len(self._actors)):
            if i not in used:
                self._actors[i] = None

    def reseed(self, seed: int) -> None:
        """Reseed the env's generator (seat and opponent draws, illegal-action replacements) and every policy."""
        actors = [(i, p) for i, p in enumerate(self._actors) if p is not None]
        children = np.random.SeedSequence(int(seed)).spawn(1 + len(self._actors))
        self.rng = np.random.default_rng(children[0])
        for i, p in actors:
            p.seed(_policy_seed(children[1 + i]))

    # ------------------------------------------------------------------------------------------------ episodes

    def start(self, idx: npt.NDArray[np.intp], seeds: npt.NDArray[np.uint64]) -> None:
        """Start new episodes in game slots ``idx`` with the games of ``seeds``; the others play up to the learner."""
        idx = np.asarray(idx, dtype=np.intp)
        seeds = np.asarray(seeds).astype(np.uint64)
        if idx.size == self.num_games and (idx == self._ar).all():
            self.state = core.reset(self.rules, seeds)
        else:
            self.state.put(idx, core.reset(self.rules, seeds))
        self._assign(idx)
        self._ending[idx] = False
        self._ends = []
        self._play_others()
        self.mask = self._learner_mask()

    def _assign(self, idx: npt.NDArray[np.intp]) -> None:
        """Draw the learner's seat and the opponent of new episodes in slots ``idx``."""
        n, k = self.rules.num_players, idx.size
        mode = self.learner_seat_mode
        if mode == "rotate":
            seat = (idx + self.episodes[idx]) % n
        elif mode == "random":
            seat = self.rng.integers(n, size=k)
        else:
            seat = np.full(k, int(mode))
        if len(self._pool) == 1:
            opp = np.zeros(k, dtype=np.int64)
        else:
            opp = self.rng.choice(len(self._pool), size=k, p=self._pool_probs)
        side = self.side_of[seat]
        learner_seats = self._side_seats[side] if self._partner < 0 else np.eye(n, dtype=np.bool_)[seat]
        teammates = self._side_seats[side] & ~learner_seats
        actors = np.asarray(self._pool, dtype=np.int32)[opp]
        table = np.where(learner_seats, -1, np.where(teammates, self._partner, actors[:, None]))
        self.seat_actor[idx] = table
        self.learner_seat[idx] = seat
        self.learner_side[idx] = side
        self.opponent[idx] = opp
        self.opponent_pool[idx] = self.pool_generation
        self.episodes[idx] += 1
        self.hands[idx] = 0
        self.margin[idx] = 0
        self.finished[idx] = False

    # ------------------------------------------------------------------------------------------------ stepping

    def step(self, actions: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], EpisodeEnds, npt.NDArray[np.bool_]]:
        """One learner action per game -> (rewards (B,), the episodes that ended, (B,) replaced illegal actions).

        Finished games (without autoreset) ignore their action.
        """
        act, live, bad = self._learner_actions(actions)
        self.reward_acc[:] = 0.0
        self._ends = []
        if live.all():
            info = core.step(self.rules, self.state, act)
            self._account(None, info)
        else:
            rows = np.flatnonzero(live)
            sub = _take(self.state, rows)
            info = core.step(self.rules, sub, act[rows])
            self.state.put(rows, sub)
            self._account(rows, info)
        self._play_others()
        self.mask = self._learner_mask()
        return self.reward_acc.copy(), self._collect_ends(), bad

    def _learner_actions(
        self, actions: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """``step``'s actions checked: (B,) actions (illegal ones replaced, or raised), (B,) live, (B,) replaced."""
        b, d = self.num_games, self.rules.num_actions
        act = np.asarray(actions)
        if act.shape in ((b, 1), (1,) * act.ndim if b == 1 else (b,)):  # a column of actions, or one game's scalar
            act = act.reshape(-1)
        if act.shape != (b,):
            raise ValueError(
                f"expected {b} actions (one per game: shape ({b},), or ({b}, 1)), got an array of shape "
                f"{np.shape(actions)}"
            )
        if act.dtype.kind not in "iu":
            if act.dtype.kind == "f" and np.isfinite(act).all() and np.array_equal(act, np.round(act)):
                act = act.astype(np.int64)
            else:
                ids = core.tables_for(self.rules).variant.action_words
                raise TypeError(f"actions must be integer {ids} 0..{d - 1}, got dtype {act.dtype}")
        act = act.astype(np.int64)
        live = ~self.finished
        in_range = (act >= 0) & (act < d)
        legal = in_range & self.mask[self._ar, np.where(in_range, act, 0)]
        bad = live & ~legal
        if bad.any():
            if self.illegal == "raise":
                i = int(np.flatnonzero(bad)[0])
                raise core.IllegalActionError(
                    f"game {i}: action {int(act[i])} is illegal for the learner; legal actions: "
                    f"{np.flatnonzero(self.mask[i]).tolist()} (use the masks from action_masks(), or illegal='replace')"
                )
            rows = np.flatnonzero(bad)
            keys = self.rng.random((rows.size, d))
            keys[~self.mask[rows]] = -1.0
            act[rows] = keys.argmax(axis=1)
        return act, live, bad

    def observe(self) -> npt.NDArray[np.float32]:
        """(B, obs_size) each game's observation for the learner seat to act (final position if finished)."""
        seats = np.where(self.finished, self.learner_seat, self.state.current)
        return observation.observe(self.rules, self.state, seats=seats)

    def _learner_mask(self) -> npt.NDArray[np.bool_]:
        mask = core.legal_action_mask(self.rules, self.state)
        mask[self.finished] = False
        if self.mask_filter is not None:
            live = np.flatnonzero(~self.finished)
            if live.size:
                mask[live] = self.mask_filter(self.rules, self.state, live, mask[live])
        return mask

    def _play_others(self) -> None:
        """Let opponents and a policy partner act until every game is at a learner decision or finished.

        Each round, every game where another seat is to act takes one decision (``scopa_env.games.driver.decide``: one
        policy call per policy, observations only if one of them reads them, every answer checked).
        Episodes that ended in the learner's move are restarted together with those that end in the first round
        (one restart instead of two; their new games' first moves join the second round).
        """
        rules, ar = self.rules, self._ar
        rounds = 0
        while True:
            if rounds and self._ending.any():
                self._end_episodes()
            actor = self.seat_actor[ar, self.state.current]
            need = actor >= 0
            need &= ~self.finished
            need &= ~self._ending
            if not need.any():
                if not self._ending.any():
                    return
                self._end_episodes()
                rounds += 1
                continue
            rounds += 1
            rows = np.flatnonzero(need)
            if 2 * rows.size >= self.num_games:
                # Most games: step the whole state; the others get the out-of-range action -1, which the core
                # reports as illegal and leaves unchanged (cheaper than copying the rows out and back).
                full = rows.size == self.num_games
                acts = np.full(self.num_games, -1, dtype=np.int64)
                acts[rows] = decide(rules, self.state, self._actors, actor[rows], rows, check=True)
                info = core.step(rules, self.state, acts, on_illegal="raise" if full else "report")
                self._account(None, info)
            else:
                sub = _take(self.state, rows)
                acts = decide(rules, sub, self._actors, actor[rows], check=True)
                info = core.step(rules, sub, acts)
                self.state.put(rows, sub)
                self._account(rows, info)

    def _account(self, rows: npt.NDArray[np.intp] | None, info: core.StepInfo) -> None:
        """Rewards and episode ends from one core step over ``rows`` (None: all games)."""
        hand_over = info.hand_over
        if not hand_over.any():
            return
        g = np.flatnonzero(hand_over)
        games = g if rows is None else rows[g]
        side = self.learner_side[games].astype(np.int64)
        margin = margin_vs_best_other(info.hand_points[g, :, -1])[np.arange(g.size), side]
        self.margin[games] += margin
        self.hands[games] += 1
        if self.reward == "points":
            self.reward_acc[games] += margin
        if self.episode == "hand":
            ended = np.ones(g.size, dtype=np.bool_)
            truncated = np.zeros(g.size, dtype=np.bool_)
            result = np.sign(margin)
        else:
            over = info.match_over[g]
            truncated = ~over & (self.hands[games] >= self.max_hands)
            ended = over | truncated
            result = np.where(over, match_results(info.winner[g], self.rules.num_sides)[np.arange(g.size), side], 0)
        if not ended.any():
            return
        e = games[ended]
        if self.reward == "match":
            self.reward_acc[e] += result[ended]
        self._ending[e] = True
        self._result[e] = result[ended]
        self._truncated[e] = truncated[ended]

    def _end_episodes(self) -> None:
        """Record the episodes that just ended and restart their slots (or park them without autoreset)."""
        idx = np.flatnonzero(self._ending)
        self._ending[idx] = False
        final = _take(self.state, idx)
        self._ends.append(
            EpisodeEnds(
                idx=idx,
                observation=observation.observe(self.rules, final, seats=self.learner_seat[idx]),
                truncated=self._truncated[idx].copy(),
                result=self._result[idx].copy(),
                margin=self.margin[idx].copy(),
                opponent=self.opponent[idx].copy(),
                pool=self.opponent_pool[idx].copy(),
            )
        )
        if self.autoreset:
            seeds = derive_seed(self.state.seed[idx])
            self.state.put(idx, core.reset(self.rules, seeds))
            self._assign(idx)
        else:
            self.state.phase[idx] = core.Phase.DONE  # a hand episode's next hand is never played
            self.finished[idx] = True

    def _collect_ends(self) -> EpisodeEnds:
        if len(self._ends) == 1:
            return self._ends[0]
        if not self._ends:
            empty = np.zeros(0, dtype=np.int32)
            obs = np.zeros((0, self._obs_size), dtype=np.float32)
            return EpisodeEnds(
                empty.astype(np.intp), obs, empty.astype(np.bool_), empty.astype(np.int8), empty, empty, empty
            )
        parts = self._ends
        return EpisodeEnds(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in EpisodeEnds.__dataclass_fields__)  # type: ignore[arg-type]
        )


class SingleLearnerGame(LearnerGames):
    """``LearnerGames`` of one game on the single-game engine (``scopa_env.engine.single.SingleGame``): the same games.

    Everything a ``LearnerGames`` with ``num_games=1`` does, move for move and draw for draw (seats, opponents,
    illegal-action replacements, the policies' calls through ``driver.decide``, rewards, episode ends), but the game
    is a ``SingleGame``: the learner's moves, observations and masks cost no batched core call. The opponents and
    ``mask_filter`` still see a ``core.State``, built for them at each of their decisions; ``state`` is such a copy
    (assigning a ``core.State`` of one game replaces the game). A ``scopa_env.games.policy.RandomAgent`` (the class
    itself, not a subclass) is played without one: its card draws (``uniform_legal``) and capture picks
    (``uniform_capture_picks``) are made in compiled code from the same position-keyed stream, so they are the same
    numbers (``SingleGame.play_random``; with the learner's move and its next observation in one call when it plays
    every other seat: ``play_then_random``, which ``play_legal`` also lets play on past the end of a hand that cannot
    end the episode); a pick between two near-tied keys is left to ``RandomAgent.act``. ``mask`` is read-only
    (rebuilt after every step). ``scopa_env.envs.gym.ScopaEnv`` plays on it, on ``play_legal`` when the action is a
    legal card id; ``tests/test_single.py`` plays the same episodes on both engines and compares every result.
    """

    def __init__(self, rules: Rules | str, num_games: int = 1, *args: Any, **kwargs: Any) -> None:
        if num_games != 1:
            raise ValueError(f"SingleLearnerGame plays one game, got num_games={num_games!r}; use LearnerGames")
        self._mask_bits = 0
        self._mask_array: npt.NDArray[np.bool_] | None = None
        self._single_ends: list[tuple[npt.NDArray[np.float32], bool, int, int, int, int]] = []
        self.seat = 0
        self._reward = 0.0
        """The learner's reward in the current step (``reward_acc[0]``, float32 sums of small ints: the same)."""
        self._ending_one: tuple[int, bool] | None = None
        """(result, truncated) of the episode that ended in the last move, until ``_end_episodes`` records it."""
        self._against_random: tuple[int, int] | None = None
        """(actor, bit mask of its seats) when one policy plays every seat but the learner's side (``_assign_one``)."""
        self._observed: npt.NDArray[np.float32] | None = None
        """The learner's observation made by the last ``step_legal``'s compiled call (``play_legal`` hands it over)."""
        self._mask_ready: npt.NDArray[np.bool_] | None = None
        """Its (D,) legal actions, made in the same call: ``learner_mask`` hands them over once."""
        self._fast: tuple[RandomAgent, int, Any, npt.NDArray[np.int64], npt.NDArray[np.int64], int, int] | None = None
        """With ``_against_random`` a ``RandomAgent``: (it, its seats, ``play_then_random``'s compiled entry point,
        ``rc``, ``pc``, the observation's and the mask's sizes), for ``play_legal``'s path in one call."""
        self._through = False
        """Whether the hand now played can end without ending the episode (unless it ends the match): then
        ``play_legal``'s compiled call may play on past its end (``episode="match"``, more hands than it to go)."""
        self._key_of: tuple[object, int] = (object(), 0)
        """(a ``RandomAgent.key`` object, its 64 bits as the int64 the kernel takes): converted once per key."""
        self._seat_side = get_rules(rules).seat_side  # (a property that builds its tuple at every read)
        super().__init__(rules, 1, *args, **kwargs)
        self._actor_row: list[int] = self.seat_actor[0].tolist()
        self._d = self.rules.num_cards
        self._num_sides = self.rules.num_sides

    @property  # type: ignore[override]
    def state(self) -> core.State:
        """The game as a ``core.State`` batch of one (a new copy at every read)."""
        return self.game.to_state()

    @state.setter
    def state(self, state: core.State) -> None:
        self.game = SingleGame.from_state(self.rules, state)

    @property  # type: ignore[override]
    def mask(self) -> npt.NDArray[np.bool_]:
        """(1, D) the learner's legal actions (all False once finished); rebuilt after every step."""
        if self._mask_array is None:
            self._mask_array = self.game._c.bool_mask(self._mask_bits)[None]
        return self._mask_array

    @mask.setter
    def mask(self, mask: npt.NDArray[np.bool_]) -> None:
        mask = np.asarray(mask)
        self._mask_array = mask
        self._mask_ready = None
        self._mask_bits = bits_of(mask[0]) if mask.shape[0] else 0

    def learner_mask(self) -> npt.NDArray[np.bool_]:
        """(D,) a new copy of ``mask[0]`` (``ScopaEnv.action_masks``)."""
        ready = self._mask_ready
        if ready is not None:  # made by the last step's compiled call, not handed out yet
            self._mask_ready = None
            return ready
        if self._mask_array is None:
            return self.game._c.bool_mask(self._mask_bits)
        return self._mask_array[0].copy()

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` (an int) is a legal learner action now (False once finished)."""
        return 0 <= action < self._d and bool(self._mask_bits >> action & 1)

    def start(self, idx: npt.NDArray[np.intp], seeds: npt.NDArray[np.uint64]) -> None:
        idx = np.asarray(idx, dtype=np.intp)
        seeds = np.asarray(seeds).astype(np.uint64)
        if idx.tolist() != [0] or seeds.shape != (1,):
            raise ValueError(f"SingleLearnerGame has one game slot, 0: got slots {idx.tolist()}, seeds {seeds}")
        self.start_seed(int(seeds[0]))

    def start_seed(self, seed: int) -> None:
        """``start([0], [seed])``: a new episode with the game of ``seed`` (an int in [0, 2**64))."""
        self.game = self.game.restarted(seed)
        self._assign_one()
        self._ending_one = None
        self._single_ends = []
        self._play_others()
        self._set_mask()

    def _assign(self, idx: npt.NDArray[np.intp]) -> None:
        self._assign_one()

    def _assign_one(self) -> None:
        """``LearnerGames._assign`` of slot 0 in Python ints: the same draws from ``rng``, the same arrays."""
        rules = self.rules
        n = rules.num_players
        mode = self.learner_seat_mode
        if mode == "rotate":
            seat = int(self.episodes[0]) % n
        elif mode == "random":
            seat = int(self.rng.integers(n))  # the same draw as integers(n, size=1)[0], and the same stream after
        else:
            seat = int(mode)
        opp = 0 if len(self._pool) == 1 else int(self.rng.choice(len(self._pool), size=1, p=self._pool_probs)[0])
        side = self._seat_side[seat]
        team = rules.sides[side]
        actor = self._pool[opp]
        if self._partner < 0:
            row = [-1 if i in team else actor for i in range(n)]
        else:
            row = [-1 if i == seat else self._partner if i in team else actor for i in range(n)]
        self._actor_row = row
        others = {a for a in row if a >= 0}
        self._against_random = self._fast = None
        if len(others) == 1:  # one policy plays every other seat: a RandomAgent among them plays in compiled code
            actor = others.pop()
            seats = sum(1 << i for i, a in enumerate(row) if a == actor)
            self._against_random = (actor, seats)
            policy = self._actors[actor]
            if type(policy) is RandomAgent:
                c = self.game._c
                self._fast = (policy, seats, c.play_then_random, c.rc, c.pc, c.obs_size, c.a)
        self.seat = seat
        """The learner's seat (``learner_seat[0]`` as an int)."""
        self.seat_actor[0] = row
        self.learner_seat[0] = seat
        self.learner_side[0] = side
        self.opponent[0] = opp
        self.opponent_pool[0] = self.pool_generation
        self.episodes[0] += 1
        self.hands[0] = 0
        self.margin[0] = 0
        self.finished[0] = False
        self._update_through()

    def step(self, actions: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], EpisodeEnds, npt.NDArray[np.bool_]]:
        act = np.asarray(actions)
        a = int(act[0]) if act.shape == (1,) and act.dtype.kind in "iu" else -1
        if self.is_legal(a):  # a legal action: _learner_actions' checks all pass
            self.reward_acc[0] = self.step_legal(a)
            bad = np.zeros(1, dtype=np.bool_)
        else:
            act, live, bad = self._learner_actions(actions)
            if live[0]:
                self.reward_acc[0] = self.step_legal(int(act[0]))
            else:
                self.reward_acc[0] = 0.0
                self._single_ends = []
                self._play_others()
                self._set_mask()
        return self.reward_acc.copy(), self._collect_ends(), bad

    def step_legal(self, action: int) -> float:
        """``step`` of one legal learner action (``is_legal``): the reward; ``last_ends`` has the ended episodes."""
        self._single_ends = []
        self._reward = 0.0
        self._observed = self._mask_ready = None
        game = self.game
        against = self._against_random
        if against is not None and self.mask_filter is None:
            policy = self._actors[against[0]]
            if type(policy) is RandomAgent:  # the learner's move and the opponent's cards in one compiled call
                ended, bits, obs, mask = game.play_then_random(action, self._key(policy), against[1])
                if obs is not None:  # the hand goes on at a seat the policy does not play: the learner's decision
                    self._mask_array = None  # as below
                    self._mask_bits = bits
                    self._observed, self._mask_ready = obs, mask
                    return self._reward
                if ended is not None:
                    self._account_single(ended)
                self._play_others()
                self._set_learner_mask()
                return self._reward
        self._account_single(game.play(action))  # counts only a step that ended the hand
        self._play_others()
        self._set_learner_mask()
        return self._reward

    def _key(self, policy: RandomAgent) -> int:
        """``policy.key`` (64 bits) as the int64 the kernel takes, converted once per key object."""
        key = policy.key
        seen, k = self._key_of
        if seen is not key:
            k = int64_key(int(key))
            self._key_of = (key, k)
        return k

    def play_legal(
        self, action: int
    ) -> tuple[npt.NDArray[np.float32], float, list[tuple[npt.NDArray[np.float32], bool, int, int, int, int]]] | None:
        """``ScopaEnv.step``'s path in one call: None unless ``action`` (an int) ``is_legal``; else ``step_legal``,
        then (the learner's observation: the first ended episode's, else the seat to act's, made in the step's
        compiled call when it could be; the reward; ``last_ends``)."""
        if not (0 <= action < self._d and self._mask_bits >> action & 1):
            return None
        fast = self._fast
        if fast is not None and self.mask_filter is None:
            # step_legal's RandomAgent branch, inlined (the hot path of ScopaEnv.step: the same calls and results)
            policy, seats, play_then_random, rc, pc, obs_size, num_actions = fast
            game = self.game
            key_of = self._key_of
            key = key_of[1] if key_of[0] is policy.key else self._key(policy)
            out = _empty(obs_size, _F32)
            mask = _empty(num_actions, _BOOL)
            # through: a hand that ends may be played past when accounting it cannot end the episode
            code, over, bits, seen, kept = play_then_random(
                rc, pc, game._st, action, game._info, key, seats, out, mask, self._through
            )
            if code < 0:  # not reached: the action is legal
                game._raise_illegal(action)
            self._single_ends = []
            self._reward = 0.0
            self._mask_array = None
            if kept:  # the hand that ended on the way, its step info kept after the last step's
                self._account_kernel_hand(game._c.mod.INFO_SIZE)
            if seen:  # the hand goes on at the learner's decision
                self._observed = None
                self._mask_bits = bits
                self._mask_ready = mask
                return out, self._reward, self._single_ends
            self._observed = self._mask_ready = None
            if over:
                self._account_kernel_hand(0)
            self._play_others()
            self._set_learner_mask()
            ends = self._single_ends
            if ends:
                return ends[0][0], self._reward, ends
            return self.game.observe(), self._reward, ends
        reward = self.step_legal(action)
        ends = self._single_ends
        if ends:
            return ends[0][0], reward, ends
        obs = self._observed
        if obs is None:
            return self.game.observe(), reward, ends
        self._observed = None
        return obs, reward, ends

    def _set_learner_mask(self) -> None:
        """The learner's mask after a step (``_set_mask`` without a mask array when there is no filter)."""
        if self.mask_filter is None and not self.finished[0]:  # _set_mask's common case
            self._mask_array = None
            self._mask_bits = self.game.legal_bits()
        else:
            self._set_mask()

    @property
    def last_ends(self) -> list[tuple[npt.NDArray[np.float32], bool, int, int, int, int]]:
        """The episodes that ended in the last step: (observation, truncated, result, margin, opponent, pool) each."""
        return self._single_ends

    def _collect_ends(self) -> EpisodeEnds:
        ends = self._single_ends
        if not ends:
            empty = np.zeros(0, dtype=np.int32)
            obs = np.zeros((0, self._obs_size), dtype=np.float32)
            return EpisodeEnds(
                empty.astype(np.intp), obs, empty.astype(np.bool_), empty.astype(np.int8), empty, empty, empty
            )
        k = len(ends)
        return EpisodeEnds(
            idx=np.zeros(k, dtype=np.intp),
            observation=np.stack([e[0] for e in ends]),
            truncated=np.array([e[1] for e in ends], dtype=np.bool_),
            result=np.array([e[2] for e in ends], dtype=np.int8),
            margin=np.array([e[3] for e in ends], dtype=np.int32),
            opponent=np.array([e[4] for e in ends], dtype=np.int32),
            pool=np.array([e[5] for e in ends], dtype=np.int32),
        )

    def observe(self) -> npt.NDArray[np.float32]:
        return self.observe_one()[None]

    def observe_one(self) -> npt.NDArray[np.float32]:
        """(obs_size,) ``observe()[0]``: the learner seat's observation (final position if finished)."""
        game = self.game
        return game.observe(int(self.learner_seat[0]) if self.finished[0] else game.current)

    def _learner_mask(self) -> npt.NDArray[np.bool_]:
        """Set the learner's mask and return it."""
        self._set_mask()
        return self.mask

    def _set_mask(self) -> None:
        """Set the learner's mask (bits, and the filter's array with a ``mask_filter``); no array built without."""
        self._mask_array = self._mask_ready = None
        if self.finished[0]:
            self._mask_bits = 0
        elif self.mask_filter is None:
            self._mask_bits = self.game.legal_bits()
        else:
            mask = self.game.mask()[None]
            self.mask = np.asarray(self.mask_filter(self.rules, self.state, np.zeros(1, dtype=np.intp), mask))

    def _play_others(self) -> None:
        """``LearnerGames._play_others`` for the one game."""
        game, actors, row = self.game, self._actors, self._actor_row
        finished = bool(self.finished[0])  # changes only in _end_episodes here
        while True:
            if self._ending_one is not None:
                self._end_episodes()
                row, finished = self._actor_row, bool(self.finished[0])
            actor = row[game.current]
            if actor < 0 or finished:
                return
            policy = actors[actor]
            if type(policy) is RandomAgent and game.phase in (_PLAY, _CHOOSE):
                # RandomAgent.act drawn here, compiled: uniform_legal's cards and uniform_capture_picks' picks, the
                # same numbers from its position-keyed stream, no core.State needed; up to a decision of another seat
                # or kind, or a pick between two near-tied keys, which RandomAgent.act makes below (numpy's power)
                seats = sum(1 << i for i, x in enumerate(row) if x == actor)
                ended = game.play_random(self._key(policy), seats, True)
                if ended is not None:  # the hand is over
                    self._account_single(ended)
                    continue
                if not (seats >> game.current & 1 and game.phase == _CHOOSE):
                    continue
            acts = np.array([actor], dtype=np.int32)
            action = int(decide(self.rules, game.to_state(), actors, acts, np.zeros(1, np.intp), check=True)[0])
            self._account_single(game.play(action))  # counts only a step that ended the hand

    def _account_kernel_hand(self, at: int) -> None:
        """``_account_single`` of a hand the game's last compiled call ended, read from its step info at ``at`` in
        ``game._info`` (0: the last step's, what ``SingleGame._hand_over`` reads; ``INFO_SIZE``: the hand
        ``play_then_random`` played through), without building the ``SingleStep``."""
        game = self.game
        c = game._c
        m, f = c.mod, c.num_fields
        info = game._info[at : at + m.I_POINTS + self._num_sides * f].tolist()
        self._account_hand(info[m.I_POINTS + f - 1 :: f], bool(info[m.I_MATCH_OVER]), info[m.I_WINNER])

    def _account_single(self, info: SingleStep) -> None:
        """``LearnerGames._account`` for the one game."""
        if not info.hand_over:
            return
        assert info.hand_points is not None
        self._account_hand(info.hand_points[:, -1].tolist(), info.match_over, info.winner)

    def _update_through(self) -> None:
        """``_through`` for the hand about to be played: the episode is a match with more hands than it to go."""
        self._through = self.episode == "match" and int(self.hands[0]) + 1 < self.max_hands

    def _account_hand(self, points: list[int], match_over: bool, winner: int) -> None:
        """``_account_single`` of a hand that ended: the sides' ``points`` of the hand, whether the match is over and
        its winner."""
        side = int(self.learner_side[0])
        margin = points[side] - max(x for i, x in enumerate(points) if i != side)  # margin_vs_best_other
        self.margin[0] += margin
        self.hands[0] += 1
        self._update_through()
        if self.reward == "points":
            self._reward += margin
        if self.episode == "hand":
            ended, truncated, result = True, False, (margin > 0) - (margin < 0)
        else:
            over = match_over
            truncated = not over and int(self.hands[0]) >= self.max_hands
            ended = over or truncated
            result = (1 if winner == side else -1) if over else 0
        if not ended:
            return
        if self.reward == "match":
            self._reward += result
        self._ending_one = (result, truncated)

    def _end_episodes(self) -> None:
        """``LearnerGames._end_episodes`` for the one game."""
        assert self._ending_one is not None
        result, truncated = self._ending_one
        self._ending_one = None
        self._result[0] = result
        self._truncated[0] = truncated
        self._single_ends.append(
            (
                self.game.observe(int(self.learner_seat[0])),
                truncated,
                result,
                int(self.margin[0]),
                int(self.opponent[0]),
                int(self.opponent_pool[0]),
            )
        )
        if self.autoreset:
            self.game.new_match(next_seed(self.game.seed))
            self._assign_one()
        else:
            self.game.phase = int(core.Phase.DONE)  # a hand episode's next hand is never played
            self.finished[0] = True
