"""The plain reference engine: one game at a time, written straight from RULES.md (the rules oracle).

Readable over fast. The batched numpy core (``scopa_env.engine.core``) must agree with this engine move for move; the
differential tests compare the two, so this module never imports the core and uses numpy only through
``scopa_env.rules.shuffle`` (the seeded deck order).

Contents:

- ``captures(rules, table, card)``: every legal capture of one card (RULES.md sections 3 and 6; cirulla's
  fifteens and ace takes all included).
- scoring: ``score_hand`` and ``match_winner`` are ``scopa_env.oracle.reference_scoring``'s.
- cirulla: ``knock_kinds`` (what a dealt hand may knock), ``table_take_scope`` (the initial 15 / 30),
  ``void_reason`` (two aces, three kings).
- ``hand_deck`` / ``deal_schedule``: the seeded deck of a hand (after void deals) and how it is dealt (section 2).
- ``ReferenceGame``: a whole match with plain attributes; ``play`` applies one move, ``knock`` one knock decision
  (cirulla).
- ``observe(game, ...)``: the observation vector of one seat, block by block from the documented layout, so the
  differential tests check the core's ``observe`` too.

The game-record checker (``scopa_env.oracle.record_check.replay_record``) replays records on this engine.

Choices where RULES.md is silent (also in the module's tests):

- A record's ``leftover`` is ``{"side": null, "cards": []}`` when the table is empty after the last play, and
  ``{"side": null, "cards": [...]}`` when cards are left but nobody captured in the hand (they go to nobody and
  stay on the table in the engine's final state).
- The cards of a record (table, packets, captures) are written sorted by card id, as ``cards.format_cards`` does.
- "More than half": carte needs ``num_cards // 2 + 1`` cards and denari ``num_ranks // 2 + 1`` coins (21 and 6 in
  the 40-card deck), only when exactly two sides play.
- Cirulla (docs/rules.md, "Cirulla"): knock decisions come one seat at a time in play order from the player after
  the dealer, only for seats whose hand allows a knock; the observation's ``plays`` "sum after" is ``sum - v`` when
  the card has an equal-rank or sum capture and ``sum - (15 - v)`` when it has fifteens only; ``fifteens[v]`` is 1
  only for a legal fifteen (an ace that takes all makes none); a record's ``knocks`` entries are in the order the
  knocks were made, their ``cards`` sorted by card id; cirulla records always carry ``table_take`` (null or the
  take).
- A category's point never goes to a side whose count is 0 (with ``shared_lead_scores`` an all-zero tie scores
  nobody); a side missing a suit has primiera 0.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Sequence
from typing import Any

from scopa_env.oracle.reference_scoring import deck_facts, match_winner, score_hand
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import DECKS, Deck, format_card, parse_card
from scopa_env.rules.shuffle import first_dealer, shuffled_decks

__all__ = [
    "FIFTEEN",
    "KNOCK_POINTS",
    "MAX_REDEAL_ATTEMPTS",
    "PHASES",
    "ReferenceGame",
    "captures",
    "card_texts",
    "deal_schedule",
    "describe_move",
    "fifteen_features",
    "hand_deck",
    "is_ace_sweep",
    "is_void_table",
    "knock_kinds",
    "knock_why_not",
    "observe",
    "play_features",
    "receiving_order",
    "table_take_scope",
    "void_reason",
]

FIFTEEN = 15
"""Cirulla: a fifteen's played card and taken cards add up to this; so does an initial table taken with a scopa."""
KNOCK_SUM_MAX = 9
"""Cirulla: a ``sum`` knock needs the hand's values to add up to at most this (``7c`` counting 1)."""
KNOCK_POINTS = {"sum": 3, "tris": 10}
"""Cirulla: points of each knock kind."""
PHASES = ("knock", "play", "done")
"""Values of ``ReferenceGame.phase``."""
MAX_REDEAL_ATTEMPTS = 10
"""Re-deal attempts the record checker (``scopa_env.oracle.record_check.replay_record``) tries when it explains a record
whose deal matches no expected one."""

