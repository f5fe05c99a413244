"""Card ids, notation and values (RULES.md section 1).

A card id is ``suit * num_ranks + rank_index``: in the 40-card Italian deck ``0..9`` are the coins (denari)
ace to king, ``10..19`` cups (coppe), ``20..29`` swords (spade), ``30..39`` clubs (bastoni). The 52-card deck of
``simple-8`` uses the same layout with 13 ranks. ``7d`` (the settebello) is id 6 in both decks.

Glossary of the Italian terms kept in the code:

- *scopa* ("broom"): a capture that sweeps the table clean, worth one point; plural *scope*.
- *settebello*: the seven of coins, ``7d``, worth one point to the side that captures it.
- *denari*: the coins suit, ``d``; most coins is worth one point.
- *carte*: most cards captured, one point.
- *primiera*: a point for the best four-suit hand by primiera values (sevens best, then sixes, aces ...).
- *mano* / hand: one deal-through of the deck, scored at its end; a *match* is hands until a side reaches the
  target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

__all__ = [
    "DECK40",
    "DECK52",
    "DECKS",
    "SUIT_SYMBOLS",
    "Deck",
    "Suit",
    "format_card",
    "format_cards",
    "parse_card",
    "parse_cards",
]


class Suit(IntEnum):
    """The four suits, in card-id order."""

    DENARI = 0  # coins, d
    COPPE = 1  # cups, c
    SPADE = 2  # swords, s
    BASTONI = 3  # clubs, b


SUIT_LETTERS = "dcsb"
SUIT_SYMBOLS = ("♦", "♥", "♠", "♣")  # French-deck stand-ins used by the text renderer
PRIMIERA_BY_VALUE = {1: 16, 2: 12, 3: 13, 4: 14, 5: 15, 6: 18, 7: 21}
FACE_PRIMIERA = 10


@dataclass(frozen=True)
class Deck:
    """A deck: rank symbols (in rank order), capture values and primiera values."""

    name: str
    """Registry name, ``italian40`` or ``french52``."""
    ranks: str
    """One symbol per rank, in rank order (``A234567JQK``)."""

    def __post_init__(self) -> None:
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError(f"deck {self.name!r}: repeated rank symbols in {self.ranks!r}")

    @property
    def num_ranks(self) -> int:
        return len(self.ranks)

    @property
    def num_cards(self) -> int:
        return 4 * len(self.ranks)

    @property
    def rank_values(self) -> tuple[int, ...]:
        """Capture value of each rank: 1..num_ranks."""
        return tuple(range(1, self.num_ranks + 1))

    @property
    def value(self) -> npt.NDArray[np.int8]:
        """(num_cards,) int8: capture value of each card id."""
        return np.tile(np.arange(1, self.num_ranks + 1, dtype=np.int8), 4)

    @property
    def rank(self) -> npt.NDArray[np.int8]:
        """(num_cards,) int8: rank index (0-based) of each card id."""
        return np.tile(np.arange(self.num_ranks, dtype=np.int8), 4)

    @property
    def suit(self) -> npt.NDArray[np.int8]:
        """(num_cards,) int8: suit of each card id."""
        return np.repeat(np.arange(4, dtype=np.int8), self.num_ranks)

    @property
    def primiera(self) -> npt.NDArray[np.int16]:
        """(num_cards,) int16: primiera value of each card id (faces 10)."""
        per_rank = [PRIMIERA_BY_VALUE.get(v, FACE_PRIMIERA) for v in self.rank_values]
        return np.tile(np.array(per_rank, dtype=np.int16), 4)

    def card(self, rank_symbol: str, suit: Suit | int) -> int:
        """Card id of a rank symbol and suit."""
        return int(suit) * self.num_ranks + self.ranks.index(rank_symbol)

    @property
    def settebello(self) -> int:
        return self.card("7", Suit.DENARI)

    @property
    def king_rank(self) -> int:
        """Rank index of the king (re), used by the three-kings re-deal."""
        return self.ranks.index("K")


DECK40 = Deck("italian40", "A234567JQK")
DECK52 = Deck("french52", "A23456789TJQK")
DECKS = {d.name: d for d in (DECK40, DECK52)}

_CARD_RE = re.compile(r"^\s*(10|[A-Za-z0-9])([A-Za-z])\s*$")


def parse_card(text: str, deck: Deck = DECK40) -> int:
    """Parse one card in RULES.md notation (``7d``, ``Qs``, ``ab``) into its id.

    The suit letter is case-insensitive; so are the face letters. Raises ``ValueError`` naming the problem.
    """
    if not isinstance(text, str):
        raise TypeError(f"a card must be a string like '7d', got {type(text).__name__}")
    m = _CARD_RE.match(text)
    if not m:
        raise ValueError(
            f"bad card {text!r}: write rank then suit, e.g. '7d' (ranks {deck.ranks}, suits {SUIT_LETTERS})"
        )
    rank, suit = m.group(1).upper(), m.group(2).lower()
    if rank == "10":
        rank = "T"
    if suit not in SUIT_LETTERS:
        raise ValueError(
            f"bad card {text!r}: unknown suit {suit!r}; suits are d (denari/coins), c (coppe/cups), "
            f"s (spade/swords), b (bastoni/clubs)"
        )
    if rank not in deck.ranks:
        raise ValueError(f"bad card {text!r}: unknown rank {rank!r} for the {deck.name} deck (ranks: {deck.ranks})")
    return deck.card(rank, SUIT_LETTERS.index(suit))


def parse_cards(text: str | Iterable[str], deck: Deck = DECK40) -> list[int]:
    """Parse several cards, from a list or a string separated by spaces or commas."""
    items = re.split(r"[\s,]+", text.strip()) if isinstance(text, str) else list(text)
    return [parse_card(t, deck) for t in items if t]


def format_card(card: int, deck: Deck = DECK40) -> str:
    """The notation of a card id: ``format_card(6) == '7d'``."""
    card = int(card)
    if not 0 <= card < deck.num_cards:
        raise ValueError(f"card id {card} out of range 0..{deck.num_cards - 1} for the {deck.name} deck")
    suit, rank = divmod(card, deck.num_ranks)
    return deck.ranks[rank] + SUIT_LETTERS[suit]


def format_cards(cards: Iterable[int] | npt.NDArray[np.bool_], deck: Deck = DECK40) -> list[str]:
    """Format card ids (or a boolean card mask) as a sorted list of strings."""
    arr = np.asarray(cards)
    ids = np.flatnonzero(arr) if arr.dtype == np.bool_ else arr.ravel()
    return [format_card(int(c), deck) for c in sorted(int(i) for i in ids)]
