"""The batched rules core: B games of Scopa advance in one call, in numpy only.

State is a struct of arrays with the batch first (see ``State``). Functions take ``(rules, state, ...)``; the rules
never live in the state. Randomness only enters through per-game 64-bit seeds (``scopa_env.rules.shuffle``), so the
same seeds always give the same games and a batch of B games equals B games played one by one.

Action space: one ``Discrete(rules.num_actions)`` space whose ids below ``num_cards`` are card ids
(``scopa_env.rules.cards``); cirulla adds ``stop`` (``num_cards``), ``knock-sum`` (``num_cards + 1``) and ``knock-tris``
(``num_cards + 2``), see ``stop_action`` and the cirulla notes below.

- ``PLAY`` phase: the acting seat plays a card from its hand (the mask is its hand). If the card has no capture it
  is laid; if it has exactly one legal capture, the capture is made at once.
- ``CHOOSE`` phase (only when several captures are legal): the same seat picks the captured table cards one at a
  time; the mask allows exactly the table cards that belong to some legal capture still consistent with the cards
  picked so far. As soon as the picked cards determine a single capture, it is completed automatically. Every legal
  capture is reachable, and every pick sequence ends in a legal capture.

Variant families: every ``Rules`` has one hook (``tables_for(rules).variant``, made by ``scopa_env.rules.variant``:
``ScopaHook``, the plain game's, or ``scopa_env.rules.cirulla.CirullaHook``), which the core calls where the families
differ: the PLAY and CHOOSE phases (``legal_actions``, ``legal_mask``, ``resolve``), a new hand, every deal, the
knocks, the end of a hand, the step's info, and the words of its errors. The core's steps never ask which family
the rules are in. Cirulla's (RULES.md section 6; docs/rules.md), as its hook plays it:

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

The moves of a state (``move_classes``, ``legal_moves``, ``legal_move_lists``, ``move_actions``) and how its hand
ends (``remaining_plies``, ``is_last_play``, ``is_open``) are in ``scopa_env.engine.state_moves``.

What each seat may know is in ``scopa_env.engine.observation`` (``observe``, ``observation_layout``).

Rules: the public functions take a ``Rules`` or a variant name, resolved once on entry (``get_rules``): they are an
edge that people type at a prompt and in examples (``core.reset("classic", [7])``). Everything below them takes
the ``Rules`` object; the project's own callers pass ``Rules``.

Arguments are checked with a ``TypeError`` or ``ValueError`` naming them, at a cost of O(1) or one comparison per
game: seeds, ``batch`` (at most ``MAX_BATCH``), actions, ``seats``, ``game``, ``on_illegal``, ``autoreset``, and
the state itself: every game carries ``rules_key`` (a fingerprint of the rules, not the rules), so a state is never
stepped or observed under another variant's rules.
"""

from __future__ import annotations

import functools
import reprlib
import zlib
from dataclasses import dataclass, fields
from enum import IntEnum
from typing import Literal

import numpy as np
import numpy.typing as npt

from scopa_env.errors import ScopaEnvError, whole_number
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.arrays import rows_any
from scopa_env.rules.captures import capture_table
from scopa_env.rules.scoring import match_winners, point_fields, score_hands
from scopa_env.rules.shuffle import derive_seed, first_dealer, shuffled_decks
from scopa_env.rules.variant import VariantHook, hook_class

__all__ = [
    "MAX_BATCH",
    "IllegalActionError",
    "Phase",
    "State",
    "StepInfo",
    "Tables",
    "action_name",
    "checked_tables",
    "knock_sum_action",
    "knock_tris_action",
    "legal_action_mask",
    "reset",
    "rules_key",
    "step",
    "stop_action",
    "tables_for",
]

MAX_BATCH = 2**22
"""Most games one ``State`` holds (``reset``): about 1.3 GiB of state for a two-player variant."""


class Phase(IntEnum):
    PLAY = 0
    CHOOSE = 1
    DONE = 2
    KNOCK = 3
    """Cirulla: the seat to act decides whether to knock (``stop``, ``knock-sum``, ``knock-tris``)."""