Move = tuple[int, frozenset[int]]
"""(card played, cards captured); a lay captures the empty set."""


# --------------------------------------------------------------------------------------------------------------
# Cards and moves in words (the game's errors and records, the record checker's messages).


def card_texts(cards: Iterable[int], deck: Deck) -> list[str]:
    """Cards in notation, sorted by card id."""
    return [format_card(c, deck) for c in sorted(cards)]


def describe_move(card: int, capture: Iterable[int], deck: Deck) -> str:
    """One move in words: ``'7d takes 5c+2b'`` or ``'7d laid'``."""
    taken = card_texts(capture, deck)
    return f"{format_card(card, deck)} takes {'+'.join(taken)}" if taken else f"{format_card(card, deck)} laid"


# --------------------------------------------------------------------------------------------------------------
# Pure rules functions.


def captures(rules: Rules, table: Iterable[int], card: int) -> list[frozenset[int]]:
    """Every legal capture when ``card`` is played on ``table`` (RULES.md sections 3 and 6); ``[]`` means a lay.

    Equal rank first: if the table holds cards of the card's rank, each of them alone is a capture (the player
    picks one) and no sum may be taken. Otherwise, under ``rules.ace_takes_all``, an ace on a non-empty table takes
    the whole table, and that is its only capture. Otherwise every set of two or more table cards whose values add
    up to the card's value. Under ``rules.fifteens`` (cirulla) every set of one or more table cards adding up to
    15 minus the card's value is a capture too (a fifteen), beside equal rank and sums, but never beside
    ace-takes-all. Sorted by the sorted tuple of card ids.
    """
    facts = deck_facts(rules.deck)
    on_table = sorted(set(table))
    if card in on_table:
        raise ValueError(f"card {format_card(card, rules.deck)} is both played and on the table")
    return _captures_by_rank(rules, on_table, facts.rank[card])


def _takes_all(rules: Rules, on_table: Sequence[int], rank: int) -> bool:
    """Ace takes all applies: an ace played on a non-empty table that holds no ace (``rules.ace_takes_all``)."""
    facts = deck_facts(rules.deck)
    return rules.ace_takes_all and rank == 0 and bool(on_table) and all(facts.rank[t] != 0 for t in on_table)


def _subsets_summing(rules: Rules, on_table: list[int], total: int, min_cards: int) -> list[tuple[int, ...]]:
    """Every increasing run of sorted ``on_table``, ``min_cards`` cards or more, whose values add up to ``total``."""
    facts = deck_facts(rules.deck)
    found: list[tuple[int, ...]] = []
    chosen: list[int] = []

    def extend(start: int, remaining: int) -> None:
        for i in range(start, len(on_table)):
            value = facts.value[on_table[i]]
            if value > remaining:
                continue
            chosen.append(on_table[i])
            if value == remaining:
                if len(chosen) >= min_cards:
                    found.append(tuple(chosen))
            else:
                extend(i + 1, remaining - value)
            chosen.pop()

    if total > 0:
        extend(0, total)
    return found


def _classic_captures(rules: Rules, on_table: list[int], rank: int) -> list[frozenset[int]]:
    """Equal rank (each one alone) if any, else the sums of two or more cards; ace-takes-all excluded."""
    facts = deck_facts(rules.deck)
    same_rank = [t for t in on_table if facts.rank[t] == rank]
    if same_rank:
        return [frozenset({t}) for t in same_rank]
    return [frozenset(c) for c in _subsets_summing(rules, on_table, rank + 1, 2)]


def _fifteen_captures(rules: Rules, on_table: list[int], rank: int) -> list[frozenset[int]]:
    """Cirulla's fifteens of a card of rank index ``rank``: sets of 1+ table cards worth 15 minus its value.

    Empty unless ``rules.fifteens``, and when ace-takes-all applies (then the ace's only capture is the table)."""
    if not rules.fifteens or _takes_all(rules, on_table, rank):
        return []
    return [frozenset(c) for c in _subsets_summing(rules, on_table, FIFTEEN - (rank + 1), 1)]


