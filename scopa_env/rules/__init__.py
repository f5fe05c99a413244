"""The frozen ``Rules`` object and the registry of named variants (RULES.md sections 2-6).

>>> from scopa_env.rules import get_rules
>>> get_rules("classic").target
11
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from scopa_env.rules.cards import DECKS, Deck

__all__ = ["CATEGORIES", "CIRULLA_VARIANTS", "VARIANTS", "Rules", "get_rules", "variant_list", "variant_names"]

CATEGORIES = ("carte", "denari", "settebello", "primiera", "scope")
"""Hand-point categories, in the order of the last axis of the core's ``hand_points`` (``total`` follows)."""


@dataclass(frozen=True)
class Rules:
    """Every parameter of one Scopa variant. Instances are immutable and never stored in a game state."""

    name: str
    """Variant name as registered in ``VARIANTS``."""
    num_players: int
    """Seats 0..num_players-1; play goes 0 -> 1 -> ... -> N-1 -> 0."""
    sides: tuple[tuple[int, ...], ...]
    """Seats of each side (a player, or a team); side i is ``sides[i]``."""
    deck_name: str = "italian40"
    """``italian40`` (40 cards) or ``french52`` (52 cards, simple-8 only)."""
    table_cards: int = 4
    """Cards dealt face up to the table at the start of a hand."""
    deal_sizes: tuple[int, ...] = (3,) * 6
    """Cards dealt to each player in each deal of a hand (the first deal also lays the table)."""
    target: int = 11
    """Points to reach; checked only at the end of a hand, ties at the top play on."""
    ace_takes_all: bool = False
    """Scopa d'assi: an ace played on a non-empty table with no ace takes the whole table (not a scopa)."""
    simple_primiera: bool = False
    """Beginners' primiera: the side with strictly most sevens wins it."""
    void_on_kings: bool = False
    """Beginners' rule: an initial table with three or four kings is re-dealt."""
    shared_lead_scores: bool = False
    """simple-8: a category tied at the top gives its point to every side sharing the lead."""
    fifteens: bool = False
    """Cirulla: a card may also capture table cards that add up to 15 with it (beside equal rank and sums)."""
    knocks: bool = False
    """Cirulla: after each deal a qualifying hand may knock (sum <= 9: 3 points; three of a kind: 10)."""
    table_take: bool = False
    """Cirulla: an initial table totalling 15 (30) goes to the dealer's side with one (two) scope; ``7c`` is wild."""
    void_on_aces: bool = False
    """Cirulla: an initial table with two or more aces is re-dealt."""
    napoli_grande: bool = False
    """Cirulla: extra hand points for napoli (Ad 2d 3d ...) and grande (Jd Qd Kd)."""
    description: str = field(default="", compare=False)
    """One line for ``--help`` texts and docs."""

    def __post_init__(self) -> None:
        if self.deck_name not in DECKS:
            raise ValueError(f"rules {self.name!r}: unknown deck {self.deck_name!r}; known decks: {sorted(DECKS)}")
        if not 2 <= self.num_players <= 8:
            raise ValueError(f"rules {self.name!r}: num_players must be 2..8, got {self.num_players}")
        seats = sorted(s for side in self.sides for s in side)
        if seats != list(range(self.num_players)):
            raise ValueError(
                f"rules {self.name!r}: sides {self.sides} must list every seat 0..{self.num_players - 1} exactly once"
            )
        if len(self.sides) < 2:
            raise ValueError(f"rules {self.name!r}: at least two sides are needed, got {self.sides}")
        dealt = self.table_cards + self.num_players * sum(self.deal_sizes)
        if dealt != self.deck.num_cards:
            raise ValueError(
                f"rules {self.name!r}: the schedule deals {dealt} cards (table {self.table_cards} + "
                f"{self.num_players} players x {self.deal_sizes}) but the deck has {self.deck.num_cards}"
            )
        if self.target < 1:
            raise ValueError(f"rules {self.name!r}: target must be positive, got {self.target}")

    @property
    def cirulla(self) -> bool:
        """Any of cirulla's rules is on (its actions, phases, point fields and observation blocks apply)."""
        return self.fifteens or self.knocks or self.table_take or self.void_on_aces or self.napoli_grande

    @property
    def num_actions(self) -> int:
        """Size of the action space: the card ids, plus ``stop``, ``knock-sum`` and ``knock-tris`` in cirulla."""
        return self.num_cards + 3 if self.cirulla else self.num_cards

    @property
    def deck(self) -> Deck:
        return DECKS[self.deck_name]

    @property
    def num_cards(self) -> int:
        return self.deck.num_cards

    @property
    def num_sides(self) -> int:
        return len(self.sides)

    @property
    def seat_side(self) -> tuple[int, ...]:
        """Side index of each seat."""
        out = [0] * self.num_players
        for i, side in enumerate(self.sides):
            for s in side:
                out[s] = i
        return tuple(out)

    @property
    def num_deals(self) -> int:
        return len(self.deal_sizes)

    @property
    def max_hand_size(self) -> int:
        return max(self.deal_sizes)

    @property
    def majority_needed(self) -> bool:
        """With two sides, carte and denari need more than half the cards or coins (21 of 40, 6 of 10)."""
        return self.num_sides == 2

    def with_(self, **changes: object) -> Rules:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def _pairs(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple((s,) for s in range(n))


def _teams(n: int) -> tuple[tuple[int, ...], ...]:
    half = n // 2
    return tuple((s, s + half) for s in range(half))


def _simple(
    name: str,
    n: int,
    sides: tuple[tuple[int, ...], ...],
    deal_sizes: tuple[int, ...],
    description: str,
    deck_name: str = "italian40",
    table_cards: int = 4,
    target: int = 11,
    shared_lead_scores: bool = False,
) -> Rules:
    """A beginners' (simple-N) variant: primiera by sevens, three kings on the table void the deal."""
    return Rules(
        name,
        n,
        sides,
        deck_name=deck_name,
        table_cards=table_cards,
        deal_sizes=deal_sizes,
        target=target,
        simple_primiera=True,
        void_on_kings=True,
        shared_lead_scores=shared_lead_scores,
        description=description,
    )


def _make_variants() -> dict[str, Rules]:
    v: list[Rules] = [
        Rules("classic", 2, _pairs(2), description="Two players, game to 11."),
        Rules("classic-15", 2, _pairs(2), target=15, description="Two players, game to 15."),
        Rules("classic-21", 2, _pairs(2), target=21, description="Two players, game to 21."),
        Rules("scopa-d-assi", 2, _pairs(2), ace_takes_all=True, description="An ace takes the whole table."),
        Rules("scopa-a-quattro", 4, _teams(4), deal_sizes=(3, 3, 3), description="Four players in two teams, to 11."),
        Rules(
            "scopone-scientifico",
            4,
            _teams(4),
            table_cards=0,
            deal_sizes=(10,),
            description="Four players in teams, ten cards each, empty table.",
        ),
    ]
    for n in (2, 3, 4, 6):
        v.append(_simple(f"simple-{n}", n, _pairs(n), (3,) * (36 // (3 * n)), f"Beginners' rules, {n} players."))
    v.append(_simple("simple-5", 5, _pairs(5), (3, 3, 1), "Beginners' rules, 5 players.", table_cards=5))
    v.append(
        _simple(
            "simple-8",
            8,
            _pairs(8),
            (3, 3),
            "Beginners' rules, 8 players, 52 cards, game to 16.",
            deck_name="french52",
            target=16,
            shared_lead_scores=True,
        )
    )
    v.append(_simple("simple-4-teams", 4, _teams(4), (3, 3, 3), "Beginners' rules, 4 players in 2 teams."))
    v.append(_simple("simple-6-teams", 6, _teams(6), (3, 3), "Beginners' rules, 6 players in 3 teams."))
    return {r.name: r for r in v}


def _cirulla(name: str, n: int, sides: tuple[tuple[int, ...], ...], description: str) -> Rules:
    return Rules(
        name,
        n,
        sides,
        deal_sizes=(3,) * (36 // (3 * n)),
        target=51,
        ace_takes_all=True,
        fifteens=True,
        knocks=True,
        table_take=True,
        void_on_aces=True,
        napoli_grande=True,
        description=description,
    )


CIRULLA_VARIANTS: dict[str, Rules] = {
    r.name: r
    for r in (
        _cirulla("cirulla", 2, _pairs(2), "Cirulla: fifteens, ace takes all, knocks, napoli and grande, to 51."),
        _cirulla("cirulla-3", 3, _pairs(3), "Cirulla for 3 players, each for themselves, to 51."),
        _cirulla("cirulla-4", 4, _teams(4), "Cirulla for 4 players in two teams, to 51."),
    )
}
"""Cirulla's variants (RULES.md section 6), also in ``VARIANTS``: the ones whose ``Rules.cirulla`` is on."""

VARIANTS: dict[str, Rules] = {**_make_variants(), **CIRULLA_VARIANTS}
"""Every named variant (RULES.md sections 2-6), cirulla's last."""


def variant_names() -> list[str]:
    return list(VARIANTS)


def variant_list(text: str) -> list[str]:
    """The variants named in the comma-separated ``text`` (a command's ``--variants``), in order; ``ValueError`` for
    none, or naming the first unknown one with the known names."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise ValueError("give at least one variant")
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant {unknown[0]!r}; the variants are {', '.join(VARIANTS)}")
    return names


def get_rules(variant: str | Rules) -> Rules:
    """The ``Rules`` of a named variant; a ``Rules`` instance is returned as is.

    Raises ``ValueError`` listing the known names for an unknown one.
    """
    if isinstance(variant, Rules):
        return variant
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a name or a Rules object, got {type(variant).__name__}")
    key = variant.strip().lower()
    if key in VARIANTS:
        return VARIANTS[key]
    raise ValueError(f"unknown variant {variant!r}; known variants: {', '.join(VARIANTS)}")
