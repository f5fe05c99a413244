"""Differential tests of the compiled single-game kernel (``scopa_env.engine.kernel``) against the batched core and the
reference engine, on every variant (cirulla's included).

- Move for move against ``core``: random games (with illegal actions tried and refused on both); after every
  step the whole state (hands, table, piles, deck, phase, scores, cirulla's revealed cards and knock points...),
  the legal actions, the observation of every seat and what the step did (move, capture, scopa, hand points,
  leftovers, winner, knocks, table takes) must agree.
- Against ``reference`` (the oracle): every card's legal captures at every decision, and every hand's points.
- The search candidates (``agents.search.kernel_search``) against ``agents.baselines.features.generate_moves``
  (cards, kinds, partitions, captured cards, scopa flags), in the PLAY and CHOOSE phases.
- The exact end game (``agents.search.endgame``, on the compiled search) against the batched search it replaced
  (``lookahead.move_margins`` to the end of the hand) on fixed sets of open-book positions: the same moves, the
  same set of best first actions.

Fast by default (a few games per variant); ``-m slow`` plays 10,000 games and checks >= 2,000 end-game positions.
"""

from __future__ import annotations

import functools
import io
import sys

import numpy as np
import pytest

from agents.baselines.features import generate_moves
from agents.baselines.greedy import greedy_moves
from agents.search import compiled
from agents.search.endgame import best_actions, open_endgame_rows, optimal_open_actions, solve_open
from agents.search.lookahead import move_margins
from scopa_env.engine import core, observation, single, state_moves
from scopa_env.engine.kernel import KernelUnavailableError, kernel_for, pack_states
from scopa_env.engine.single import SingleGame, bits_of
from scopa_env.oracle import reference, reference_scoring
from scopa_env.rules import VARIANTS, get_rules
from scopa_env.rules.scoring import point_fields
from tests.helpers import sampled_positions


def _kernel_fields(k: object, st: np.ndarray) -> dict[str, list[int]]:
    m = k.mod  # type: ignore[attr-defined]
    r = k.rules  # type: ignore[attr-defined]
    n, s, d = r.num_players, r.num_sides, r.num_cards
    out = {
        "hands": st[m.HANDS : m.HANDS + n],
        "table": st[m.TABLE : m.TABLE + 1],
        "piles": st[m.PILES : m.PILES + s],
        "picked": st[m.PICKED : m.PICKED + 1],
        "revealed": st[m.REVEALED : m.REVEALED + n],
        "deck": st[m.DECK : m.DECK + d],
        "scope": st[m.SCOPE : m.SCOPE + s],
        "scores": st[m.SCORES : m.SCORES + s],
        "knock_points": st[m.KNOCKP : m.KNOCKP + s],
    }
    for name, at in (
        ("stock_pos", m.STOCK),
        ("current", m.CURRENT),
        ("dealer", m.DEALER),
        ("phase", m.PHASE),
        ("pending", m.PENDING),
        ("last_capturer", m.LAST),
        ("hand_no", m.HAND_NO),
        ("deal_no", m.DEAL_NO),
        ("winner", m.WINNER),
        ("table_take", m.TTAKE),
    ):
        out[name] = st[at : at + 1]
    return {key: [int(x) for x in v] for key, v in out.items()}


def _core_fields(state: core.State) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name in ("hands", "piles", "revealed"):
        out[name] = [bits_of(x) for x in getattr(state, name)[0]]
    for name in ("table", "picked"):
        out[name] = [bits_of(getattr(state, name)[0])]
    for name in ("deck", "scope", "scores", "knock_points"):
        out[name] = [int(x) for x in getattr(state, name)[0]]
    for name in ("stock_pos", "current", "dealer", "phase", "pending", "last_capturer", "hand_no", "deal_no"):
        out[name] = [int(getattr(state, name)[0])]
    out["winner"] = [int(state.winner[0])]
    out["table_take"] = [int(state.table_take[0])]
    return out


