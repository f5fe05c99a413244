"""The single-agent loop of ``scopa_env.games.learner`` on one game of the compiled kernel: ``SingleLearnerGame``.

``scopa_env.envs.gym``'s ``ScopaEnv`` plays every variant on it (cirulla included). It is ``LearnerGames`` with
``num_games=1`` (the same seats, opponents, draws, rewards and episode ends: ``learner.hand_outcome``,
``EpisodeEnds``), its game a ``scopa_env.engine.single.SingleGame`` instead of a batched ``core.State``, its
bookkeeping in Python scalars instead of arrays of one: a step costs a few compiled calls, no batched core call.
No rule of the game lives here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core
from scopa_env.engine.single import SingleGame, SingleStep, bits_of, int64_key, next_seed
from scopa_env.games.driver import decide
from scopa_env.games.learner import EpisodeEnds, LearnerGames, hand_outcome
from scopa_env.games.policy import RandomAgent
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.variant import hook_class

__all__ = ["SingleLearnerGame"]

_PLAY = int(core.Phase.PLAY)
_CHOOSE = int(core.Phase.CHOOSE)
_empty, _F32, _BOOL = np.empty, np.dtype(np.float32), np.dtype(np.bool_)
_SLOT0 = np.zeros(1, dtype=np.intp)


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
    end the episode); a pick between two near-tied keys is left to ``RandomAgent.act``. Not in cirulla (its family's
    ``single_learner`` is False: the compiled draws know no knocks nor fifteens' picks), where a ``RandomAgent``
    acts through ``driver.decide`` like any policy. ``mask`` is read-only (rebuilt after every step).
    ``scopa_env.envs.gym.ScopaEnv`` plays every variant on it, on ``play_legal`` when the action is a legal action
    id; ``tests/test_single.py`` plays the same episodes on both engines and compares every result.
    """

    def __init__(self, rules: Rules | str, num_games: int = 1, *args: Any, **kwargs: Any) -> None:
        if num_games != 1:
            raise ValueError(f"SingleLearnerGame plays one game, got num_games={num_games!r}; use LearnerGames")
        self._mask_bits = 0
        self._mask_array: npt.NDArray[np.bool_] | None = None
        self.seat = 0
        self._reward = 0.0
        """The learner's reward in the current step (``reward_acc[0]``, float32 sums of small ints: the same)."""
        self._against_random: tuple[int, int] | None = None
        """(actor, bit mask of its seats) when one policy plays every seat but the learner's side (``_assign``)."""
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
        self._kernel_random = RandomAgent if hook_class(get_rules(rules)).single_learner else None
        """``RandomAgent`` where the kernel's random play knows the family's moves (``play_random`` and
        ``play_then_random`` know no cirulla knocks nor fifteens' picks), else None: every policy through ``decide``."""
        super().__init__(rules, 1, *args, **kwargs)
        self._actor_row: list[int] = self.seat_actor[0].tolist()
        self._role_rows: list[list[int]] = self._seat_roles.tolist()
        self._d = self.rules.num_actions
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
        self._begin(_SLOT0)

    def _assign(self, idx: npt.NDArray[np.intp]) -> None:
        """``LearnerGames._assign`` of slot 0 in Python ints (its arrays cost more than the rest of a short episode's
        bookkeeping): the same draws from ``rng``, the same arrays; then the compiled opponent's arguments."""
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
        actor, partner = self._pool[opp], self._partner
        row = [-1 if role < 0 else partner if role else actor for role in self._role_rows[seat]]
        self._actor_row = row
        others = {a for a in row if a >= 0}
        self._against_random = self._fast = None
        if len(others) == 1:  # one policy plays every other seat: a RandomAgent among them plays in compiled code
            actor = others.pop()
            seats = sum(1 << i for i, a in enumerate(row) if a == actor)
            self._against_random = (actor, seats)
            policy = self._actors[actor]
            if type(policy) is self._kernel_random:
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
                self._ends = []
                self._play_others()
                self._set_mask()
        return self.reward_acc.copy(), self._collect_ends(), bad

    def step_legal(self, action: int) -> float:
        """``step`` of one legal learner action (``is_legal``): the reward; ``last_ends`` has the ended episodes."""
        self._ends = []
        self._reward = 0.0
        self._observed = self._mask_ready = None
        game = self.game
        against = self._against_random
        if against is not None and self.mask_filter is None:
            policy = self._actors[against[0]]
            if type(policy) is self._kernel_random:  # the learner's move and the opponent's cards in one compiled call
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

    def play_legal(self, action: int) -> tuple[npt.NDArray[np.float32], float, list[EpisodeEnds]] | None:
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
            self._ends = []
            self._reward = 0.0
            self._mask_array = None
            if kept:  # the hand that ended on the way, its step info kept after the last step's
                self._account_kernel_hand(game._c.mod.INFO_SIZE)
            if seen:  # the hand goes on at the learner's decision
                self._observed = None
                self._mask_bits = bits
                self._mask_ready = mask
                return out, self._reward, self._ends
            self._observed = self._mask_ready = None
            if over:
                self._account_kernel_hand(0)
            self._play_others()
            self._set_learner_mask()
            ends = self._ends
            if ends:
                return ends[0].observation[0], self._reward, ends
            return self.game.observe(), self._reward, ends
        reward = self.step_legal(action)
        ends = self._ends
        if ends:
            return ends[0].observation[0], reward, ends
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
    def last_ends(self) -> list[EpisodeEnds]:
        """The episodes that ended in the last step (one row each, in order)."""
        return self._ends

    def observe(self) -> npt.NDArray[np.float32]:
        return self.observe_one()[None]

    def observe_one(self) -> npt.NDArray[np.float32]:
        """(obs_size,) ``observe()[0]``: the learner seat's observation (final position if finished)."""
        game = self.game
        return game.observe(int(self.learner_seat[0]) if self.finished[0] else game.current)

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
        ending = self._ending
        while True:
            if ending[0]:
                self._end_episodes()
                row, finished = self._actor_row, bool(self.finished[0])
            actor = row[game.current]
            if actor < 0 or finished:
                return
            policy = actors[actor]
            if type(policy) is self._kernel_random and game.phase in (_PLAY, _CHOOSE):
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
        gain, ended, truncated, result = hand_outcome(
            margin, int(self.hands[0]), match_over, winner, side, self.reward, self.episode, self.max_hands
        )
        self._reward += gain
        if ended:
            self._ending[0] = True
            self._result[0] = result
            self._truncated[0] = truncated

    def _final_observations(self, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        return self.game.observe(int(self.learner_seat[0]))[None]

    def _restart(self, idx: npt.NDArray[np.intp]) -> None:
        self.game.new_match(next_seed(self.game.seed))

    def _park(self, idx: npt.NDArray[np.intp]) -> None:
        self.game.phase = int(core.Phase.DONE)
