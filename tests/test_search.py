"""Tests of the search agents (agents/search/pimc.py): legal play, determinism, blindness to hidden cards, exact end
game.

Blindness: a position's unseen cards (other hands and the stock) are dealt again at random, keeping every hand size;
an agent that reads only what its seat may know must then make exactly the same decisions for the same seed. A
deliberately cheating agent shows that the check can fail.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agents.base import AgentSpecError, make_agent
from agents.baselines.features import Moves
from agents.baselines.greedy import greedy_moves
from agents.search.endgame import open_endgame_rows, optimal_open_actions, solve_open
from agents.search.ismcts import ISMCTSAgent
from agents.search.lookahead import apply_moves, rollout, sample_worlds, search_tree
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core, observation, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.engine.state_moves import is_open
from scopa_env.games.driver import play
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, Rules, get_rules
from tests.helpers import assert_blind_to_hidden_cards, decisions, random_positions, reshuffle_hidden, sampled_positions

SMALL = {"pimc": "pimc:worlds=3,endgame=4", "ismcts": "ismcts:iters=12,parallel=6"}
"""Tiny budgets for the legality tests."""


class PeekingAgent(Policy):
    """Cheats: plays the hand card whose rank the next seat holds most of (reads the next seat's hand)."""

    name = "peek"
    needs_state = True

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        assert batch.state is not None and batch.games is not None
        st, g = batch.state, batch.games
        nxt = (st.current[g].astype(np.intp) + 1) % self.rules.num_players
        r = self.rules.deck.num_ranks
        theirs = st.hands[g, nxt].reshape(len(g), 4, r).sum(axis=1)
        score = np.tile(theirs, 4) + np.arange(self.rules.num_cards) * 1e-3
        return np.where(batch.mask, score, -1.0).argmax(axis=1)


# --------------------------------------------------------------------------------------------------------------
# Worlds.


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "simple-5", "simple-6-teams"])
def test_sampled_worlds_are_consistent(variant: str) -> None:
    rules = get_rules(variant)
    st = random_positions(rules, 16, 9, seed=3)
    games = np.flatnonzero(st.phase != Phase.DONE)
    worlds, wrow = sample_worlds(rules, st, games, 4, np.random.default_rng(0))
    assert worlds.batch_size == 4 * games.size and np.array_equal(wrow, np.repeat(np.arange(games.size), 4))
    src = games[wrow]
    seat = st.current[src].astype(np.intp)
    ar = np.arange(wrow.size)
    assert np.array_equal(worlds.hands[ar, seat], st.hands[src, seat]), "own hand changed"
    for field in ("table", "piles", "stock_pos", "current", "phase", "pending", "picked", "scope", "scores"):
        assert np.array_equal(getattr(worlds, field), getattr(st, field)[src]), f"{field} changed"
    assert np.array_equal(worlds.hands.sum(axis=2), st.hands[src].sum(axis=2)), "hand sizes changed"
    d = rules.num_cards
    for w in range(worlds.batch_size):
        stock = worlds.deck[w, worlds.stock_pos[w] :].astype(np.intp)
        where = np.zeros(d, dtype=np.intp)
        where += worlds.hands[w].sum(axis=0) + worlds.table[w] + worlds.piles[w].sum(axis=0)
        np.add.at(where, stock, 1)
        if worlds.pending[w] >= 0:
            where[worlds.pending[w]] += 1
        assert (where == 1).all(), f"world {w}: a card is missing or duplicated"
        assert sorted(worlds.deck[w].tolist()) == list(range(d)), f"world {w}: the deck is not a permutation"
    # The worlds differ from one another (the unseen cards really are resampled).
    assert not np.array_equal(worlds.hands[0::4], worlds.hands[1::4])


def test_worlds_of_an_inconsistent_state_are_refused() -> None:
    """A state whose unseen cards do not fill the other hands and the stock (a card lost from a hand) deals no world:
    the compiled dealing refuses it for both search paths, whatever the world count of the other games."""
    rules = get_rules("classic")
    st = random_positions(rules, 4, 3, seed=3)
    games = np.flatnonzero(st.phase != Phase.DONE)
    other = (int(st.current[games[-1]]) + 1) % rules.num_players
    st.hands[games[-1], other, np.flatnonzero(st.hands[games[-1], other])[0]] = False
    with pytest.raises(RuntimeError, match="inconsistent"):
        sample_worlds(rules, st, games, 2, np.random.default_rng(0))
    counts = np.zeros(games.size, dtype=np.intp)
    assert sample_worlds(rules, st, games, counts, np.random.default_rng(0))[0].batch_size == 0