STEP_INFO_FIELDS = (
    "move_done",
    "card",
    "capture",
    "scopa",
    "hand_over",
    "leftover",
    "leftover_side",
    "match_over",
    "winner",
    "new_hand",
    "knock",
    "table_take",
)
"""The ``core.StepInfo`` fields that the kernel's step info holds, each in its layout's slot ``I_<FIELD>`` (two under
a shorter name: ``INFO_SLOTS``), the card sets (``BIT_FIELDS``) as bit sets."""
INFO_SLOTS = {"leftover_side": "I_LEFT_SIDE", "table_take": "I_TTAKE"}
BIT_FIELDS = ("capture", "leftover")


def _step_info_field(info: core.StepInfo, name: str) -> int:
    """Game 0's ``name`` field of ``info`` as the kernel's step info holds it (a card set as its bits)."""
    value = getattr(info, name)[0]
    return bits_of(value) if name in BIT_FIELDS else int(value)


def run_kernel_differential(variant: str, seeds: range, observe_every: int = 1, illegal_rate: float = 0.05) -> int:
    """Play the matches of ``seeds`` on the core and on the kernel, comparing everything after every step (and the
    captures and hand points against the reference engine); returns the number of steps compared."""
    rules = get_rules(variant)
    k = kernel_for(rules)
    m = k.mod
    f = len(point_fields(rules))
    s = rules.num_sides
    rng = np.random.default_rng(seeds.start)
    info = np.zeros(m.INFO_SIZE, dtype=np.int64)
    obs = np.zeros(k.obs_size, dtype=np.float32)
    slots = {name: getattr(m, INFO_SLOTS.get(name, f"I_{name.upper()}")) for name in STEP_INFO_FIELDS}
    steps = 0
    for seed in seeds:
        c = core.reset(rules, [seed])
        st = k.new_state(seed)
        while True:
            where = f"{variant} seed {seed} step {steps}"
            assert _kernel_fields(k, st) == _core_fields(c), where
            if c.done[0]:
                break
            mask = core.legal_action_mask(rules, c)[0]
            assert int(m.legal_bits(k.rc, k.pc, st)) == bits_of(mask), where
            assert int(m.remaining_plies(k.rc, st)) == int(state_moves.remaining_plies(rules, c)[0]), where
            assert bool(m.is_open(k.rc, st)) == bool(state_moves.is_open(rules, c)[0]), where
            if steps % observe_every == 0:
                for seat in range(rules.num_players):
                    m.observe(k.rc, st, seat, obs)
                    want = observation.observe(rules, c, np.array([seat]))[0]
                    assert np.array_equal(obs, want), f"{where} seat {seat}: {np.flatnonzero(obs != want)}"
            phase = int(c.phase[0])
            if phase == core.Phase.PLAY:  # every card's captures against the oracle's
                table = [int(x) for x in np.flatnonzero(c.table[0])]
                for card in np.flatnonzero(mask).tolist():
                    want_caps = reference.captures(rules, table, card)
                    count, union, _, _ = m.cirulla_options(k.rc, k.pc, bits_of(c.table[0]), card, 0)
                    assert count == len(want_caps), f"{where} card {card}"
                    assert union == sum(1 << x for x in set().union(*want_caps)), f"{where} card {card}"
            if rng.random() < illegal_rate:
                bad = np.flatnonzero(~mask)
                action = int(rng.choice(bad)) if bad.size else rules.num_actions
                assert m.step(k.rc, k.pc, st, action, info) == -1, where
                continue
            action = int(rng.choice(np.flatnonzero(mask)))
            ci = core.step(rules, c, np.array([action]))
            assert m.step(k.rc, k.pc, st, action, info) == 1, where
            steps += 1
            got = {name: int(info[at]) for name, at in slots.items()}
            want_info = {name: _step_info_field(ci, name) for name in STEP_INFO_FIELDS}
            assert got == want_info, where
            if ci.hand_over[0]:
                points = info[m.I_POINTS : m.I_POINTS + s * f].reshape(s, f)
                assert np.array_equal(points, ci.hand_points[0]), where
    return steps


