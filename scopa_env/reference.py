"""The plain reference engine: one game at a time, written straight from RULES.md (the rules oracle).

Readable over fast. The batched numpy core (``scopa_env.core``) must agree with this engine move for move; the
differential tests compare the two, so this module never imports the core and uses numpy only through
``scopa_env.shuffle`` (the seeded deck order).

Contents:

- ``captures(rules, table, card)``: every legal capture of one card (RULES.md sections 3 and 6).
- ``score_hand(rules, piles, scope)``: the hand points of each side (section 4).
- ``match_winner(rules, scores)``: the winner once a side reached the target, else ``None`` (section 5).
- ``hand_deck`` / ``deal_schedule``: the seeded deck of a hand (after void deals) and how it is dealt (section 2).
- ``ReferenceGame``: a whole match with plain attributes; ``play`` applies one move.
- ``observe(game, ...)``: the observation vector of one seat, block by block from the documented layout, so the
  differential tests check the core's ``observe`` too.

The game-record checker (``scopa_env.record_check.replay_record``) replays records on this engine.

Choices where RULES.md is silent (also in the module's tests):

- A record's ``leftover`` is ``{"side": null, "cards": []}`` when the table is empty after the last play, and
  ``{"side": null, "cards": [...]}`` when cards are left but nobody captured in the hand (they go to nobody and
  stay on the table in the engine's final state).
- The cards of a record (table, packets, captures) are written sorted by card id, as ``cards.format_cards`` does.
- "More than half": carte needs ``num_cards // 2 + 1`` cards and denari ``num_ranks // 2 + 1`` coins (21 and 6 in
  the 40-card deck), only when exactly two sides play.
- A category's point never goes to a side whose count is 0 (with ``shared_lead_scores`` an all-zero tie scores
  nobody); a side missing a suit has primiera 0.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scopa_env.cards import DECKS, Deck, Suit, format_card
from scopa_env.rules import CATEGORIES, Rules, get_rules
from scopa_env.shuffle import first_dealer, shuffled_decks

__all__ = [
    "MAX_REDEAL_ATTEMPTS",
    "POINT_KEYS",
    "ReferenceGame",
    "captures",
    "deal_schedule",
    "hand_deck",
    "is_ace_sweep",
    "is_void_table",
    "match_winner",
    "observe",
    "play_features",
    "receiving_order",
    "score_hand",
]

POINT_KEYS = (*CATEGORIES, "total")
"""Keys of one side's hand-points dict: the categories, then their sum."""
MAX_REDEAL_ATTEMPTS = 10
"""Re-deal attempts the record checker (``scopa_env.record_check.replay_record``) tries when it explains a record
whose deal matches no expected one."""

Move = tuple[int, frozenset[int]]
"""(card played, cards captured); a lay captures the empty set."""


# --------------------------------------------------------------------------------------------------------------
# Card facts as plain tuples (the Deck properties are numpy arrays; plain tuples keep this module numpy-free).


@dataclass(frozen=True)
class _DeckFacts:
    """Per-card facts of one deck, indexed by card id."""

    rank: tuple[int, ...]
    """Rank index, 0 = ace."""
    suit: tuple[int, ...]
    """Suit index, 0 = denari."""
    value: tuple[int, ...]
    """Capture value, rank index + 1."""
    primiera: tuple[int, ...]
    """Primiera value (sevens 21, sixes 18, aces 16, ... faces 10)."""
    seven: int
    """Rank index of the sevens."""
    king: int
    """Rank index of the kings."""


def _facts(deck: Deck) -> _DeckFacts:
    """The facts of ``deck`` (computed once per deck name)."""
    return _facts_by_name(deck.name)


