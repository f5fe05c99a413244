"""One match between a person and bots: the core that the terminal game and the browser game are faces of.

``HumanMatch`` holds the match (one game on the batched core, ``scopa_env.core``), whose turn it is, the person's
decisions in the form a person makes them (a card, then one of its captures: ``moves``, ``captures``; Cirulla's
knock: ``knock_options``, named ``none``, ``sum``, ``tris``), carries a decision out whole (``play``, ``knock``),
lets the bots play until the person is to act or the match is over (``play_bots``, the one game loop's ``decide``),
gives a bot's advice for the person's position (``advice``) and starts the next match of the seed chain
(``rematch``). The kind of a move (``capture_kind``: a lay, equal rank, a sum, a fifteen, an ace taking all) is
derived here once.

What happens is told to a listener, in the order it happens, as events: ``HandStart`` (a match's first hand too, with
Cirulla's initial table taken by the dealer's side), ``Knock`` (every knock decision, ``none`` included), ``Move``
(a whole move, with the table it was played on), ``NewDeal`` (a deal after the first of a hand), ``HandOver`` (the
hand's points), ``MatchOver`` and ``BotFallback`` (a bot chose an illegal action: the first legal one is played).
The faces word them: ``agents.play.terminal`` prints lines, ``agents.play.web.game`` logs JSON for the page. Nothing
here reads input or writes output, and nothing here names a variant: what differs in Cirulla comes from its rules
(``Rules.knocks``, ``fifteens``, ``ace_takes_all``, ``table_take``) through the core and its hook
(``scopa_env.cirulla.CirullaHook``).

    match = HumanMatch(rules, human=0, seat_agents={1: bot}, seed=7, listener=print)
    match.start()            # HandStart of the first hand
    match.play_bots()        # the bots' moves until the person's turn
    match.play(card, capture)  or  match.knock("none")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from agents.errors import ScopaError
from agents.play.hints import MoveProb, move_probabilities, probs_function
from scopa_env import cirulla, core
from scopa_env.cards import format_card
from scopa_env.driver import decide
from scopa_env.rules import Rules
from scopa_env.shuffle import derive_seed

if TYPE_CHECKING:
    from scopa_env.policy import Policy

__all__ = [
    "KNOCK_CHOICES",
    "MAX_BOT_STEPS",
    "Advice",
    "BotFallback",
    "Event",
    "HandOver",
    "HandStart",
    "HumanMatch",
    "Knock",
    "MatchOver",
    "Move",
    "MoveError",
    "NewDeal",
    "capture_kind",
]

_ONE = np.zeros(1, dtype=np.int64)
"""``decide``'s actor for the one game of a match: the one agent asked (index 0)."""
MAX_BOT_STEPS = 10_000
"""A bound on the core steps of one bot stretch (a match of any variant needs far fewer)."""
KNOCK_CHOICES = ("none", "sum", "tris")
"""Cirulla's knock decisions as a person names them, in ``cirulla.KnockKind`` order (``none``: no knock)."""


class MoveError(ScopaError, ValueError):
    """A move the person cannot make now (not their turn, a card they lack, a capture that is not legal)."""


def capture_kind(rules: Rules, card: int, capture: frozenset[int], table: npt.NDArray[np.bool_]) -> str:
    """What kind of move ``card`` taking ``capture`` from ``table`` (the table before the move) is: ``lay``,
    ``ace-takes-all``, ``equal`` (one card of its rank), ``sum`` (cards adding up to its value) or ``fifteen`` (the
    card and the cards taken make 15, cirulla)."""
    if not capture:
        return "lay"
    deck = rules.deck
    r = deck.num_ranks
    values = deck.rank_values
    on_table = {int(c) for c in np.flatnonzero(table)}
    if rules.ace_takes_all and card % r == 0 and not any(c % r == 0 for c in on_table) and capture == on_table:
        return "ace-takes-all"
    v = int(values[card % r])
    if len(capture) == 1 and next(iter(capture)) % r == card % r:
        return "equal"
    total = sum(int(values[c % r]) for c in capture)
    if rules.fifteens and total + v == 15:
        return "fifteen"
    return "sum"


def _cards(mask: npt.NDArray[np.bool_]) -> frozenset[int]:
    return frozenset(int(c) for c in np.flatnonzero(mask))