@pytest.mark.parametrize("variant", VARIANTS)
def test_kernel_equals_the_core_and_the_reference_move_for_move(variant: str) -> None:
    assert run_kernel_differential(variant, range(2), observe_every=3) > 100


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_kernel_equals_the_core_on_10000_games(variant: str) -> None:
    games = 10_000 // len(VARIANTS) + 1  # 10,000 games in all
    run_kernel_differential(variant, range(5000, 5000 + games), observe_every=7, illegal_rate=0.0)


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "cirulla", "simple-3", "scopa-d-assi"])
def test_kernel_hand_points_equal_the_reference_scoring(variant: str) -> None:
    """Every hand's points of the kernel against ``reference_scoring.score_hand`` on the final piles."""
    rules = get_rules(variant)
    k = kernel_for(rules)
    m = k.mod
    f, s = len(point_fields(rules)), rules.num_sides
    info = np.zeros(m.INFO_SIZE, dtype=np.int64)
    rng = np.random.default_rng(4)
    hands = 0
    for seed in range(3):
        st = k.new_state(seed)
        while st[m.PHASE] != m.DONE:
            piles = st[m.PILES : m.PILES + s].copy()
            scope, knocks = st[m.SCOPE : m.SCOPE + s].copy(), st[m.KNOCKP : m.KNOCKP + s].copy()
            last, table = int(st[m.LAST]), int(st[m.TABLE])
            action = int(rng.choice(k.legal_list(st)))
            m.step(k.rc, k.pc, st, action, info)
            if not info[m.I_HAND_OVER]:
                continue
            hands += 1
            seat_side = rules.seat_side[int(info[m.I_SEAT])]
            card, cap = int(info[m.I_CARD]), int(info[m.I_CAPTURE])
            pile_sets = [{c for c in range(rules.num_cards) if int(p) >> c & 1} for p in piles]
            if cap:
                pile_sets[seat_side] |= {c for c in range(rules.num_cards) if (cap | 1 << card) >> c & 1}
                last = seat_side
                table &= ~cap
            else:
                table |= 1 << card
            if last >= 0:
                pile_sets[last] |= {c for c in range(rules.num_cards) if table >> c & 1}
            want = reference_scoring.score_hand(rules, pile_sets, list(scope), list(knocks) if rules.cirulla else None)
            got = info[m.I_POINTS : m.I_POINTS + s * f].reshape(s, f)
            keys = reference_scoring.point_keys(rules)
            assert [[row[key] for key in keys] for row in want] == got.tolist(), f"{variant} seed {seed}"
    assert hands >= 3


# --------------------------------------------------------------------------------------------------- search


@pytest.mark.parametrize("variant", VARIANTS)
def test_search_candidates_equal_generate_moves(variant: str) -> None:
    rules = get_rules(variant)
    k = kernel_for(rules)
    m = compiled.jit()  # the agents' search on the kernel
    pos = sampled_positions(get_rules(variant), 150, 3, rate=0.2, batch=12)
    games = np.arange(pos.batch_size)
    moves = generate_moves(rules, pos, games)
    packed = pack_states(rules, pos, games)
    buf = np.zeros((m.MAX_MOVES, 6), dtype=np.int64)
    caps = moves.capture
    seen_choose = False
    for i in games.tolist():
        seen_choose |= int(pos.phase[i]) == core.Phase.CHOOSE
        num = int(m.candidates(k.rc, k.pc, packed[i], buf))
        a, b = int(moves.starts[i]), int(moves.starts[i + 1])
        assert num == b - a, f"{variant} position {i}"
        assert buf[:num, 0].tolist() == moves.card[a:b].tolist()
        assert buf[:num, 1].tolist() == moves.kind[a:b].tolist()
        assert buf[:num, 2].tolist() == moves.part[a:b].tolist()
        assert buf[:num, 3].tolist() == [bits_of(x) for x in caps[a:b]]
        assert buf[:num, 4].tolist() == moves.scopa[a:b].astype(int).tolist()
    assert pos.batch_size >= 50