_PLAY, _CHOOSE, _DONE, _KNOCK = (int(p) for p in Phase)  # plain ints compare faster


def stop_action(rules: Rules) -> int:
    """Cirulla's ``stop`` action id (``num_cards``): no knock in the KNOCK phase; in the CHOOSE phase, capture
    exactly the cards picked so far."""
    return rules.num_cards


def knock_sum_action(rules: Rules) -> int:
    """Cirulla's ``knock-sum`` action id (``num_cards + 1``): knock for 3 points (hand values add up to <= 9)."""
    return rules.num_cards + 1


def knock_tris_action(rules: Rules) -> int:
    """Cirulla's ``knock-tris`` action id (``num_cards + 2``): knock for 10 points (three of a kind)."""
    return rules.num_cards + 2


_ACTION_NAMES = ("stop", "knock-sum", "knock-tris")


def action_name(rules: Rules, action: int) -> str:
    """An action in words: a card (``'7d'``), or ``'stop'``, ``'knock-sum'``, ``'knock-tris'``."""
    from scopa_env.rules.cards import format_card

    a = int(action)
    if 0 <= a < rules.num_cards:
        return format_card(a, rules.deck)
    if rules.num_cards <= a < rules.num_actions:
        return _ACTION_NAMES[a - rules.num_cards]
    raise ValueError(f"action {a} is outside {rules.name!r}'s action ids 0..{rules.num_actions - 1}")


class IllegalActionError(ScopaEnvError, ValueError):
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


class Tables:
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
        self.king_mask = self.rank == deck.king_rank
        self.ace_rank = 0
        self.side_of = np.array(rules.seat_side, dtype=np.int8)
        self.ctable = capture_table(r, r)
        self.rank_bits = (1 << self.rank).astype(np.int32)  # (D,)
        self.num_point_fields = len(point_fields(rules))
        self.ace_mask = self.rank == self.ace_rank
        self.variant: VariantHook = hook_class(rules)(rules, self, play=_PLAY, choose=_CHOOSE, knock=_KNOCK)
        """The rules' family (``scopa_env.rules.variant``: the plain game's, or cirulla's), called where they differ."""


_RULES_NAMES: dict[int, str] = {}
"""Variant name of every ``rules_key`` seen in this process (for error messages)."""


@functools.cache
def tables_for(rules: Rules) -> Tables:
    """The per-rules constants of the core (and of its observation), made once per ``Rules``."""
    return Tables(rules)


def checked_tables(rules: Rules, state: State) -> Tables:
    """``tables_for(rules)``, after checking that ``state`` is a ``State`` whose games were started under ``rules``."""
    tb = tables_for(rules)
    if not isinstance(state, State):
        raise TypeError(f"state must be a scopa_env.engine.core.State (from core.reset), got {type(state).__name__}")
    keys = state.rules_key
    if not (keys == tb.key).all():
        other = int(keys[np.flatnonzero(keys != tb.key)[0]])
        made = _RULES_NAMES.get(other, f"unknown rules (key {other:#010x})")
        raise ValueError(
            f"the state's games were started under {made!r}, but the rules passed are {rules.name!r}; "
            f"pass the rules of the state (core.reset({made!r}, ...) made it)"
        )
    return tb


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
        rules_key=np.full(batch, tables_for(rules).key, dtype=np.uint32),
        revealed=np.zeros((batch, n, d), dtype=np.bool_),
        knock_points=np.zeros((batch, s), dtype=np.int16),
        table_take=np.zeros(batch, dtype=np.int8),
    )


def _as_seeds(seeds: npt.ArrayLike | np.random.Generator, batch: int | None) -> npt.NDArray[np.uint64]:
    if batch is not None and not whole_number(batch, 1, MAX_BATCH):
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
    tb = tables_for(rules)
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
    tb.variant.start_hands(state, idx)
    _deal_round(rules, state, idx)
    state.current[idx] = (state.dealer[idx] + 1) % rules.num_players
    tb.variant.after_deal(state, idx)


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


