"""The terminal game's words: how a person may type a card (``card_readings``: rank then suit, the suit as a letter,
a symbol or an alias, ``c`` also read as clubs when it can only mean them), how ranks, agents and seats are named
(``rank_names``, ``short_name``, ``seat_names``), and the help text of each variant family (``HELP_TEXT``,
``FAMILY_HELP``). ``agents.play.terminal`` speaks with them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agents.nets.bot import SHIPPED_BOTS, shipped_bot, shipped_bot_spec
from scopa_env.rules import Rules
from scopa_env.rules.cards import SUIT_LETTERS, SUIT_SYMBOLS, Deck, parse_card

__all__ = [
    "CIRULLA_HELP",
    "FAMILY_HELP",
    "FIELD_NAMES",
    "HELP_TEXT",
    "RANK_NAMES",
    "SUIT_ALIASES",
    "card_readings",
    "quoted",
    "rank_names",
    "seat_names",
    "short_name",
]


SUIT_ALIASES = {
    **{symbol: letter for symbol, letter in zip(SUIT_SYMBOLS, SUIT_LETTERS, strict=True)},
    "♢": "d",
    "♡": "c",
    "♤": "s",
    "♧": "b",
    "h": "c",
}
"""Other ways to type a suit: the symbols the picture shows (and their outlined forms) and ``h`` (hearts, the
picture's stand-in for cups). ``c`` may also mean the clubs of the picture (bastoni): see ``card_readings``."""
_CLUBS_READING = SUIT_LETTERS.index("b")
HELP_TEXT = """\
How to play (docs/rules.md has the full rules):
  - Play a card by typing it: rank then suit, e.g. 7d, qs, ab (ranks {ranks}; upper or lower case). Suits:
      d or ♦  coins (denari)       c or h or ♥  cups (coppe)
      s or ♠  swords (spade)       b or ♣       clubs (bastoni); c also reads as clubs when you hold no cup
    of that rank (2c plays your 2♣); holding both, 2c is the cup: type 2b or 2♣ for the club.
  - A card takes a table card of the same rank; otherwise it must take a set of cards adding up to its value,
    {values}; otherwise it is laid on the table. Clearing the table is a scopa (1 point).
  - When a card can capture in several ways you get a numbered list: type the number, or the cards.
    You can also name the capture at once: '7d 3s 4c' plays 7d and takes 3s and 4c.
Commands:
  hint      the advice of '{hint}' for your position (move probabilities when it has them)
  review    after a hand: each of your moves in it valued, the mistakes marked, the better move shown
  score     match scores and this hand's piles (cards, coins, settebello, sevens, scope)
  history   the moves of this hand and the results of earlier hands
  table     show the table and your hand again
  help      this text
  quit      leave the game (end of input, Ctrl-D, also leaves)"""
CIRULLA_HELP = """Cirulla:
  - A fifteen: a card may also take table cards that make 15 together with it (7d takes 5s 3c: 7+5+3).
    An ace on a table with no ace takes the whole table (not a scopa). The capture list shows every choice.
  - Knock: right after a deal, three cards worth 9 or less (7c counts 1) may be shown for 3 points, three of a
    kind (or a pair and 7c) for 10. You are asked 'knock>' when your hand allows it: 0 no knock, 1 or 2 to knock.
  - A first table of 15 (or 30, 7c any value) goes to the dealer's side with 1 (2) scope. Napoli (Ad 2d 3d ...)
    and grande (Jd Qd Kd) score extra; first to 51."""
FAMILY_HELP = {"cirulla": (CIRULLA_HELP,)}
"""More help for a family of variants (``HumanMatch.family``), after ``HELP_TEXT``."""
FIELD_NAMES = {"carte": "cards", "denari": "coins"}
"""The hand summary's column for a scoring category (``point_fields``) where the English name differs; the game
terms settebello, primiera, scopa (scope), napoli and grande stay as they are (docs/rules.md's glossary)."""
RANK_NAMES = {"A": "Ace", "J": "Jack", "Q": "Knight", "K": "King"}
"""English names of the Italian deck's letter ranks (the record notation's letters: Q is the Knight, cavallo, the 9;
the browser game names them the same). The 52-card deck's Q is the Queen (``rank_names``)."""


def rank_names(deck: Deck) -> str:
    """The ranks' capture values in words for the help: ``A (Ace)=1, 2=2, ..., Q (Knight)=9, K (King)=10``."""
    names = {**RANK_NAMES, "Q": "Queen"} if deck.num_ranks > 10 else RANK_NAMES
    parts = [
        f"{r} ({names[r]})={v}" if r in names else f"{r}={v}" for r, v in zip(deck.ranks, deck.rank_values, strict=True)
    ]
    return ", ".join([*parts[:1], "...", *parts[6:]])


def short_name(spec: str, rules: Rules) -> str:
    """What the game calls the agent of ``spec``: ``Bot`` for the variant's shipped bot, a path by its last part
    (``runs/x/best.zip`` -> ``best.zip``, ``bot:path=DIR`` -> DIR's name), else the agent's name without its
    options (``pimc:worlds=8`` -> ``pimc``)."""
    text = spec.strip()
    shipped = shipped_bot(rules, SHIPPED_BOTS)
    name, _, options = text.partition(":")
    path = dict(o.split("=", 1) for o in options.split(",") if "=" in o).get("path") if name == "bot" else None
    if text == "bot" or text == shipped_bot_spec(rules, SHIPPED_BOTS):
        return "Bot"
    if path is not None or "/" in text or "\\" in text or text.endswith(".zip"):
        where = Path(path if path is not None else text)
        if shipped is not None and where.resolve() == shipped.resolve():
            return "Bot"
        return where.name or text
    return name


def seat_names(rules: Rules, human: int, names: dict[int, str]) -> list[str]:
    """Every seat's name: ``you`` for ``human``, the others' ``names`` (``short_name``), with the seat's number when
    several seats share a name (``Bot 1``, ``Bot 3``)."""
    counts = Counter(names.values())
    return [
        "you" if s == human else names[s] + (f" {s}" if counts[names[s]] > 1 else "") for s in range(rules.num_players)
    ]


def card_readings(token: str, deck: Deck) -> list[int]:
    """The card ids ``token`` can mean, the notation's reading first: one, or two when its suit is ``c`` (cups in the
    project's notation, then the clubs the picture shows with ♣). Suit symbols and ``h`` are read as in
    ``SUIT_ALIASES``; the game takes the first reading that is a card you hold (or a legal capture).

    Raises ``ValueError`` with a message for the player when ``token`` is not a card.
    """
    text = token.strip()
    if not text or len(text) > 4:
        raise ValueError(
            f"bad card {quoted(token)}: write rank then suit, e.g. 7d (ranks {deck.ranks}, suits d c s b or ♦ ♥ ♠ ♣)"
        )
    suit = text[-1].lower()
    card = parse_card(text[:-1] + SUIT_ALIASES.get(suit, suit), deck)
    if suit == "c":
        return [card, card % deck.num_ranks + _CLUBS_READING * deck.num_ranks]
    return [card]


def quoted(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")