# --------------------------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class HandStart:
    """A hand was dealt (``new_match``: the first of a match)."""

    hand: int
    """The hand's number in the match, from 1."""
    dealer: int
    first: int
    """The seat to play first."""
    new_match: bool
    table_take: int
    """Cirulla: the scope of an initial table taken by the dealer's side (1: it added up to 15, 2: to 30), else 0."""
    taken: frozenset[int]
    """The cards of that table (the taking side's whole pile so far); empty without a take."""
    side: int
    """The side that took it (the last capturer); meaningful with a take only."""


@dataclass(frozen=True)
class Knock:
    """A knock decision of ``seat`` (Cirulla), ``none`` included."""

    seat: int
    kind: str
    """``KNOCK_CHOICES``: ``none``, ``sum`` or ``tris``."""
    points: int
    cards: frozenset[int]
    """The cards the knock shows (the seat's whole hand); empty for ``none``."""


@dataclass(frozen=True)
class Move:
    """A whole move: ``card`` played, taking ``capture`` (empty: laid) from ``table_before``."""

    seat: int
    card: int
    capture: frozenset[int]
    scopa: bool
    kind: str
    """``capture_kind`` of the move on the table it was played on."""
    table_before: frozenset[int]


@dataclass(frozen=True)
class NewDeal:
    """A deal after the first of a hand."""

    deal: int
    """The deal's index in the hand, from 0."""
    cards_each: int
    stock_left: int


@dataclass(frozen=True)
class HandOver:
    """A hand ended and was scored."""

    hand: int
    """The hand's number in the match, from 1."""
    leftover: npt.NDArray[np.bool_]
    """The cards left on the table, taken by ``leftover_side`` (-1: nobody captured)."""
    leftover_side: int
    points: npt.NDArray[np.int16]
    """(sides, fields) the hand's points in ``scoring.point_fields(rules)`` order, the total last."""
    scores: npt.NDArray[np.int16]
    """The match scores after the hand."""


@dataclass(frozen=True)
class MatchOver:
    """The match ended: ``winner`` is a side."""

    winner: int
    scores: npt.NDArray[np.int16]


@dataclass(frozen=True)
class BotFallback:
    """The bot at ``seat`` chose the illegal ``action``; the first legal action, ``played``, was played instead."""

    seat: int
    agent: str
    action: int
    played: int


Event = HandStart | Knock | Move | NewDeal | HandOver | MatchOver | BotFallback
"""What ``HumanMatch`` tells its listener."""


@dataclass(frozen=True)
class Advice:
    """A bot's advice for the person's position: at a knock decision ``knock`` (its choice; None when the bot chose
    no knock action at all), else ``probs`` (every legal move with its probability, for a bot that has them) or
    ``move`` (the whole move it would make, played out on a copy of the game)."""

    knock: str | None = None
    probs: list[MoveProb] | None = None
    move: tuple[int, frozenset[int]] | None = None


# --------------------------------------------------------------------------------------------------- the match


