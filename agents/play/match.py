"""One match between a person and bots: the core that the terminal game and the browser game are faces of.

``HumanMatch`` holds the match (one game on the compiled single-game engine, ``scopa_env.engine.single.SingleGame``),
whose turn it is, the person's decisions in the form a person makes them (a card, then one of its captures:
``moves``, ``captures``; Cirulla's knock: ``knock_options``, named ``none``, ``sum``, ``tris``), carries a decision
out whole (``play``, ``knock``), lets the bots play until the person is to act or the match is over (``play_bots``;
a bot's ``ActBatch`` built as ``scopa_env.games.driver.decide`` builds it), gives a bot's advice for the person's
position (``advice``) and starts the next match of the seed chain (``rematch``). The kind of a move
(``capture_kind``: a lay, equal rank, a sum, a fifteen, an ace taking all) is derived here once.

What happens is told to a listener, in the order it happens, as events: ``HandStart`` (a match's first hand too, with
Cirulla's initial table taken by the dealer's side), ``Knock`` (every knock decision, ``none`` included), ``Move``
(a whole move, with the table it was played on), ``NewDeal`` (a deal after the first of a hand), ``HandOver`` (the
hand's points), ``MatchOver`` and ``BotFallback`` (a bot chose an illegal action: the first legal one is played).
The faces word them: ``agents.play.terminal`` prints lines, ``agents.play.web.game`` logs JSON for the page. Nothing
here reads input or writes output, and nothing here names a variant: what differs in Cirulla comes from its rules
(``Rules.knocks``, ``fifteens``, ``ace_takes_all``, ``table_take``) through the engine.

The person's moves, their legality, every step, the ends of hands and of the match and the scores run on the
``SingleGame``; a bot gets the batched core's ``State`` (``SingleGame.to_state``, a batch of one) in its
``ActBatch`` at its own turns only, since the policies (``scopa_env.games.policy.Policy``) read that; the faces'
pictures read it too (``state``).

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
from scopa_env.engine import core, state_moves
from scopa_env.engine.single import SingleGame, SingleStep, cards_of, next_seed
from scopa_env.games.policy import ActBatch
from scopa_env.rules import Rules, cirulla
from scopa_env.rules.cards import format_card
from scopa_env.rules.variant import hook_class

if TYPE_CHECKING:
    from scopa_env.games.policy import Policy

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

_GAMES = np.arange(1)
"""``ActBatch.games`` of a bot's decision: game 0 of the batch of one (``driver.decide``'s rows)."""
_NO_OBS = np.zeros((1, 0), dtype=np.float32)
"""The observations of a bot that reads none (``Policy.needs_obs`` False), as ``driver.decide`` passes them."""
_PLAY, _CHOOSE, _KNOCK = int(core.Phase.PLAY), int(core.Phase.CHOOSE), int(core.Phase.KNOCK)
MAX_BOT_STEPS = 10_000
"""A bound on the engine steps of one bot stretch (a match of any variant needs far fewer)."""
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


def _cards(bits: int) -> frozenset[int]:
    """The cards of a bit mask (bit ``c`` for card ``c``)."""
    return frozenset(_ids(bits))


def _ids(bits: int) -> list[int]:
    """The set bits of ``bits``, lowest first."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def whole_moves(game: SingleGame) -> list[tuple[int, frozenset[int]]]:
    """The whole moves of the seat to act in ``game`` (PLAY phase), ``(card, captured cards)`` sorted by card, then
    capture, as ``state_moves.legal_moves`` lists them: each legal card played on a copy, each capture completed by
    picking its cards in increasing id order (the order ``state_moves.move_actions`` carries a move out in; cirulla's
    ``stop`` where the picked cards are a capture themselves). Empty outside the PLAY phase."""
    if game.phase != _PLAY:
        return []
    d = game.rules.num_cards
    found: set[tuple[int, int]] = set()
    for card in _ids(game.legal_bits()):
        first = game.copy()
        done = first.step(card)
        if done.move_done:
            found.add((card, done.capture))
            continue
        stack = [first]
        while stack:
            g = stack.pop()
            picked = g.picked
            legal = g.legal_bits()
            for a in _ids(legal >> picked.bit_length() << picked.bit_length()):
                nxt = g.copy()
                done = nxt.step(a)
                if done.move_done:
                    found.add((card, done.capture))
                elif a < d:
                    stack.append(nxt)
    moves = [(card, _cards(cap)) for card, cap in found]
    return sorted(moves, key=lambda m: (m[0], sorted(m[1])))


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

    ``listener`` is told every ``Event``. The game is ``game`` (a ``SingleGame``); ``state`` is it as a ``core.State``
    batch of one, a new copy at every read (for pictures and tests), and setting ``state`` replaces the game with a
    copy of the one given (e.g. a test setting up a position: read ``state`` again to see the moves played on it).
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
        self.seed = int(seed)
        """This match's seed (``rematch`` moves along its chain: ``single.next_seed``)."""
        self.matches = 0
        self.family = hook_class(rules).family
        """The family of the rules (``scopa_env.rules.variant``: ``cirulla`` for cirulla's hook,
        ``scopa_env.rules.cirulla.CirullaHook``, else ``scopa``); the faces pick their extra words by it."""
        self._knock_actions = (core.stop_action(rules), core.knock_sum_action(rules), core.knock_tris_action(rules))
        """The engine's actions of ``KNOCK_CHOICES``."""
        self._new_match()

    def _new_match(self) -> None:
        self.game = SingleGame(self.rules, self.seed)
        self.matches += 1
        self.hands_over = 0
        self._deal_no = 0
        self._table_before = 0

    @property
    def state(self) -> core.State:
        """The game as a ``core.State`` batch of one (``SingleGame.to_state``: a copy; changing it changes nothing)."""
        return self.game.to_state()

    @state.setter
    def state(self, state: core.State) -> None:
        self.game = SingleGame.from_state(self.rules, state)

    def start(self) -> None:
        """Tell the listener the first hand of the match (``HandStart``)."""
        self._tell(self._hand_start(new_match=True))

    def rematch(self) -> None:
        """The next match of the seed chain: the seed derived from this match's, every bot reseeded from it (the same
        seats and bots); ``start`` it."""
        self.seed = next_seed(self.seed)
        for agent in {id(a): a for a in self.seat_agents.values()}.values():
            agent.seed(self.seed % 2**32)
        self._new_match()

    # ------------------------------------------------------------------ whose turn

    @property
    def done(self) -> bool:
        """The match is over."""
        return self.game.done

    @property
    def winner(self) -> int:
        """The winning side (-1 before the end)."""
        return self.game.winner

    @property
    def current(self) -> int:
        """The seat to act."""
        return self.game.current

    @property
    def persons_turn(self) -> bool:
        """The match goes on and the person is to act."""
        return not self.done and self.current == self.human

    def knock_options(self) -> list[str]:
        """The person's legal knock decisions now (``KNOCK_CHOICES``: ``none`` is always among them), or an empty
        list when they have no knock to decide."""
        if not self.persons_turn or self.game.phase != _KNOCK:
            return []
        legal = self.game.legal_bits()
        return [k for k, a in zip(KNOCK_CHOICES, self._knock_actions, strict=True) if legal >> a & 1]

    def moves(self) -> list[tuple[int, frozenset[int]]]:
        """The person's legal moves now, ``(card, captured cards)`` sorted by card, then capture (a lay: an empty
        set); empty when it is not their turn, they have a knock to decide, or the match is over."""
        if not self.persons_turn:
            return []
        return whole_moves(self.game)

    def captures(self, card: int) -> list[frozenset[int]]:
        """Every legal capture of ``card`` on the table now, in ``moves`` order; ``[]``: the card is laid."""
        return state_moves.enumerate_captures(self.rules, _ids(self.game.table), card)

    def capture_kind(self, card: int, capture: frozenset[int]) -> str:
        """``capture_kind`` of a move on the table now."""
        return capture_kind(self.rules, card, capture, cards_of(self.game.table, self.rules.num_cards))

    def holds(self, seat: int, card: int) -> bool:
        """Whether ``seat`` holds ``card`` now."""
        return 0 <= card < self.rules.num_cards and bool(self.game.hands[seat] >> card & 1)

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
        self._step(self._knock_actions[KNOCK_CHOICES.index(choice)])

    def play(self, card: int, capture: frozenset[int]) -> None:
        """Play the person's whole move: the card, then the capture-choice picks that make ``capture`` (the lowest
        card not picked yet first, cirulla's ``stop`` once every card is picked, as ``state_moves.move_actions``).

        Raises ``MoveError`` (with a message for the person) when the move is not legal now."""
        self._check_turn()
        knocks = self.knock_options()
        if knocks:
            raise MoveError(f"first decide whether to knock (POST .../knock); your choices: {knocks}")
        legal = whole_moves(self.game)
        if (card, capture) not in legal:
            deck = self.rules.deck
            if not self.holds(self.human, card):
                raise MoveError(f"you don't hold {format_card(card, deck)}")
            options = [sorted(format_card(c, deck) for c in cap) for k, cap in legal if k == card]
            raise MoveError(
                f"{format_card(card, deck)} cannot take {sorted(format_card(c, deck) for c in capture)}; "
                f"its legal captures: {options if any(options) else 'none (lay it: an empty capture)'}"
            )
        take = sum(1 << c for c in capture)
        action = card
        while not self._step(action).move_done:
            todo = take & ~self.game.picked
            action = (todo & -todo).bit_length() - 1 if todo else self.rules.num_cards

    # ------------------------------------------------------------------ the bots

    def _decide(self, game: SingleGame, agent: Policy) -> int:
        """``agent``'s action for the seat to act in ``game``: its ``ActBatch`` built from the game (the core's
        ``State`` of it, the legal mask, the observation when the agent reads one), as ``driver.decide`` builds it."""
        obs = game.observe()[None] if getattr(agent, "needs_obs", True) else _NO_OBS
        acts = np.empty(1, dtype=np.int64)
        acts[:] = agent.act(ActBatch(self.rules, obs, game.mask()[None], game.to_state(), _GAMES))
        return int(acts[0])

    def play_bots(self) -> None:
        """Let the bots act until it is the person's turn or the match is over."""
        game = self.game
        for _ in range(MAX_BOT_STEPS):
            if game.done or game.current == self.human:
                return
            seat = game.current
            agent = self.seat_agents[seat]
            action = self._decide(game, agent)
            legal = game.legal_bits()
            if not (0 <= action < self.rules.num_actions and legal >> action & 1):  # a broken bot must not stop it
                first = (legal & -legal).bit_length() - 1
                self._tell(BotFallback(seat, agent.name, action, first))
                action = first
            self._step(action)
        raise RuntimeError(f"the bots made {MAX_BOT_STEPS} steps without reaching the person's turn")

    def bot_move(self, agent: Policy) -> tuple[int, frozenset[int]]:
        """The whole move ``agent`` would make for the seat to act, played out on a copy of the game."""
        game = self.game.copy()
        while True:
            done = game.step(self._decide(game, agent))
            if done.move_done:
                return done.card, _cards(done.capture)

    def advice(self, agent: Policy) -> Advice:
        """``agent``'s advice for the position of the seat to act (the person's, when asked on their turn)."""
        if self.game.phase == _KNOCK:
            action = self._decide(self.game.copy(), agent)
            names = dict(zip(self._knock_actions, KNOCK_CHOICES, strict=True))
            return Advice(knock=names.get(action))
        probs_fn = probs_function(agent)
        if probs_fn is not None:
            return Advice(probs=move_probabilities(probs_fn, self.rules, self.game.to_state(), 0))
        return Advice(move=self.bot_move(agent))

    # ------------------------------------------------------------------ steps and events

    def _tell(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    def _hand_start(self, new_match: bool) -> HandStart:
        game = self.game
        dealer = game.dealer
        scope = game.table_take
        side = game.last_capturer
        taken = _cards(game.piles[side]) if scope > 0 else frozenset()
        return HandStart(game.hand_no + 1, dealer, (dealer + 1) % self.rules.num_players, new_match, scope, taken, side)

    def _step(self, action: int) -> SingleStep:
        """One engine step of the match (``SingleGame.step``), told to the listener."""
        game, rules = self.game, self.rules
        phase = game.phase
        if phase == _PLAY:
            self._table_before = game.table
        done = game.step(action)
        seat = done.seat
        if phase == _KNOCK:
            kind = action - rules.num_cards
            cards = _cards(game.revealed[seat]) if kind else frozenset()
            self._tell(Knock(seat, KNOCK_CHOICES[kind], int(cirulla.KNOCK_POINTS[kind]), cards))
        if done.move_done:
            capture = _cards(done.capture)
            before = cards_of(self._table_before, rules.num_cards)
            move_kind = capture_kind(rules, done.card, capture, before)
            self._tell(Move(seat, done.card, capture, done.scopa, move_kind, _cards(self._table_before)))
        if done.move_done and not done.hand_over and game.deal_no != self._deal_no:
            self._deal_no = game.deal_no
            left = rules.num_cards - game.stock_pos
            self._tell(NewDeal(self._deal_no, rules.deal_sizes[self._deal_no], left))
        if done.hand_over:
            assert done.hand_points is not None
            self.hands_over += 1
            self._deal_no = 0
            leftover = cards_of(done.leftover, rules.num_cards).copy()
            scores = np.array(game.scores, dtype=np.int16)
            self._tell(HandOver(self.hands_over, leftover, done.leftover_side, done.hand_points, scores))
        if done.match_over:
            self._tell(MatchOver(done.winner, np.array(game.scores, dtype=np.int16)))
        elif done.new_hand:
            self._tell(self._hand_start(new_match=False))
        return done