def test_open_positions_have_a_single_world() -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 32, 30, seed=4)  # 30 plies: the stock is empty in every game still running
    games = np.flatnonzero((st.phase == Phase.PLAY) & (st.stock_pos >= rules.num_cards))
    assert games.size > 0
    assert is_open(rules, st, games).all()
    worlds, _ = sample_worlds(rules, st, games, 1, np.random.default_rng(5))
    assert np.array_equal(worlds.hands, st.hands[games]), "an open position was not rebuilt exactly"


def test_rollout_plays_to_the_end_of_the_hand() -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 24, 5, seed=6)
    st.phase[st.phase == Phase.CHOOSE] = Phase.DONE  # only whole-move positions
    running = st.phase != Phase.DONE
    pts = rollout(rules, st.copy(), greedy_moves)
    assert (pts[~running] == 0).all()
    assert (pts[running].sum(axis=1) >= 3).all(), "a finished hand always scores carte/denari/settebello/primiera"


# --------------------------------------------------------------------------------------------------------------
# Exact end game against a brute-force minimax over the core.


def _canonical_moves(rules: Rules, st: State) -> list[tuple[int, frozenset[int]]]:
    """Legal moves of game 0, keeping for each capture only the coins-first choice of suits within each rank."""
    deck = rules.deck
    table = np.flatnonzero(st.table[0])
    out = []
    for card, cap in state_moves.legal_moves(rules, st, 0):
        ok = True
        for rank in {int(deck.rank[c]) for c in cap}:
            of_rank = [int(c) for c in table if deck.rank[c] == rank]  # in suit order
            k = sum(1 for c in cap if deck.rank[c] == rank)
            ok &= set(of_rank[:k]) <= cap
        if ok:
            out.append((card, cap))
    return out


def _play_on_core(rules: Rules, st: State, card: int, cap: frozenset[int]) -> core.StepInfo:
    info = core.step(rules, st, np.array([card]))
    while not info.move_done[0]:
        picks = sorted(cap - set(np.flatnonzero(st.picked[0]).tolist()))
        info = core.step(rules, st, np.array([picks[0]]))
    return info


def _brute_force(rules: Rules, st: State) -> dict[tuple[int, frozenset[int]], npt.NDArray[np.float64]]:
    """Value (hand points per side) of every canonical move of game 0, both sides playing max^n to the end."""
    side_of = rules.seat_side
    out = {}
    for move in _canonical_moves(rules, st):
        child = st.copy()
        info = _play_on_core(rules, child, *move)
        if info.hand_over[0]:
            out[move] = info.hand_points[0, :, -1].astype(np.float64)
            continue
        values = list(_brute_force(rules, child).values())
        mover = side_of[int(child.current[0])]
        margins = [v[mover] - (v.sum() - v[mover]) / (len(v) - 1) for v in values]
        out[move] = values[int(np.argmax(margins))]
    return out


def _open_positions(rules: Rules, num_games: int, plies: int, seed: int, most: int) -> tuple[State, np.ndarray]:
    """Random positions and up to ``most`` of their games in the PLAY phase of an open end game (<= 6 plies)."""
    st = random_positions(rules, num_games, plies, seed=seed)
    games = np.flatnonzero((st.phase == Phase.PLAY) & (st.stock_pos >= rules.num_cards))
    return st, games[open_endgame_rows(rules, st, games, 6)][:most]


def test_exact_endgame_matches_brute_force() -> None:
    rules = get_rules("classic")
    st, games = _open_positions(rules, 40, 31, seed=8, most=8)
    assert games.size >= 4
    worlds, _ = sample_worlds(rules, st, games, 1, np.random.default_rng(0))
    limits = st.hands[games].sum(axis=(1, 2)).astype(np.intp)
    moves, values = search_tree(rules, worlds, limits, greedy_moves)
    for i, g in enumerate(games):
        want = _brute_force(rules, st.take([g]))
        got = {
            (int(moves.card[k]), frozenset(np.flatnonzero(moves.capture[k]).tolist())): values[k]
            for k in range(moves.starts[i], moves.starts[i + 1])
        }
        assert got.keys() == want.keys()
        for move, v in want.items():
            assert np.array_equal(got[move], v), f"game {g}, move {move}: search {got[move]} != brute force {v}"