def _old_end_game(
    variant: str, pos: core.State
) -> tuple[np.ndarray, np.ndarray]:  # the batched search the kernel replaced
    rules = get_rules(variant)
    games = np.arange(pos.batch_size)
    limits = state_moves.remaining_plies(rules, pos, games)
    ones = np.ones(games.size, dtype=np.intp)
    searched = move_margins(rules, pos, games, ones, limits, greedy_moves, np.random.default_rng(0))
    moves, total, first = searched
    rows, js = np.nonzero(total >= total.max(axis=1, keepdims=True) - 1e-9)
    acts = state_moves.move_actions(
        pos.take(games[rows]), moves.card[first[rows] + js], moves.capture[first[rows] + js]
    )
    best = np.zeros((games.size, rules.num_actions), dtype=np.bool_)
    best[rows, acts] = True
    return best_actions(pos, games, searched), best


def end_game_positions(variant: str, num: int, seed: int, max_plies: int = 8) -> core.State:
    """``num`` open-book positions with at most ``max_plies`` left, from random games of ``variant``."""
    rules = get_rules(variant)
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < num:
        st = core.reset(rules, np.arange(seed, seed + 64))
        seed += 64
        while not st.done.all() and total < num:
            rows = open_endgame_rows(rules, st, np.arange(st.batch_size), max_plies)
            if rows.size:
                out.append(st.take(rows[: num - total]))
                total += min(rows.size, num - total)
            mask = core.legal_action_mask(rules, st)
            keys = np.where(mask, rng.random(mask.shape), -1.0)
            core.step(rules, st, np.where(st.done, 0, keys.argmax(axis=1)))
    return core.State.concat(out)


def check_end_game(variant: str, num: int, seed: int) -> None:
    rules = get_rules(variant)
    pos = end_game_positions(variant, num, seed)
    games = np.arange(pos.batch_size)
    old_moves, old_best = _old_end_game(variant, pos)
    assert np.array_equal(solve_open(rules, pos, games), old_moves), variant
    assert np.array_equal(optimal_open_actions(rules, pos, games), old_best), variant


END_GAME_VARIANTS = ["classic", "scopone-scientifico", "scopa-d-assi", "simple-3", "simple-6-teams", "cirulla"]


@pytest.mark.parametrize("variant", END_GAME_VARIANTS)
def test_exact_end_game_plays_as_the_batched_search_did(variant: str) -> None:
    check_end_game(variant, 60, 100)


@pytest.mark.slow
@pytest.mark.parametrize("variant", END_GAME_VARIANTS)
def test_exact_end_game_plays_as_the_batched_search_did_on_many_positions(variant: str) -> None:
    check_end_game(variant, 2000 if variant in ("classic", "scopone-scientifico") else 400, 7000)


# --------------------------------------------------------------------------------------------------- wiring