def _captures_by_rank(rules: Rules, on_table: list[int], rank: int) -> list[frozenset[int]]:
    """``captures`` for a card of rank index ``rank`` (any suit); ``on_table`` is sorted."""
    if _takes_all(rules, on_table, rank):
        return [frozenset(on_table)]
    options = _classic_captures(rules, on_table, rank) + _fifteen_captures(rules, on_table, rank)
    return sorted(options, key=lambda c: tuple(sorted(c)))


def is_ace_sweep(rules: Rules, card: int, capture: Iterable[int]) -> bool:
    """True for scopa d'assi's ace-takes-all capture (never a scopa): an ace capturing cards that hold no ace."""
    facts = deck_facts(rules.deck)
    taken = list(capture)
    return rules.ace_takes_all and facts.rank[card] == 0 and bool(taken) and all(facts.rank[c] != 0 for c in taken)


def is_void_table(rules: Rules, table: Iterable[int]) -> bool:
    """True when the initial table makes the deal void: three or four kings under ``rules.void_on_kings``, two or
    more aces under ``rules.void_on_aces`` (cirulla)."""
    return void_reason(rules, table) is not None


def void_reason(rules: Rules, table: Iterable[int]) -> str | None:
    """Why the initial ``table`` makes the deal void (``'it holds three or more kings'``), or ``None``."""
    if not (rules.void_on_kings or rules.void_on_aces):
        return None
    facts = deck_facts(rules.deck)
    ranks = [facts.rank[c] for c in table]
    if rules.void_on_kings and ranks.count(facts.king) >= 3:
        return "it holds three or more kings"
    if rules.void_on_aces and ranks.count(0) >= 2:
        return "it holds two or more aces"
    return None


def table_take_scope(rules: Rules, table: Iterable[int]) -> int:
    """Scope of cirulla's initial-table take: 1 when the table totals 15, 2 when it totals 30, else 0.

    ``7c`` (la matta) on the table may stand for any value 1..10 (RULES.md section 6, decided point 4); 0 when
    ``rules.table_take`` is off.
    """
    if not rules.table_take:
        return 0
    facts = deck_facts(rules.deck)
    matta = _matta(rules.deck)
    cards = list(table)
    if not cards:
        return 0
    rest = sum(facts.value[c] for c in cards if c != matta)
    totals = {rest + v for v in range(1, 11)} if matta in cards else {rest}
    return 2 if 2 * FIFTEEN in totals else 1 if FIFTEEN in totals else 0


def _matta(deck: Deck) -> int:
    """Card id of ``7c``, cirulla's wild card (la matta)."""
    return _matta_by_name(deck.name)


@functools.cache
def _matta_by_name(deck_name: str) -> int:
    return parse_card("7c", DECKS[deck_name])


def knock_kinds(rules: Rules, hand: Iterable[int]) -> list[str]:
    """The knocks a freshly dealt hand allows (RULES.md section 6, cirulla), among ``'sum'`` and ``'tris'``.

    ``'sum'``: the three cards' values add up to 9 or less, ``7c`` counting 1. ``'tris'``: three cards of one rank,
    or a pair plus ``7c``. ``[]`` when ``rules.knocks`` is off or the hand does not hold exactly three cards.
    """
    if not rules.knocks:
        return []
    cards = sorted(set(hand))
    if len(cards) != 3:
        return []
    facts = deck_facts(rules.deck)
    matta = _matta(rules.deck)
    kinds = []
    if sum(1 if c == matta else facts.value[c] for c in cards) <= KNOCK_SUM_MAX:
        kinds.append("sum")
    others = {facts.rank[c] for c in cards if c != matta}
    if len({facts.rank[c] for c in cards}) == 1 or (matta in cards and len(others) == 1):
        kinds.append("tris")
    return kinds


def knock_why_not(rules: Rules, hand: Iterable[int], kind: str) -> str:
    """Why ``hand`` does not allow a knock of ``kind`` (for error messages)."""
    cards = sorted(set(hand))
    deck, facts = rules.deck, deck_facts(rules.deck)
    matta = _matta(deck)
    if kind == "sum":
        total = sum(1 if c == matta else facts.value[c] for c in cards)
        return f"its values add up to {total} (7c counting 1), more than {KNOCK_SUM_MAX}"
    return "it holds no three cards of one rank, nor a pair with 7c"