@pytest.mark.parametrize("spec", ["expert", "pimc:worlds=2"])
def test_open_endgame_play_is_optimal(spec: str) -> None:
    rules = get_rules("classic")
    st, games = _open_positions(rules, 40, 32, seed=9, most=6)
    agent = make_agent(spec, rules, seed=0)
    batch = ActBatch(rules, observation.observe(rules, st)[games], core.legal_action_mask(rules, st)[games], st, games)
    actions = agent.act(batch)
    for a, g in zip(actions, games, strict=True):
        one = st.take([g])
        values = _brute_force(rules, one)
        me = rules.seat_side[int(one.current[0])]
        margin = {m: v[me] - v[1 - me] for m, v in values.items()}
        best = max(margin.values())
        assert max(v for (c, _), v in margin.items() if c == a) == best, f"game {g}: card {a} is not optimal"


def test_optimal_open_actions_are_exactly_the_best_cards() -> None:
    rules = get_rules("classic")
    st, games = _open_positions(rules, 60, 32, seed=11, most=10)
    assert games.size >= 6
    best = optimal_open_actions(rules, st, games)
    ties = 0
    for row, g in enumerate(games):
        one = st.take([g])
        me = rules.seat_side[int(one.current[0])]
        margin = {m: v[me] - v[1 - me] for m, v in _brute_force(rules, one).items()}
        top = max(margin.values())
        want = sorted({c for (c, _), v in margin.items() if v == top})
        assert np.flatnonzero(best[row]).tolist() == want, f"game {g}"
        ties += len(want) > 1
    assert ties >= 1  # the test meets positions with several best cards
    done = st.copy()
    done.phase[games[0]] = Phase.DONE
    assert games[0] not in games[open_endgame_rows(rules, done, games, 6)]  # a finished game is no end game
    with pytest.raises(ValueError, match="hide cards"):
        optimal_open_actions(rules, st, np.flatnonzero(st.stock_pos < rules.num_cards)[:1])
    none = np.zeros(0, dtype=np.intp)  # no open end game in a batch: nothing to solve
    assert optimal_open_actions(rules, st, none).shape == (0, rules.num_cards)
    assert solve_open(rules, st, none).shape == (0,)


def test_apply_moves_finishes_captures_being_chosen() -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 64, 7, seed=10)
    st.phase[st.phase == Phase.CHOOSE] = Phase.DONE
    live = np.flatnonzero(st.phase != Phase.DONE)
    moves, best = greedy_moves(rules, st, live)
    cards = np.zeros(st.batch_size, dtype=np.int64)
    caps = np.zeros((st.batch_size, rules.num_cards), dtype=np.bool_)
    cards[live], caps[live] = moves.card[best], moves.captures(best)
    before = st.copy()
    apply_moves(rules, st, cards, caps)
    assert (st.phase[live] != Phase.CHOOSE).all()
    took = before.table[live] & ~st.table[live]
    assert np.array_equal(took, caps[live]), "the captured cards are not the chosen ones"


# --------------------------------------------------------------------------------------------------------------
# Legal play, determinism, blindness.


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_search_agents_pick_legal_actions(variant: str) -> None:
    """One batched decision in positions early and late in the hand (CHOOSE phases included) of every variant."""
    rules = get_rules(variant)
    agents = [make_agent(SMALL["pimc"], rules, seed=1), make_agent(SMALL["ismcts"], rules, seed=2)]
    for plies in (4, 3 * rules.num_players + 7):
        st = random_positions(rules, 8, plies, seed=plies)
        rows = np.flatnonzero(st.phase != Phase.DONE)
        mask = core.legal_action_mask(rules, st)[rows]
        for agent in agents:
            actions = agent.act(ActBatch(rules, observation.observe(rules, st)[rows], mask, st, rows))
            assert mask[np.arange(rows.size), actions].all(), f"{agent.name}: illegal action in {variant}"


def test_search_agents_play_whole_hands() -> None:
    rules = get_rules("classic")
    agents = [make_agent(SMALL["pimc"], rules, seed=1), make_agent(SMALL["ismcts"], rules, seed=2)]
    res = play(rules, agents, [[0, 1], [1, 0]], [11, 12], mode="hands")  # core.step raises on an illegal action
    assert (res.hands == 1).all()