def legal_action_mask(rules: Rules | str, state: State) -> npt.NDArray[np.bool_]:
    """(B, num_actions) bool: the legal actions of every game (all False for finished games)."""
    rules = get_rules(rules)
    return checked_tables(rules, state).variant.legal_mask(state)


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

    The phases of a step, each its own function: the actions checked (the family hook's ``legal_actions``); the
    card played or the table card picked, and the move completed when its capture is known (the hook's
    ``resolve``: ``variant.ScopaHook``'s plain captures, or cirulla's, and its knocks); the completed moves
    applied to the table and piles
    (``_apply_moves``); then the end of a deal (``_deal_next_round``) or of a hand (``_end_hands``: scoring, the
    match's end, the next hand); last the automatic reset of finished matches.
    """
    rules = get_rules(rules)
    tb = checked_tables(rules, state)
    if on_illegal not in ("raise", "report"):
        raise ValueError(f"on_illegal must be 'raise' or 'report', got {on_illegal!r}")
    if not isinstance(autoreset, (bool, np.bool_)):
        raise TypeError(f"autoreset must be True or False, got {autoreset!r}")
    action_ids = _action_array(rules, tb, state, actions)
    running = state.phase != Phase.DONE
    legal, in_range = tb.variant.legal_actions(state, action_ids, running)
    illegal = running & ~legal
    if illegal.any() and on_illegal == "raise":
        _raise_illegal(rules, state, action_ids, illegal, in_range)

    card, capture, captures, done, ace_all, knocked = tb.variant.resolve(state, action_ids, legal)
    info = _new_info(rules, tb, state, legal, illegal, done, card, capture)
    if knocked.size:
        tb.variant.apply_knocks(state, knocked, action_ids[knocked] - tb.d, info)

    moved = np.flatnonzero(done)
    if moved.size:
        deal_over, hand_over = _apply_moves(rules, tb, state, moved, done, card, capture, captures, ace_all, info)
        if deal_over.size:
            _deal_next_round(rules, tb, state, deal_over)
        if hand_over.size:
            _end_hands(rules, state, hand_over, info)

    info.final_scores = state.scores.copy()
    if autoreset:
        finished = np.flatnonzero(info.match_over)
        if finished.size:
            _new_matches(rules, state, finished, derive_seed(state.seed[finished]))
            info.reset[finished] = True
            info.new_hand[finished] = True
    tb.variant.new_hand_info(state, info)
    return info


def _action_array(rules: Rules, tb: Tables, state: State, actions: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``step``'s ``actions`` as (B,) int64, else a ``ValueError`` (shape) or ``TypeError`` (not integers)."""
    b = state.batch_size
    act = np.asarray(actions)
    if act.shape != (b,):
        raise ValueError(f"actions must have shape ({b},) (one per game), got {act.shape}")
    if act.dtype.kind not in "iu":
        ids = f"{tb.variant.action_words} 0..{rules.num_actions - 1}"
        raise TypeError(f"actions must be integers ({ids}), got dtype {act.dtype}")
    return act.astype(np.int64)


def _raise_illegal(
    rules: Rules,
    state: State,
    actions: npt.NDArray[np.int64],
    illegal: npt.NDArray[np.bool_],
    in_range: npt.NDArray[np.bool_],
) -> None:
    """The ``IllegalActionError`` of the first game whose action is illegal, with that game's legal actions."""
    mask = legal_action_mask(rules, state)
    i = int(np.flatnonzero(illegal)[0])
    legal = [f"{c} ({action_name(rules, c)})" for c in np.flatnonzero(mask[i]).tolist()]
    what = f"{actions[i]} ({action_name(rules, int(actions[i]))})" if in_range[i] else str(actions[i])
    phase = Phase(int(state.phase[i])).name
    variant = tables_for(rules).variant.variant_label
    raise IllegalActionError(
        f"game {i}{variant}: action {what} is illegal for seat {int(state.current[i])} in phase {phase}; "
        f"legal actions: {', '.join(legal)}"
    )


def _new_info(
    rules: Rules,
    tb: Tables,
    state: State,
    legal: npt.NDArray[np.bool_],
    illegal: npt.NDArray[np.bool_],
    done: npt.NDArray[np.bool_],
    card: npt.NDArray[np.int64],
    capture: npt.NDArray[np.bool_],
) -> StepInfo:
    """The step's ``StepInfo`` before the moves are applied: who acted, the moves completed, the rest zero."""
    b, d = state.batch_size, tb.d
    return StepInfo(
        acted=legal,
        illegal=illegal,
        seat=state.current.copy(),
        move_done=done,
        card=np.where(done, card, -1).astype(np.int8),
        capture=capture,
        scopa=np.zeros(b, dtype=np.bool_),
        hand_over=np.zeros(b, dtype=np.bool_),
        hand_points=np.zeros((b, rules.num_sides, tb.num_point_fields), dtype=np.int16),
        leftover_side=np.full(b, -1, dtype=np.int8),
        leftover=np.zeros((b, d), dtype=np.bool_),
        match_over=np.zeros(b, dtype=np.bool_),
        winner=np.full(b, -1, dtype=np.int8),
        final_scores=state.scores,  # replaced by a copy at the end of the step
        new_hand=np.zeros(b, dtype=np.bool_),
        reset=np.zeros(b, dtype=np.bool_),
        knock=np.zeros(b, dtype=np.int8),
        table_take=np.zeros(b, dtype=np.int8),
    )


def _apply_moves(
    rules: Rules,
    tb: Tables,
    state: State,
    moved: npt.NDArray[np.intp],
    done: npt.NDArray[np.bool_],
    card: npt.NDArray[np.int64],
    capture: npt.NDArray[np.bool_],
    captures: npt.NDArray[np.bool_],
    ace_all: npt.NDArray[np.bool_],
    info: StepInfo,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The moves completed in games ``moved`` (``done``): the captured cards and the card that took them to the
    side's pile (a laid card to the table), the scopa, the turn to the next seat.

    Returns ``(deal_over, hand_over)``: the games whose hands are empty with cards left in the stock (a new round
    to deal), and those whose hand just ended (the last play). ``capture`` is empty outside the ``done`` rows, so
    it is applied to the whole batch at once (contiguous array operations instead of gathering the rows)."""
    b, d = state.batch_size, tb.d
    table = state.table
    side_of_seat = tb.side_of[state.current]
    seat = state.current[moved]
    side = side_of_seat[moved]
    cards = card[moved]
    took = captures[moved]
    table &= ~capture
    table[moved[~took], cards[~took]] = True
    capturing, capturing_side = moved[took], side[took]
    won = capture.copy()  # the captured cards and the card that took them, in the capturing side's pile
    won[capturing, cards[took]] = True
    if rules.num_sides == 2:
        state.piles[:, 0] |= won & (side_of_seat == 0)[:, None]
        state.piles[:, 1] |= won & (side_of_seat == 1)[:, None]
    else:
        state.piles[capturing, capturing_side] |= won[capturing]
    state.last_capturer[capturing] = capturing_side
    hands_empty = ~rows_any(state.hands.reshape(b, -1))[moved]
    last_play = hands_empty & (state.stock_pos[moved] >= d)
    scopa = took & ~rows_any(table)[moved] & ~last_play & ~ace_all[moved]
    state.scope[moved[scopa], side[scopa]] += 1
    info.scopa[moved] = scopa
    state.phase[moved] = Phase.PLAY
    state.pending[moved] = -1
    state.picked &= ~done[:, None]
    state.current[moved] = (seat + 1) % rules.num_players
    return moved[hands_empty & ~last_play], moved[last_play]


def _deal_next_round(rules: Rules, tb: Tables, state: State, games: npt.NDArray[np.intp]) -> None:
    """The end of a deal in ``games`` (every hand empty, cards left in the stock): the next round of cards."""
    state.deal_no[games] += 1
    _deal_round(rules, state, games)
    tb.variant.after_deal(state, games)


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
    knock_points = tables_for(rules).variant.knock_points(state, g)
    points = score_hands(rules, state.piles[g], state.scope[g], knock_points)
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
