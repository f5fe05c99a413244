"""The batched rules core: B games of Scopa advance in one call, in numpy only.

State is a struct of arrays with the batch first (see ``State``). Functions take ``(rules, state, ...)``; the rules
never live in the state. Randomness only enters through per-game 64-bit seeds (``scopa_env.shuffle``), so the
same seeds always give the same games and a batch of B games equals B games played one by one.

Action space: one ``Discrete(rules.num_actions)`` space whose ids below ``num_cards`` are card ids
(``scopa_env.cards``); cirulla adds ``stop`` (``num_cards``), ``knock-sum`` (``num_cards + 1``) and ``knock-tris``
(``num_cards + 2``), see ``stop_action`` and the cirulla notes below.

- ``PLAY`` phase: the acting seat plays a card from its hand (the mask is its hand). If the card has no capture it
  is laid; if it has exactly one legal capture, the capture is made at once.
- ``CHOOSE`` phase (only when several captures are legal): the same seat picks the captured table cards one at a
  time; the mask allows exactly the table cards that belong to some legal capture still consistent with the cards
  picked so far. As soon as the picked cards determine a single capture, it is completed automatically. Every legal
  capture is reachable, and every pick sequence ends in a legal capture.

Cirulla (``rules.cirulla``, RULES.md section 6; docs/rules.md):

- ``KNOCK`` phase (``Phase.KNOCK``): right after every deal (after any initial-table take), each seat whose three
  cards qualify decides once, in play order from the player after the dealer, before any card of the deal is
  played: ``stop`` (no knock, always legal), ``knock-sum`` (3 points: the values add up to 9 or less, ``7c``
  counting 1) or ``knock-tris`` (10 points: three of a rank, or a pair and ``7c``). A knock reveals the seat's
  cards (``State.revealed``) and adds to its side's ``State.knock_points``. Then PLAY starts as usual.
- CHOOSE phase: the mask also allows ``stop`` exactly when the picked cards are a legal capture and another legal
  capture strictly contains them; ``stop`` makes the capture of exactly the picked cards.
- A new hand: two or more aces on the table void the deal (reshuffle, as ``void_on_kings``); a table adding up to
  15 (30), ``7c`` standing for any value 1..10, goes to the dealer's side with one (two) scope
  (``State.table_take``, ``StepInfo.table_take``).

Moves: ``move_classes`` lists the legal move classes of many games (card, kind, rank multiset) with the one batched
enumerator of ``scopa_env.moves``, which the agents' candidate moves also build on; ``legal_moves`` (one game) and
``legal_move_lists`` (many) expand them into every ``(card, captured set)`` pair, and ``move_actions`` turns chosen
moves into the next action of each game. ``remaining_plies``, ``is_last_play`` and ``is_open`` tell how a hand
ends: the plies left, the last play (never a scopa), an open book (every hidden card deducible).

Arguments are checked with a ``TypeError`` or ``ValueError`` naming them, at a cost of O(1) or one comparison per
game: seeds, ``batch`` (at most ``MAX_BATCH``), actions, ``seats``, ``game``, ``on_illegal``, ``autoreset``, and
the state itself: every game carries ``rules_key`` (a fingerprint of the rules, not the rules), so a state is never
stepped or observed under another variant's rules.
"""

from __future__ import annotations

import reprlib
import zlib
from dataclasses import dataclass, fields
from enum import IntEnum
from typing import Literal

import numpy as np
import numpy.typing as npt

from scopa_env.captures import capture_table
from scopa_env.moves import FIFTEEN_TOTAL, MoveClasses, MoveKind, enumerate_moves, expand_captures
from scopa_env.rules import Rules, get_rules
from scopa_env.scoring import match_winners, point_fields, score_hands
from scopa_env.shuffle import derive_seed, first_dealer, shuffled_decks

__all__ = [
    "KNOCK_POINTS",
    "NO_END",
    "OBS_VERSION",
    "IllegalActionError",
    "KnockKind",
    "MoveClasses",
    "MoveKind",
    "Phase",
    "State",
    "StepInfo",
    "action_name",
    "enumerate_captures",
    "is_last_play",
    "is_open",
    "knock_sum_action",
    "knock_tris_action",
    "legal_action_mask",
    "legal_move_lists",
    "legal_moves",
    "move_actions",
    "move_classes",
    "observation_layout",
    "observation_size",
    "observation_version",
    "observe",
    "remaining_plies",
    "reset",
    "rules_key",
    "step",
    "stop_action",
]

OBS_VERSION = 2
"""Bumped whenever the observation layout or meaning changes; checkpoints record it.

Version history: 1, the card sets and counters; 2, adds the ``plays`` block (what a card of each value would do
on the current table). Cirulla's observations are version 3 (``observation_version``): version 2's layout with
cirulla's captures in ``plays``, then the ``revealed``, ``knocks``, ``knocking`` and ``fifteens`` blocks."""
CIRULLA_OBS_VERSION = 3
"""``observation_version`` of cirulla's rules."""


def observation_version(rules: Rules | str) -> int:
    """The observation version of a variant: ``OBS_VERSION`` (2), or 3 under cirulla's rules."""
    return CIRULLA_OBS_VERSION if get_rules(rules).cirulla else OBS_VERSION


MAX_BATCH = 2**22
"""Most games one ``State`` holds (``reset``): about 1.3 GiB of state for a two-player variant."""


class Phase(IntEnum):
    PLAY = 0
    CHOOSE = 1
    DONE = 2
    KNOCK = 3
    """Cirulla: the seat to act decides whether to knock (``stop``, ``knock-sum``, ``knock-tris``)."""


_PLAY, _CHOOSE, _DONE, _KNOCK = (int(p) for p in Phase)  # plain ints compare faster


class KnockKind(IntEnum):
    """Cirulla's knock decision (``StepInfo.knock``): none, by sum (3 points) or three of a kind (10 points)."""

    NONE = 0
    SUM = 1
    TRIS = 2


KNOCK_POINTS = (0, 3, 10)
"""Points of each ``KnockKind``."""
KNOCK_SUM_LIMIT = 9
"""A hand knocks by sum when its values add up to at most this (``7c`` counting 1)."""
MATTA = "7c"
"""Cirulla's wild card (la matta): any value for the initial-table count, 1 or a pair's rank for knocks."""
TABLE_TAKE_TOTALS = (15, 30)
"""An initial table adding up to 15 (30) is taken with one (two) scope (cirulla)."""


def stop_action(rules: Rules | str) -> int:
    """Cirulla's ``stop`` action id (``num_cards``): no knock in the KNOCK phase; in the CHOOSE phase, capture
    exactly the cards picked so far."""
    return get_rules(rules).num_cards


def knock_sum_action(rules: Rules | str) -> int:
    """Cirulla's ``knock-sum`` action id (``num_cards + 1``): knock for 3 points (hand values add up to <= 9)."""
    return get_rules(rules).num_cards + 1


def knock_tris_action(rules: Rules | str) -> int:
    """Cirulla's ``knock-tris`` action id (``num_cards + 2``): knock for 10 points (three of a kind)."""
    return get_rules(rules).num_cards + 2


_ACTION_NAMES = ("stop", "knock-sum", "knock-tris")


def action_name(rules: Rules | str, action: int) -> str:
    """An action in words: a card (``'7d'``), or ``'stop'``, ``'knock-sum'``, ``'knock-tris'``."""
    from scopa_env.cards import format_card

    rules = get_rules(rules)
    a = int(action)
    if 0 <= a < rules.num_cards:
        return format_card(a, rules.deck)
    if rules.num_cards <= a < rules.num_actions:
        return _ACTION_NAMES[a - rules.num_cards]
    raise ValueError(f"action {a} is outside {rules.name!r}'s action ids 0..{rules.num_actions - 1}")


class IllegalActionError(ValueError):
    """An action that is not legal in its game."""


