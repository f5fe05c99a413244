"""Shared test helpers: build core positions by hand."""

from __future__ import annotations

import numpy as np

from scopa_env import core
from scopa_env.cards import parse_cards
from scopa_env.rules import Rules, get_rules


def position(
    variant: str | Rules,
    hands: list[str],
    table: str = "",
    piles: list[str] | None = None,
    current: int = 0,
    stock: str | None = None,
    scores: list[int] | None = None,
    last_capturer: int = -1,
) -> tuple[Rules, core.State]:
    """One game whose hands, table, piles and stock are given in card notation.

    Every card not placed anywhere goes to the stock; when ``stock`` is given, it is the stock exactly and the
    cards placed nowhere go to the piles (alternating sides), so each card appears exactly once.
    """
    rules = get_rules(variant)
    deck = rules.deck
    st = core.reset(rules, [0])
    st.hands[:] = False
    st.table[:] = False
    st.piles[:] = False
    used: list[int] = []
    for seat, text in enumerate(hands):
        ids = parse_cards(text, deck)
        st.hands[0, seat, ids] = True
        used += ids
    t = parse_cards(table, deck)
    st.table[0, t] = True
    used += t
    for side, text in enumerate(piles or []):
        ids = parse_cards(text, deck)
        st.piles[0, side, ids] = True
        used += ids
    unplaced = [c for c in range(rules.num_cards) if c not in used]
    if stock is None:
        rest = unplaced
    else:  # the stock is given: cards placed nowhere else go to the piles, alternately
        rest = parse_cards(stock, deck)
        spare = [c for c in unplaced if c not in rest]
        for i, c in enumerate(spare):
            st.piles[0, i % rules.num_sides, c] = True
        used += spare
    assert len(set(used)) == len(used), "a card is placed twice"
    order = used + rest
    assert sorted(order) == list(range(rules.num_cards)), "every card must be placed exactly once"
    st.deck[0] = np.array(order, dtype=np.int8)
    st.stock_pos[0] = len(used)
    st.current[0] = current
    st.phase[0] = core.Phase.PLAY
    st.pending[0] = -1
    st.picked[:] = False
    st.scope[:] = 0
    st.last_capturer[0] = last_capturer
    st.deal_no[0] = rules.num_deals - 1 if not rest else 0
    if scores is not None:
        st.scores[0] = scores
    return rules, st