def shuffled_deck(rules: Rules, seed: int, hand_no: int, attempt: int) -> list[int]:
    """The deck of hand ``hand_no`` of match ``seed`` at deal ``attempt`` (0, then one more per void deal), in
    dealing order (``scopa_env.rules.shuffle``)."""
    return [int(c) for c in shuffled_decks([seed], [hand_no], [attempt], rules.num_cards)[0]]


def hand_deck(rules: Rules, seed: int, hand_no: int) -> tuple[int, list[int]]:
    """``(attempt, deck order)`` of hand ``hand_no``: attempt 0, 1, ... until the initial table is not void."""
    attempt = 0
    while True:
        deck = shuffled_deck(rules, seed, hand_no, attempt)
        if not is_void_table(rules, deck[: rules.table_cards]):
            return attempt, deck
        attempt += 1


def deal_schedule(rules: Rules, deck: Sequence[int], dealer: int) -> tuple[list[int], list[list[list[int]]]]:
    """Split a deck order into the initial table and ``packets[deal][seat]`` (shuffle.py's dealing convention).

    The deck is dealt from the front: the table first, then in each deal every player in turn order starting
    after the dealer receives their whole packet of ``rules.deal_sizes[deal]`` consecutive cards.
    """
    table = list(deck[: rules.table_cards])
    pos = rules.table_cards
    packets: list[list[list[int]]] = []
    for size in rules.deal_sizes:
        per_seat: list[list[int]] = [[] for _ in range(rules.num_players)]
        for seat in receiving_order(rules, dealer):
            per_seat[seat] = list(deck[pos : pos + size])
            pos += size
        packets.append(per_seat)
    return table, packets


def receiving_order(rules: Rules, dealer: int) -> list[int]:
    """Seats in the order they receive cards and play: the player after the dealer first, the dealer last."""
    return [(dealer + 1 + k) % rules.num_players for k in range(rules.num_players)]


# --------------------------------------------------------------------------------------------------------------
# The game.


