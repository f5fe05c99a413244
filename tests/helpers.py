"""Shared test helpers: build core positions by hand; check an agent's exact end-game option; compare the weights
of two checkpoints."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, Rules, get_rules
from scopa_env.rules.cards import parse_cards

SCOPA_VARIANTS = [name for name, rules in VARIANTS.items() if not rules.cirulla]
"""The named variants without cirulla's rules (cirulla's have their own tests: knocks, fifteens, ``stop``)."""


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


def check_endgame_option(rules: Rules, plain: Policy, exact: Policy) -> tuple[np.ndarray, np.ndarray]:
    """``exact`` (the ``endgame=8`` form of ``plain``) plays ``solve_open``'s move in every open end game of 64
    randomly played games and ``plain``'s elsewhere, and really overrides it somewhere; returns the last position's
    (observations, masks)."""
    from agents.search.endgame import open_endgame_rows, solve_open

    assert exact.needs_state and not plain.needs_state
    st = core.reset(rules, np.arange(64))
    rng = np.random.default_rng(0)
    solved = changed = 0
    for _ in range(150):
        obs, mask = observation.observe(rules, st), core.legal_action_mask(rules, st)
        games = np.flatnonzero(~st.done)
        batch = ActBatch(rules, obs[games], mask[games], state=st, games=games)
        a_plain, a_exact = plain.act(batch), exact.act(batch)
        assert mask[games, a_exact].all()
        rows = open_endgame_rows(rules, st, games, 8)
        if rows.size:
            assert (a_exact[rows] == solve_open(rules, st, games[rows])).all()
            solved += rows.size
            changed += int((a_exact[rows] != a_plain[rows]).sum())
        others = np.setdiff1d(np.arange(games.size), rows)
        assert (a_exact[others] == a_plain[others]).all()
        keys = rng.random(mask.shape) + mask  # random legal play moves the games along
        core.step(rules, st, keys.argmax(axis=1), autoreset=True)
    assert solved > 100 and changed > 0  # the solver really overrides the policy somewhere
    return obs, mask


def checkpoint_weights(path: Path) -> dict[str, Any]:
    """The policy state dict of a train.py checkpoint (``torch.load(weights_only=True)``)."""
    import torch

    with zipfile.ZipFile(path) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)  # type: ignore[no-any-return]


def same_weights(a: Path, b: Path) -> bool:
    """Whether two checkpoints hold bit-identical policy weights."""
    import torch

    wa, wb = checkpoint_weights(a), checkpoint_weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def sampled_positions(rules: Rules, num: int, seed: int, rate: float = 0.1, batch: int = 32) -> core.State:
    """``num`` positions (PLAY and CHOOSE phases) taken at random (each with probability ``rate``) from random
    games of ``rules``, ``batch`` games at a time."""
    rng = np.random.default_rng(seed)
    st = core.reset(rules, np.arange(seed, seed + batch))
    out, total = [], 0
    while total < num:
        if st.done.all():
            st = core.reset(rules, np.arange(seed + total + 1000, seed + total + 1000 + batch))
        playing = np.flatnonzero((st.phase == core.Phase.PLAY) | (st.phase == core.Phase.CHOOSE))
        pick = playing[rng.random(playing.size) < rate][: num - total]
        if pick.size:
            out.append(st.take(pick))
            total += pick.size
        mask = core.legal_action_mask(rules, st)
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        core.step(rules, st, np.where(st.done, 0, keys.argmax(axis=1)))
    return core.State.concat(out)


def pretend_no_shipped_bot(monkeypatch: Any, variant: str) -> None:
    """Every variant ships a bot: make ``agents.nets.bot.shipped_bot`` (and so ``shipped_bot_spec``, ``bot`` alone and
    the games' default opponent) find none for ``variant``, to test the no-bot path. ``monkeypatch``: pytest's."""
    import agents.nets.bot as bot_module

    found = bot_module.shipped_bot
    monkeypatch.setattr(bot_module, "shipped_bot", lambda r, *a: None if get_rules(r).name == variant else found(r, *a))