def test_the_kernel_serves_single_games_the_envs_and_the_end_game(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SingleGame`` steps on the kernel, so do the AEC and Gymnasium envs (the AEC env's step with its next
    observation, ``ScopaEnv``'s with its random opponent's replies), and the end-game solver searches on it (counted
    calls; the searches' own check is in tests/test_search.py)."""
    k = kernel_for("classic")
    search = compiled.jit()  # loaded (its first load warms up on the kernel) before the kernel's calls are counted
    calls = {"play": 0, "play_observed": 0, "play_then_random": 0, "solve_open_batch": 0}
    for name in calls:
        where = search if name == "solve_open_batch" else k.mod  # the agents' search, or the engine's kernel
        real = getattr(where, name)

        def counted(*args: object, _real: object = real, _name: str = name) -> object:
            calls[_name] += 1
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(where, name, counted)
    # SingleGame binds the kernel's entry points once per variant: a fresh memo for this test, the old one after it
    monkeypatch.setattr(single, "_consts", functools.cache(single._consts.__wrapped__))
    game = SingleGame("classic", 3)
    game.step(int(np.flatnonzero(game.mask())[0]))
    assert calls["play"] == 1
    pos = end_game_positions("classic", 3, 1)
    solve_open(get_rules("classic"), pos, np.arange(3))
    assert calls["solve_open_batch"] == 1  # the three positions in one compiled call
    from scopa_env import scopa_v0
    from scopa_env.envs.gym import ScopaEnv

    env = scopa_v0.raw_env()  # the AEC env (the parallel env wraps it)
    env.reset(seed=1)
    assert isinstance(env._game, SingleGame)
    before = calls["play_observed"]
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    assert calls["play_observed"] == before + 1
    gym_env = ScopaEnv("classic")
    gym_env.reset(seed=1)
    before = calls["play_then_random"]
    gym_env.step(int(np.flatnonzero(gym_env.action_masks())[0]))
    assert calls["play_then_random"] == before + 1  # the learner's move and the opponent's replies


def test_the_human_match_of_the_web_and_terminal_games_plays_on_single_game(monkeypatch: pytest.MonkeyPatch) -> None:
    """``agents.play.match.HumanMatch`` (the core of the terminal and the browser game) plays its game on a
    ``SingleGame``: the person's moves, their legality, the bots' steps and the hands' ends go through the kernel, and
    the batched core is never stepped nor asked for legal moves (a bot gets the core's ``State`` of the game only to
    decide)."""
    from agents.play.match import HumanMatch
    from agents.play.terminal import Match, Terminal
    from agents.play.web.game import WebGame
    from scopa_env.games.policy import RandomAgent

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the human match called the batched core's step or legal moves")

    monkeypatch.setattr(core, "step", refused)
    for name in ("legal_moves", "legal_move_lists", "move_actions"):
        monkeypatch.setattr(state_moves, name, refused)
    k = kernel_for("cirulla")
    plays = {"n": 0}
    real = k.mod.play

    def counted(*args: object) -> object:
        plays["n"] += 1
        return real(*args)

    monkeypatch.setattr(k.mod, "play", counted)
    monkeypatch.setattr(single, "_consts", functools.cache(single._consts.__wrapped__))
    rules = get_rules("cirulla")
    events: list[object] = []
    match = HumanMatch(rules, 0, {1: RandomAgent(rules, 1)}, 5, listener=events.append)
    assert isinstance(match.game, SingleGame)
    match.start()
    while True:
        match.play_bots()
        if match.done:
            break
        if match.knock_options():
            match.knock("none")
        else:
            match.play(*match.moves()[-1])
    assert match.winner >= 0 and plays["n"] > 20
    assert sum(type(e).__name__ == "HandOver" for e in events) == match.hands_over >= 1
    term = Terminal(io.StringIO(""), io.StringIO())
    assert isinstance(Match(rules, term, 0, {1: RandomAgent(rules, 1)}, None, 5).match.game, SingleGame)
    web = WebGame("g", rules, 0, {1: RandomAgent(rules, 1)}, {1: "random"}, None, 5)
    assert isinstance(web.match.game, SingleGame)


@pytest.mark.parametrize("variant", VARIANTS)
def test_whole_moves_on_the_kernel_equal_the_core_legal_moves(variant: str) -> None:
    """The person's legal moves in the human match (``agents.play.match.whole_moves``: each card and capture played
    out on copies of the ``SingleGame``) are ``state_moves.legal_moves`` of the same position, in the same order."""
    from agents.play.match import whole_moves

    rng = np.random.default_rng(7)
    for seed in range(2):
        game = SingleGame(variant, seed)
        while not game.done:
            if game.phase == core.Phase.PLAY:
                assert whole_moves(game) == state_moves.legal_moves(variant, game.to_state(), 0)
            else:
                assert whole_moves(game) == []
            legal = np.flatnonzero(game.mask())
            game.step(int(rng.choice(legal)))


def test_a_missing_compiler_is_reported_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import scopa_env.engine.kernel as kernel

    monkeypatch.setattr(kernel, "_JIT", None)
    monkeypatch.setattr(compiled, "_JIT", None)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now fails
    with pytest.raises(KernelUnavailableError, match="pip install numba"):
        kernel.jit()
    with pytest.raises(KernelUnavailableError, match="pip install numba"):  # the agents' search loads the kernel first
        compiled.jit()


def test_kernel_is_cached_and_the_rules_core_does_not_import_numba() -> None:
    import subprocess

    code = "import sys, scopa_env.engine.core, scopa_env.rules; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert kernel_for("classic") is kernel_for(get_rules("classic"))