class ReferenceGame:
    """One match of a Scopa variant, dealt from ``seed``; every attribute is plain Python and may be read freely.

    Attributes (seats are 0..N-1, sides index ``rules.sides``):

    - ``rules``: the variant; ``seed``: the game's seed.
    - ``hand_no``: 0-based index of the current hand; ``attempt``: its re-deal attempt (void deals).
    - ``dealer``: the current hand's dealer; ``current``: the seat to decide (to knock in the knock phase, else to
      play a card).
    - ``phase`` (property): ``"knock"``, ``"play"`` or ``"done"``.
    - ``hands[seat]``, ``table``: sets of card ids; ``piles[side]``: cards captured this hand.
    - ``stock``: cards not dealt yet, next card first; ``deal_no``: 0-based deal within the hand.
    - ``scores[side]``: cumulative points, updated at the end of each hand; ``scope[side]``: scope this hand (the
      initial-table take's included).
    - ``last_capturer``: side of the last capture this hand (the initial-table take counts), or ``None``.
    - cirulla: ``revealed[seat]`` (knocked cards still in that seat's hand), ``knock_points[side]`` (this hand),
      ``table_take`` (``None`` or ``{"side", "cards", "scope"}`` for this hand, cards as a frozenset of ids).
    - ``done``, ``winner``: the match is over and who won it (a side).
    - ``records``: one RULES.md section-8 ``hands[]`` dict per hand started (cards in notation).

    After the final hand the state is left as the hand ended (leftover cards moved to the last capturer's pile,
    or left on the table when nobody captured), so every card stays accounted for.

    Cirulla (``rules.cirulla``): right after every deal (the first included, after any initial-table take) each
    seat whose three cards allow a knock decides, in play order from the player after the dealer, before any card
    of that deal is played: ``knock_options()`` lists the kinds, ``knock(kind)`` (``None``: no knock) decides.
    """

    def __init__(self, rules: Rules | str, seed: int) -> None:
        self.rules: Rules = get_rules(rules)
        self.seed: int = int(seed)
        self.seat_side: tuple[int, ...] = self.rules.seat_side
        self.hand_no: int = -1
        self.attempt: int = 0
        self.dealer: int = int(first_dealer([self.seed], self.rules.num_players)[0])
        self.current: int = 0
        self.hands: list[set[int]] = []
        self.table: set[int] = set()
        self.piles: list[set[int]] = []
        self.stock: list[int] = []
        self.deal_no: int = 0
        self.scores: list[int] = [0] * self.rules.num_sides
        self.scope: list[int] = []
        self.last_capturer: int | None = None
        self.revealed: list[set[int]] = [set() for _ in range(self.rules.num_players)]
        self.knock_points: list[int] = [0] * self.rules.num_sides
        self.table_take: dict[str, Any] | None = None
        self.knock_queue: list[int] = []
        """Seats still to decide whether to knock after the current deal, in order (the first is ``current``)."""
        self.done: bool = False
        self.winner: int | None = None
        self.records: list[dict[str, Any]] = []
        self._start_hand(self.dealer)

    @property
    def phase(self) -> str:
        """``"knock"`` (a seat decides whether to knock), ``"play"`` (a seat plays a card) or ``"done"``."""
        if self.done:
            return "done"
        return "knock" if self.knock_queue else "play"

    # -- dealing ------------------------------------------------------------------------------------------------

    def _start_hand(self, dealer: int) -> None:
        """Deal a new hand with ``dealer``: table and first packets; the player after the dealer acts first."""
        rules = self.rules
        n = rules.num_players
        self.hand_no += 1
        self.dealer = dealer
        self.attempt, deck = hand_deck(rules, self.seed, self.hand_no)
        self.table = set(deck[: rules.table_cards])
        self.stock = deck[rules.table_cards :]
        self.hands = [set() for _ in range(n)]
        self.piles = [set() for _ in range(rules.num_sides)]
        self.scope = [0] * rules.num_sides
        self.last_capturer = None
        self.revealed = [set() for _ in range(n)]
        self.knock_points = [0] * rules.num_sides
        self.table_take = None
        self.knock_queue = []
        self.current = (dealer + 1) % n
        self.deal_no = -1
        record: dict[str, Any] = {"dealer": dealer, "deals": []}
        if rules.cirulla:
            record["table_take"] = None
        record.update(knocks=[], moves=[], leftover=None, points=None, scores=None)
        self.records.append(record)
        self._deal()

    def _deal(self) -> None:
        """Give every player, from the front of the stock, their packet of the next deal (never to the table).

        Cirulla: after the first deal the initial table may be taken (``table_take_scope``); after every deal the
        seats whose hands allow a knock queue up to decide (the knock phase)."""
        self.deal_no += 1
        size = self.rules.deal_sizes[self.deal_no]
        for seat in receiving_order(self.rules, self.dealer):
            self.hands[seat] = set(self.stock[:size])
            del self.stock[:size]
        deal: dict[str, Any] = {}
        if self.deal_no == 0:
            deal["table"] = card_texts(self.table, self.rules.deck)  # as dealt, before any take
        deal["hands"] = [card_texts(h, self.rules.deck) for h in self.hands]
        self.records[-1]["deals"].append(deal)
        if self.deal_no == 0:
            self._take_table()
        self.knock_queue = [
            s for s in receiving_order(self.rules, self.dealer) if knock_kinds(self.rules, self.hands[s])
        ]
        self.current = self.knock_queue[0] if self.knock_queue else (self.dealer + 1) % self.rules.num_players

    def _take_table(self) -> None:
        """Cirulla's initial table of 15 (30): the dealer's side takes it with one (two) scope, a capture."""
        scope = table_take_scope(self.rules, self.table)
        if not scope:
            return
        side = self.seat_side[self.dealer]
        taken = frozenset(self.table)
        self.piles[side] |= taken
        self.scope[side] += scope
        self.last_capturer = side
        self.table = set()
        self.table_take = {"side": side, "cards": taken, "scope": scope}
        self.records[-1]["table_take"] = {"side": side, "cards": card_texts(taken, self.rules.deck), "scope": scope}

    # -- knocks -------------------------------------------------------------------------------------------------

    def _name(self) -> str:
        return f"{self.rules.name} game (seed {self.seed}, hand {self.hand_no}, deal {self.deal_no})"

    def knock_options(self) -> list[str]:
        """The knock kinds the seat to decide may choose, among ``"sum"`` and ``"tris"``; ``[]`` outside the knock
        phase. Not knocking is always allowed too."""
        if self.phase != "knock":
            return []
        return knock_kinds(self.rules, self.hands[self.current])

    def knock(self, kind: str | None) -> dict[str, Any]:
        """The knock decision of the seat to decide: ``"sum"`` (3 points), ``"tris"`` (10) or ``None`` (no knock).

        A knock adds its points to the side's knock points of this hand and reveals the three cards to everyone.
        Returns ``{"seat", "kind", "points", "cards"}``. Raises ``ValueError`` outside the knock phase or for a
        kind the hand does not allow, naming the legal decisions.
        """
        if self.phase != "knock":
            raise ValueError(
                f"{self._name()}: knock {kind!r} is not a legal action now: the game is in the {self.phase} phase "
                f"(knock decisions come right after a deal, in cirulla only); legal: "
                + ("none, the match is over" if self.done else "play a card (play())")
            )
        seat = self.current
        options = self.knock_options()
        if kind is not None and kind not in options:
            hand = self.hands[seat]
            why = knock_why_not(self.rules, hand, kind) if kind in KNOCK_POINTS else "unknown knock kind"
            raise ValueError(
                f"{self._name()}: knock {kind!r} is not legal for seat {seat} (hand "
                f"{card_texts(hand, self.rules.deck)}: "
                f"{why}); legal: {', '.join(['None (no knock)', *map(repr, options)])}"
            )
        self.knock_queue.pop(0)
        out: dict[str, Any] = {"seat": seat, "kind": kind, "points": 0, "cards": frozenset()}
        if kind is not None:
            points = KNOCK_POINTS[kind]
            self.knock_points[self.seat_side[seat]] += points
            self.revealed[seat] = set(self.hands[seat])
            out.update(points=points, cards=frozenset(self.hands[seat]))
            self.records[-1]["knocks"].append(
                {
                    "seat": seat,
                    "deal": self.deal_no,
                    "kind": kind,
                    "cards": card_texts(self.hands[seat], self.rules.deck),
                    "points": points,
                }
            )
        self.current = self.knock_queue[0] if self.knock_queue else (self.dealer + 1) % self.rules.num_players
        return out

    # -- moves --------------------------------------------------------------------------------------------------

    def legal_moves(self) -> list[Move]:
        """Every legal (card, capture) of the seat to act, sorted by card then capture; ``[]`` once done or in the
        knock phase."""
        if self.phase != "play":
            return []
        moves: list[Move] = []
        for card in sorted(self.hands[self.current]):
            options = captures(self.rules, self.table, card)
            if options:
                moves.extend((card, c) for c in options)
            else:
                moves.append((card, frozenset()))
        return moves

    def play(self, card: int, capture: Iterable[int] = frozenset()) -> dict[str, Any]:
        """Apply one whole move of the seat to act and return what happened.

        Returns ``{"seat", "card", "capture", "scopa", "hand_over", "hand_points", "leftover", "match_over",
        "winner"}``; ``hand_points`` (one dict per side, keys ``point_keys(rules)``) and ``leftover`` ``(side or
        None, cards)`` describe the hand that this move ended, else ``None`` and ``(None, frozenset())``. When a
        hand ends and nobody has won, the next hand is dealt before returning. Raises ``ValueError`` for an illegal
        move, listing the legal ones, and in the knock phase.
        """
        rules, deck = self.rules, self.rules.deck
        if self.done:
            raise ValueError(f"the match is over (side {self.winner} won); start a new ReferenceGame")
        if self.phase == "knock":
            raise ValueError(
                f"{self._name()}: seat {self.current} must first decide whether to knock (knock(kind)); legal: "
                f"{', '.join(['None (no knock)', *map(repr, self.knock_options())])}"
            )
        card, capture = int(card), frozenset(int(c) for c in capture)
        seat, side = self.current, self.seat_side[self.current]
        if card not in self.hands[seat] or capture not in (captures(rules, self.table, card) or [frozenset()]):
            legal = self.legal_moves()
            listed = ", ".join(describe_move(c, t, deck) for c, t in legal)
            raise ValueError(
                f"illegal move for seat {seat}: {describe_move(card, capture, deck)}; "
                f"hand {card_texts(self.hands[seat], deck)}, table {card_texts(self.table, deck)}; legal "
                f"moves: {listed}"
            )
        sweep = bool(capture) and _takes_all(rules, sorted(self.table), deck_facts(deck).rank[card])
        self.hands[seat].discard(card)
        self.revealed[seat].discard(card)
        if capture:
            self.table -= capture
            self.piles[side] |= capture | {card}
            self.last_capturer = side
        else:
            self.table.add(card)
        last_play = not self.stock and not any(self.hands)
        scopa = bool(capture) and not self.table and not last_play and not sweep
        if scopa:
            self.scope[side] += 1
        self.records[-1]["moves"].append(
            {"seat": seat, "card": format_card(card, deck), "capture": card_texts(capture, deck), "scopa": scopa}
        )
        self.current = (seat + 1) % rules.num_players
        result: dict[str, Any] = {
            "seat": seat,
            "card": card,
            "capture": capture,
            "scopa": scopa,
            "hand_over": last_play,
            "hand_points": None,
            "leftover": (None, frozenset()),
            "match_over": False,
            "winner": None,
        }
        if last_play:
            self._end_hand(result)
        elif not any(self.hands):
            self._deal()
        return result

    def _end_hand(self, result: dict[str, Any]) -> None:
        """Leftover to the last capturer, score the hand, check the match, deal the next hand unless it is over."""
        rules = self.rules
        leftover = frozenset(self.table)
        leftover_side = self.last_capturer if leftover else None
        if leftover_side is not None:
            self.piles[leftover_side] |= leftover
            self.table.clear()
        points = score_hand(rules, self.piles, self.scope, self.knock_points)
        for side, p in enumerate(points):
            self.scores[side] += p["total"]
        record = self.records[-1]
        record["leftover"] = {"side": leftover_side, "cards": card_texts(leftover, rules.deck)}
        record["points"] = [dict(p) for p in points]
        record["scores"] = list(self.scores)
        self.winner = match_winner(rules, self.scores)
        self.done = self.winner is not None
        result.update(hand_points=points, leftover=(leftover_side, leftover), match_over=self.done, winner=self.winner)
        if not self.done:
            self._start_hand((self.dealer + 1) % rules.num_players)

    # -- records ------------------------------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The match so far as a RULES.md section-8 record (JSON-ready; an unfinished hand has null results)."""
        return {
            "variant": self.rules.name,
            "seed": self.seed,
            "players": self.rules.num_players,
            "sides": [list(s) for s in self.rules.sides],
            "target": self.rules.target,
            "hands": copy.deepcopy(self.records),
            "winner": self.winner,
        }


