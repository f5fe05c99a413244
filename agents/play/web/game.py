"""One browser game: a match between a person and the server's bots, and its public JSON view.

The rules run only here, on the batched core (``scopa_env.core``) and the one game loop's ``decide``; the page
sends whole moves (a card and the cards it takes) and draws what ``WebGame.view`` returns. The view holds only
what the person's seat may know (RULES.md section 7): their hand, the table, hand sizes, the stock size, pile
summaries, scores and the moves played; never another hand, the stock order or the seed
(``tests/test_web.py`` checks every card of a response against the hidden ones). Cirulla adds knock decisions
(``WebGame.knock``): the cards a knock shows are public until played, so the view shows them for every seat.
Each seat has one name (``Seat.name``: ``you`` or its bot's) for the page to use everywhere; each move among the
view's ``events`` carries the table it was played on (``table_before``), so the page can draw the bots' moves one by
one before the captures take the cards.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from agents.errors import ScopaError
from agents.play.hints import move_probabilities, probs_function
from scopa_env import cirulla, core
from scopa_env.cards import format_card
from scopa_env.driver import decide
from scopa_env.rules import Rules
from scopa_env.scoring import point_fields
from scopa_env.shuffle import derive_seed

if TYPE_CHECKING:
    from scopa_env.policy import Policy

__all__ = ["KNOCK_CHOICES", "SUIT_NAMES", "MoveError", "WebGame", "capture_kind", "card_json"]

_ONE = np.zeros(1, dtype=np.int64)
"""``decide``'s actor for the one game of a match: the one agent asked."""
SUIT_NAMES = ("coins", "cups", "swords", "clubs")
"""Suits in card-id order (letters ``d c s b``: denari, coppe, spade, bastoni)."""
MAX_BOT_STEPS = 10_000
"""A bound on the core steps of one bot stretch (a match of any variant needs far fewer)."""
KNOCK_CHOICES = ("none", "sum", "tris")
"""Cirulla's knock decisions as the page names them, in ``cirulla.KnockKind`` order (``none``: no knock)."""


class MoveError(ScopaError, ValueError):
    """A move the person cannot make now (not their turn, a card they lack, a capture that is not legal)."""


def card_json(card: int, rules: Rules) -> dict[str, Any]:
    """A card for the page: its notation (``7d``), rank symbol, suit letter and name, value."""
    deck = rules.deck
    suit, rank = divmod(int(card), deck.num_ranks)
    return {
        "code": format_card(int(card), deck),
        "rank": deck.ranks[rank],
        "suit": "dcsb"[suit],
        "suit_name": SUIT_NAMES[suit],
        "value": int(deck.rank_values[rank]),
    }


def _knock_action(rules: Rules, choice: str) -> int:
    """The core action of a knock decision named in ``KNOCK_CHOICES``."""
    return (core.stop_action, core.knock_sum_action, core.knock_tris_action)[KNOCK_CHOICES.index(choice)](rules)


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


