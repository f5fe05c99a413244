"""The single-agent loop under both single-agent envs: B games where a learner plays against batched policies.

``LearnerGames`` holds B games in one ``core.State``. It maps every game's seats to the learner (with
``partner="self"``, every seat of its side), a partner policy and the opponents drawn from a pool, lets the other
seats act (one ``Policy.act`` call per policy and round) until each game is back at a learner decision, pays the
rewards of every hand that ends (``hand_outcome``: the rewards and the episode ends, written once) and reports the
episodes that ended (``EpisodeEnds``, recorded and restarted by ``_end_episodes``). ``scopa_env.envs.vec_env``'s
``ScopaVecEnv`` (B games, stable-baselines3) runs it on the batched core; ``scopa_env.envs.gym``'s ``ScopaEnv`` runs
it, for every variant, on one compiled game (``scopa_env.games.learner_single.SingleLearnerGame``, which replaces
the engine's part: the game, its moves, masks and observations, and the other seats' play, in Python scalars). The
arguments and the rewards are documented in ``scopa_env.envs.gym`` and ``docs/envs.md``. No rule of the game lives
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
from scopa_env.errors import whole_number
from scopa_env.games.driver import decide
from scopa_env.games.policy import Policy, resolve_policy, uniform_legal
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_best_other
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
    "check_seed",
    "hand_outcome",
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
    if not whole_number(seed):
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


def hand_outcome(
    margin: Any, hands: Any, match_over: Any, winner: Any, side: Any, reward: str, episode: str, max_hands: int
) -> tuple[Any, Any, Any, Any]:
    """The rewards and the episode ends of the envs, written once: what a hand that just ended means for the learner.

    ``margin``: its side's points in the hand minus the best opposing side's (``margin_vs_best_other``); ``hands``:
    the hands of the episode so far, this one included; ``match_over`` and ``winner`` (-1: none): the core's step
    info; ``side``: the learner's side; the rest are the env's arguments. Returns (gain, ended, truncated, result):
    the step's reward for this hand (``"points"``: the margin; ``"match"``: the result, 0 until the episode ends),
    whether the episode ended, whether it was cut off at ``max_hands``, and its result (+1 / 0 / -1: a hand
    episode's is the sign of the margin). Python scalars (``SingleLearnerGame``, one game) or numpy arrays of the
    ended hands (``LearnerGames``, B games) alike: only arithmetic, comparisons and ``&`` / ``|``; with
    ``episode="hand"``, ``ended`` and ``truncated`` are the scalars True and False.
    """
    if episode == "hand":
        ended, truncated, result = True, False, 1 * (margin > 0) - 1 * (margin < 0)
    else:
        truncated = (hands >= max_hands) & (match_over == 0)
        ended = match_over | truncated
        result = (2 * (winner == side) - 1) * (match_over & (winner >= 0))
    return (margin if reward == "points" else result), ended, truncated, result


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
        return {  # item: the Python bool or int, without a numpy scalar on the way
            "terminal_observation": self.observation[j],
            "TimeLimit.truncated": self.truncated.item(j),
            "episode_opponent": self.opponent.item(j),
            "episode_pool": self.pool.item(j),
            "episode_result": self.result.item(j),
            "episode_margin": self.margin.item(j),
        }

    @classmethod
    def stacked(cls, parts: Sequence[EpisodeEnds], obs_size: int) -> EpisodeEnds:
        """``parts`` (the ends of one step, in order) as one ``EpisodeEnds``; none ended: no rows."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            empty = np.zeros(0, dtype=np.int32)
            obs = np.zeros((0, obs_size), dtype=np.float32)
            return cls(empty.astype(np.intp), obs, empty.astype(np.bool_), empty.astype(np.int8), empty, empty, empty)
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)))


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
        if not whole_number(num_games, 1, MAX_GAMES):
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
        elif not whole_number(learner_seat, 0, n - 1):
            raise ValueError(f"learner_seat must be 'rotate', 'random' or a seat 0..{n - 1}, got {learner_seat!r}")
        self.learner_seat_mode = learner_seat
        self.side_of = np.array(rules.seat_side, dtype=np.int8)
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
        same_side = self.side_of[:, None] == self.side_of[None, :]  # (N, N) seats of each seat's side
        learner_seats = same_side if self._partner < 0 else np.eye(n, dtype=np.bool_)
        self._seat_roles = np.where(learner_seats, -1, same_side).astype(np.int8)
        """(N, N) row i: who plays each seat when the learner sits at seat i: -1 the learner, 1 its partner policy,
        0 the opponent (the one table of ``_assign`` and ``SingleLearnerGame._assign``)."""
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
        self._obs_size = observation.observation_size(rules)
        self.mask = np.zeros((b, rules.num_actions), dtype=np.bool_)
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
        self._begin(idx)

    def _begin(self, idx: npt.NDArray[np.intp]) -> None:
        """New episodes in slots ``idx``, their games just dealt: draw seats and opponents, play up to the learner."""
        self._assign(idx)
        self._ending[idx] = False
        self._ends = []
        self._play_others()
        self._set_mask()

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
        roles = self._seat_roles[seat]
        actors = np.asarray(self._pool, dtype=np.int32)[opp]
        table = np.where(roles < 0, -1, np.where(roles > 0, self._partner, actors[:, None]))
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
        self._set_mask()
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
            act[rows] = uniform_legal(self.mask[rows], self.rng)
        return act, live, bad

    def observe(self) -> npt.NDArray[np.float32]:
        """(B, obs_size) each game's observation for the learner seat to act (final position if finished)."""
        seats = np.where(self.finished, self.learner_seat, self.state.current)
        return observation.observe(self.rules, self.state, seats=seats)

    def _set_mask(self) -> None:
        """Set ``mask``: the learner's legal actions in every game (none in a finished one; ``mask_filter``'s)."""
        mask = core.legal_action_mask(self.rules, self.state)
        mask[self.finished] = False
        if self.mask_filter is not None:
            live = np.flatnonzero(~self.finished)
            if live.size:
                mask[live] = self.mask_filter(self.rules, self.state, live, mask[live])
        self.mask = mask

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
        gain, ended, truncated, result = hand_outcome(
            margin,
            self.hands[games],
            info.match_over[g],
            info.winner[g],
            side,
            self.reward,
            self.episode,
            self.max_hands,
        )
        self.reward_acc[games] += gain
        ended = np.broadcast_to(ended, g.shape)
        if not ended.any():
            return
        e = games[ended]
        self._ending[e] = True
        self._result[e] = result[ended]
        self._truncated[e] = np.broadcast_to(truncated, g.shape)[ended]

    def _end_episodes(self) -> None:
        """Record the episodes that just ended and restart their slots (or park them without autoreset)."""
        idx = self._ending.nonzero()[0]
        self._ending.fill(False)
        self._ends.append(
            EpisodeEnds(
                idx=idx,
                observation=self._final_observations(idx),
                truncated=self._truncated[idx],
                result=self._result[idx],
                margin=self.margin[idx],
                opponent=self.opponent[idx],
                pool=self.opponent_pool[idx],
            )
        )
        if self.autoreset:
            self._restart(idx)
            self._assign(idx)
        else:
            self._park(idx)  # a hand episode's next hand is never played
            self.finished[idx] = True

    # ------------------------------------------------------------------------------------------------ the engine
    # What ``SingleLearnerGame`` plays on one compiled game instead (with ``state``, ``mask``, ``start``, ``step``,
    # ``observe``, ``_set_mask``, ``_play_others`` and ``_assign``): the loop above stays the same.

    def _final_observations(self, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        """(k, obs_size) the learner seats' observations of the games ``idx`` whose episode just ended."""
        return observation.observe(self.rules, _take(self.state, idx), seats=self.learner_seat[idx])

    def _restart(self, idx: npt.NDArray[np.intp]) -> None:
        """Start the next game of each seed chain in slots ``idx`` (``shuffle.derive_seed``)."""
        self.state.put(idx, core.reset(self.rules, derive_seed(self.state.seed[idx])))

    def _park(self, idx: npt.NDArray[np.intp]) -> None:
        """Mark the games ``idx`` over (without autoreset), so that no seat acts in them any more."""
        self.state.phase[idx] = core.Phase.DONE

    def _collect_ends(self) -> EpisodeEnds:
        return EpisodeEnds.stacked(self._ends, self._obs_size)