# --------------------------------------------------------------------------------------------------------------
# Observations.


def observe(
    game: ReferenceGame, seat: int | None = None, pending: int | None = None, picked: Iterable[int] = ()
) -> list[float]:
    """The observation of ``seat`` (default: the seat to act) as a plain list, in the layout of ``docs/envs.md``.

    Written from the documented blocks, not from the core. ``pending`` and ``picked`` describe a capture being
    chosen card by card (the core's CHOOSE phase): the card played, already out of the hand, and the table cards
    picked so far (still on the table). Only what the seat may know enters: its hand, the table, every pile, the
    scores and counts, cards revealed by knocks; the other hands and the stock appear only as their union
    (``unseen``). Cirulla appends ``revealed`` (N x D), ``knocks`` (S), ``knocking`` (1) and ``fifteens`` (R).
    """
    rules = game.rules
    d, n, s = rules.num_cards, rules.num_players, rules.num_sides
    seat = game.current if seat is None else seat
    side = game.seat_side[seat]
    picked = set(picked)
    rel_sides = [(side + i) % s for i in range(s)]

    def one_hot_cards(cards: Iterable[int]) -> list[float]:
        out = [0.0] * d
        for c in cards:
            out[c] = 1.0
        return out

    def one_hot(size: int, index: int) -> list[float]:
        out = [0.0] * size
        out[index] = 1.0
        return out

    pending_cards = set() if pending is None else {pending}
    hands = [h - pending_cards for h in game.hands]  # the card being played has left its hand
    revealed = [r - pending_cards for r in game.revealed] if rules.cirulla else [set() for _ in range(n)]
    hand = hands[seat]
    seen = hand | game.table | pending_cards | picked
    for pile in game.piles:
        seen |= pile
    for cards in revealed:
        seen |= cards
    obs: list[float] = []
    obs += one_hot_cards(hand)
    obs += one_hot_cards(game.table)
    obs += one_hot_cards(pending_cards)
    obs += one_hot_cards(picked)
    obs += one_hot_cards(set(range(d)) - seen)  # unseen
    for r in rel_sides:
        obs += one_hot_cards(game.piles[r])
    obs += [game.scores[r] / rules.target for r in rel_sides]
    obs += [game.scope[r] / 10.0 for r in rel_sides]
    obs.append(len(game.stock) / d)
    obs += [len(hands[(seat + i) % n]) / rules.max_hand_size for i in range(n)]
    obs += one_hot(n, (game.dealer - seat) % n)
    obs += one_hot(n, seat)
    last = game.last_capturer
    obs += one_hot(s + 1, s if last is None else (last - side) % s)
    obs.append(1.0 if pending is not None else 0.0)
    obs += play_features(rules, game.table)  # the table as it is, picks included
    if rules.cirulla:
        for i in range(n):
            obs += one_hot_cards(revealed[(seat + i) % n])
        obs += [game.knock_points[r] / 10.0 for r in rel_sides]
        obs.append(1.0 if game.phase == "knock" else 0.0)
        obs += fifteen_features(rules, game.table)
    return obs