class HumanMatch:
    """A match: the person at seat ``human``, a policy at every other seat (``seat_agents``), dealt from ``seed``.

    ``listener`` is told every ``Event``. The state (``state``, one game of the batched core) may be replaced, e.g.
    by a test setting up a position.
    """

    def __init__(
        self,
        rules: Rules,
        human: int,
        seat_agents: dict[int, Policy],
        seed: int,
        listener: Callable[[Event], None] | None = None,
    ) -> None:
        self.rules = rules
        self.human = human
        self.human_side = rules.seat_side[human]
        self.seat_agents = seat_agents
        self.listener = listener
        self.seed = np.array([seed], dtype=np.uint64)
        self.matches = 0
        self.family = "cirulla" if core.tables_for(rules).cirulla is not None else "scopa"
        """The family of the rules: ``cirulla`` where the core plays them through its Cirulla hook
        (``scopa_env.cirulla.CirullaHook``), else ``scopa``; the faces pick their extra words by it."""
        self._knock_actions = (core.stop_action(rules), core.knock_sum_action(rules), core.knock_tris_action(rules))
        """The core actions of ``KNOCK_CHOICES``."""
        self._new_match()

    def _new_match(self) -> None:
        self.state = core.reset(self.rules, self.seed)
        self.matches += 1
        self.hands_over = 0
        self._deal_no = 0
        self._table_before = np.zeros(self.rules.num_cards, dtype=np.bool_)

    def start(self) -> None:
        """Tell the listener the first hand of the match (``HandStart``)."""
        self._tell(self._hand_start(new_match=True))

    def rematch(self) -> None:
        """The next match of the seed chain: the seed derived from this match's, every bot reseeded from it (the same
        seats and bots); ``start`` it."""
        self.seed = derive_seed(self.seed)
        for agent in {id(a): a for a in self.seat_agents.values()}.values():
            agent.seed(int(self.seed[0] % np.uint64(2**32)))
        self._new_match()

    # ------------------------------------------------------------------ whose turn

    @property
    def done(self) -> bool:
        """The match is over."""
        return bool(self.state.done[0])

    @property
    def winner(self) -> int:
        """The winning side (-1 before the end)."""
        return int(self.state.winner[0])

    @property
    def current(self) -> int:
        """The seat to act."""
        return int(self.state.current[0])

    @property
    def persons_turn(self) -> bool:
        """The match goes on and the person is to act."""
        return not self.done and self.current == self.human

    def knock_options(self) -> list[str]:
        """The person's legal knock decisions now (``KNOCK_CHOICES``: ``none`` is always among them), or an empty
        list when they have no knock to decide."""
        if not self.persons_turn or int(self.state.phase[0]) != core.Phase.KNOCK:
            return []
        mask = core.legal_action_mask(self.rules, self.state)[0]
        return [k for k, a in zip(KNOCK_CHOICES, self._knock_actions, strict=True) if mask[a]]

    def moves(self) -> list[tuple[int, frozenset[int]]]:
        """The person's legal moves now, ``(card, captured cards)`` sorted by card, then capture (a lay: an empty
        set); empty when it is not their turn, they have a knock to decide, or the match is over."""
        if not self.persons_turn:
            return []
        return core.legal_moves(self.rules, self.state, 0)

    def captures(self, card: int) -> list[frozenset[int]]:
        """Every legal capture of ``card`` on the table now, in ``moves`` order; ``[]``: the card is laid."""
        table = [int(c) for c in np.flatnonzero(self.state.table[0])]
        return core.enumerate_captures(self.rules, table, card)

    def capture_kind(self, card: int, capture: frozenset[int]) -> str:
        """``capture_kind`` of a move on the table now."""
        return capture_kind(self.rules, card, capture, self.state.table[0])

    # ------------------------------------------------------------------ the person's decisions

    def _check_turn(self) -> None:
        if self.done:
            raise MoveError("the match is over; start a rematch or a new game")
        if self.current != self.human:
            raise MoveError(f"it is not your turn (seat {self.current} is to play)")

    def knock(self, choice: str) -> None:
        """Make the person's knock decision (``none``, ``sum`` or ``tris``); ``MoveError`` when it is not legal now."""
        self._check_turn()
        options = self.knock_options()
        if not options:
            raise MoveError("there is no knock to decide now: play a card")
        if choice not in options:
            raise MoveError(f"you cannot knock {choice!r} now; your choices: {options}")
        self._step(np.array([self._knock_actions[KNOCK_CHOICES.index(choice)]], dtype=np.int64))

    def play(self, card: int, capture: frozenset[int]) -> None:
        """Play the person's whole move: the card, then the capture-choice picks that make ``capture``.

        Raises ``MoveError`` (with a message for the person) when the move is not legal now."""
        self._check_turn()
        knocks = self.knock_options()
        if knocks:
            raise MoveError(f"first decide whether to knock (POST .../knock); your choices: {knocks}")
        st = self.state
        legal = core.legal_moves(self.rules, st, 0)
        if (card, capture) not in legal:
            deck = self.rules.deck
            if not st.hands[0, self.human, card]:
                raise MoveError(f"you don't hold {format_card(card, deck)}")
            options = [sorted(format_card(c, deck) for c in cap) for k, cap in legal if k == card]
            raise MoveError(
                f"{format_card(card, deck)} cannot take {sorted(format_card(c, deck) for c in capture)}; "
                f"its legal captures: {options if any(options) else 'none (lay it: an empty capture)'}"
            )
        cap_mask = np.zeros((1, self.rules.num_cards), dtype=np.bool_)
        cap_mask[0, list(capture)] = True
        while True:
            info = self._step(core.move_actions(self.state, np.array([card]), cap_mask))
            if info.move_done[0]:
                return

    # ------------------------------------------------------------------ the bots

    def play_bots(self) -> None:
        """Let the bots act until it is the person's turn or the match is over."""
        for _ in range(MAX_BOT_STEPS):
            if self.done or self.current == self.human:
                return
            seat = self.current
            agent = self.seat_agents[seat]
            action = decide(self.rules, self.state, [agent], _ONE)
            mask = core.legal_action_mask(self.rules, self.state)
            if not (0 <= action[0] < mask.shape[1] and mask[0, action[0]]):  # a broken bot must not stop the game
                legal = np.flatnonzero(mask[0])[:1].astype(np.int64)
                self._tell(BotFallback(seat, agent.name, int(action[0]), int(legal[0])))
                action = legal
            self._step(action)
        raise RuntimeError(f"the bots made {MAX_BOT_STEPS} steps without reaching the person's turn")

    def bot_move(self, agent: Policy) -> tuple[int, frozenset[int]]:
        """The whole move ``agent`` would make for the seat to act, played out on a copy of the game."""
        st = self.state.copy()
        while True:
            info = core.step(self.rules, st, decide(self.rules, st, [agent], _ONE))
            if info.move_done[0]:
                return int(info.card[0]), _cards(info.capture[0])

    def advice(self, agent: Policy) -> Advice:
        """``agent``'s advice for the position of the seat to act (the person's, when asked on their turn)."""
        if int(self.state.phase[0]) == core.Phase.KNOCK:
            action = int(decide(self.rules, self.state.copy(), [agent], _ONE)[0])
            names = dict(zip(self._knock_actions, KNOCK_CHOICES, strict=True))
            return Advice(knock=names.get(action))
        probs_fn = probs_function(agent)
        if probs_fn is not None:
            return Advice(probs=move_probabilities(probs_fn, self.rules, self.state, 0))
        return Advice(move=self.bot_move(agent))

    # ------------------------------------------------------------------ steps and events

    def _tell(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    def _hand_start(self, new_match: bool) -> HandStart:
        st = self.state
        dealer = int(st.dealer[0])
        scope = int(st.table_take[0])
        side = int(st.last_capturer[0])
        taken = _cards(st.piles[0, side]) if scope > 0 else frozenset()
        return HandStart(
            int(st.hand_no[0]) + 1, dealer, (dealer + 1) % self.rules.num_players, new_match, scope, taken, side
        )

    def _step(self, action: npt.NDArray[np.int64]) -> core.StepInfo:
        """One core step of the match, told to the listener."""
        st, rules = self.state, self.rules
        phase = int(st.phase[0])
        if phase == core.Phase.PLAY:
            self._table_before = st.table[0].copy()
        info = core.step(rules, st, action)
        seat = int(info.seat[0])
        if phase == core.Phase.KNOCK and info.acted[0]:
            kind = int(info.knock[0])
            cards = _cards(st.revealed[0, seat]) if kind else frozenset()
            self._tell(Knock(seat, KNOCK_CHOICES[kind], int(cirulla.KNOCK_POINTS[kind]), cards))
        if info.move_done[0]:
            card = int(info.card[0])
            capture = _cards(info.capture[0])
            move_kind = capture_kind(rules, card, capture, self._table_before)
            self._tell(Move(seat, card, capture, bool(info.scopa[0]), move_kind, _cards(self._table_before)))
        if info.move_done[0] and not info.hand_over[0] and int(st.deal_no[0]) != self._deal_no:
            self._deal_no = int(st.deal_no[0])
            left = rules.num_cards - int(st.stock_pos[0])
            self._tell(NewDeal(self._deal_no, rules.deal_sizes[self._deal_no], left))
        if info.hand_over[0]:
            self.hands_over += 1
            self._deal_no = 0
            self._tell(
                HandOver(
                    self.hands_over,
                    info.leftover[0].copy(),
                    int(info.leftover_side[0]),
                    info.hand_points[0].copy(),
                    info.final_scores[0].copy(),
                )
            )
        if info.match_over[0]:
            self._tell(MatchOver(int(info.winner[0]), info.final_scores[0].copy()))
        elif info.new_hand[0]:
            self._tell(self._hand_start(new_match=False))
        return info