@pytest.mark.parametrize("spec", ["pimc:worlds=4", "pimc:worlds=3,depth=2", "ismcts:iters=16,parallel=8"])
def test_search_is_deterministic_for_a_seed(spec: str) -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 12, 8, seed=12)
    a = decisions(make_agent(spec, rules, seed=5), rules, st, seed=5)
    b = decisions(make_agent(spec, rules, seed=99), rules, st, seed=5)  # reseeding restores the same stream
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("spec", "variant"),
    [
        ("greedy", "classic"),
        ("expert", "classic"),
        ("expert", "scopa-a-quattro"),
        ("pimc:worlds=4", "classic"),
        ("pimc:worlds=2,depth=2", "classic"),
        ("pimc:worlds=3", "scopa-a-quattro"),
        ("ismcts:iters=16,parallel=8", "classic"),
        ("ismcts:iters=8,parallel=4", "scopa-a-quattro"),
    ],
)
def test_agents_are_blind_to_hidden_cards(spec: str, variant: str) -> None:
    rules = get_rules(variant)
    assert_blind_to_hidden_cards(make_agent(spec, rules, seed=0), rules)


def test_blindness_check_catches_a_cheater() -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 32, 3, seed=14)
    other = reshuffle_hidden(rules, st, np.random.default_rng(15))
    cheat = PeekingAgent(rules, 0)
    assert not np.array_equal(decisions(cheat, rules, st, 0, calls=1), decisions(cheat, rules, other, 0, calls=1))


# --------------------------------------------------------------------------------------------------------------
# Options.


def test_search_options() -> None:
    rules = get_rules("classic")
    pimc = make_agent("pimc:worlds=7,depth=2,endgame=0,rollout=expert", rules)
    assert isinstance(pimc, PIMCAgent) and (pimc.worlds, pimc.depth, pimc.endgame) == (7, 2, 0)
    ismcts = make_agent("ismcts:iters=50,c=1.5,parallel=10", rules)
    assert isinstance(ismcts, ISMCTSAgent) and (ismcts.iters, ismcts.c, ismcts.parallel) == (50, 1.5, 10)
    with pytest.raises(ValueError, match="unknown rollout policy"):
        make_agent("pimc:rollout=magic", rules)
    with pytest.raises(ValueError, match="worlds must be >= 1"):
        make_agent("pimc:worlds=0", rules)
    with pytest.raises(AgentSpecError, match="bad option"):
        make_agent("ismcts:worlds=3", rules)


# --------------------------------------------------------------------------------------------------- the kernel


def _batched_greedy(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> tuple[Moves, npt.NDArray[np.intp]]:
    """``greedy_moves`` under another name: ``move_margins`` then searches on the batched core, as before the
    compiled kernel (which it uses for ``greedy_moves`` itself)."""
    return greedy_moves(rules, state, games)


def check_pimc_same_play(variant: str, num: int, seed: int, spec: dict[str, Any] | None = None) -> None:
    """pimc on the kernel chooses what pimc on the batched core chose, decision by decision, for the same seeds."""
    rules = get_rules(variant)
    pos = sampled_positions(rules, num, seed)
    for i in range(pos.batch_size):
        one = pos.take([i])
        new, old = PIMCAgent(rules, seed=i, **(spec or {})), PIMCAgent(rules, seed=i, **(spec or {}))
        old.policy = _batched_greedy
        row = np.zeros(1, dtype=np.intp)
        assert int(new._play(one, row)[0]) == int(old._play(one, row)[0]), f"{variant} position {i}"


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "cirulla", "simple-3", "scopa-d-assi"])
def test_pimc_on_the_kernel_plays_as_on_the_batched_core(variant: str) -> None:
    check_pimc_same_play(variant, 12, 5, {"worlds": 8})


def test_pimc_on_the_kernel_with_depth_two_plays_as_on_the_batched_core() -> None:
    check_pimc_same_play("classic", 8, 6, {"worlds": 4, "depth": 2})


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico"])
def test_pimc_on_the_kernel_plays_as_on_the_batched_core_on_2000_positions(variant: str) -> None:
    check_pimc_same_play(variant, 2000, 77)