@dataclass
class State:
    """B games. Every array has the batch on axis 0. D = num_cards, N = num_players, S = num_sides."""

    hands: npt.NDArray[np.bool_]
    """(B, N, D) bool: cards in each seat's hand."""
    table: npt.NDArray[np.bool_]
    """(B, D) bool: cards face up on the table."""
    piles: npt.NDArray[np.bool_]
    """(B, S, D) bool: cards captured by each side this hand."""
    deck: npt.NDArray[np.int8]
    """(B, D) int8: this hand's deck order; cards deck[stock_pos:] are the stock (hidden)."""
    stock_pos: npt.NDArray[np.int16]
    """(B,) int16: index in ``deck`` of the next card to deal."""
    current: npt.NDArray[np.int8]
    """(B,) int8: seat to act."""
    dealer: npt.NDArray[np.int8]
    """(B,) int8: dealer of this hand."""
    phase: npt.NDArray[np.int8]
    """(B,) int8: ``Phase``."""
    pending: npt.NDArray[np.int8]
    """(B,) int8: card played whose capture is being chosen (CHOOSE phase), else -1."""
    picked: npt.NDArray[np.bool_]
    """(B, D) bool: table cards picked so far in the CHOOSE phase."""
    last_capturer: npt.NDArray[np.int8]
    """(B,) int8: side that made the last capture of this hand, -1 if none yet."""
    scope: npt.NDArray[np.int16]
    """(B, S) int16: scope (sweeps) of each side this hand."""
    scores: npt.NDArray[np.int16]
    """(B, S) int16: match points of each side, updated at the end of each hand."""
    hand_no: npt.NDArray[np.int32]
    """(B,) int32: 0-based index of the current hand in the match."""
    deal_no: npt.NDArray[np.int8]
    """(B,) int8: 0-based index of the current deal within the hand."""
    seed: npt.NDArray[np.uint64]
    """(B,) uint64: the game's seed (fixes every deal of the match)."""
    winner: npt.NDArray[np.int8]
    """(B,) int8: winning side once the match is over, else -1."""
    rules_key: npt.NDArray[np.uint32]
    """(B,) uint32: ``rules_key`` of the rules the game was started under; the core refuses other rules on it."""
    revealed: npt.NDArray[np.bool_] = None  # type: ignore[assignment]
    """(B, N, D) bool: cirulla: cards revealed by a knock and still in that seat's hand (all False otherwise)."""
    knock_points: npt.NDArray[np.int16] = None  # type: ignore[assignment]
    """(B, S) int16: cirulla: knock points of each side this hand (added to its hand points at the end)."""
    table_take: npt.NDArray[np.int8] = None  # type: ignore[assignment]
    """(B,) int8: cirulla: scope the dealer's side scored by taking this hand's initial table (the first
    ``table_cards`` cards of ``deck``), 0 if it was not taken."""

    def __post_init__(self) -> None:
        """Fields added for cirulla default to zeros shaped from the others (states built field by field)."""
        if self.revealed is None:
            self.revealed = np.zeros(self.hands.shape, dtype=np.bool_)
        if self.knock_points is None:
            self.knock_points = np.zeros(self.scope.shape, dtype=np.int16)
        if self.table_take is None:
            self.table_take = np.zeros(self.table.shape[:1], dtype=np.int8)

    @property
    def batch_size(self) -> int:
        return int(self.table.shape[0])

    @property
    def done(self) -> npt.NDArray[np.bool_]:
        """(B,) bool: the match is over."""
        return self.phase == Phase.DONE

    def copy(self) -> State:
        return State(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def take(self, idx: npt.ArrayLike) -> State:
        """A new state holding the games ``idx`` (copies)."""
        idx = np.asarray(idx)
        return State(**{f.name: getattr(self, f.name)[idx].copy() for f in fields(self)})

    def put(self, idx: npt.ArrayLike, other: State) -> None:
        """Overwrite games ``idx`` with the games of ``other`` (same rules)."""
        idx = np.asarray(idx)
        for f in fields(self):
            getattr(self, f.name)[idx] = getattr(other, f.name)

    @staticmethod
    def concat(states: list[State]) -> State:
        return State(**{f.name: np.concatenate([getattr(s, f.name) for s in states]) for f in fields(State)})

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in fields(self))


@dataclass
class StepInfo:
    """What one ``step`` did, per game (B,). Fields for moves are meaningful where ``move_done``."""

    acted: npt.NDArray[np.bool_]
    """Game took a legal action this step."""
    illegal: npt.NDArray[np.bool_]
    """Game's action was illegal (``on_illegal='report'``); its state is unchanged."""
    seat: npt.NDArray[np.int8]
    """Seat that acted."""
    move_done: npt.NDArray[np.bool_]
    """A whole move (play plus capture or lay) was completed."""
    card: npt.NDArray[np.int8]
    """Card played by the completed move, else -1."""
    capture: npt.NDArray[np.bool_]
    """(B, D) table cards taken by the completed move (empty for a lay)."""
    scopa: npt.NDArray[np.bool_]
    """The completed move was a scopa."""
    hand_over: npt.NDArray[np.bool_]
    """The hand ended with this move and was scored."""
    hand_points: npt.NDArray[np.int16]
    """(B, S, F) points of the hand that ended, in ``scoring.point_fields(rules)`` order (F = 6: ``POINT_FIELDS``;
    9 under cirulla: napoli, grande and knocks before the total)."""
    leftover_side: npt.NDArray[np.int8]
    """Side that took the cards left on the table at the end of the hand; -1 if none were left or nobody captured."""
    leftover: npt.NDArray[np.bool_]
    """(B, D) cards left on the table at the end of the hand."""
    match_over: npt.NDArray[np.bool_]
    """The match ended with this move."""
    winner: npt.NDArray[np.int8]
    """Winning side of a match that ended, else -1."""
    final_scores: npt.NDArray[np.int16]
    """(B, S) match scores after this move (before any automatic reset)."""
    new_hand: npt.NDArray[np.bool_]
    """A new hand was dealt (a next hand, or a new game after an automatic reset)."""
    reset: npt.NDArray[np.bool_]
    """The game was finished and automatically reset to a new match."""
    knock: npt.NDArray[np.int8]
    """Cirulla: the ``KnockKind`` of a knock decision made this step by ``seat`` (0: none, or no decision)."""
    table_take: npt.NDArray[np.int8]
    """Cirulla: where ``new_hand``, the scope of the new hand's initial-table take (``State.table_take``), else 0."""


_CIRULLA_FIELDS = frozenset({"fifteens", "knocks", "table_take", "void_on_aces", "napoli_grande"})
"""Rules fields added for cirulla: left out of ``rules_key`` when off, so every other variant keeps its key."""


def rules_key(rules: Rules | str) -> int:
    """A 32-bit fingerprint of the rules (every field but the description), the same in every process.

    Stored in every game of a ``State`` (``State.rules_key``): ``step``, ``observe``, ``legal_action_mask`` and
    ``legal_moves`` refuse a state started under other rules (one comparison per game).
    """
    rules = get_rules(rules)
    parts = tuple(
        (f.name, getattr(rules, f.name))
        for f in fields(rules)
        if f.compare and not (f.name in _CIRULLA_FIELDS and not getattr(rules, f.name))
    )
    return zlib.crc32(repr(parts).encode("utf-8"))


class _Tables:
    """Per-rules constant arrays, computed once."""

    def __init__(self, rules: Rules) -> None:
        self.rules_name = rules.name
        self.key = np.uint32(rules_key(rules))
        _RULES_NAMES.setdefault(int(self.key), rules.name)
        deck = rules.deck
        d, r = deck.num_cards, deck.num_ranks
        self.d, self.r = d, r
        self.value = deck.value.astype(np.int16)
        self.rank = deck.rank.astype(np.int64)
        self.rank_onehot = np.eye(r, dtype=np.int16)[self.rank]  # (D, R)
        self.king_mask = self.rank == deck.king_rank
        self.ace_rank = 0
        self.side_of = np.array(rules.seat_side, dtype=np.int8)
        self.ctable = capture_table(r, r)
        self.rank_bits = (1 << self.rank).astype(np.int32)  # (D,)
        self.low = r // 2  # ranks counted in _subset_sums' keys; above them only presence matters
        low_keys = _COUNT_RADIX**self.low
        self.sum_radix = np.concatenate(
            [_COUNT_RADIX ** np.arange(self.low), low_keys * 2 ** np.arange(r - self.low)]
        ).astype(np.float32)
        self.sum_table = _subset_sum_table(r)
        self.num_point_fields = len(point_fields(rules))
        self.ace_mask = self.rank == self.ace_rank
        if rules.cirulla:
            from scopa_env.cards import parse_card

            self.matta = parse_card(MATTA, deck)
            self.knock_value = self.value.astype(np.float32)
            self.knock_value[self.matta] = 1.0  # 7c counts 1 toward a knock by sum
            self.not_matta = np.ones(d, dtype=np.bool_)
            self.not_matta[self.matta] = False


_TABLES: dict[Rules, _Tables] = {}
_RULES_NAMES: dict[int, str] = {}
"""Variant name of every ``rules_key`` seen in this process (for error messages)."""
_COUNT_RADIX = 5
"""Cards of one rank in a set: 0..4 (four suits), the digits of ``_subset_sums``' table keys."""


def _tables(rules: Rules) -> _Tables:
    t = _TABLES.get(rules)
    if t is None:
        t = _TABLES[rules] = _Tables(rules)
    return t


def _checked_tables(rules: Rules, state: State) -> _Tables:
    """``_tables(rules)``, after checking that ``state`` is a ``State`` whose games were started under ``rules``."""
    tb = _tables(rules)
    if not isinstance(state, State):
        raise TypeError(f"state must be a scopa_env.core.State (from core.reset), got {type(state).__name__}")
    keys = state.rules_key
    if not (keys == tb.key).all():
        other = int(keys[np.flatnonzero(keys != tb.key)[0]])
        made = _RULES_NAMES.get(other, f"unknown rules (key {other:#010x})")
        raise ValueError(
            f"the state's games were started under {made!r}, but the rules passed are {rules.name!r}; "
            f"pass the rules of the state (core.reset({made!r}, ...) made it)"
        )
    return tb


def _rank_counts(cards: npt.NDArray[np.bool_], num_ranks: int) -> npt.NDArray[np.uint8]:
    """(n, D) bool card masks -> (n, R) uint8 counts per rank (adds the four suit slices; faster than sum)."""
    v = cards.view(np.uint8).reshape(cards.shape[0], 4, num_ranks)
    return v[:, 0] + v[:, 1] + v[:, 2] + v[:, 3]