def play_features(rules: Rules, table: Iterable[int]) -> list[float]:
    """The observation's ``table_sum`` and ``plays`` blocks: the table's sum / 40, then for each card value what a
    card of that value would do on ``table``: capture (0/1), scopa (0/1), take the settebello (0/1), the table's
    sum after / 40.

    Every legal capture counts (cirulla's fifteens and ace-takes-all included); scopa: some capture clears the
    table and is not ace-takes-all. The sum after: ``sum + v`` after a lay, 0 after ace-takes-all, ``sum - v``
    when the card has an equal-rank or sum capture, else (fifteens only) ``sum - (15 - v)``.
    """
    deck, facts = rules.deck, deck_facts(rules.deck)
    table = sorted(table)
    total = sum(facts.value[c] for c in table)
    out = [total / 40.0]
    for rank in range(deck.num_ranks):
        value = rank + 1
        options = _captures_by_rank(rules, table, rank)
        sweep = _takes_all(rules, table, rank)
        scopa = any(len(c) == len(table) for c in options) and not sweep
        if not options:
            after = total + value
        elif sweep:
            after = 0
        elif _classic_captures(rules, table, rank):
            after = total - value
        else:
            after = total - (FIFTEEN - value)
        out += [float(bool(options)), float(scopa), float(any(deck.settebello in c for c in options)), after / 40.0]
    return out


def fifteen_features(rules: Rules, table: Iterable[int]) -> list[float]:
    """Cirulla's ``fifteens`` block: for each card value, 1 when a card of that value played on ``table`` now has a
    legal fifteen (never for an ace that takes all)."""
    table = sorted(table)
    return [float(bool(_fifteen_captures(rules, table, rank))) for rank in range(rules.deck.num_ranks)]