def test_pimc_searches_on_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default pimc (greedy rollouts) searches its worlds on the compiled kernel, not on the batched core."""
    import agents.search.lookahead as lookahead

    calls: list[int] = []
    real = lookahead.kernel_sampled_search

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(lookahead, "kernel_sampled_search", counted)
    monkeypatch.setattr(lookahead, "search_tree", lambda *a: pytest.fail("pimc searched on the batched core"))
    rules = get_rules("classic")
    pos = sampled_positions(rules, 2, 3)
    PIMCAgent(rules, seed=0, worlds=4)._play(pos, np.arange(2))
    assert calls


def test_ismcts_with_kernel_rollouts_plays_as_on_the_batched_core() -> None:
    """ISMCTS's greedy rollouts run on the kernel: the same rewards, so the same decisions for the same seed."""
    for variant in ("classic", "scopone-scientifico", "cirulla"):
        rules = get_rules(variant)
        pos = sampled_positions(rules, 6, 9)
        for i in range(pos.batch_size):
            one = pos.take([i])
            new = ISMCTSAgent(rules, seed=i, iters=30, parallel=10)
            old = ISMCTSAgent(rules, seed=i, iters=30, parallel=10)
            old.policy = _batched_greedy
            row = np.zeros(1, dtype=np.intp)
            assert int(new._play(one, row)[0]) == int(old._play(one, row)[0]), f"{variant} position {i}"


def test_az_with_greedy_rollouts_on_the_kernel_plays_as_on_the_batched_core() -> None:
    """az (the classic bot's network as prior, greedy rollouts) searches its worlds on the kernel: same decisions."""
    from pathlib import Path

    from agents.search.endgame import best_actions

    bot = Path(__file__).resolve().parents[1] / "agents" / "bots" / "classic"
    rules = get_rules("classic")
    pos = sampled_positions(rules, 10, 12)
    row = np.zeros(1, dtype=np.intp)
    for i in range(pos.batch_size):
        one = pos.take([i])
        new = make_agent(f"az:path={bot},worlds=8,rollout=greedy", rules, seed=i)
        old = make_agent(f"az:path={bot},worlds=8,rollout=greedy", rules, seed=i)
        old.policy = _batched_greedy  # type: ignore[attr-defined]
        got = best_actions(one, row, new.search(one, row))  # type: ignore[attr-defined]
        want = best_actions(one, row, old.search(one, row))  # type: ignore[attr-defined]
        assert int(got[0]) == int(want[0]), f"position {i}"


@pytest.mark.parametrize(
    ("variant", "spec", "total"),
    [
        (
            "scopone-scientifico",
            "bot:path=agents/bots/scopone-scientifico,search=false,prefer=numpy,endgame_worlds=4",
            40,
        ),
        (
            "scopa-a-quattro",
            "bot:path=agents/bots/scopa-a-quattro,search=false,prefer=numpy,endgame=8,endgame_worlds=3",
            36,
        ),
    ],
)
def test_a_bot_with_closed_end_games_is_legal_deterministic_and_blind(variant: str, spec: str, total: int) -> None:
    """``endgame_worlds``: once at most ``endgame`` plies are left, the bot plays pimc's exact end game over sampled
    deals; earlier, its network. The positions (``total``: the plies of a hand) reach that window (and some not yet),
    so both paths are checked."""
    rules = get_rules(variant)
    agent = make_agent(spec, rules, seed=0)
    assert agent.closed is not None  # type: ignore[attr-defined]
    network = make_agent(re.sub(r"endgame_worlds=\d+", "endgame_worlds=0", spec), rules)  # open-book end games only
    rng = np.random.default_rng(5)
    changed = 0
    for plies in (total - 9, total - 6, total - 3):
        st = random_positions(rules, 12, plies, seed=plies)
        rows = np.flatnonzero(st.phase != Phase.DONE)
        mask = core.legal_action_mask(rules, st)[rows]
        a = decisions(agent, rules, st, seed=7, calls=2)
        assert mask[np.arange(rows.size), a[0]].all()
        assert np.array_equal(a, decisions(make_agent(spec, rules, seed=99), rules, st, seed=7, calls=2))
        other = reshuffle_hidden(rules, st, rng)
        assert not np.array_equal(st.hands, other.hands), "the reshuffle changed nothing: the test is void"
        assert np.array_equal(a, decisions(agent, rules, other, seed=7, calls=2))
        changed += int((a[0] != decisions(network, rules, st, seed=7, calls=1)[0]).sum())
    assert changed > 0, "the sampled end game never changed the network's move: the test is void"
