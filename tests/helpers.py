"""Shared test helpers: build core and reference-engine positions by hand; check an agent's exact end-game option;
compare the weights of two checkpoints."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core, observation
from scopa_env.games.driver import GameResults, play
from scopa_env.games.policy import ActBatch, Policy, uniform_legal
from scopa_env.oracle.reference import ReferenceGame
from scopa_env.rules import VARIANTS, Rules, get_rules
from scopa_env.rules.cards import parse_cards

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root."""

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
    st = core.reset(rules, [0])
    used = _place_cards(rules, st, hands, table, piles)
    unplaced = [c for c in range(rules.num_cards) if c not in used]
    if stock is None:
        rest = unplaced
    else:  # the stock is given: cards placed nowhere else go to the piles, alternately
        rest = parse_cards(stock, rules.deck)
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
    st.deal_no[0] = rules.num_deals - 1 if not rest else 0
    _start_play(st, core.Phase.PLAY, last_capturer)
    if scores is not None:
        st.scores[0] = scores
    return rules, st


def dealt_position(
    variant: str | Rules,
    hands: list[str],
    table: str,
    *,
    piles: list[str] | None = None,
    current: int = 0,
    dealer: int | None = None,
    phase: core.Phase = core.Phase.PLAY,
) -> core.State:
    """One game (match seed 1) in a hand-built position that plays on to the end of the hand: the cards not named
    are the stock, in id order and in whole deals (the few highest ids that would break a deal go to the last side's
    pile), the deals already dealt are counted from its size, and the dealer sits just before ``current`` unless
    ``dealer`` is given."""
    rules = get_rules(variant)
    st = core.reset(rules, [1])
    n, d = rules.num_players, rules.num_cards
    used = np.zeros(d, dtype=np.bool_)
    used[_place_cards(rules, st, hands, table, piles)] = True
    deal = n * rules.deal_sizes[-1]
    surplus = np.flatnonzero(~used)[::-1][: (d - int(used.sum())) % deal]  # whole deals: the rest to a pile
    st.piles[0, rules.num_sides - 1, surplus] = True
    used[surplus] = True
    stock = np.flatnonzero(~used)
    st.deck[0] = np.concatenate([np.flatnonzero(used), stock]).astype(np.int8)
    st.stock_pos[0] = d - stock.size
    st.deal_no[0] = rules.num_deals - 1 - stock.size // deal
    st.current[0] = current
    st.dealer[0] = (current - 1) % n if dealer is None else dealer
    _start_play(st, phase, -1)
    return st


def _place_cards(rules: Rules, st: core.State, hands: list[str], table: str, piles: list[str] | None) -> list[int]:
    """Empty game 0's hands, table, piles, knocks and revealed cards, then lay ``hands`` (one text a seat), ``table``
    and ``piles`` (one text a side); returns the ids placed, in that order (a card named twice fails)."""
    deck = rules.deck
    st.hands[:] = False
    st.table[:] = False
    st.piles[:] = False
    st.revealed[:] = False
    st.knock_points[:] = 0
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
    assert len(set(used)) == len(used), "a card is named twice"
    return used


def _start_play(st: core.State, phase: core.Phase, last_capturer: int) -> None:
    """Game 0 waits for ``phase``'s decision with no card pending or picked, no scopa yet and ``last_capturer``."""
    st.phase[0] = phase
    st.pending[0] = -1
    st.picked[:] = False
    st.scope[:] = 0
    st.last_capturer[0] = last_capturer


def reference_position(
    variant: str | Rules,
    hands: list[str],
    table: str,
    *,
    stock: str = "",
    deal_no: int | None = None,
    current: int = 0,
    dealer: int | None = None,
) -> ReferenceGame:
    """A game of the plain reference engine (seed 1) put into a hand-built play-phase position by setting its
    attributes: ``stock`` in the given order, the last deal unless ``deal_no`` is given, the dealer just before
    ``current`` unless given; piles, scope and knocks empty."""
    game = ReferenceGame(variant, seed=1)
    rules, deck = game.rules, game.rules.deck
    n = rules.num_players
    game.hands = [set(parse_cards(h, deck)) for h in hands]
    game.table = set(parse_cards(table, deck))
    game.stock = list(parse_cards(stock, deck))
    game.deal_no = rules.num_deals - 1 if deal_no is None else deal_no
    game.current = current
    game.dealer = (current - 1) % n if dealer is None else dealer
    game.piles, game.scope = [set() for _ in rules.sides], [0] * rules.num_sides
    game.revealed, game.knock_points = [set() for _ in range(n)], [0] * rules.num_sides
    game.last_capturer, game.table_take, game.knock_queue = None, None, []
    return game


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