def _ids(mask: npt.NDArray[np.bool_], rules: Rules) -> list[int]:
    """Card ids of a boolean mask in rank order, then suit (how the hand is drawn)."""
    r = rules.deck.num_ranks
    return sorted((int(c) for c in np.flatnonzero(mask)), key=lambda c: (c % r, c // r))


@dataclass
class Seat:
    """A seat of the match: who plays it."""

    seat: int
    side: int
    label: str
    """``you``, ``partner (expert)``, ``opponent (greedy)``."""
    agent_name: str | None
    """The bot's name on the server's list; None for the person."""
    name: str
    """The seat's one name on the page: ``you``, or the bot's name, with the seat number when several seats play
    the same bot (``greedy 1``, ``greedy 3``)."""
    role: str
    """``you``, ``partner`` or ``opponent``."""


class WebGame:
    """A match: the person at ``human``, a policy at every other seat, a hint policy; its own lock.

    Every public method takes the lock, so one game is never stepped by two requests at once; different games
    share nothing mutable (each has its own state and its own agent instances).
    """

    def __init__(
        self,
        game_id: str,
        rules: Rules,
        human: int,
        seat_agents: dict[int, Policy],
        seat_names: dict[int, str],
        hint_agent: Policy | None,
        seed: int,
        hint_name: str | None = None,
    ) -> None:
        self.id = game_id
        self.rules = rules
        self.human = human
        self.human_side = rules.seat_side[human]
        self.seat_agents = seat_agents
        self.hint_agent = hint_agent
        self.hint_name = hint_name or (hint_agent.name if hint_agent is not None else None)
        self.seats = [
            _seat(s, rules.seat_side[s], human, self.human_side, seat_names) for s in range(rules.num_players)
        ]
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.matches = 0
        self.point_fields = point_fields(rules)
        self._table_before = np.zeros(rules.num_cards, dtype=np.bool_)
        """The table before the move being made (for ``capture_kind``)."""
        self._seed = np.array([seed], dtype=np.uint64)
        self._new_match()

    # ------------------------------------------------------------------ match life

    def _new_match(self) -> None:
        self.state = core.reset(self.rules, self._seed)
        self.matches += 1
        self.hand_log: list[dict[str, Any]] = []
        self.past_hands: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._record_table_take(int(self.state.table_take[0]))
        self._play_bots()

    def rematch(self) -> dict[str, Any]:
        """Start the next match of this game's seed chain (same seats and bots) and return its view."""
        with self.lock:
            self.touch()
            self._seed = derive_seed(self._seed)
            for agent in {id(a): a for a in self.seat_agents.values()}.values():
                agent.seed(int(self._seed[0] % np.uint64(2**32)))
            self._new_match()
            return self._view()

    def touch(self) -> None:
        """Mark the game used now (idle games expire)."""
        self.last_used = time.monotonic()

    # ------------------------------------------------------------------ moves

    def legal_moves(self) -> list[tuple[int, frozenset[int]]]:
        """The person's legal moves now (empty when it is not their turn, they have a knock to decide, or the
        match is over)."""
        st = self.state
        if st.done[0] or int(st.current[0]) != self.human:
            return []
        return core.legal_moves(self.rules, st, 0)

    def knock_options(self) -> list[str]:
        """Cirulla: the person's legal knock decisions now (``KNOCK_CHOICES`` names: ``none`` is always among them),
        or an empty list when they have no knock to decide."""
        st = self.state
        if st.done[0] or int(st.current[0]) != self.human or int(st.phase[0]) != core.Phase.KNOCK:
            return []
        mask = core.legal_action_mask(self.rules, st)[0]
        return [k for k in KNOCK_CHOICES if mask[_knock_action(self.rules, k)]]

    def _start_turn(self) -> core.State:
        """The checks and resets before one of the person's decisions (under ``lock``); the game's state."""
        self.touch()
        self.events = []
        st = self.state
        if st.done[0]:
            raise MoveError("the match is over; start a rematch or a new game")
        if int(st.current[0]) != self.human:
            raise MoveError(f"it is not your turn (seat {int(st.current[0])} is to play)")
        return st

    def knock(self, choice: str) -> dict[str, Any]:
        """Make the person's knock decision (``none``, ``sum`` or ``tris``), then let the bots play until the person
        is to act again; return the view. Raises ``MoveError`` when that decision is not legal now."""
        with self.lock:
            self._start_turn()
            options = self.knock_options()
            if not options:
                raise MoveError("there is no knock to decide now: play a card")
            if choice not in options:
                raise MoveError(f"you cannot knock {choice!r} now; your choices: {options}")
            self._step(np.array([_knock_action(self.rules, choice)], dtype=np.int64))
            self._play_bots()
            return self._view()

    def move(self, card: int, capture: frozenset[int]) -> dict[str, Any]:
        """Play the person's whole move, then the bots' until the person is to act again; return the view.

        Raises ``MoveError`` (with a message for the person) when the move is not legal now.
        """
        with self.lock:
            st = self._start_turn()
            knocks = self.knock_options()
            if knocks:
                raise MoveError(f"first decide whether to knock (POST .../knock); your choices: {knocks}")
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
                info = self._step(core.move_actions(st, np.array([card]), cap_mask))
                if info.move_done[0]:
                    break
            self._play_bots()
            return self._view()

    def _play_bots(self) -> None:
        """Let the bots move until it is the person's turn or the match is over."""
        st = self.state
        for _ in range(MAX_BOT_STEPS):
            if st.done[0] or int(st.current[0]) == self.human:
                return
            agent = self.seat_agents[int(st.current[0])]
            action = decide(self.rules, st, [agent], _ONE)
            mask = core.legal_action_mask(self.rules, st)
            if not (0 <= action[0] < mask.shape[1] and mask[0, action[0]]):  # a broken bot must not stop the game
                action = np.flatnonzero(mask[0])[:1].astype(np.int64)
            self._step(action)
        raise RuntimeError(f"the bots made {MAX_BOT_STEPS} steps without reaching the person's turn")

    def _step(self, action: npt.NDArray[np.int64]) -> core.StepInfo:
        """One core step of the match, logged."""
        st = self.state
        phase = int(st.phase[0])
        if phase == core.Phase.PLAY:
            self._table_before = st.table[0].copy()
        info = core.step(self.rules, st, action)
        self._record(info, knock_decision=phase == core.Phase.KNOCK)
        return info

    def _log(self, entry: dict[str, Any]) -> None:
        self.hand_log.append(entry)
        self.events.append(entry)

    def _record_table_take(self, scope: int) -> None:
        """Cirulla: log the initial table of the hand just dealt taken by the dealer's side (15: one scopa, 30:
        two); its cards are that side's whole pile so far."""
        if scope <= 0:
            return
        st, rules = self.state, self.rules
        side = int(st.last_capturer[0])
        self._log(
            {
                "type": "table_take",
                "side": side,
                "who": self._side_name(side),
                "dealer": int(st.dealer[0]),
                "cards": [card_json(c, rules) for c in _ids(st.piles[0, side], rules)],
                "total": 15 * scope,
                "scope": scope,
            }
        )

    def _record(self, info: core.StepInfo, knock_decision: bool = False) -> None:
        """Log what one core step did (a knock decision, a finished move, a hand's points, the match end, an initial
        table taken)."""
        rules = self.rules
        seat = int(info.seat[0])
        if knock_decision and info.acted[0]:
            kind = int(info.knock[0])
            if kind or seat == self.human:  # another seat's "no knock" is not shown (nothing is revealed)
                self._log(
                    {
                        "type": "knock",
                        "seat": seat,
                        "who": self.seats[seat].label,
                        "kind": KNOCK_CHOICES[kind],
                        "points": int(cirulla.KNOCK_POINTS[kind]),
                        "cards": [card_json(c, rules) for c in _ids(self.state.revealed[0, seat], rules)]
                        if kind
                        else [],
                    }
                )
        if info.move_done[0]:
            card = int(info.card[0])
            capture = frozenset(int(c) for c in np.flatnonzero(info.capture[0]))
            entry = {
                "type": "move",
                "seat": seat,
                "who": self.seats[seat].label,
                "card": card_json(card, rules),
                "capture": [card_json(c, rules) for c in _ids(info.capture[0], rules)],
                "scopa": bool(info.scopa[0]),
                "kind": capture_kind(rules, card, capture, self._table_before),
            }
            self.hand_log.append(entry)
            # the page draws each move of the last request on the table it was played on (public: every card of it
            # lay face up); only the events carry that table, not the hand's log
            before = [card_json(c, rules) for c in _ids(self._table_before, rules)]
            self.events.append({**entry, "table_before": before})
        if info.hand_over[0]:
            left = info.leftover[0]
            side = int(info.leftover_side[0])
            points = [
                {f: int(v) for f, v in zip(self.point_fields, info.hand_points[0, s], strict=True)}
                for s in range(rules.num_sides)
            ]
            summary = {
                "type": "hand_over",
                "hand": len(self.past_hands) + 1,
                "leftover": [card_json(c, rules) for c in _ids(left, rules)],
                "leftover_side": side,
                "points": points,
                "scores": [int(x) for x in info.final_scores[0]],
                "moves": self.hand_log,
            }
            self.events.append(summary)
            self.past_hands.append({k: v for k, v in summary.items() if k not in ("moves", "leftover")})
            self.hand_log = []
        if info.match_over[0]:
            self.events.append(
                {"type": "match_over", "winner": int(info.winner[0]), "scores": [int(x) for x in info.final_scores[0]]}
            )
        if info.new_hand[0] and not info.reset[0]:
            self._record_table_take(int(info.table_take[0]))

    # ------------------------------------------------------------------ hint

    def hint(self) -> dict[str, Any]:
        """The hint bot's advice for the person's position: its move, and its probabilities when it has them; for
        a cirulla knock decision, ``knock`` names the bot's choice (and ``card`` is None)."""
        with self.lock:
            self.touch()
            agent = self.hint_agent
            if agent is None:
                raise MoveError("this game has no hint bot")
            if self.state.done[0] or int(self.state.current[0]) != self.human:
                raise MoveError("a hint is for your turn; it is not your turn now")
            rules = self.rules
            if self.knock_options():
                action = int(decide(rules, self.state.copy(), [agent], _ONE)[0])
                choice = {_knock_action(rules, k): k for k in KNOCK_CHOICES}.get(action, "none")
                return {"bot": self.hint_name, "knock": choice, "card": None, "capture": [], "options": []}
            probs_fn = probs_function(agent)
            options: list[dict[str, Any]] = []
            if probs_fn is not None:
                probs = {(m.card, m.capture): m.prob for m in move_probabilities(probs_fn, rules, self.state)}
                ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0][0], sorted(kv[0][1])))
                options = [
                    {
                        "card": card_json(c, rules),
                        "capture": [card_json(x, rules) for x in sorted(cap)],
                        "prob": round(p, 4),
                    }
                    for (c, cap), p in ranked
                ]
                best_card, best_cap = ranked[0][0]
            else:
                st = self.state.copy()
                while True:
                    info = core.step(rules, st, decide(rules, st, [agent], _ONE))
                    if info.move_done[0]:
                        best_card = int(info.card[0])
                        best_cap = frozenset(int(c) for c in np.flatnonzero(info.capture[0]))
                        break
            return {
                "bot": self.hint_name,
                "knock": None,
                "card": card_json(best_card, rules),
                "capture": [card_json(c, rules) for c in _ids(_mask(best_cap, rules), rules)],
                "options": options,
            }

    # ------------------------------------------------------------------ the view

    def view(self) -> dict[str, Any]:
        """The person's view of the game (JSON-ready), with the events of the last request."""
        with self.lock:
            self.touch()
            return self._view()

    def _view(self) -> dict[str, Any]:
        rules, st = self.rules, self.state
        deck = rules.deck
        seven = deck.ranks.index("7")
        legal = self.legal_moves()
        knocks = self.knock_options()
        moves: dict[str, list[list[str]]] = {}
        kinds: dict[str, list[str]] = {}
        for card, cap in legal:
            code = format_card(card, deck)
            moves.setdefault(code, []).append([format_card(c, deck) for c in _ids(_mask(cap, rules), rules)])
            kinds.setdefault(code, []).append(capture_kind(rules, card, cap, st.table[0]))
        sides = []
        for s, seats in enumerate(rules.sides):
            pile = st.piles[0, s]
            sides.append(
                {
                    "side": s,
                    "seats": list(seats),
                    "name": self._side_name(s),
                    "mine": s == self.human_side,
                    "score": int(st.scores[0, s]),
                    "cards": int(pile.sum()),
                    "coins": int(pile[: deck.num_ranks].sum()),
                    "settebello": bool(pile[deck.settebello]),
                    "sevens": int(pile.reshape(4, deck.num_ranks)[:, seven].sum()),
                    "scope": int(st.scope[0, s]),
                    **({"knocks": int(st.knock_points[0, s])} if rules.knocks else {}),
                }
            )
        done = bool(st.done[0])
        return {
            "id": self.id,
            "variant": rules.name,
            "description": rules.description,
            "target": rules.target,
            "cirulla": rules.cirulla,
            "point_fields": list(self.point_fields),
            "deck": deck.name,
            "you": self.human,
            "seats": [
                {
                    "seat": s.seat,
                    "side": s.side,
                    "label": s.label,
                    "name": s.name,
                    "role": s.role,
                    "bot": s.agent_name,
                    "cards_in_hand": int(st.hands[0, s.seat].sum()),
                    "revealed": [
                        card_json(c, rules) for c in _ids(st.revealed[0, s.seat] & st.hands[0, s.seat], rules)
                    ],
                }
                for s in self.seats
            ],
            "sides": sides,
            "hand": [card_json(c, rules) for c in _ids(st.hands[0, self.human], rules)],
            "table": [card_json(c, rules) for c in _ids(st.table[0], rules)],
            "stock": int(rules.num_cards - int(st.stock_pos[0])),
            "hand_no": int(st.hand_no[0]) + 1,
            "deal_no": int(st.deal_no[0]) + 1,
            "num_deals": len(rules.deal_sizes),
            "dealer": int(st.dealer[0]),
            "current": int(st.current[0]),
            "your_turn": bool(legal or knocks),
            "phase": "done" if done else ("knock" if knocks else ("play" if legal else "wait")),
            "moves": moves,
            "move_kinds": kinds,
            "knock_options": knocks,
            "hand_log": self.hand_log,
            "past_hands": self.past_hands,
            "events": self.events,
            "done": done,
            "winner": int(st.winner[0]) if done else None,
            "you_won": bool(done and int(st.winner[0]) == self.human_side),
            "match": self.matches,
            "hint_bot": self.hint_name,
        }

    def _side_name(self, side: int) -> str:
        seats = self.rules.sides[side]
        if side == self.human_side:
            return "you" if len(seats) == 1 else "your team"
        return f"player {seats[0]}" if len(seats) == 1 else "team " + "+".join(str(s) for s in seats)


def _seat(seat: int, side: int, human: int, human_side: int, seat_names: dict[int, str]) -> Seat:
    """Seat ``seat`` of a match where the person sits at ``human``: its label, role and one name."""
    if seat == human:
        return Seat(seat, side, "you", None, "you", "you")
    bot = seat_names[seat]
    role = "partner" if side == human_side else "opponent"
    shared = sum(name == bot for s, name in seat_names.items() if s != human) > 1
    return Seat(seat, side, f"{role} ({bot})", bot, f"{bot} {seat}" if shared else bot, role)


def _mask(cards: frozenset[int], rules: Rules) -> npt.NDArray[np.bool_]:
    out = np.zeros(rules.num_cards, dtype=np.bool_)
    out[list(cards)] = True
    return out