def _rows_any(a: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """(n, k) bool -> (n,) any, reading 8 cards at a time when the row length allows."""
    if a.shape[1] % 8 == 0 and a.flags.c_contiguous:
        return np.asarray(a.view(np.uint64).any(axis=1))
    return np.asarray(a.any(axis=1))


def _hand_sizes(hands: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """(B, N, D) bool -> (B, N) float32 card counts (a float matmul beats an integer reduction here)."""
    b, n, d = hands.shape
    return (hands.reshape(b * n, d).astype(np.float32) @ np.ones(d, dtype=np.float32)).reshape(b, n)


# --------------------------------------------------------------------------------------------------- reset / deal


def _empty_state(rules: Rules, batch: int) -> State:
    n, s, d = rules.num_players, rules.num_sides, rules.num_cards
    return State(
        hands=np.zeros((batch, n, d), dtype=np.bool_),
        table=np.zeros((batch, d), dtype=np.bool_),
        piles=np.zeros((batch, s, d), dtype=np.bool_),
        deck=np.zeros((batch, d), dtype=np.int8),
        stock_pos=np.zeros(batch, dtype=np.int16),
        current=np.zeros(batch, dtype=np.int8),
        dealer=np.zeros(batch, dtype=np.int8),
        phase=np.zeros(batch, dtype=np.int8),
        pending=np.full(batch, -1, dtype=np.int8),
        picked=np.zeros((batch, d), dtype=np.bool_),
        last_capturer=np.full(batch, -1, dtype=np.int8),
        scope=np.zeros((batch, s), dtype=np.int16),
        scores=np.zeros((batch, s), dtype=np.int16),
        hand_no=np.zeros(batch, dtype=np.int32),
        deal_no=np.zeros(batch, dtype=np.int8),
        seed=np.zeros(batch, dtype=np.uint64),
        winner=np.full(batch, -1, dtype=np.int8),
        rules_key=np.full(batch, _tables(rules).key, dtype=np.uint32),
        revealed=np.zeros((batch, n, d), dtype=np.bool_),
        knock_points=np.zeros((batch, s), dtype=np.int16),
        table_take=np.zeros(batch, dtype=np.int8),
    )


def _as_seeds(seeds: npt.ArrayLike | np.random.Generator, batch: int | None) -> npt.NDArray[np.uint64]:
    if batch is not None and (
        isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 1 <= batch <= MAX_BATCH
    ):
        raise ValueError(f"batch must be a number of games in 1..{MAX_BATCH}, got {batch!r}")
    if isinstance(seeds, np.random.Generator):
        if batch is None:
            raise ValueError("reset(rules, rng) needs batch=B to know how many games to start")
        return seeds.integers(0, 2**63, size=int(batch), dtype=np.int64).astype(np.uint64)
    try:
        arr = np.asarray(seeds)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"seeds must be a 1-D array of integers in [0, 2**64), got {seeds!r} ({e})") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"seeds must be a non-empty 1-D array of integers, got shape {arr.shape}")
    if arr.size > MAX_BATCH:
        raise ValueError(f"got {arr.size} seeds; a state holds at most {MAX_BATCH} games (use several states)")
    if arr.dtype.kind not in "iu":
        what = f"dtype {arr.dtype}" if arr.dtype.kind != "O" else reprlib.repr(seeds)
        raise TypeError(f"seeds must be integers in [0, 2**64), got {what}")
    if arr.dtype.kind == "i" and (arr < 0).any():
        raise ValueError(f"seeds must be non-negative, got {int(arr[arr < 0][0])}")
    if batch is not None and arr.size != batch:
        raise ValueError(f"got {arr.size} seeds for batch={batch}")
    return arr.astype(np.uint64)


def reset(rules: Rules | str, seeds: npt.ArrayLike | np.random.Generator, batch: int | None = None) -> State:
    """Start one match per seed: ``reset(rules, [7, 8, 9])`` or ``reset(rules, np.random.default_rng(0), batch=B)``."""
    rules = get_rules(rules)
    s = _as_seeds(seeds, batch)
    state = _empty_state(rules, s.size)
    _new_matches(rules, state, np.arange(s.size), s)
    return state


def _new_matches(rules: Rules, state: State, idx: npt.NDArray[np.intp], seeds: npt.NDArray[np.uint64]) -> None:
    state.seed[idx] = seeds
    state.scores[idx] = 0
    state.winner[idx] = -1
    state.hand_no[idx] = 0
    state.dealer[idx] = first_dealer(seeds, rules.num_players)
    _start_hands(rules, state, idx)


def _start_hands(rules: Rules, state: State, idx: npt.NDArray[np.intp]) -> None:
    """Shuffle (re-dealing void deals), lay the table and deal the first round for games ``idx``."""
    tb = _tables(rules)
    n = idx.size
    if n == 0:
        return
    attempt = np.zeros(n, dtype=np.int64)
    decks = shuffled_decks(state.seed[idx], state.hand_no[idx], attempt, tb.d)
    k = rules.table_cards
    if (rules.void_on_kings or rules.void_on_aces) and k:
        while True:
            void = np.zeros(n, dtype=np.bool_)
            if rules.void_on_kings:
                void |= tb.king_mask[decks[:, :k]].sum(axis=1) >= 3
            if rules.void_on_aces:
                void |= tb.ace_mask[decks[:, :k]].sum(axis=1) >= 2
            if not void.any():
                break
            attempt[void] += 1
            decks[void] = shuffled_decks(state.seed[idx[void]], state.hand_no[idx[void]], attempt[void], tb.d)
    state.deck[idx] = decks
    state.hands[idx] = False
    state.table[idx] = False
    state.piles[idx] = False
    state.picked[idx] = False
    state.scope[idx] = 0
    state.last_capturer[idx] = -1
    state.pending[idx] = -1
    state.phase[idx] = Phase.PLAY
    if k:
        state.table[idx[:, None], decks[:, :k]] = True
    state.stock_pos[idx] = k
    state.deal_no[idx] = 0
    if rules.cirulla:
        state.revealed[idx] = False
        state.knock_points[idx] = 0
        state.table_take[idx] = 0
        if rules.table_take and k:
            _take_initial_tables(rules, tb, state, idx)
    _deal_round(rules, state, idx)
    state.current[idx] = (state.dealer[idx] + 1) % rules.num_players
    if rules.knocks:
        _next_knocker(rules, tb, state, idx, np.full(n, -1, dtype=np.intp))


def _take_initial_tables(rules: Rules, tb: _Tables, state: State, idx: npt.NDArray[np.intp]) -> None:
    """Cirulla: an initial table adding up to 15 (30), ``7c`` standing for any value 1..10, goes to the dealer's
    side with one (two) scope; it counts as that side's capture (the last capturer so far)."""
    table = state.table[idx]
    total = table.astype(np.float32) @ tb.value.astype(np.float32)  # (n,) exact small integers
    matta = table[:, tb.matta]
    lo = np.where(matta, total - 7 + 1, total)  # the matta makes any total from lo to hi
    hi = np.where(matta, total - 7 + tb.r, total)
    scope = np.zeros(idx.size, dtype=np.int8)
    for i, t in enumerate(TABLE_TAKE_TOTALS):
        scope[(lo <= t) & (t <= hi)] = i + 1
    taken = np.flatnonzero(scope > 0)
    if taken.size:
        g = idx[taken]
        side = tb.side_of[state.dealer[g]]
        state.piles[g, side] |= state.table[g]
        state.table[g] = False
        state.scope[g, side] += scope[taken]
        state.last_capturer[g] = side
        state.table_take[g] = scope[taken]


