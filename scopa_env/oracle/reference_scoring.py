"""The reference engine's scoring, written straight from RULES.md: the hand points of each side and the match's winner.

``score_hand(rules, piles, scope, knock_points)`` counts one hand (section 4: carte, denari, settebello, primiera and
the scope; cirulla's napoli, grande and knocks, section 8), ``match_winner`` names the winner once a side reached the
target (section 5). ``deck_facts`` holds each card's rank, suit, value and primiera value as plain tuples, read by the
reference game (``scopa_env.oracle.reference``) too; like it, this module never imports the core.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scopa_env.rules import CATEGORIES, Rules
from scopa_env.rules.cards import DECKS, Deck, Suit

__all__ = [
    "CIRULLA_POINT_KEYS",
    "GRANDE_POINTS",
    "POINT_KEYS",
    "DeckFacts",
    "deck_facts",
    "match_winner",
    "point_keys",
    "score_hand",
]


POINT_KEYS = (*CATEGORIES, "total")
"""Keys of one side's hand-points dict: the categories, then their sum."""
CIRULLA_POINT_KEYS = (*CATEGORIES, "napoli", "grande", "knocks", "total")
"""Keys of one side's hand-points dict in cirulla (RULES.md section 8)."""
GRANDE_POINTS = 5
"""Cirulla: points of grande (``Jd Qd Kd``)."""


# Card facts as plain tuples (the Deck properties are numpy arrays; plain tuples keep this module numpy-free).


@dataclass(frozen=True)
class DeckFacts:
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


def deck_facts(deck: Deck) -> DeckFacts:
    """The facts of ``deck`` (computed once per deck name)."""
    return _facts_by_name(deck.name)


@functools.cache
def _facts_by_name(deck_name: str) -> DeckFacts:
    deck = DECKS[deck_name]
    n = deck.num_ranks
    return DeckFacts(
        rank=tuple(c % n for c in range(deck.num_cards)),
        suit=tuple(c // n for c in range(deck.num_cards)),
        value=tuple(c % n + 1 for c in range(deck.num_cards)),
        primiera=tuple(int(p) for p in deck.primiera.tolist()),
        seven=deck.ranks.index("7"),
        king=deck.king_rank,
    )


def _category_winners(values: Sequence[int], shared: bool, minimum: int = 1) -> list[int]:
    """Sides that score a category: the unique strict leader, or with ``shared`` every side tied at the top.

    Nobody scores when the top value is below ``minimum`` (at least 1: a side with nothing never scores).
    """
    top = max(values)
    if top < max(minimum, 1):
        return []
    leaders = [i for i, v in enumerate(values) if v == top]
    return leaders if shared or len(leaders) == 1 else []


def _primiera(pile: Iterable[int], facts: DeckFacts) -> int:
    """Sum over the four suits of the best primiera value held in that suit; 0 when a suit is missing."""
    best = [0, 0, 0, 0]
    for c in pile:
        best[facts.suit[c]] = max(best[facts.suit[c]], facts.primiera[c])
    return sum(best) if all(best) else 0


def _napoli(pile: set[int], deck: Deck) -> int:
    """Napoli: ``Ad 2d 3d`` score 3, plus 1 for each further coin in unbroken value order (all ten coins: 10)."""
    coins = [Suit.DENARI * deck.num_ranks + r for r in range(deck.num_ranks)]
    if not all(c in pile for c in coins[:3]):
        return 0
    run = 3
    while run < len(coins) and coins[run] in pile:
        run += 1
    return run


def _grande(pile: set[int], deck: Deck) -> int:
    """Grande: the three coin faces ``Jd Qd Kd`` together score 5."""
    faces = [Suit.DENARI * deck.num_ranks + r for r in range(deck.num_ranks - 3, deck.num_ranks)]
    return GRANDE_POINTS if all(c in pile for c in faces) else 0


def point_keys(rules: Rules) -> tuple[str, ...]:
    """Keys of one side's hand-points dict under ``rules``: ``CIRULLA_POINT_KEYS`` for cirulla, else ``POINT_KEYS``."""
    return CIRULLA_POINT_KEYS if rules.cirulla else POINT_KEYS


def score_hand(
    rules: Rules,
    piles: Sequence[Iterable[int]],
    scope: Sequence[int],
    knock_points: Sequence[int] | None = None,
) -> list[dict[str, int]]:
    """Hand points of each side (RULES.md sections 4 and 6), one dict per side with the keys ``point_keys(rules)``.

    ``carte, denari, settebello, primiera, scope, total``; cirulla adds ``napoli, grande, knocks`` before ``total``.
    ``piles[i]`` holds the cards side i captured (leftover and the initial-table take included), ``scope[i]`` its
    scope this hand (the table take's included), ``knock_points[i]`` its knock points this hand (cirulla; default
    none).
    """
    if len(piles) != rules.num_sides or len(scope) != rules.num_sides:
        raise ValueError(
            f"score_hand: {rules.name!r} has {rules.num_sides} sides, got {len(piles)} piles and {len(scope)} scope"
        )
    knocked = [0] * rules.num_sides if knock_points is None else [int(k) for k in knock_points]
    if len(knocked) != rules.num_sides:
        raise ValueError(f"score_hand: {rules.name!r} has {rules.num_sides} sides, got {len(knocked)} knock points")
    if any(knocked) and not rules.knocks:
        raise ValueError(f"score_hand: {rules.name!r} has no knocks, got knock points {knocked}")
    deck = rules.deck
    facts = deck_facts(deck)
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
    keys = point_keys(rules)
    out: list[dict[str, int]] = []
    for side in range(rules.num_sides):
        points = {key: int(side in winners[key]) for key in ("carte", "denari", "settebello", "primiera")}
        points["scope"] = int(scope[side])
        if rules.cirulla:
            points["napoli"] = _napoli(sets[side], deck) if rules.napoli_grande else 0
            points["grande"] = _grande(sets[side], deck) if rules.napoli_grande else 0
            points["knocks"] = knocked[side]
        points["total"] = sum(points[key] for key in keys[:-1])
        out.append({key: points[key] for key in keys})
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