@functools.cache
def _facts_by_name(deck_name: str) -> _DeckFacts:
    deck = DECKS[deck_name]
    n = deck.num_ranks
    return _DeckFacts(
        rank=tuple(c % n for c in range(deck.num_cards)),
        suit=tuple(c // n for c in range(deck.num_cards)),
        value=tuple(c % n + 1 for c in range(deck.num_cards)),
        primiera=tuple(int(p) for p in deck.primiera.tolist()),
        seven=deck.ranks.index("7"),
        king=deck.king_rank,
    )


def _fmt(cards: Iterable[int], deck: Deck) -> list[str]:
    """Cards in notation, sorted by card id."""
    return [format_card(c, deck) for c in sorted(cards)]


def _describe(card: int, capture: Iterable[int], deck: Deck) -> str:
    """One move in words: ``'7d takes 5c+2b'`` or ``'7d laid'``."""
    taken = _fmt(capture, deck)
    return f"{format_card(card, deck)} takes {'+'.join(taken)}" if taken else f"{format_card(card, deck)} laid"


# --------------------------------------------------------------------------------------------------------------
# Pure rules functions.


def captures(rules: Rules, table: Iterable[int], card: int) -> list[frozenset[int]]:
    """Every legal capture when ``card`` is played on ``table`` (RULES.md sections 3 and 6); ``[]`` means a lay.

    Equal rank first: if the table holds cards of the card's rank, each of them alone is a capture (the player
    picks one) and no sum may be taken. Otherwise, under ``rules.ace_takes_all``, an ace on a non-empty table takes
    the whole table. Otherwise every set of two or more table cards whose values add up to the card's value.
    Sorted by the sorted tuple of card ids.
    """
    facts = _facts(rules.deck)
    on_table = sorted(set(table))
    if card in on_table:
        raise ValueError(f"card {format_card(card, rules.deck)} is both played and on the table")
    return _captures_by_rank(rules, on_table, facts.rank[card])


def _captures_by_rank(rules: Rules, on_table: list[int], rank: int) -> list[frozenset[int]]:
    """``captures`` for a card of rank index ``rank`` (any suit); ``on_table`` is sorted."""
    facts = _facts(rules.deck)
    same_rank = [t for t in on_table if facts.rank[t] == rank]
    if same_rank:
        return [frozenset({t}) for t in same_rank]
    if rules.ace_takes_all and rank == 0 and on_table:
        return [frozenset(on_table)]
    found: list[tuple[int, ...]] = []
    chosen: list[int] = []

    def extend(start: int, remaining: int) -> None:
        """Add every increasing run of ``on_table[start:]`` that, with ``chosen``, sums to the card's value."""
        for i in range(start, len(on_table)):
            value = facts.value[on_table[i]]
            if value > remaining:
                continue
            chosen.append(on_table[i])
            if value == remaining:
                if len(chosen) >= 2:
                    found.append(tuple(chosen))
            else:
                extend(i + 1, remaining - value)
            chosen.pop()

    extend(0, rank + 1)
    return [frozenset(c) for c in sorted(found)]


def is_ace_sweep(rules: Rules, card: int, capture: Iterable[int]) -> bool:
    """True for scopa d'assi's ace-takes-all capture (never a scopa): an ace capturing cards that hold no ace."""
    facts = _facts(rules.deck)
    taken = list(capture)
    return rules.ace_takes_all and facts.rank[card] == 0 and bool(taken) and all(facts.rank[c] != 0 for c in taken)


def _category_winners(values: Sequence[int], shared: bool, minimum: int = 1) -> list[int]:
    """Sides that score a category: the unique strict leader, or with ``shared`` every side tied at the top.

    Nobody scores when the top value is below ``minimum`` (at least 1: a side with nothing never scores).
    """
    top = max(values)
    if top < max(minimum, 1):
        return []
    leaders = [i for i, v in enumerate(values) if v == top]
    return leaders if shared or len(leaders) == 1 else []


def _primiera(pile: Iterable[int], facts: _DeckFacts) -> int:
    """Sum over the four suits of the best primiera value held in that suit; 0 when a suit is missing."""
    best = [0, 0, 0, 0]
    for c in pile:
        best[facts.suit[c]] = max(best[facts.suit[c]], facts.primiera[c])
    return sum(best) if all(best) else 0


def score_hand(rules: Rules, piles: Sequence[Iterable[int]], scope: Sequence[int]) -> list[dict[str, int]]:
    """Hand points of each side (RULES.md section 4), one dict per side with the keys ``POINT_KEYS``.

    ``carte, denari, settebello, primiera, scope, total``. ``piles[i]`` holds the cards side i captured (leftover
    included), ``scope[i]`` its scope this hand.
    """
    if len(piles) != rules.num_sides or len(scope) != rules.num_sides:
        raise ValueError(
            f"score_hand: {rules.name!r} has {rules.num_sides} sides, got {len(piles)} piles and {len(scope)} scope"
        )
    deck = rules.deck
    facts = _facts(deck)
    sets = [set(p) for p in piles]
    shared = rules.shared_lead_scores
    carte = [len(p) for p in sets]
    denari = [sum(1 for c in p if facts.suit[c] == Suit.DENARI) for p in sets]
    settebello = [int(deck.settebello in p) for p in sets]
    if rules.simple_primiera:
        primiera = [sum(1 for c in p if facts.rank[c] == facts.seven) for p in sets]
    else:
        primiera = [_primiera(p, facts) for p in sets]
    carte_min = deck.num_cards // 2 + 1 if rules.majority_needed else 1
    denari_min = deck.num_ranks // 2 + 1 if rules.majority_needed else 1
    winners = {
        "carte": _category_winners(carte, shared, carte_min),
        "denari": _category_winners(denari, shared, denari_min),
        "settebello": _category_winners(settebello, shared),
        "primiera": _category_winners(primiera, shared),
    }
    out: list[dict[str, int]] = []
    for side in range(rules.num_sides):
        points = {key: int(side in winners[key]) for key in ("carte", "denari", "settebello", "primiera")}
        points["scope"] = int(scope[side])
        points["total"] = sum(points[key] for key in CATEGORIES)
        out.append(points)
    return out


def match_winner(rules: Rules, scores: Sequence[int]) -> int | None:
    """The side that wins the match after a hand (RULES.md section 5), or ``None`` to play another hand.

    Only once some side has reached ``rules.target``; the winner is the side with strictly the most points.
    """
    top = max(scores)
    if top < rules.target:
        return None
    leaders = [i for i, s in enumerate(scores) if s == top]
    return leaders[0] if len(leaders) == 1 else None


def is_void_table(rules: Rules, table: Iterable[int]) -> bool:
    """True when the initial table makes the deal void: three or four kings under ``rules.void_on_kings``."""
    facts = _facts(rules.deck)
    return rules.void_on_kings and sum(1 for c in table if facts.rank[c] == facts.king) >= 3


def _shuffled(rules: Rules, seed: int, hand_no: int, attempt: int) -> list[int]:
    return [int(c) for c in shuffled_decks([seed], [hand_no], [attempt], rules.num_cards)[0]]


def hand_deck(rules: Rules, seed: int, hand_no: int) -> tuple[int, list[int]]:
    """``(attempt, deck order)`` of hand ``hand_no``: attempt 0, 1, ... until the initial table is not void."""
    attempt = 0
    while True:
        deck = _shuffled(rules, seed, hand_no, attempt)
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
    - ``dealer``: the current hand's dealer; ``current``: the seat to act.
    - ``hands[seat]``, ``table``: sets of card ids; ``piles[side]``: cards captured this hand.
    - ``stock``: cards not dealt yet, next card first; ``deal_no``: 0-based deal within the hand.
    - ``scores[side]``: cumulative points, updated at the end of each hand; ``scope[side]``: scope this hand.
    - ``last_capturer``: side of the last capture this hand, or ``None``.
    - ``done``, ``winner``: the match is over and who won it (a side).
    - ``records``: one RULES.md section-8 ``hands[]`` dict per hand started (cards in notation).

    After the final hand the state is left as the hand ended (leftover cards moved to the last capturer's pile,
    or left on the table when nobody captured), so every card stays accounted for.
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
        self.done: bool = False
        self.winner: int | None = None
        self.records: list[dict[str, Any]] = []
        self._start_hand(self.dealer)

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
        self.current = (dealer + 1) % n
        self.deal_no = -1
        self.records.append(
            {"dealer": dealer, "deals": [], "knocks": [], "moves": [], "leftover": None, "points": None, "scores": None}
        )
        self._deal()

    def _deal(self) -> None:
        """Give every player, from the front of the stock, their packet of the next deal (never to the table)."""
        self.deal_no += 1
        size = self.rules.deal_sizes[self.deal_no]
        for seat in receiving_order(self.rules, self.dealer):
            self.hands[seat] = set(self.stock[:size])
            del self.stock[:size]
        deal: dict[str, Any] = {}
        if self.deal_no == 0:
            deal["table"] = _fmt(self.table, self.rules.deck)
        deal["hands"] = [_fmt(h, self.rules.deck) for h in self.hands]
        self.records[-1]["deals"].append(deal)

    # -- moves --------------------------------------------------------------------------------------------------

    def legal_moves(self) -> list[Move]:
        """Every legal (card, capture) of the seat to act, sorted by card then capture; ``[]`` once done."""
        if self.done:
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
        "winner"}``; ``hand_points`` (one dict per side) and ``leftover`` ``(side or None, cards)`` describe the
        hand that this move ended, else ``None`` and ``(None, frozenset())``. When a hand ends and nobody has won,
        the next hand is dealt before returning. Raises ``ValueError`` for an illegal move, listing the legal ones.
        """
        rules, deck = self.rules, self.rules.deck
        if self.done:
            raise ValueError(f"the match is over (side {self.winner} won); start a new ReferenceGame")
        card, capture = int(card), frozenset(int(c) for c in capture)
        seat, side = self.current, self.seat_side[self.current]
        if card not in self.hands[seat] or capture not in (captures(rules, self.table, card) or [frozenset()]):
            legal = self.legal_moves()
            listed = ", ".join(_describe(c, t, deck) for c, t in legal)
            raise ValueError(
                f"illegal move for seat {seat}: {_describe(card, capture, deck)}; "
                f"hand {_fmt(self.hands[seat], deck)}, table {_fmt(self.table, deck)}; legal moves: {listed}"
            )
        self.hands[seat].discard(card)
        if capture:
            self.table -= capture
            self.piles[side] |= capture | {card}
            self.last_capturer = side
        else:
            self.table.add(card)
        last_play = not self.stock and not any(self.hands)
        scopa = bool(capture) and not self.table and not last_play and not is_ace_sweep(rules, card, capture)
        if scopa:
            self.scope[side] += 1
        self.records[-1]["moves"].append(
            {"seat": seat, "card": format_card(card, deck), "capture": _fmt(capture, deck), "scopa": scopa}
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
        points = score_hand(rules, self.piles, self.scope)
        for side, p in enumerate(points):
            self.scores[side] += p["total"]
        record = self.records[-1]
        record["leftover"] = {"side": leftover_side, "cards": _fmt(leftover, rules.deck)}
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
# Record checking.


def observe(
    game: ReferenceGame, seat: int | None = None, pending: int | None = None, picked: Iterable[int] = ()
) -> list[float]:
    """The observation of ``seat`` (default: the seat to act) as a plain list, in the layout of ``docs/envs.md``.

    Written from the documented blocks, not from the core. ``pending`` and ``picked`` describe a capture being
    chosen card by card (the core's CHOOSE phase): the card played, already out of the hand, and the table cards
    picked so far (still on the table). Only what the seat may know enters: its hand, the table, every pile, the
    scores and counts; the other hands and the stock appear only as their union (``unseen``).
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
    hand = hands[seat]
    seen = hand | game.table | pending_cards | picked
    for pile in game.piles:
        seen |= pile
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
    return obs


def play_features(rules: Rules, table: Iterable[int]) -> list[float]:
    """The observation's last block: the table's sum / 40, then for each card value what a card of that value
    would do on ``table``: capture (0/1), scopa (0/1), take the settebello (0/1), the table's sum after / 40."""
    deck, facts = rules.deck, _facts(rules.deck)
    table = sorted(table)
    total = sum(facts.value[c] for c in table)
    out = [total / 40.0]
    for rank in range(deck.num_ranks):
        value = rank + 1
        options = _captures_by_rank(rules, table, rank)
        # Card 0 (an ace) stands for any ace: scopa d'assi's ace taking the whole table is not a scopa.
        scopa = any(len(c) == len(table) and not (rank == 0 and is_ace_sweep(rules, 0, c)) for c in options)
        after = total + value if not options else total - sum(facts.value[c] for c in options[0])
        out += [float(bool(options)), float(scopa), float(any(deck.settebello in c for c in options)), after / 40.0]
    return out
