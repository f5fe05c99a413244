"""The agents play cirulla (tests of agents/baselines/features.py, greedy, expert, lookahead, search and endgame on
cirulla).

Every agent plays whole hands of the three cirulla variants through the driver (``core.step`` raises on an illegal
action), knock decisions included; hand-built positions (the table drawn in a comment) check that greedy and expert
take the fifteen, value the napoli and grande coins and knock; the search agents are checked blind to the hidden
cards, with the knocked (revealed) cards kept in place while everything unseen is dealt again.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import make_agent
from agents.baselines.features import (
    CardWeights,
    card_weights,
    choose,
    dynamic_weights,
    generate_moves,
    knock_actions,
    unseen_cards,
)
from agents.baselines.greedy import greedy_moves
from agents.search.endgame import open_endgame_rows, optimal_open_actions
from agents.search.expert import ExpertAgent
from agents.search.lookahead import resolve_knocks, rollout, sample_worlds
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.games import driver
from scopa_env.games.policy import Policy
from scopa_env.rules import CIRULLA_VARIANTS, get_rules
from scopa_env.rules.cards import format_cards, parse_cards
from scopa_env.rules.moves import MoveKind
from tests.helpers import act_batch, dealt_position, decisions, random_positions, reshuffle_hidden

CIRULLA = CIRULLA_VARIANTS["cirulla"]
AGENTS = ["random", "greedy", "expert", "pimc:worlds=3", "ismcts:iters=12,parallel=12"]
KNOCK_BIAS = 0.5
"""Added to the knock actions' random keys in ``random_positions``: knocks more often than uniform, so revealed cards
are common."""


def play_agent_move(agent: Policy, st: State) -> tuple[str, list[str]]:
    """Let ``agent`` make one whole move in game 0 (through the CHOOSE phase, ``stop`` included); (card, capture)."""
    rules = agent.rules
    for _ in range(8):
        info = core.step(rules, st, agent.act(act_batch(rules, st)))
        if info.move_done[0]:
            return format_cards([int(info.card[0])], rules.deck)[0], format_cards(info.capture[0], rules.deck)
    raise AssertionError("the move never completed")


# --------------------------------------------------------------------------------------------------------------
# Whole hands.


@pytest.mark.parametrize("variant", sorted(CIRULLA_VARIANTS))
@pytest.mark.parametrize("spec", AGENTS)
def test_every_agent_plays_whole_cirulla_hands(spec: str, variant: str) -> None:
    rules = CIRULLA_VARIANTS[variant]
    n = rules.num_players
    cheap = spec in ("random", "greedy", "expert")
    games = 12 if cheap else 1
    agents = [make_agent(spec, rules, seed=3), make_agent("greedy", rules, seed=4)]
    lineups = np.array([[(g + s) % 2 for s in range(n)] for g in range(games)])
    phases: list[int] = []

    def seen(dec: driver.Decision) -> None:
        if dec.agent == 0:
            phases.extend(dec.state.phase[dec.games].tolist())

    res = driver.play(rules, agents, lineups, np.arange(games) + 40, mode="hands", on_decision=seen)
    assert res.hands.min() == 1
    assert Phase.PLAY in phases
    if cheap:  # enough decisions to meet every phase
        assert Phase.KNOCK in phases and Phase.CHOOSE in phases, f"{spec} met phases {sorted(set(phases))}"


# --------------------------------------------------------------------------------------------------------------
# Fifteens and the capture choice.


@pytest.mark.parametrize("spec", ["greedy", "expert"])
def test_rule_based_agents_take_the_fifteen(spec: str) -> None:
    # table:  5d  2s  3b          seat 0 plays 5c: {5d} (equal rank) or {5d 2s 3b} (fifteen, a scopa)
    st = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "5d 2s 3b")
    assert play_agent_move(make_agent(spec, CIRULLA), st) == ("5c", ["5d", "2s", "3b"])
    assert st.scope[0, 0] == 1


@pytest.mark.parametrize("spec", ["greedy", "expert"])
def test_rule_based_agents_take_a_lone_fifteen(spec: str) -> None:
    # table:  Ks  4b              seat 0 holds 5c (fifteen: Ks) and 4c (equal: 4b); Ks + 5c is worth more
    st = dealt_position(CIRULLA, ["5c 4c Jb", "6c Jc Qc"], "Ks 4b")
    card, cap = play_agent_move(make_agent(spec, CIRULLA), st)
    assert (card, cap) == ("5c", ["Ks"])


def test_moves_list_fifteens_and_reach_a_capture_inside_another() -> None:
    # table:  5d  2s  3b          5c: {5d} equal, {5d 2s 3b} fifteen; carrying out {5d} needs stop
    st = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "5d 2s 3b")
    moves = generate_moves(CIRULLA, st, np.array([0]))
    kinds = {(format_cards([int(c)], CIRULLA.deck)[0], int(k)) for c, k in zip(moves.card, moves.kind, strict=True)}
    assert ("5c", int(MoveKind.EQUAL)) in kinds and ("5c", int(MoveKind.FIFTEEN)) in kinds
    caps = {tuple(format_cards(moves.captures([i])[0], CIRULLA.deck)) for i in range(len(moves))}
    assert ("5d",) in caps and ("5d", "2s", "3b") in caps
    equal = int(np.flatnonzero((moves.kind == MoveKind.EQUAL) & (moves.card == parse_cards("5c", CIRULLA.deck)[0]))[0])
    stop = core.stop_action(CIRULLA)
    actions = []
    while True:
        a = choose(st, np.array([0]), moves, np.array([equal]))
        actions.append(int(a[0]))
        info = core.step(CIRULLA, st, a)
        if info.move_done[0]:
            break
    assert actions[-1] == stop and format_cards(info.capture[0], CIRULLA.deck) == ["5d"]


def test_candidate_moves_are_legal_and_cover_every_legal_capture() -> None:
    rules = CIRULLA
    rng = np.random.default_rng(5)
    st = core.reset(rules, np.arange(60, dtype=np.uint64))
    checked = 0
    for _ in range(30):
        mask = core.legal_action_mask(rules, st)
        play = np.flatnonzero(st.phase == Phase.PLAY)
        if play.size:
            moves = generate_moves(rules, st, play)
            legal = state_moves.legal_move_lists(rules, st, play)
            for i, g in enumerate(play.tolist()):
                seg = range(int(moves.starts[i]), int(moves.starts[i + 1]))
                cands = {(int(moves.card[j]), frozenset(np.flatnonzero(moves.captures([j])[0]).tolist())) for j in seg}
                assert cands <= set(legal[i]), f"game {g}: a candidate is not legal"
                classes = {(c, tuple(sorted(rules.deck.rank[list(cap)].tolist()))) for c, cap in legal[i]}
                assert len(cands) == len(classes), f"game {g}: one candidate per legal move class"
                checked += 1
        keys = rng.random(mask.shape)
        keys[~mask] = -1
        core.step(rules, st, keys.argmax(axis=1), autoreset=True)
    assert checked > 500


def test_expert_fears_the_opponents_fifteens() -> None:
    # table:  (empty)            seat 0 must lay one of Kc 4b 3s; a laid Kc can be taken by a king (equal rank) or,
    # in cirulla, by any five (a fifteen, a scopa); a 4 or a 3 has no fifteen partner (11, 12 do not exist).
    # Without the napoli and grande weights (Kd would make kings dear anyway) only the fifteens tell them apart.
    st = dealt_position(CIRULLA, ["Kc 4b 3s", "4c Jc Qc"], "")
    assert play_agent_move(ExpertAgent(CIRULLA, weights=CardWeights(napoli_grande=0.0)), st)[0] != "Kc"
    classic = dealt_position("classic", ["Kc 4b 3s", "4c Jc Qc"], "")
    assert play_agent_move(make_agent("expert", "classic"), classic)[0] == "Kc"  # no fifteens: the tie goes to Kc


# --------------------------------------------------------------------------------------------------------------
# Napoli and grande.


def test_card_weights_value_napoli_and_grande_coins() -> None:
    classic, cir = card_weights(get_rules("classic")), card_weights(CIRULLA)
    deck = CIRULLA.deck
    for card in ("Ad", "2d", "3d", "Jd", "Qd", "Kd", "4d"):
        assert cir[parse_cards(card, deck)[0]] > classic[parse_cards(card, deck)[0]], card
    for card in ("5d", "As", "Kc"):
        assert cir[parse_cards(card, deck)[0]] == classic[parse_cards(card, deck)[0]], card
    ad, two = parse_cards("Ad 2d", deck)
    # seat 0 (side 0) holds 2d 3d: Ad completes a napoli; the opponent holding 2d instead: Ad denies it.
    mine = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "Ad", piles=["2d 3d", ""])
    theirs = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "Ad", piles=["", "2d 3d"])
    dead = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "Ad", piles=["3d", "2d"])
    w_mine, w_theirs, w_dead = (dynamic_weights(CIRULLA, s, np.array([0]))[0] for s in (mine, theirs, dead))
    assert w_mine[ad] - cir[ad] > 2.0 and w_theirs[ad] - cir[ad] > 2.0
    assert w_dead[ad] < cir[ad] and w_dead[ad] >= classic[ad] - 1e-9
    # once a side holds the napoli, 4d (its run's next coin) is worth a point
    run = dealt_position(CIRULLA, ["5c Kb Qs", "4c Jc Qc"], "4d", piles=["Ad 2d 3d", ""])
    assert dynamic_weights(CIRULLA, run, np.array([0]))[0][parse_cards("4d", deck)[0]] > 1.0
    assert two >= 0


def test_expert_completes_the_napoli_greedy_takes_the_settebello() -> None:
    # table:  2d  7d              seat 0 holds 2c 7c (and Kb); side 0's pile holds Ad 3d
    # 7c on 7d: the settebello; 2c on 2d: completes the napoli (3 points), which only expert counts
    def st() -> State:
        return dealt_position(CIRULLA, ["2c 7c Kb", "4c Jc Qc"], "2d 7d", piles=["Ad 3d", ""])

    assert play_agent_move(make_agent("expert", CIRULLA), st()) == ("2c", ["2d"])
    assert play_agent_move(make_agent("greedy", CIRULLA), st()) == ("7c", ["7d"])


def test_greedy_takes_the_grande_coin() -> None:
    # table:  Kd  7s              seat 0: Kc takes Kd (a grande coin), 7c takes 7s (a seven)
    st = dealt_position(CIRULLA, ["Kc 7c Jb", "4c Jc Qc"], "Kd 7s")
    assert play_agent_move(make_agent("greedy", CIRULLA), st) == ("Kc", ["Kd"])
    classic = dealt_position("classic", ["Kc 7c Jb", "4c Jc Qc"], "Kd 7s")
    assert play_agent_move(make_agent("greedy", "classic"), classic)[0] == "7c"  # without grande: the seven


# --------------------------------------------------------------------------------------------------------------
# Knocks.

KNOCKS = [
    ("2d 2s 2c", "knock-tris"),  # three of a kind (also a sum of 6): tris, 10 > 3
    ("5d 5s 7c", "knock-tris"),  # a pair and the matta
    ("Ad 2s 3b", "knock-sum"),  # 6 <= 9
    ("Ad 2s 7c", "knock-sum"),  # the matta counts 1: 4
]


@pytest.mark.parametrize("spec", AGENTS[1:])
@pytest.mark.parametrize(("hand", "expected"), KNOCKS)
def test_agents_knock_when_allowed_tris_first(spec: str, hand: str, expected: str) -> None:
    st = dealt_position(CIRULLA, [hand, "4c Jc Qc"], "6s Qb", phase=Phase.KNOCK)
    mask = core.legal_action_mask(CIRULLA, st)[0]
    agent = make_agent(spec, CIRULLA, seed=1)
    action = int(agent.act(act_batch(CIRULLA, st))[0])
    assert mask[action] and core.action_name(CIRULLA, action) == expected
    info = core.step(CIRULLA, st, np.array([action]))
    assert info.knock[0] > 0 and st.revealed[0, 0].sum() == 3


@pytest.mark.parametrize("spec", ["greedy:knock=never", "expert:knock=never"])
def test_knock_never_stops(spec: str) -> None:
    st = dealt_position(CIRULLA, ["2d 2s 2c", "4c Jc Qc"], "6s Qb", phase=Phase.KNOCK)
    assert int(make_agent(spec, CIRULLA).act(act_batch(CIRULLA, st))[0]) == core.stop_action(CIRULLA)
    with pytest.raises(ValueError, match="knock must be one of"):
        make_agent("greedy:knock=sometimes", CIRULLA)


def test_knock_actions_refuse_other_phases() -> None:
    st = dealt_position(CIRULLA, ["2d 2s 2c", "4c Jc Qc"], "6s Qb")
    with pytest.raises(ValueError, match="not in the KNOCK phase"):
        knock_actions(CIRULLA, st, np.array([0]))
    with pytest.raises(ValueError, match="KNOCK phase"):
        generate_moves(
            CIRULLA, dealt_position(CIRULLA, ["2d 2s 2c", "4c Jc Qc"], "6s Qb", phase=Phase.KNOCK), np.array([0])
        )


def test_expert_knows_a_knocked_hand() -> None:
    # table:  (empty)            seat 0 holds 3c 6c Kb; seat 1 knocked 3s 3b Ad (revealed)
    # laying 3c gives seat 1 a sure capture of it; expert lays the card seat 1 cannot take back for sure
    st = dealt_position(CIRULLA, ["3c 6c Kb", "3s 3b Ad"], "")
    st.revealed[0, 1] = st.hands[0, 1]
    st.knock_points[0, 1] = 10
    unseen = unseen_cards(st, np.array([0]), np.array([0]))[0]
    assert not unseen[st.hands[0, 1]].any() and unseen.sum() == 40 - int(st.stock_pos[0])
    card, cap = play_agent_move(make_agent("expert", CIRULLA), st)
    assert card != "3c" and cap == []


# --------------------------------------------------------------------------------------------------------------
# Worlds and rollouts.


@pytest.mark.parametrize("variant", sorted(CIRULLA_VARIANTS))
def test_sampled_worlds_keep_knocked_cards_in_place(variant: str) -> None:
    rules = CIRULLA_VARIANTS[variant]
    st = random_positions(rules, 40, 5, seed=2, knock_bias=KNOCK_BIAS)
    games = np.flatnonzero(st.phase == Phase.PLAY)
    assert st.revealed[games].any(), "no knocked cards: the test is void"
    worlds, wrow = sample_worlds(rules, st, games, 4, np.random.default_rng(0))
    src = games[wrow]
    assert np.array_equal(worlds.revealed, st.revealed[src])
    assert (worlds.hands | ~worlds.revealed).all(), "a knocked card left its seat"
    assert np.array_equal(worlds.hands.sum(axis=2), st.hands[src].sum(axis=2))
    seat = st.current[src].astype(np.intp)
    assert np.array_equal(worlds.hands[np.arange(wrow.size), seat], st.hands[src, seat])
    unseen = unseen_cards(st, games, st.current[games].astype(np.intp))
    assert not (unseen & st.revealed[games].any(axis=1)).any()
    # every card is somewhere exactly once
    where = worlds.hands.sum(axis=1) + worlds.table + worlds.piles.sum(axis=1)
    stock = np.zeros_like(where)
    for w in range(wrow.size):
        stock[w, worlds.deck[w, int(worlds.stock_pos[w]) :]] += 1
    assert ((where + stock) == 1).all()


def test_rollouts_settle_knocks_and_finish() -> None:
    rules = CIRULLA
    st = core.reset(rules, np.arange(64, dtype=np.uint64))
    assert (st.phase == Phase.KNOCK).any(), "no knock decision at the start: the test is void"
    resolve_knocks(rules, st)
    assert not (st.phase == Phase.KNOCK).any() and st.knock_points.sum() > 0
    points = rollout(rules, st, greedy_moves)
    assert (st.phase == Phase.DONE).all()
    assert points.shape == (64, 2) and (points >= 0).all()


def test_exact_endgame_actions_span_every_action() -> None:
    rules = CIRULLA
    st = random_positions(rules, 60, 34, seed=4, knock_bias=KNOCK_BIAS)
    rows = open_endgame_rows(rules, st, np.arange(60), 6)
    assert rows.size, "no open end game: the test is void"
    best = optimal_open_actions(rules, st, rows)
    assert best.shape == (rows.size, rules.num_actions)
    mask = core.legal_action_mask(rules, st)[rows]
    assert best.any(axis=1).all() and not (best & ~mask).any()


# --------------------------------------------------------------------------------------------------------------
# Blind to hidden cards.


@pytest.mark.parametrize(
    ("spec", "variant"),
    [("expert", "cirulla"), ("expert", "cirulla-4"), ("pimc:worlds=3", "cirulla"), ("pimc:worlds=3", "cirulla-3")],
)
def test_agents_are_blind_to_hidden_cards_in_cirulla(spec: str, variant: str) -> None:
    rules = CIRULLA_VARIANTS[variant]
    agent = make_agent(spec, rules, seed=0)
    rng = np.random.default_rng(13)
    knocked = False
    for plies in (4, 15):
        st = random_positions(rules, 8, plies, seed=plies, knock_bias=KNOCK_BIAS)
        knocked |= bool(st.revealed.any())
        other = reshuffle_hidden(rules, st, rng)
        assert not np.array_equal(st.hands, other.hands), "the reshuffle changed nothing: the test is void"
        assert np.array_equal(decisions(agent, rules, st, 7, calls=2), decisions(agent, rules, other, 7, calls=2))
    assert knocked, "no knocked cards in the positions: the test is void"
