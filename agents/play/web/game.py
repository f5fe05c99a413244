"""One browser game: the JSON face of a match between a person and the server's bots (``agents.play.match``).

The match (``HumanMatch``) holds the rules, the turns and the bots; this face turns its events into the view's logs
and its state into the view the page draws (``WebGame.view``); the page sends whole moves (a card and the cards it
takes). The view holds only what the person's seat may know (RULES.md section 7): their hand, the table, hand sizes,
the stock size, pile summaries, scores and the moves played; never another hand, the stock order or the seed
(``tests/test_web.py`` checks every card of a response against the hidden ones). Cirulla adds knock decisions
(``WebGame.knock``): the cards a knock shows are public until played, so the view shows them for every seat.
Each seat has one name (``Seat.name``: ``you`` or its bot's) for the page to use everywhere; each move among the
view's ``events`` carries the table it was played on (``table_before``), so the page can draw the bots' moves one by
one before the captures take the cards. The match's record is kept as it is played (``review.MatchRecorder``), with
the person's hand and the table before each of their moves, for ``WebGame.review``: an honest review of the person's
moves of a hand once it is over (of the match once it is over), computed in the background (``review_jobs``).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.play.match import Event, HandOver, HandStart, HumanMatch, Knock, MatchOver, Move, MoveError
from agents.play.review import MatchRecorder, review_record
from agents.play.web.review_jobs import Progress, ReviewJob, ReviewService
from scopa_env.engine import core
from scopa_env.rules import Rules
from scopa_env.rules.cards import format_card
from scopa_env.rules.scoring import point_fields

if TYPE_CHECKING:
    from scopa_env.games.policy import Policy

__all__ = ["SUIT_NAMES", "Seat", "WebGame", "card_json"]

SUIT_NAMES = ("coins", "cups", "swords", "clubs")
"""Suits in card-id order (letters ``d c s b``: denari, coppe, spade, bastoni)."""


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


def _ids(cards: Iterable[int], rules: Rules) -> list[int]:
    """Card ids in rank order, then suit (how the hand is drawn)."""
    r = rules.deck.num_ranks
    return sorted((int(c) for c in cards), key=lambda c: (c % r, c // r))


def _cards_json(cards: Iterable[int], rules: Rules) -> list[dict[str, Any]]:
    """``card_json`` of each card, in rank order, then suit."""
    return [card_json(c, rules) for c in _ids(cards, rules)]


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
    """The seat's one name on the page: ``you``, or the bot's short name (``Bot`` for the variant's own shipped bot,
    else its name on the server's list), with the seat number when several seats share it (``Bot 1``, ``Bot 3``)."""
    role: str
    """``you``, ``partner`` or ``opponent``."""


class WebGame:
    """A match (``agents.play.match.HumanMatch``) in JSON for the page: the person at ``human``, a policy at every
    other seat, a hint policy; its own lock.

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
        short_names: dict[str, str] | None = None,
    ) -> None:
        self.id = game_id
        self.rules = rules
        self.human = human
        self.human_side = rules.seat_side[human]
        self.seat_agents = seat_agents
        self.hint_agent = hint_agent
        self.hint_name = hint_name or (hint_agent.name if hint_agent is not None else None)
        self.seats = [
            _seat(s, rules.seat_side[s], human, self.human_side, seat_names, short_names or {})
            for s in range(rules.num_players)
        ]
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.point_fields = point_fields(rules)
        self.match = HumanMatch(rules, human, seat_agents, seed, listener=self._record)
        self.recorder = MatchRecorder(self.match)
        """The match's game record so far (what a review reads)."""
        self._start()

    @property
    def state(self) -> core.State:
        """The match's game (``HumanMatch.state``)."""
        return self.match.state

    @property
    def matches(self) -> int:
        """The matches played in this game, this one included."""
        return self.match.matches

    # ------------------------------------------------------------------ match life

    def _start(self) -> None:
        """A fresh log, the match's first hand, then the bots' moves until the person's turn."""
        self.hand_log: list[dict[str, Any]] = []
        self.past_hands: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._positions: dict[tuple[int, int], dict[str, Any]] = {}
        """The person's hand and the table before each of their moves of this match, by (hand, move in the hand):
        what a review draws (only what the person saw)."""
        self._reviews: dict[int, ReviewJob] = {}
        """This match's reviews by hand number (0: the whole match)."""
        self.match.start()
        self.match.play_bots()

    def rematch(self) -> dict[str, Any]:
        """Start the next match of this game's seed chain (same seats and bots) and return its view."""
        with self.lock:
            self.touch()
            self.match.rematch()
            self._start()
            return self._view()

    def touch(self) -> None:
        """Mark the game used now (idle games expire)."""
        self.last_used = time.monotonic()

    # ------------------------------------------------------------------ moves

    def legal_moves(self) -> list[tuple[int, frozenset[int]]]:
        """The person's legal moves now (empty when it is not their turn, they have a knock to decide, or the
        match is over)."""
        return self.match.moves()

    def knock_options(self) -> list[str]:
        """Cirulla: the person's legal knock decisions now (``KNOCK_CHOICES`` names: ``none`` is always among them),
        or an empty list when they have no knock to decide."""
        return self.match.knock_options()

    def knock(self, choice: str) -> dict[str, Any]:
        """Make the person's knock decision (``none``, ``sum`` or ``tris``), then let the bots play until the person
        is to act again; return the view. Raises ``MoveError`` when that decision is not legal now."""
        with self.lock:
            self.touch()
            self.events = []
            self.match.knock(choice)
            self.match.play_bots()
            return self._view()

    def move(self, card: int, capture: frozenset[int]) -> dict[str, Any]:
        """Play the person's whole move, then the bots' until the person is to act again; return the view.

        Raises ``MoveError`` (with a message for the person) when the move is not legal now.
        """
        with self.lock:
            self.touch()
            self.events = []
            position = self._position()
            self.match.play(card, capture)
            if position is not None:
                self._positions[position[0]] = position[1]
            self.match.play_bots()
            return self._view()

    # ------------------------------------------------------------------ the log

    def _log(self, entry: dict[str, Any]) -> None:
        self.hand_log.append(entry)
        self.events.append(entry)

    def _record(self, event: Event) -> None:
        """Log one event of the match (a knock decision, a move, a hand's points, the match end, an initial table
        taken) for the page, and in the match's record."""
        self.recorder.note(event)
        rules = self.rules
        if isinstance(event, Knock):
            if event.kind != "none" or event.seat == self.human:  # another seat's "no knock" reveals nothing
                self._log(
                    {
                        "type": "knock",
                        "seat": event.seat,
                        "who": self.seats[event.seat].label,
                        "kind": event.kind,
                        "points": event.points,
                        "cards": _cards_json(event.cards, rules),
                    }
                )
        elif isinstance(event, Move):
            entry = {
                "type": "move",
                "seat": event.seat,
                "who": self.seats[event.seat].label,
                "card": card_json(event.card, rules),
                "capture": _cards_json(event.capture, rules),
                "scopa": event.scopa,
                "kind": event.kind,
            }
            self.hand_log.append(entry)
            # the page draws each move of the last request on the table it was played on (public: every card of it
            # lay face up); only the events carry that table, not the hand's log
            self.events.append({**entry, "table_before": _cards_json(event.table_before, rules)})
        elif isinstance(event, HandOver):
            summary = {
                "type": "hand_over",
                "hand": event.hand,
                "leftover": _cards_json(np.flatnonzero(event.leftover), rules),
                "leftover_side": event.leftover_side,
                "points": [
                    {f: int(v) for f, v in zip(self.point_fields, event.points[s], strict=True)}
                    for s in range(rules.num_sides)
                ],
                "scores": [int(x) for x in event.scores],
                "moves": self.hand_log,
            }
            self.events.append(summary)
            self.past_hands.append({k: v for k, v in summary.items() if k not in ("moves", "leftover")})
            self.hand_log = []
        elif isinstance(event, MatchOver):
            self.events.append({"type": "match_over", "winner": event.winner, "scores": [int(x) for x in event.scores]})
        elif isinstance(event, HandStart) and event.table_take > 0:
            # cirulla: the initial table of the hand just dealt, taken by the dealer's side (15: one scopa, 30: two)
            self._log(
                {
                    "type": "table_take",
                    "side": event.side,
                    "who": self._side_name(event.side),
                    "dealer": event.dealer,
                    "cards": _cards_json(event.taken, rules),
                    "total": 15 * event.table_take,
                    "scope": event.table_take,
                }
            )

    # ------------------------------------------------------------------ hint

    def hint(self) -> dict[str, Any]:
        """The hint bot's advice for the person's position: its move, and its probabilities when it has them; for
        a cirulla knock decision, ``knock`` names the bot's choice (and ``card`` is None)."""
        with self.lock:
            self.touch()
            agent = self.hint_agent
            if agent is None:
                raise MoveError("this game has no hint bot")
            if not self.match.persons_turn:
                raise MoveError("a hint is for your turn; it is not your turn now")
            rules = self.rules
            advice = self.match.advice(agent)
            if self.match.knock_options():
                choice = advice.knock or "none"
                return {"bot": self.hint_name, "knock": choice, "card": None, "capture": [], "options": []}
            options: list[dict[str, Any]] = []
            if advice.probs is not None:
                probs = {(m.card, m.capture): m.prob for m in advice.probs}
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
                assert advice.move is not None
                best_card, best_cap = advice.move
            return {
                "bot": self.hint_name,
                "knock": None,
                "card": card_json(best_card, rules),
                "capture": _cards_json(best_cap, rules),
                "options": options,
            }

    # ------------------------------------------------------------------ review

    def _position(self) -> tuple[tuple[int, int], dict[str, Any]] | None:
        """Where the person's next move lies in the record (hand, move in the hand) and their hand and the table."""
        record = self.recorder.record
        if record is None or not record["hands"]:
            return None
        st, rules = self.state, self.rules
        where = (len(record["hands"]) - 1, len(record["hands"][-1]["moves"]))
        return where, {
            "hand": _cards_json(np.flatnonzero(st.hands[0, self.human]), rules),
            "table": _cards_json(np.flatnonzero(st.table[0]), rules),
        }

    def review(self, hand: int | None, service: ReviewService) -> dict[str, Any]:
        """Review the person's moves of hand ``hand`` (from 1) of this match once it is over, or of the whole match
        (``None``) once the match is over: the job's status (the first call starts it in ``service``; later ones
        follow it). Honest (``agents.play.review``): each move valued from what the person knew then, so a review
        shows nothing the hint could not, and only after the hand. Raises ``MoveError`` before then."""
        with self.lock:
            self.touch()
            finished = self.recorder.finished
            if hand is not None and not 1 <= hand <= finished:
                raise MoveError(
                    f"hand {hand} is not over: a hand is reviewed once it is over "
                    f"({'none is yet' if finished == 0 else f'hands 1 to {finished} are'})"
                )
            if hand is None and not bool(self.state.done[0]):
                raise MoveError("the match is not over: review the hands that are, the whole match at its end")
            key = hand or 0
            job = self._reviews.get(key)
            if job is None:  # the first ask starts it; a failed one stays failed (its error says why)
                record, positions = copy.deepcopy(self.recorder.record), dict(self._positions)
                assert record is not None  # a hand is over
                hands = None if hand is None else [hand - 1]

                def work(progress: Progress) -> dict[str, Any]:
                    return self._review_view(
                        review_record(record, seats=[self.human], hands=hands, progress=progress), positions
                    )

                info = {"scope": "hand" if hand else "match", "hand": hand}
                job = self._reviews[key] = service.submit(work, info)
            return job.status()

    def _review_view(self, review: dict[str, Any], positions: dict[tuple[int, int], dict[str, Any]]) -> dict[str, Any]:
        """A review for the page: the person's decisions, each with the hand and table it was made on, and their
        summary."""
        decisions = []
        for d in review["decisions"]:
            decision = {k: v for k, v in d.items() if k not in ("game", "seat", "kinds")}
            decision["hand"] = d["hand"] + 1
            decision["position"] = positions.get((d["hand"], d["ply"]))
            decisions.append(decision)
        summary = dict(review["summary"].get(str(self.human), {}))
        summary["costliest"] = [
            {"hand": c["hand"] + 1, "ply": c["ply"], "loss": c["loss"]} for c in summary.get("costliest", [])
        ]
        keep = ("mode", "variant", "worlds", "thresholds")
        return {**{k: review[k] for k in keep}, "decisions": decisions, "summary": summary}

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
            moves.setdefault(code, []).append([format_card(c, deck) for c in _ids(cap, rules)])
            kinds.setdefault(code, []).append(self.match.capture_kind(card, cap))
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
            "cirulla": self.match.family == "cirulla",
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
                    "revealed": _cards_json(np.flatnonzero(st.revealed[0, s.seat] & st.hands[0, s.seat]), rules),
                }
                for s in self.seats
            ],
            "sides": sides,
            "hand": _cards_json(np.flatnonzero(st.hands[0, self.human]), rules),
            "table": _cards_json(np.flatnonzero(st.table[0]), rules),
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


def _seat(
    seat: int, side: int, human: int, human_side: int, seat_names: dict[int, str], short_names: dict[str, str]
) -> Seat:
    """Seat ``seat`` of a match where the person sits at ``human``: its label, role and one name (the bot's short
    name from ``short_names``, else its name on the server's list; with the seat number when several seats share
    it)."""
    if seat == human:
        return Seat(seat, side, "you", None, "you", "you")
    bot = seat_names[seat]
    short = short_names.get(bot, bot)
    role = "partner" if side == human_side else "opponent"
    shared = sum(short_names.get(name, name) == short for s, name in seat_names.items() if s != human) > 1
    return Seat(seat, side, f"{role} ({bot})", bot, f"{short} {seat}" if shared else short, role)