def same_state(a: core.State, b: core.State) -> None:
    """Every field of two batches of games is equal."""
    for f in dataclasses.fields(core.State):
        assert np.array_equal(getattr(a, f.name), getattr(b, f.name)), f.name


def random_actions(mask: npt.NDArray[np.bool_], rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """A uniformly random legal action of each game of the (B, A) ``mask`` (0 for a game with none)."""
    return np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])


def random_steps(rules: Rules | str, state: core.State, steps: int, rng: np.random.Generator) -> None:
    """Step every game of ``state`` ``steps`` times with ``random_actions``."""
    for _ in range(steps):
        core.step(rules, state, random_actions(core.legal_action_mask(rules, state), rng))


def play_on_alike(rules: Rules, state: core.State, twin: core.State, rng: np.random.Generator, steps: int) -> None:
    """Step ``state`` and ``twin`` (a copy of it, say one restored from a save) ``steps`` times with the same random
    legal actions: the masks, observations and every step result must be the same."""
    for _ in range(steps):
        mask = core.legal_action_mask(rules, state)
        assert np.array_equal(mask, core.legal_action_mask(rules, twin))
        assert np.array_equal(observation.observe(rules, state), observation.observe(rules, twin))
        acts = random_actions(mask, rng)
        a, b = core.step(rules, state, acts), core.step(rules, twin, acts)
        for f in dataclasses.fields(core.StepInfo):
            assert np.array_equal(getattr(a, f.name), getattr(b, f.name)), f.name


def random_positions(rules: Rules, games: int, plies: int, seed: int, knock_bias: float = 0.0) -> core.State:
    """``games`` games after ``plies`` random decisions each (finished games are restarted); ``knock_bias`` is added
    to the random keys of cirulla's knock actions, to knock more often than uniform (revealed cards then common)."""
    rng = np.random.default_rng(seed)
    st = core.reset(rules, np.arange(games, dtype=np.uint64) + np.uint64(seed * 1000))
    for _ in range(plies):
        mask = core.legal_action_mask(rules, st)
        keys = rng.random(mask.shape)
        if knock_bias:
            keys[:, rules.num_cards + 1 :] += knock_bias
        keys[~mask] = -1
        core.step(rules, st, keys.argmax(axis=1), autoreset=True)
    return st


def reshuffle_hidden(rules: Rules, st: core.State, rng: np.random.Generator) -> core.State:
    """A copy where every game's unseen cards (from the acting seat) are dealt again at random: hand sizes kept,
    cirulla's knocked (revealed) cards kept in their seat."""
    out = st.copy()
    d = rules.num_cards
    for g in range(st.batch_size):
        seat = int(st.current[g])
        others = [s for s in range(rules.num_players) if s != seat]
        hidden = [int(c) for s in others for c in np.flatnonzero(st.hands[g, s] & ~st.revealed[g, s])]
        pos = int(st.stock_pos[g])
        hidden += [int(c) for c in st.deck[g, pos:]]
        new = list(rng.permutation(hidden))
        for s in others:
            k = int((st.hands[g, s] & ~st.revealed[g, s]).sum())
            out.hands[g, s] = st.revealed[g, s]
            out.hands[g, s, new[:k]] = True
            new = new[k:]
        out.deck[g, pos:] = np.array(new, dtype=np.int8)
        assert len(new) == d - pos
    return out