def _knock_options(tb: _Tables, hands: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(m, N, D) hands -> ``(by_sum, tris)`` (m, N): which seats may knock by sum (three cards worth <= 9, ``7c``
    counting 1) and by three of a kind (three of a rank, or a pair and ``7c``)."""
    m, n, d = hands.shape
    h = hands.reshape(m * n, d)
    size = (h.astype(np.float32) @ np.ones(d, dtype=np.float32)).reshape(m, n)
    three = size == 3
    by_sum = three & ((h.astype(np.float32) @ tb.knock_value).reshape(m, n) <= KNOCK_SUM_LIMIT)
    most = _rank_counts(h & tb.not_matta, tb.r).max(axis=1).reshape(m, n)
    tris = three & ((most >= 3) | ((most >= 2) & h[:, tb.matta].reshape(m, n)))
    return by_sum, tris


def _next_knocker(
    rules: Rules, tb: _Tables, state: State, g: npt.NDArray[np.intp], after: npt.NDArray[np.intp]
) -> None:
    """For games ``g`` (a deal just made, or a knock decision just taken by the seat at play-order position
    ``after``): the next seat in play order that may knock decides (KNOCK phase), else the deal's first player
    plays (PLAY phase)."""
    if g.size == 0:
        return
    n = rules.num_players
    order = (state.dealer[g].astype(np.intp)[:, None] + 1 + np.arange(n)) % n  # (m, N) seats in play order
    by_sum, tris = _knock_options(tb, state.hands[g])
    may = np.take_along_axis(by_sum | tris, order, axis=1) & (np.arange(n)[None, :] > after[:, None])
    has = may.any(axis=1)
    first = np.where(has, may.argmax(axis=1), 0)
    state.current[g] = order[np.arange(g.size), first]
    state.phase[g] = np.where(has, _KNOCK, _PLAY)


def _deal_round(rules: Rules, state: State, idx: npt.NDArray[np.intp]) -> None:
    """Deal packet ``deal_sizes[deal_no]`` to every seat, starting after the dealer, for games ``idx``."""
    num_players = rules.num_players
    sizes = np.asarray(rules.deal_sizes)[state.deal_no[idx]]
    for size in [int(sizes[0])] if (sizes == sizes[0]).all() else np.unique(sizes).tolist():
        g = idx[sizes == size]
        pos = state.stock_pos[g].astype(np.int64)[:, None] + np.arange(num_players * size)  # (n, N*k)
        cards = np.take_along_axis(state.deck[g], pos, axis=1).reshape(g.size, num_players, size)
        seats = (state.dealer[g].astype(np.int64)[:, None] + 1 + np.arange(num_players)) % num_players
        state.hands[g[:, None, None], seats[:, :, None], cards] = True
        state.stock_pos[g] += num_players * size


# --------------------------------------------------------------------------------------------------- legality


def _choose_mask(rules: Rules, state: State, g: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n, D) pickable table cards for games ``g`` in the CHOOSE phase."""
    tb = _tables(rules)
    card = state.pending[g].astype(np.int64)
    table = state.table[g]
    rank = tb.rank[card]
    same_rank = table & (tb.rank[None, :] == rank[:, None])
    equal = same_rank.any(axis=1)
    avail = table & ~state.picked[g]
    counts = _rank_counts(avail, tb.r)
    target = tb.value[card] - (state.picked[g] * tb.value).sum(axis=1)
    _, union, _ = tb.ctable.lookup(counts, target)
    by_sum = avail & ((union[:, None] & tb.rank_bits[None, :]) != 0)
    return np.where(equal[:, None], same_rank, by_sum)


def _capture_options(
    rules: Rules,
    tb: _Tables,
    table: npt.NDArray[np.bool_],
    cards: npt.NDArray[np.int64],
    picked: npt.NDArray[np.bool_] | None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """Cirulla: every legal capture of playing ``cards[i]`` on ``table[i]`` that holds the cards ``picked[i]``
    (None: no picks), from the one move enumerator: ``(row, captured)``, ``row`` (k,) ascending, ``captured``
    (k, D); a card with no capture has no row."""
    n = cards.size
    playable = np.zeros((n, tb.d), dtype=np.bool_)
    playable[np.arange(n), cards] = True
    picked_counts = None if picked is None else _rank_counts(picked & table, tb.r)
    classes = enumerate_moves(rules, playable, _rank_counts(table, tb.r), picked_counts)
    index, captured = expand_captures(rules, classes, table, picked)
    keep = classes.kind[index] != MoveKind.LAY
    return classes.row[index[keep]], captured[keep]


def _cirulla_choose_mask(rules: Rules, tb: _Tables, state: State, g: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n, D + 1) for games ``g`` in the CHOOSE phase: the pickable table cards, then ``stop`` (the picked cards are
    a legal capture and another legal capture strictly contains them)."""
    picked = state.picked[g]
    row, captured = _capture_options(rules, tb, state.table[g], state.pending[g].astype(np.int64), picked)
    out = np.zeros((g.size, tb.d + 1), dtype=np.bool_)
    np.logical_or.at(out[:, : tb.d], row, captured)  # the union of each game's options
    out[:, : tb.d] &= ~picked
    exact = (captured == picked[row]).all(axis=1)
    options = np.bincount(row, minlength=g.size)
    out[row[exact], tb.d] = options[row[exact]] >= 2
    return out


def _cirulla_mask(rules: Rules, tb: _Tables, state: State) -> npt.NDArray[np.bool_]:
    """``legal_action_mask`` under cirulla's rules: (B, num_actions)."""
    b, d = state.batch_size, tb.d
    mask = np.zeros((b, rules.num_actions), dtype=np.bool_)
    phase = state.phase
    gp = np.flatnonzero(phase == _PLAY)
    mask[gp, :d] = state.hands[gp, state.current[gp]]
    gc = np.flatnonzero(phase == _CHOOSE)
    if gc.size:
        mask[gc, : d + 1] = _cirulla_choose_mask(rules, tb, state, gc)
    gk = np.flatnonzero(phase == _KNOCK)
    if gk.size:
        by_sum, tris = _knock_options(tb, state.hands[gk])
        seat = state.current[gk].astype(np.intp)
        ar = np.arange(gk.size)
        mask[gk, d] = True
        mask[gk, d + 1] = by_sum[ar, seat]
        mask[gk, d + 2] = tris[ar, seat]
    return mask


def legal_action_mask(rules: Rules | str, state: State) -> npt.NDArray[np.bool_]:
    """(B, num_actions) bool: the legal actions of every game (all False for finished games)."""
    rules = get_rules(rules)
    tb = _checked_tables(rules, state)
    if rules.cirulla:
        return _cirulla_mask(rules, tb, state)
    b = state.batch_size
    mask = state.hands[np.arange(b), state.current].copy()
    mask[state.phase != Phase.PLAY] = False
    g = np.flatnonzero(state.phase == Phase.CHOOSE)
    if g.size:
        mask[g] = _choose_mask(rules, state, g)
    return mask


# --------------------------------------------------------------------------------------------------- step


def step(
    rules: Rules | str,
    state: State,
    actions: npt.ArrayLike,
    *,
    on_illegal: Literal["raise", "report"] = "raise",
    autoreset: bool = False,
) -> StepInfo:
    """Apply one action per game, in place. Finished games ignore their action (unless ``autoreset``).

    ``on_illegal='raise'`` raises ``IllegalActionError`` naming the first bad game, its action and the legal ones,
    before changing anything; ``'report'`` leaves those games unchanged and flags them in ``info.illegal``.
    With ``autoreset=True`` a game whose match ends is restarted with a seed derived from its old one
    (``info.reset``); the finished match's results are in the info.
    """
    rules = get_rules(rules)
    tb = _checked_tables(rules, state)
    if on_illegal not in ("raise", "report"):
        raise ValueError(f"on_illegal must be 'raise' or 'report', got {on_illegal!r}")
    if not isinstance(autoreset, (bool, np.bool_)):
        raise TypeError(f"autoreset must be True or False, got {autoreset!r}")
    b, d, num_sides = state.batch_size, tb.d, rules.num_sides
    act = np.asarray(actions)
    if act.shape != (b,):
        raise ValueError(f"actions must have shape ({b},) (one per game), got {act.shape}")
    if act.dtype.kind not in "iu":
        ids = f"card ids 0..{d - 1}" if not rules.cirulla else f"action ids 0..{rules.num_actions - 1}"
        raise TypeError(f"actions must be integers ({ids}), got dtype {act.dtype}")
    act = act.astype(np.int64)
    running = state.phase != Phase.DONE
    ar = np.arange(b)
    if rules.cirulla:
        num_actions = rules.num_actions
        in_range = (act >= 0) & (act < num_actions)
        safe = np.where(in_range, act, 0)
        ok = running & in_range & _cirulla_mask(rules, tb, state)[ar, safe]
    else:
        in_range = (act >= 0) & (act < d)
        safe = np.where(in_range, act, 0)
        ok = running & in_range & state.hands[ar, np.maximum(state.current, 0), safe] & (state.phase == Phase.PLAY)
        gch = np.flatnonzero(state.phase == Phase.CHOOSE)
        if gch.size:
            ok[gch] = in_range[gch] & _choose_mask(rules, state, gch)[np.arange(gch.size), safe[gch]]
    illegal = running & ~ok
    if illegal.any() and on_illegal == "raise":
        mask = legal_action_mask(rules, state)
        i = int(np.flatnonzero(illegal)[0])
        legal = [f"{c} ({action_name(rules, c)})" for c in np.flatnonzero(mask[i]).tolist()]
        what = f"{act[i]} ({action_name(rules, int(act[i]))})" if in_range[i] else str(act[i])
        phase = Phase(int(state.phase[i])).name
        variant = f" ({rules.name})" if rules.cirulla else ""
        raise IllegalActionError(
            f"game {i}{variant}: action {what} is illegal for seat {int(state.current[i])} in phase {phase}; "
            f"legal actions: {', '.join(legal)}"
        )

    knocked = np.zeros(0, dtype=np.intp)
    if rules.cirulla:
        card, capture, captures, lay, done, ace_all, knocked = _cirulla_resolve(rules, tb, state, act, ok)
        table = state.table
    else:
        play = ok & (state.phase == Phase.PLAY)
        choose = ok & (state.phase == Phase.CHOOSE)
        card = np.where(play, act, state.pending).astype(np.int64)
        card = np.where(ok, card, 0)
        # Play: the card leaves the hand and becomes pending.
        gp = np.flatnonzero(play)
        state.hands[gp, state.current[gp], act[gp]] = False
        state.pending[gp] = act[gp]
        gc = np.flatnonzero(choose)
        state.picked[gc, act[gc]] = True

        # Resolve: complete (capture or lay), or wait for picks.
        table = state.table
        counts = _rank_counts(table, tb.r)
        rank = tb.rank[card]
        value = tb.value[card]
        n_equal = counts[ar, rank]
        equal = play & (n_equal > 0)
        ace_all = (
            play & ~equal & (rank == tb.ace_rank) & table.any(axis=1) if rules.ace_takes_all else np.zeros(b, bool)
        )
        by_sum = (play & ~equal & ~ace_all) | choose
        target = np.where(by_sum, value, 0)
        if gc.size:  # cards already picked count towards the capture
            counts[gc] -= _rank_counts(state.picked[gc], tb.r)
            target[gc] -= (state.picked[gc] * tb.value).sum(axis=1)
        gs = np.flatnonzero(by_sum)
        nparts, union, unique = tb.ctable.lookup(counts[gs], target[gs])
        lay = np.zeros(b, dtype=np.bool_)
        lay[gs[nparts == 0]] = True
        lay &= play
        sum_rows = (target[gs] == 0) | unique
        sum_done = np.zeros(b, dtype=np.bool_)
        sum_done[gs[sum_rows]] = True
        equal_done = equal & (n_equal == 1)
        capture = np.zeros((b, d), dtype=np.bool_)
        if sum_rows.any():
            gd = gs[sum_rows]
            in_union = (union[sum_rows, None] & tb.rank_bits[None, :]) != 0
            capture[gd] = state.picked[gd] | (in_union & table[gd])
        ge = np.flatnonzero(equal_done)
        if ge.size:
            capture[ge] = table[ge] & (tb.rank[None, :] == rank[ge, None])
        if ace_all.any():
            capture[ace_all] = table[ace_all]
        captures = sum_done | equal_done | ace_all
        done = captures | lay
        to_choose = ok & ~done
        state.phase[to_choose] = Phase.CHOOSE

    info = StepInfo(
        acted=ok,
        illegal=illegal,
        seat=state.current.copy(),
        move_done=done,
        card=np.where(done, card, -1).astype(np.int8),
        capture=capture,
        scopa=np.zeros(b, dtype=np.bool_),
        hand_over=np.zeros(b, dtype=np.bool_),
        hand_points=np.zeros((b, num_sides, tb.num_point_fields), dtype=np.int16),
        leftover_side=np.full(b, -1, dtype=np.int8),
        leftover=np.zeros((b, d), dtype=np.bool_),
        match_over=np.zeros(b, dtype=np.bool_),
        winner=np.full(b, -1, dtype=np.int8),
        final_scores=state.scores,  # replaced by a copy below
        new_hand=np.zeros(b, dtype=np.bool_),
        reset=np.zeros(b, dtype=np.bool_),
        knock=np.zeros(b, dtype=np.int8),
        table_take=np.zeros(b, dtype=np.int8),
    )
    if knocked.size:
        _apply_knocks(rules, tb, state, knocked, act[knocked] - d, info)

    # Apply completed moves. ``capture`` is empty outside the ``done`` rows, so it is applied to the whole batch
    # at once (contiguous array operations instead of gathering the rows).
    g = np.flatnonzero(done)
    if g.size:
        side_all = tb.side_of[state.current]
        seat = state.current[g]
        side = side_all[g]
        cards_g = card[g]
        is_cap = captures[g]
        table &= ~capture
        table[g[~is_cap], cards_g[~is_cap]] = True
        gcap, scap = g[is_cap], side[is_cap]
        won = capture.copy()  # the captured cards and the card that took them, in the capturing side's pile
        won[gcap, cards_g[is_cap]] = True
        if num_sides == 2:
            state.piles[:, 0] |= won & (side_all == 0)[:, None]
            state.piles[:, 1] |= won & (side_all == 1)[:, None]
        else:
            state.piles[gcap, scap] |= won[gcap]
        state.last_capturer[gcap] = scap
        hands_empty = ~_rows_any(state.hands.reshape(b, -1))[g]
        last_play = hands_empty & (state.stock_pos[g] >= d)
        scopa = is_cap & ~_rows_any(table)[g] & ~last_play & ~ace_all[g]
        state.scope[g[scopa], side[scopa]] += 1
        info.scopa[g] = scopa
        state.phase[g] = Phase.PLAY
        state.pending[g] = -1
        state.picked &= ~done[:, None]
        state.current[g] = (seat + 1) % rules.num_players
        # A new round of cards, or the end of the hand.
        redeal = g[hands_empty & ~last_play]
        if redeal.size:
            state.deal_no[redeal] += 1
            _deal_round(rules, state, redeal)
            if rules.knocks:
                _next_knocker(rules, tb, state, redeal, np.full(redeal.size, -1, dtype=np.intp))
        ended = g[last_play]
        if ended.size:
            _end_hands(rules, state, ended, info)

    info.final_scores = state.scores.copy()
    if autoreset:
        fin = np.flatnonzero(info.match_over)
        if fin.size:
            _new_matches(rules, state, fin, derive_seed(state.seed[fin]))
            info.reset[fin] = True
            info.new_hand[fin] = True
    if rules.table_take:
        info.table_take[info.new_hand] = state.table_take[info.new_hand]
    return info


def _cirulla_resolve(
    rules: Rules, tb: _Tables, state: State, act: npt.NDArray[np.int64], ok: npt.NDArray[np.bool_]
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.intp],
]:
    """``step``'s play and capture choice under cirulla's rules, for the legal actions ``ok``: the card leaves the
    hand (PLAY) or a table card is picked (CHOOSE); a move completes when the card has no capture (a lay), one
    capture holding the picked cards, or on ``stop`` (exactly the picked cards); else the CHOOSE phase goes on.

    Returns ``(card, capture, captures, lay, done, ace_all, knock_games)``: ``knock_games`` are the games that took
    a KNOCK-phase decision (applied by ``_apply_knocks`` once the step's info is made)."""
    b, d = state.batch_size, tb.d
    phase = state.phase
    play = ok & (phase == _PLAY)
    choose = ok & (phase == _CHOOSE)
    stop = choose & (act == d)
    pick = choose & (act < d)
    card = np.where(play, act, state.pending).astype(np.int64)
    card = np.where(play | choose, card, 0)
    gp = np.flatnonzero(play)
    seat = state.current[gp]
    state.hands[gp, seat, act[gp]] = False
    state.revealed[gp, seat, act[gp]] = False
    state.pending[gp] = act[gp]
    gc = np.flatnonzero(pick)
    state.picked[gc, act[gc]] = True

    table = state.table
    capture = np.zeros((b, d), dtype=np.bool_)
    rows = np.flatnonzero(play | pick)
    row, captured = _capture_options(rules, tb, table[rows], card[rows], state.picked[rows] if gc.size else None)
    options = np.bincount(row, minlength=rows.size)
    first = np.concatenate([[0], np.cumsum(options)[:-1]])
    one = np.flatnonzero(options == 1)
    capture[rows[one]] = captured[first[one]]
    gs = np.flatnonzero(stop)
    capture[gs] = state.picked[gs]
    captures = stop.copy()
    captures[rows[one]] = True
    lay = np.zeros(b, dtype=np.bool_)
    lay[rows[options == 0]] = True
    lay &= play
    done = captures | lay
    state.phase[rows[options >= 2]] = _CHOOSE
    if rules.ace_takes_all:
        ace_all = play & (tb.rank[card] == tb.ace_rank) & ~(table & tb.ace_mask).any(axis=1) & table.any(axis=1)
    else:
        ace_all = np.zeros(b, dtype=np.bool_)
    return card, capture, captures, lay, done, ace_all, np.flatnonzero(ok & (phase == _KNOCK))


def _apply_knocks(
    rules: Rules,
    tb: _Tables,
    state: State,
    g: npt.NDArray[np.intp],
    kind: npt.NDArray[np.int64],
    info: StepInfo,
) -> None:
    """KNOCK-phase decisions ``kind`` (a ``KnockKind``) of games ``g``: points to the side, the hand revealed, and
    the next seat that may knock decides (or play starts)."""
    seat = state.current[g].astype(np.intp)
    info.knock[g] = kind
    side = tb.side_of[seat]
    state.knock_points[g, side] += np.asarray(KNOCK_POINTS, dtype=np.int16)[kind]
    k = kind > 0
    state.revealed[g[k], seat[k]] = state.hands[g[k], seat[k]]
    n = rules.num_players
    _next_knocker(rules, tb, state, g, (seat - state.dealer[g].astype(np.intp) - 1) % n)


def _end_hands(rules: Rules, state: State, g: npt.NDArray[np.intp], info: StepInfo) -> None:
    """Leftovers, scoring, match check and the next hand for games ``g`` whose hand just ended."""
    last = state.last_capturer[g]
    left = state.table[g]
    info.leftover[g] = left
    has = (last >= 0) & left.any(axis=1)
    info.leftover_side[g] = np.where(has, last, -1)
    gl = g[has]
    state.piles[gl, last[has]] |= left[has]
    state.table[g] = False
    points = score_hands(rules, state.piles[g], state.scope[g], state.knock_points[g] if rules.cirulla else None)
    info.hand_points[g] = points
    info.hand_over[g] = True
    state.scores[g] += points[:, :, -1]
    win = match_winners(rules, state.scores[g])
    over = win >= 0
    info.match_over[g[over]] = True
    info.winner[g] = win
    state.winner[g] = win
    fin = g[over]
    state.phase[fin] = Phase.DONE
    cont = g[~over]
    if cont.size:
        state.hand_no[cont] += 1
        state.dealer[cont] = (state.dealer[cont] + 1) % rules.num_players
        _start_hands(rules, state, cont)
        info.new_hand[cont] = True


# --------------------------------------------------------------------------------------------------- moves


NO_END = 10**6
"""``remaining_plies`` of a hand whose stock is not empty yet (more cards will be dealt)."""


def _game_rows(state: State, games: npt.ArrayLike | None) -> npt.NDArray[np.intp]:
    """``games`` as an intp index array into the state's games (every game when None), else a ``ValueError``."""
    if games is None:
        return np.arange(state.batch_size)
    rows = np.asarray(games)
    if rows.dtype != np.intp or rows.ndim != 1:
        if rows.dtype.kind not in "iu":
            raise TypeError(f"games must be integer indices into the state's games, got dtype {rows.dtype}")
        rows = rows.astype(np.intp).reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= state.batch_size):
        raise ValueError(f"games must be indices 0..{state.batch_size - 1} into the state's games, got {games!r}")
    return rows


