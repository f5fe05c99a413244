"""Text pictures of a game: the table, a seat's hand, the piles and the scores, with suit symbols.

print(render_text(rules, state, game=0, seat=0))

Cirulla adds what everyone sees of its rules: the knock decision being made (KNOCK phase, with the knocks the seat
may choose), the cards a knock revealed (shown in place of ``##`` in that seat's hand), each side's knock points,
the initial table taken by the dealer's side, and ``stop`` when the capture being chosen may stop at the cards
picked. These lines come from the state itself (its cirulla fields, all zero in other variants; the KNOCK phase;
a ``stop`` action in the legal mask), so other variants' pictures are unchanged and no family is tested here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from scopa_env.engine import core
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import SUIT_LETTERS, SUIT_SYMBOLS, Deck

__all__ = ["RENDER_MODES", "check_render_mode", "pretty_card", "pretty_cards", "render_text", "show_text"]

_ANSI_RED = "\x1b[31m"
_ANSI_RESET = "\x1b[0m"

RENDER_MODES = ("ansi", "human")
"""The envs' render modes: ``"ansi"``, ``render()`` returns the picture as text; ``"human"``, it prints it."""


def check_render_mode(render_mode: object) -> None:
    """Refuse an env's ``render_mode`` other than None or one of ``RENDER_MODES``."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")


def show_text(text: str, render_mode: str | None) -> str | None:
    """An env's ``render()`` of the picture ``text``: printed in ``"human"`` mode (None), else returned."""
    if render_mode == "human":
        print(text + "\n")
        return None
    return text


def pretty_card(card: int, deck: Deck, color: bool = False) -> str:
    """``7♦`` style text for one card id (red suits coloured when ``color``)."""
    suit, rank = divmod(int(card), deck.num_ranks)
    text = f"{deck.ranks[rank]}{SUIT_SYMBOLS[suit]}"
    if color and SUIT_LETTERS[suit] in "dc":
        return f"{_ANSI_RED}{text}{_ANSI_RESET}"
    return text


def pretty_cards(cards: Iterable[int] | np.ndarray, deck: Deck, color: bool = False) -> str:
    """Space-separated pretty cards from ids or a boolean mask, in rank order; ``-`` when empty."""
    arr = np.asarray(list(cards) if not isinstance(cards, np.ndarray) else cards)
    ids = np.flatnonzero(arr) if arr.dtype == np.bool_ else arr.ravel()
    ordered = sorted((int(c) for c in ids), key=lambda c: (c % deck.num_ranks, c // deck.num_ranks))
    return " ".join(pretty_card(c, deck, color) for c in ordered) or "-"


def _side_name(rules: Rules, side: int, names: Sequence[str] | None = None) -> str:
    seats = rules.sides[side]
    if names is not None:
        return " + ".join(names[s] for s in seats)
    return f"player {seats[0]}" if len(seats) == 1 else "team " + "+".join(str(s) for s in seats)


def render_text(
    rules: Rules | str,
    state: core.State,
    game: int = 0,
    seat: int | None = None,
    color: bool = False,
    names: Sequence[str] | None = None,
) -> str:
    """A picture of game ``game`` as seen by ``seat`` (default: the seat to act); hides other hands. ``names``: what
    to call each seat (a side is its seats' names joined by ``+``; the terminal game's ``you`` and its bots' names),
    default ``player 0``, ``player 1``, ... with ``(you)`` after ``seat``."""
    rules = get_rules(rules)
    seat_name = (lambda p: f"player {p}") if names is None else names.__getitem__
    deck = rules.deck
    g = int(game)
    cur = int(state.current[g])
    seat = cur if seat is None else int(seat)
    lines = []
    done = state.phase[g] == core.Phase.DONE
    stock = rules.num_cards - int(state.stock_pos[g])
    lines.append(
        f"{rules.name}  hand {int(state.hand_no[g]) + 1}  deal {int(state.deal_no[g]) + 1}/{rules.num_deals}  "
        f"dealer: {seat_name(int(state.dealer[g]))}  stock: {stock} cards"
    )
    score_txt = "  ".join(
        f"{_side_name(rules, s, names)}: {int(state.scores[g, s])}"
        + (f" (+{int(state.scope[g, s])} scope)" if state.scope[g, s] else "")
        + (f" (+{int(state.knock_points[g, s])} knocks)" if state.knock_points[g, s] else "")
        for s in range(rules.num_sides)
    )
    lines.append(f"scores (to {rules.target}): {score_txt}")
    for s in range(rules.num_sides):
        pile = state.piles[g, s]
        n_coins = int(pile[: deck.num_ranks].sum())
        lines.append(f"  pile {_side_name(rules, s, names)}: {int(pile.sum())} cards, {n_coins} coins")
    if state.table_take[g]:
        taken = state.deck[g, : rules.table_cards].astype(np.int64)
        scope = int(state.table_take[g])
        taker = _side_name(rules, rules.seat_side[int(state.dealer[g])], names)
        scopa = "scopa" if scope == 1 else "scope"
        lines.append(f"  initial table {pretty_cards(taken, deck, color)} taken by {taker} ({scope} {scopa})")
    lines.append(f"TABLE: {pretty_cards(state.table[g], deck, color)}")
    if state.pending[g] >= 0:
        picked = pretty_cards(state.picked[g], deck, color)
        line = f"  choosing the capture for {pretty_card(int(state.pending[g]), deck, color)} (picked: {picked})"
        mask = core.legal_action_mask(rules, state.take([g]))[0]
        if core.stop_action(rules) < mask.size and mask[core.stop_action(rules)]:
            line += "; may stop here and take just the picked cards"
        lines.append(line)
    if state.phase[g] == core.Phase.KNOCK:
        mask = core.legal_action_mask(rules, state.take([g]))[0]
        kinds = [k for a, k in ((1, "knock for 3 (sum)"), (2, "knock for 10 (tris)")) if mask[rules.num_cards + a]]
        who = seat_name(cur)
        decides = "decide" if who == "you" else "decides"
        lines.append(f"  KNOCK: {who} {decides}: no knock, {' or '.join(kinds)}")
    for p in range(rules.num_players):
        n = int(state.hands[g, p].sum())
        who = (
            seat_name(p)
            + (" (you)" if p == seat and names is None else "")
            + (" *to act*" if p == cur and not done else "")
        )
        if p == seat:
            cards = pretty_cards(state.hands[g, p], deck, color)
        elif state.revealed[g, p].any():
            shown = state.revealed[g, p]
            hidden = n - int(shown.sum())
            cards = " ".join([pretty_cards(shown, deck, color), *["##"] * hidden]) + " (knocked)"
        else:
            cards = ("## " * n).strip() or "-"
        if p == seat and state.revealed[g, p].any():
            cards += " (knocked: everyone sees them)"
        lines.append(f"  {who}: {cards}")
    if done:
        w = int(state.winner[g])
        lines.append(f"match over: {_side_name(rules, w, names)} wins" if w >= 0 else "match over")
    return "\n".join(lines)