def assert_blind_to_hidden_cards(agent: Policy, rules: Rules) -> None:
    """``agent`` decides alike (``decisions``: seed 7, two calls) in 10 random positions after 3, 14 and 27 decisions
    and in the same positions with every game's unseen cards dealt again (``reshuffle_hidden``)."""
    rng = np.random.default_rng(13)
    for plies in (3, 14, 27):
        st = random_positions(rules, 10, plies, seed=plies)
        other = reshuffle_hidden(rules, st, rng)
        assert not np.array_equal(st.hands, other.hands), "the reshuffle changed nothing: the test is void"
        assert np.array_equal(decisions(agent, rules, st, seed=7, calls=2), decisions(agent, rules, other, 7, 2))


def play_every_rotation(
    rules: Rules | str, agent: Policy, opponent: Policy, deals: int, mode: Literal["hands", "matches"]
) -> GameResults:
    """``agent`` against ``opponent``: each of ``deals`` deals (seeds 0, 1, ...) played once per rotation of
    ``rotation_lineups`` (with two seats: each seat in turn); the core raises on an illegal move."""
    from agents.training.duplicate_eval import rotation_lineups

    rot = rotation_lineups(get_rules(rules))
    return play(rules, [agent, opponent], np.tile(rot, (deals, 1)), np.repeat(np.arange(deals), len(rot)), mode=mode)


def act_batch(rules: Rules, st: core.State) -> ActBatch:
    """The decision batch of every unfinished game of ``st``, state included."""
    rows = np.flatnonzero(st.phase != core.Phase.DONE)
    return ActBatch(rules, observation.observe(rules, st)[rows], core.legal_action_mask(rules, st)[rows], st, rows)


def decisions(agent: Policy, rules: Rules, st: core.State, seed: int, calls: int = 3) -> npt.NDArray[np.int64]:
    """The actions of ``calls`` successive decisions on every game of ``st``, after seeding the agent."""
    agent.seed(seed)
    batch = act_batch(rules, st)
    return np.stack([agent.act(batch) for _ in range(calls)])


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter started in the repository's root, its output captured; checks that
    it exited 0 (its stderr is the message where not)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out


def leaderboard_outputs(tmp_path: Path) -> list[str]:
    """The ``leaderboard`` command's options that put its runs, page and plot under ``tmp_path``."""
    docs = tmp_path / "docs"
    return [
        "--out",
        str(tmp_path / "runs"),
        "--doc",
        str(docs / "leaderboard.md"),
        "--plot",
        str(docs / "img" / "leaderboard.png"),
    ]


SMOKE_CONFIG = str(ROOT / "configs" / "smoke.yaml")
"""configs/smoke.yaml: 4,096 steps, an evaluation and a step file every 2,048."""


def train_smoke(root: Path, name: str, *extra: str) -> Path:
    """Train the smoke config (with ``train.py``'s options ``extra``) as run ``name`` under ``root``; returns the
    run's folder."""
    import train

    assert train.main(["--config", SMOKE_CONFIG, "--run-root", str(root), "--name", name, *extra]) == 0
    (run,) = [p for p in root.iterdir() if p.is_dir() and f"__{name}__" in p.name]
    return run


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
        core.step(rules, st, np.where(st.done, 0, uniform_legal(core.legal_action_mask(rules, st), rng)))
    return core.State.concat(out)


def json_scalars(max_text: int) -> SearchStrategy[Any]:
    """Hypothesis strategy: any JSON scalar as Python's json module reads it (None, booleans, integers far beyond 64
    bits, floats with NaN and the infinities, text of up to ``max_text`` characters), the fuzz tests' junk values."""
    from hypothesis import strategies as st

    return st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=max_text))


def pretend_no_shipped_bot(monkeypatch: Any, variant: str) -> None:
    """Every variant ships a bot: make ``agents.nets.bot.shipped_bot`` (and so ``shipped_bot_spec``, ``bot`` alone and
    the games' default opponent) find none for ``variant``, to test the no-bot path. ``monkeypatch``: pytest's."""
    import agents.nets.bot as bot_module

    found = bot_module.shipped_bot
    monkeypatch.setattr(bot_module, "shipped_bot", lambda r, *a: None if get_rules(r).name == variant else found(r, *a))