def remaining_plies(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.intp]:
    """(n,) moves left in the hand of each game in ``games`` (default: all), counting a capture being chosen as one
    move; ``NO_END`` while the stock is not empty (more cards will be dealt)."""
    rules = get_rules(rules)
    _checked_tables(rules, state)
    return _remaining_plies(rules, state, _game_rows(state, games))


def _remaining_plies(rules: Rules, state: State, g: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """``remaining_plies`` without the argument checks."""
    hands = state.hands[g].reshape(g.size, -1)
    in_hands = (hands.astype(np.float32) @ np.ones(hands.shape[1], dtype=np.float32)).astype(np.intp)  # exact
    in_hands += state.phase[g] == _CHOOSE
    return np.where(state.stock_pos[g] >= rules.num_cards, in_hands, NO_END).astype(np.intp)


def is_last_play(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_]:
    """(n,) the move to make is the hand's last play (stock empty, one card left in all the hands): it never
    scores a scopa, and the cards left on the table go to the last side that captured."""
    return remaining_plies(rules, state, games) == 1


def is_open(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_]:
    """(n,) an open book: the stock is empty and at most one seat other than the acting one holds cards, so the
    acting seat can deduce every hidden card (where each unseen card is)."""
    rules = get_rules(rules)
    _checked_tables(rules, state)
    g = _game_rows(state, games)
    seat = state.current[g].astype(np.intp)
    sizes = state.hands[g].sum(axis=2)  # (n, N)
    sizes[np.arange(g.size), seat] = 0
    return (state.stock_pos[g] >= rules.num_cards) & ((sizes > 0).sum(axis=1) <= 1)


def move_classes(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> MoveClasses:
    """Every legal move class of each game in ``games`` (default: all), by ``scopa_env.moves.enumerate_moves``.

    In the PLAY phase the acting seat's hand may be played; in the CHOOSE phase only the pending card, with the
    classes that can still include the cards picked so far. Finished games (DONE) have no classes. Expand the
    classes into captured-card sets with ``scopa_env.moves.expand_captures(rules, classes, state.table[games],
    state.picked[games])``.
    """
    rules = get_rules(rules)
    tb = _checked_tables(rules, state)
    g = _game_rows(state, games)
    return _move_classes(rules, tb, state, g, _remaining_plies(rules, state, g) == 1)


def _move_classes(
    rules: Rules, tb: _Tables, state: State, g: npt.NDArray[np.intp], last_play: npt.NDArray[np.bool_] | None
) -> MoveClasses:
    """``move_classes`` without the argument checks."""
    phase = state.phase[g]
    table = state.table[g]
    playable = state.hands[g, state.current[g]]
    counts = _rank_counts(table, tb.r)
    picked_counts = None
    if (phase != _PLAY).any():
        choose = np.flatnonzero(phase == _CHOOSE)
        if choose.size:
            playable[choose] = False
            playable[choose, state.pending[g[choose]]] = True
            picked_counts = _rank_counts(state.picked[g] & table, tb.r)  # nothing is picked outside CHOOSE
        playable[(phase == _DONE) | (phase == _KNOCK)] = False
    return enumerate_moves(rules, playable, counts, picked_counts, last_play)


def _listed(
    rules: Rules, classes: MoveClasses, table: npt.NDArray[np.bool_], picked: npt.NDArray[np.bool_] | None
) -> list[list[tuple[int, frozenset[int]]]]:
    """The classes of each position expanded to ``(card, captured cards)`` lists, each sorted by card, then by the
    sorted captured cards."""
    index, captured = expand_captures(rules, classes, table, picked)
    n = classes.starts.size - 1
    rows = classes.row[index]
    per_row = np.bincount(rows, minlength=n).tolist()
    cards = classes.card[index].tolist()
    sizes = captured.sum(axis=1).tolist()
    ids = np.nonzero(captured)[1].tolist()
    out: list[list[tuple[int, frozenset[int]]]] = []
    at = k = 0
    for count in per_row:
        moves: list[tuple[tuple[int, list[int]], tuple[int, frozenset[int]]]] = []
        for i in range(k, k + count):
            taken = ids[at : at + sizes[i]]
            at += sizes[i]
            moves.append(((cards[i], taken), (cards[i], frozenset(taken))))
        k += count
        moves.sort(key=lambda m: m[0])
        out.append([m for _, m in moves])
    return out


def legal_move_lists(
    rules: Rules | str, state: State, games: npt.ArrayLike | None = None
) -> list[list[tuple[int, frozenset[int]]]]:
    """``legal_moves`` of every game in ``games`` (default: all), enumerated together (much faster than one
    ``legal_moves`` call per game)."""
    rules = get_rules(rules)
    tb = _checked_tables(rules, state)
    g = _game_rows(state, games)
    phase = state.phase[g]
    choosing = phase == _CHOOSE
    picked = state.picked[g] if choosing.any() else None
    lists = _listed(rules, _move_classes(rules, tb, state, g, None), state.table[g], picked)
    for i in np.flatnonzero(choosing).tolist():  # the pending card's captures only (never a lay)
        lists[i] = [m for m in lists[i] if m[1]]
    return lists


def enumerate_captures(rules: Rules, table: list[int], card: int) -> list[frozenset[int]]:
    """Every legal capture of playing ``card`` on ``table`` (list of card ids); ``[]`` means a lay."""
    tb = _tables(rules)
    on_table = np.zeros((1, tb.d), dtype=np.bool_)
    on_table[0, table] = True
    playable = np.zeros((1, tb.d), dtype=np.bool_)
    playable[0, card] = True
    classes = enumerate_moves(rules, playable, _rank_counts(on_table, tb.r))
    return [cap for _, cap in _listed(rules, classes, on_table, None)[0] if cap]


def legal_moves(rules: Rules | str, state: State, game: int) -> list[tuple[int, frozenset[int]]]:
    """The legal moves of one game as ``(card, captured cards)``, sorted by card, then by the sorted captured
    cards; a lay has an empty set.

    In the CHOOSE phase only the pending card's captures consistent with the cards picked so far are listed.
    Built on ``move_classes`` (every suit choice of each class, ``scopa_env.moves.expand_captures``); for many
    games at once, ``legal_move_lists``.
    """
    rules = get_rules(rules)
    _checked_tables(rules, state)
    if isinstance(game, bool) or not isinstance(game, (int, np.integer)) or not 0 <= game < state.batch_size:
        raise ValueError(f"game must be an index 0..{state.batch_size - 1} into the state's games, got {game!r}")
    return legal_move_lists(rules, state, [game])[0]


def move_actions(state: State, cards: npt.ArrayLike, captures: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """(B,) the next action that carries out the chosen move ``(cards[i], captures[i])`` in each game.

    In the PLAY phase that is the card; in the CHOOSE phase it is the lowest-id card of the chosen capture not
    picked yet, or cirulla's ``stop`` once every card of it is picked (a capture strictly inside another). Call it
    again at every decision until the move completes (``info.move_done``). Cirulla's KNOCK phase has no moves:
    there the action is ``stop`` (no knock).
    """
    cards = np.asarray(cards, dtype=np.int64)
    todo = captures & ~state.picked
    first = np.argmax(todo, axis=1)
    out = np.where(state.phase == Phase.CHOOSE, first, cards)
    stop = state.table.shape[1]  # cirulla's stop action id (num_cards)
    if (state.phase == _KNOCK).any():
        out[state.phase == _KNOCK] = stop
    choosing = np.flatnonzero(state.phase == _CHOOSE)
    if choosing.size:
        out[choosing[~_rows_any(todo[choosing])]] = stop
    return out


# --------------------------------------------------------------------------------------------------- observation


def observation_layout(rules: Rules | str) -> list[tuple[str, int, int, str]]:
    """The observation's blocks as ``(name, start, stop, meaning)``; see ``observe``."""
    rules = get_rules(rules)
    d, s, n = rules.num_cards, rules.num_sides, rules.num_players
    blocks = [
        ("hand", d, "own hand (card ids)"),
        ("table", d, "cards face up on the table"),
        ("pending", d, "card played whose capture is being chosen (CHOOSE phase)"),
        ("picked", d, "table cards picked so far for that capture"),
        ("unseen", d, "cards this seat has not seen: other players' hands and the stock"),
        ("piles", s * d, "cards captured this hand by each side, own side first, then in seat order"),
        ("scores", s, "match points of each side / target, own side first"),
        ("scope", s, "scope of each side this hand / 10, own side first"),
        ("stock", 1, "cards left in the stock / deck size"),
        ("hand_sizes", n, "cards in each seat's hand / max hand size, own seat first then in play order"),
        ("dealer", n, "one-hot: dealer's position relative to this seat (0 = self)"),
        ("seat", n, "one-hot: this seat's absolute index"),
        ("last_capturer", s + 1, "one-hot: side of the last capture this hand, relative; last entry = nobody"),
        ("choosing", 1, "1 in the CHOOSE phase"),
        ("table_sum", 1, "sum of the table's capture values / 40"),
        (
            "plays",
            4 * rules.deck.num_ranks,
            "for each card value v (rank order), 4 entries: a card of value v would capture; would make a scopa "
            "(clear the table); could take the settebello; table sum after the play (sum - v after a capture, "
            "sum + v after a lay) / 40",
        ),
    ]
    if rules.cirulla:
        r = rules.deck.num_ranks
        blocks[-1] = (
            "plays",
            4 * r,
            "as version 2 under cirulla's captures (fifteens and an ace taking all capture; an ace taking all is "
            "never a scopa); table sum after: sum - v after an equal-rank or sum capture, else sum - (15 - v) after "
            "a fifteen, 0 after an ace taking all, sum + v after a lay; / 40",
        )
        blocks += [
            (
                "revealed",
                n * d,
                "cards revealed by knocks still in each seat's hand, own seat first then in play order",
            ),
            ("knocks", s, "knock points of each side this hand / 10, own side first"),
            ("knocking", 1, "1 in the KNOCK phase"),
            ("fifteens", r, "for each card value v (rank order): a card of value v played now could make a fifteen"),
        ]
    out, pos = [], 0
    for name, size, meaning in blocks:
        out.append((name, pos, pos + size, meaning))
        pos += size
    return out


def observation_size(rules: Rules | str) -> int:
    return observation_layout(rules)[-1][2]


def _check_seats(seats: npt.ArrayLike, batch: int, num_players: int) -> npt.NDArray[np.integer]:
    """``observe``'s ``seats`` as an integer array of shape () or (B,) with every seat in 0..N-1, else raise."""
    arr = np.asarray(seats)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"seats must be integer seat numbers 0..{num_players - 1}, got dtype {arr.dtype}")
    if arr.shape not in ((), (batch,)):
        raise ValueError(f"seats must be one seat or one per game, shape ({batch},), got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= num_players):
        bad = int(arr.reshape(-1)[(arr.reshape(-1) < 0) | (arr.reshape(-1) >= num_players)][0])
        raise ValueError(f"seats must be in 0..{num_players - 1} (this variant's seats), got {bad}")
    return np.broadcast_to(arr, (batch,))


def observe(rules: Rules | str, state: State, seats: npt.ArrayLike | None = None) -> npt.NDArray[np.float32]:
    """(B, observation_size) float32: what each game's acting seat (or ``seats``) may know (RULES.md section 7).

    Layout: ``observation_layout(rules)``. Only the seat's own hand is shown; other hands and the stock appear
    only as the ``unseen`` set, which is the same whatever order or distribution those cards have. ``seats``: one
    seat for every game, or one per game, each in 0..N-1.
    """
    rules = get_rules(rules)
    tb = _checked_tables(rules, state)
    b, d, s, n = state.batch_size, tb.d, rules.num_sides, rules.num_players
    ar = np.arange(b)
    seat = state.current if seats is None else _check_seats(seats, b, n)
    seat = np.where(seat < 0, 0, seat).astype(np.int64)
    own_side = tb.side_of[seat].astype(np.int64)
    obs = np.empty((b, observation_size(rules)), dtype=np.float32)  # every column is written below
    cards = np.zeros((b, 5 + s, d), dtype=np.bool_)  # the card blocks, converted to float in one go
    hand = cards[:, 0] = state.hands[ar, seat]
    cards[:, 1] = state.table
    gp = np.flatnonzero(state.pending >= 0)
    cards[gp, 2, state.pending[gp].astype(np.int64)] = True
    cards[:, 3] = state.picked
    rel_sides = (own_side[:, None] + np.arange(s)) % s  # (B, S)
    side_rows = ar[:, None] * s + rel_sides  # rows of the (B * S, ...) views, own side first
    piles = cards[:, 5:]
    np.take(state.piles.reshape(b * s, d), side_rows, axis=0, out=piles)  # (B, S, D)
    seen = hand | state.table | state.picked | cards[:, 2]
    for i in range(s):
        seen |= piles[:, i]
    np.logical_not(seen, out=cards[:, 4])
    pos = (5 + s) * d
    obs[:, :pos] = cards.reshape(b, pos)
    obs[:, pos : pos + s] = state.scores.reshape(-1)[side_rows] / rules.target
    pos += s
    obs[:, pos : pos + s] = state.scope.reshape(-1)[side_rows] / 10.0
    pos += s
    obs[:, pos] = (d - state.stock_pos) / d
    pos += 1
    rel_seats = (seat[:, None] + np.arange(n)) % n
    sizes = _hand_sizes(state.hands)
    obs[:, pos : pos + n] = sizes.reshape(-1)[ar[:, None] * n + rel_seats] / rules.max_hand_size
    pos += n
    obs[:, pos : pos + 2 * n + s + 1] = 0.0
    obs[ar, pos + (state.dealer - seat) % n] = 1.0
    pos += n
    obs[ar, pos + seat] = 1.0
    pos += n
    last = state.last_capturer.astype(np.int64)
    obs[ar, pos + np.where(last < 0, s, (last - own_side) % s)] = 1.0
    pos += s + 1
    obs[:, pos] = state.phase == Phase.CHOOSE
    pos += 1
    _play_features(rules, tb, state.table, out=obs[:, pos : pos + 1 + 4 * tb.r])
    if rules.cirulla:
        _observe_cirulla(rules, tb, state, seat, side_rows, obs, pos + 1 + 4 * tb.r)
    return obs


def _observe_cirulla(
    rules: Rules,
    tb: _Tables,
    state: State,
    seat: npt.NDArray[np.int64],
    side_rows: npt.NDArray[np.int64],
    obs: npt.NDArray[np.float32],
    pos: int,
) -> None:
    """``observe``'s cirulla part: cards revealed by knocks leave ``unseen``; the blocks after ``plays``."""
    b, d, n, s = state.batch_size, tb.d, rules.num_players, rules.num_sides
    ar = np.arange(b)
    unseen = observation_layout(rules)[4]
    obs[:, unseen[1] : unseen[2]] *= ~state.revealed.any(axis=1)
    rel_seats = (seat[:, None] + np.arange(n)) % n
    obs[:, pos : pos + n * d] = state.revealed[ar[:, None], rel_seats].reshape(b, n * d)
    pos += n * d
    obs[:, pos : pos + s] = state.knock_points.reshape(-1)[side_rows] / 10.0
    pos += s
    obs[:, pos] = state.phase == _KNOCK
    pos += 1
    obs[:, pos : pos + tb.r] = _fifteen_bits(rules, tb, _rank_counts(state.table, tb.r))


def _low_subset_sums(num_ranks: int) -> npt.NDArray[np.uint64]:
    """Subset-sum bit sets of every multiset of the low ranks (values 1..R//2), indexed by their base-5 key."""
    low = num_ranks // 2
    out = np.zeros(_COUNT_RADIX**low, dtype=np.uint64)
    for key in range(_COUNT_RADIX**low):
        sums, k = 1, key
        for r in range(low):
            k, c = divmod(k, _COUNT_RADIX)
            for _ in range(c):  # one more card of value r + 1
                sums |= sums << (r + 1)
        out[key] = sums & 0xFFFF_FFFF_FFFF_FFFF
    return out


def _subset_sum_table(num_ranks: int) -> npt.NDArray[np.uint16]:
    """``_subset_sums``' table: bits 0..R of the subset sums, for every key (low-rank counts, high ranks present).

    Two cards of value above R // 2 add up to more than R, so a sum up to R holds at most one of them: the low
    cards' sums, plus those sums shifted by each high value present.
    """
    if num_ranks > 15:
        raise ValueError(f"subset-sum table: at most 15 ranks fit its 16-bit entries, got {num_ranks}")
    low = num_ranks // 2
    keep = np.uint64((1 << (num_ranks + 1)) - 1)
    low_sums = _low_subset_sums(num_ranks) & keep
    table = np.empty((2 ** (num_ranks - low), low_sums.size), dtype=np.uint16)
    for present in range(table.shape[0]):
        sums = low_sums.copy()
        for j in range(num_ranks - low):
            if present >> j & 1:
                sums |= low_sums << np.uint64(low + j + 1)
        table[present] = sums & keep
    return table.reshape(-1)


def _subset_sums(tb: _Tables, counts: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """(n, R) rank counts -> (n,) bit sets: bit s is set iff some set of those cards adds up to s, for s <= R
    (the largest card value, all the play features read); higher bits are 0. One table look-up."""
    digits = counts.astype(np.float32)
    np.minimum(digits[:, tb.low :], 1.0, out=digits[:, tb.low :])  # high ranks: present or not
    key = (digits @ tb.sum_radix).astype(np.intp)
    return tb.sum_table[key].astype(np.uint64)


def _low_bits(sets: npt.NDArray[np.uint64], k: int) -> npt.NDArray[np.bool_]:
    """(n,) uint64 bit sets -> (n, k) bool: bits 0 .. k-1 of each (unpacked from the low bytes; k <= 64)."""
    nbytes = (k + 7) // 8
    low = np.ascontiguousarray(sets, dtype="<u8").view(np.uint8).reshape(-1, 8)[:, :nbytes]
    return np.unpackbits(low, axis=1, bitorder="little")[:, :k].view(np.bool_)


def _play_features(
    rules: Rules, tb: _Tables, table: npt.NDArray[np.bool_], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """(B, 1 + 4R): table sum / 40, then per card value: captures, scopa, settebello, table sum after / 40.

    The same for every seat (it depends on the table only); ``observe`` places it after the seat's own blocks.
    Under ``rules.fifteens`` (cirulla) ``_cirulla_play_features`` computes it instead.
    A capture by equal rank or by sum always takes cards worth exactly v in total, so the table keeps
    ``sum - v`` after it, and ``sum + v`` after a lay (ace-takes-all leaves 0). Sums are found with bit sets of
    subset sums: with no card of value v on the table, any set adding up to v has at least two cards.
    ``out``: a (B, 1 + 4R) float32 array (or view, such as the observation's columns) to write into.
    """
    if rules.fifteens:
        return _cirulla_play_features(rules, tb, table, out)
    b, r = table.shape[0], tb.r
    deck = rules.deck
    sette_on_table = table[:, deck.settebello]
    counts = _rank_counts(table, r)
    values = np.arange(1, r + 1)
    total = counts.astype(np.float32) @ values.astype(np.float32)  # (B,)
    seven = deck.ranks.index("7")
    without = counts.copy()
    without[:, seven] -= sette_on_table  # the table's cards other than the settebello
    sums_without = _subset_sums(tb, without)
    sums = np.where(sette_on_table, sums_without | (sums_without << np.uint64(seven + 1)), sums_without)
    bits = _low_bits(sums, r + 1)[:, 1:]  # (B, R): some set of table cards adds up to v
    equal = counts > 0  # (B, R): a card of value v takes an equal rank
    by_sum = bits & ~equal
    captures = equal | by_sum
    sette = np.zeros((b, r), dtype=np.bool_)
    sette[:, seven] = sette_on_table  # a 7 takes it as an equal rank
    above = np.arange(seven + 1, r)  # values above 7 take it in a sum with other cards worth the rest
    rest = above + 1 - (seven + 1)
    with_sette = _low_bits(sums_without, r + 1)[:, rest]
    sette[:, above] = sette_on_table[:, None] & by_sum[:, above] & with_sette
    values_f = values.astype(np.float32)
    after = captures.astype(np.float32)
    after *= -2.0 * values_f
    after += values_f
    after += total[:, None]  # total - v after a capture, total + v after a lay
    scopa = captures & (after == 0)
    if rules.ace_takes_all:
        ace_all = ~equal[:, 0] & (total > 0)
        captures[:, 0] |= ace_all
        sette[:, 0] |= sette_on_table & ace_all
        after[:, 0] = np.where(ace_all, 0, after[:, 0])
        scopa[:, 0] &= ~ace_all
    if out is None:
        out = np.empty((b, 1 + 4 * r), dtype=np.float32)
    out[:, 0] = total / 40.0
    per_value = out[:, 1:].reshape(b, r, 4)  # a view: the four features of each value side by side
    per_value[:, :, 0] = captures.astype(np.float32)  # cast first: a bool -> float cast into a strided view is slow
    per_value[:, :, 1] = scopa.astype(np.float32)
    per_value[:, :, 2] = sette.astype(np.float32)
    np.divide(after, 40.0, out=per_value[:, :, 3])
    return out


FIFTEEN = FIFTEEN_TOTAL


def _sum_bits(counts: npt.NDArray[np.integer], top: int) -> npt.NDArray[np.uint64]:
    """(n, R) rank counts -> (n,) bit sets: bit s is set iff some set of those cards adds up to s (s <= top)."""
    keep = np.uint64((1 << (top + 1)) - 1)
    sums = np.ones(counts.shape[0], dtype=np.uint64)
    for r in range(counts.shape[1]):
        shift = np.uint64(r + 1)
        for c in range(1, int(counts[:, r].max(initial=0)) + 1):
            sums = np.where(counts[:, r] >= c, sums | ((sums << shift) & keep), sums)
    return sums


def _fifteen_bits(rules: Rules, tb: _Tables, counts: npt.NDArray[np.integer]) -> npt.NDArray[np.bool_]:
    """(n, R) table rank counts -> (n, R): a card of value v (rank order) played there can make a fifteen (some
    table cards add up to 15 - v); an ace that takes all (no ace on a non-empty table) cannot."""
    bits = _low_bits(_sum_bits(counts, FIFTEEN), FIFTEEN + 1)  # (n, 16)
    values = np.arange(1, tb.r + 1)
    out = bits[:, np.clip(FIFTEEN - values, 0, FIFTEEN)] & (values < FIFTEEN)
    if rules.ace_takes_all:
        out[:, 0] &= counts[:, 0] > 0
    return out


def _cirulla_play_features(
    rules: Rules, tb: _Tables, table: npt.NDArray[np.bool_], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """``_play_features`` under cirulla's captures, per card value v: captures (equal rank, a sum, a fifteen, or an
    ace taking all); some capture clears the table and is a scopa (never an ace taking all); some capture takes the
    settebello; the table's sum after the play / 40: sum - v after an equal-rank or sum capture, else sum - (15 - v)
    after a fifteen, 0 after an ace taking all, sum + v after a lay."""
    b, r = table.shape[0], tb.r
    deck = rules.deck
    counts = _rank_counts(table, r)
    values = np.arange(1, r + 1)
    total = counts.astype(np.float32) @ values.astype(np.float32)
    sette_on_table = table[:, deck.settebello]
    seven = deck.ranks.index("7")
    without = counts.copy()
    without[:, seven] -= sette_on_table
    sums_without = _sum_bits(without, FIFTEEN)
    sums = np.where(sette_on_table, sums_without | (sums_without << np.uint64(seven + 1)), sums_without)
    bits = _low_bits(sums, FIFTEEN + 1)  # (B, 16): some table cards add up to s
    bits_without = _low_bits(sums_without, FIFTEEN + 1)
    equal = counts > 0
    by_sum = bits[:, values] & ~equal  # sums take at least two cards when no card of value v is on the table
    classic = equal | by_sum
    rest = np.clip(FIFTEEN - values, 0, FIFTEEN)
    fifteen = bits[:, rest] & (values < FIFTEEN)
    ace_all = ~equal[:, 0] & (total > 0) if rules.ace_takes_all else np.zeros(b, dtype=np.bool_)
    fifteen[:, 0] &= ~ace_all
    captures = classic | fifteen
    captures[:, 0] |= ace_all
    # Scopa: an equal/sum capture of the whole table (sum == v), or a fifteen of it (sum + v == 15).
    scopa = (classic & (total[:, None] == values)) | (fifteen & (total[:, None] + values == FIFTEEN))
    scopa[:, 0] &= ~ace_all
    # Settebello: a 7 takes it by equal rank; a sum above 7 with cards worth the rest; a fifteen with cards worth
    # 8 - v (none for a jack).
    sette = np.zeros((b, r), dtype=np.bool_)
    sette[:, seven] = sette_on_table
    above = np.arange(seven + 1, r)
    sette[:, above] = sette_on_table[:, None] & by_sum[:, above] & bits_without[:, above + 1 - (seven + 1)]
    low = values <= FIFTEEN - (seven + 1)
    need = np.clip(FIFTEEN - (seven + 1) - values, 0, FIFTEEN)
    sette[:, low] |= sette_on_table[:, None] & fifteen[:, low] & bits_without[:, need[low]]
    sette[:, 0] |= sette_on_table & ace_all
    after = np.where(classic, total[:, None] - values, np.where(fifteen, total[:, None] - (FIFTEEN - values), 0))
    after = np.where(captures, after, total[:, None] + values).astype(np.float32)
    after[:, 0] = np.where(ace_all, 0.0, after[:, 0])
    if out is None:
        out = np.empty((b, 1 + 4 * r), dtype=np.float32)
    out[:, 0] = total / 40.0
    per_value = out[:, 1:].reshape(b, r, 4)
    per_value[:, :, 0] = captures.astype(np.float32)
    per_value[:, :, 1] = scopa.astype(np.float32)
    per_value[:, :, 2] = sette.astype(np.float32)
    np.divide(after, 40.0, out=per_value[:, :, 3])
    return out
