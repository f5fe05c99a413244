"""Tests of the rule-based agents (agents/baselines/greedy.py, agents/search/expert.py) and their shared helpers
(agents/baselines/features.py).

Hand-built positions draw the table in a comment; random games of every variant check that every agent only plays
legal moves (``core.step`` raises on an illegal action). The candidate moves are checked against the reference
engine's legal moves in ``tests/test_moves.py``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from agents.base import AgentSpecError, make_agent, registered_agents
from agents.baselines.features import CardWeights, card_weights, dynamic_weights, generate_moves, segment_argmax
from agents.baselines.greedy import GreedyAgent
from agents.baselines.table_eval import check_weights, hit_probability
from agents.search.expert import ExpertAgent
from scopa_env.engine import core, observation
from scopa_env.engine.core import State
from scopa_env.games.driver import play
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, get_rules
from scopa_env.rules.cards import format_cards, parse_cards
from tests.helpers import dealt_position

GAMES_PER_VARIANT = 6
"""Random hands per variant in the legality tests (kept small: the suite must stay fast)."""


def play_agent_move(agent: Policy, st: State) -> tuple[str, list[str]]:
    """Let ``agent`` make one whole move in game 0 (through the CHOOSE phase if needed); return (card, capture)."""
    rules = agent.rules
    while True:
        batch = ActBatch(rules, observation.observe(rules, st), core.legal_action_mask(rules, st), st, np.array([0]))
        info = core.step(rules, st, agent.act(batch))
        if info.move_done[0]:
            deck = rules.deck
            return format_cards([int(info.card[0])], deck)[0], format_cards(info.capture[0], deck)


# --------------------------------------------------------------------------------------------------------------
# Registry and specs.


def test_agents_are_registered() -> None:
    names = registered_agents()
    for name in ("random", "greedy", "expert", "pimc", "ismcts"):
        assert name in names, f"{name} missing from {sorted(names)}"


def test_make_agent_specs() -> None:
    assert isinstance(make_agent("greedy", "classic"), GreedyAgent)
    expert = make_agent("expert:endgame=4", "classic", seed=3)
    assert isinstance(expert, ExpertAgent) and expert.endgame == 4 and expert.name == "expert:endgame=4"
    with pytest.raises(AgentSpecError, match="bad option"):
        make_agent("greedy:worlds=3", "classic")
    with pytest.raises(ValueError, match="endgame must be >= 0"):
        make_agent("expert:endgame=-1", "classic")


def test_agents_need_the_state() -> None:
    rules = get_rules("classic")
    st = core.reset(rules, [0])
    batch = ActBatch(rules, observation.observe(rules, st), core.legal_action_mask(rules, st))
    for agent in (GreedyAgent(rules), ExpertAgent(rules)):
        assert agent.needs_state
        with pytest.raises(ValueError, match="needs the game state"):
            agent.act(batch)


# --------------------------------------------------------------------------------------------------------------
# Candidate moves (checked against the reference engine on random games in tests/test_moves.py).


def test_generated_gain_and_scopa() -> None:
    # table: 5c 2s          hand: 7b 5d Ks
    rules = get_rules("classic")
    st = dealt_position("classic", ["7b 5d Ks", "Ac Ad 3c"], "5c 2s", piles=["Ab 2b"])
    moves = generate_moves(rules, st, [0])
    w = card_weights(rules)
    by_card = {format_cards([int(c)])[0]: i for i, c in enumerate(moves.card)}
    seven = by_card["7b"]
    assert moves.scopa[seven] and moves.num_taken[seven] == 2
    assert moves.gain[seven] == pytest.approx(w[parse_cards("7b 5c 2s")].sum())
    assert not moves.scopa[by_card["5d"]] and moves.kind[by_card["Ks"]] == 0  # 5d takes 5c; Ks is laid


def test_last_play_is_never_a_scopa() -> None:
    # table: 3d             hand: 3s, the very last card of the hand
    rules = get_rules("classic")
    rest = [c for c in range(40) if c not in parse_cards("3d 3s")]
    st = dealt_position("classic", ["3s", ""], "3d", piles=[" ".join(format_cards(rest))])
    moves = generate_moves(rules, st, [0])
    assert len(moves) == 1 and moves.num_taken[0] == 1 and not moves.scopa[0]


# --------------------------------------------------------------------------------------------------------------
# Legal play over random games.


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_rule_based_agents_play_legal_moves(variant: str) -> None:
    rules = get_rules(variant)
    agents = [make_agent(s, rules, seed=i) for i, s in enumerate(("random", "greedy", "expert"))]
    rng = np.random.default_rng(1)
    lineups = rng.integers(0, len(agents), size=(GAMES_PER_VARIANT, rules.num_players))
    res = play(rules, agents, lineups, np.arange(GAMES_PER_VARIANT), mode="hands")  # raises on an illegal action
    assert (res.hands == 1).all()
    assert res.decisions > 0


def test_rule_based_agents_play_whole_matches() -> None:
    rules = get_rules("classic")
    agents = [make_agent("greedy", rules), make_agent("expert", rules)]
    res = play(rules, agents, [[0, 1], [1, 0]], [5, 6], mode="matches")
    assert set(res.winner.tolist()) <= {0, 1} and (res.scores.max(axis=1) >= rules.target).all()


def test_rule_based_agents_are_deterministic() -> None:
    rules = get_rules("classic")
    for spec in ("greedy", "expert"):
        agents = [make_agent(spec, rules, seed=s) for s in (0, 1)]
        a = play(rules, agents, [[0, 1]] * 20, np.arange(20), mode="hands")
        b = play(rules, agents, [[0, 1]] * 20, np.arange(20), mode="hands")
        assert np.array_equal(a.hand_points, b.hand_points)


# --------------------------------------------------------------------------------------------------------------
# Hand-built positions: the obvious move.


@pytest.mark.parametrize("spec", ["greedy", "expert"])
def test_takes_the_settebello(spec: str) -> None:
    # table: 7d Jb 2s 5c    hand: 7b Jc 3s     (7b takes the settebello; Jc takes only Jb)
    st = dealt_position("classic", ["7b Jc 3s", "Ac Ad 3c"], "7d Jb 2s 5c")
    card, cap = play_agent_move(make_agent(spec, "classic", seed=0), st)
    assert (card, cap) == ("7b", ["7d"])


@pytest.mark.parametrize("spec", ["greedy", "expert"])
def test_chooses_the_settebello_among_sums(spec: str) -> None:
    # table: 7d 3s 4c 6b    hand: Kc 2b Jb    (Kc takes 7d+3s or 4c+6b: the CHOOSE phase must end on 7d+3s)
    st = dealt_position("classic", ["Kc 2b Jb", "Ac Ad 3c"], "7d 3s 4c 6b")
    card, cap = play_agent_move(make_agent(spec, "classic", seed=0), st)
    assert (card, cap) == ("Kc", ["7d", "3s"])


@pytest.mark.parametrize("spec", ["greedy", "expert", "pimc", "ismcts:iters=200"])
def test_makes_the_scopa(spec: str) -> None:
    # table: 5c 2s          hand: 7b 5d Ks     (7b sweeps the table)
    st = dealt_position("classic", ["7b 5d Ks", "Ac Ad 3c"], "5c 2s", piles=["Ab 2b"])
    card, cap = play_agent_move(make_agent(spec, "classic", seed=0), st)
    assert (card, cap) == ("7b", ["5c", "2s"])


def test_expert_does_not_open_the_table_to_a_scopa() -> None:
    # table: 4c             hand: 3s Qb Kd
    # Laying 3s leaves 4+3 = 7 on the table (any seven sweeps it); Qb leaves 13, which no card sweeps.
    hands = ["3s Qb Kd", "2c 6c Jc"]
    greedy = play_agent_move(
        make_agent("greedy", "classic"), dealt_position("classic", hands, "4c", piles=["Ab 2b 3b"])
    )
    expert = play_agent_move(
        make_agent("expert", "classic"), dealt_position("classic", hands, "4c", piles=["Ab 2b 3b"])
    )
    assert greedy == ("3s", [])  # the greedy lays its cheapest card and opens the table
    assert expert == ("Qb", [])


def test_expert_counts_cards() -> None:
    # table: 4c             hand: 3s Qb Kd, but every seven has been played: 4+3 is safe, and 3s is cheaper.
    hands = ["3s Qb Kd", "2c 6c Jc"]
    st = dealt_position("classic", hands, "4c", piles=["7d 7c 7s 7b Ab 2b 3b 4b 5b"])
    assert play_agent_move(make_agent("expert", "classic"), st) == ("3s", [])


def test_expert_keeps_sevens_safe() -> None:
    # table: Kc             hand: 7s Jb 4d    (laying the seven or the coin invites a capture; the knave is cheapest)
    st = dealt_position("classic", ["7s Jb 4d", "2c 6c Jc"], "Kc", piles=["Ab 2b 3b"])
    assert play_agent_move(make_agent("expert", "classic"), st) == ("Jb", [])


def test_expert_weights_remember_decided_categories() -> None:
    rules = get_rules("classic")
    coins = "Ad 2d 3d 4d 5d 6d"  # six coins: denari is decided
    st = dealt_position("classic", ["7b Jc 3s", "Ac 2c 3c"], "Kb", piles=[coins, "Ab 2b 3b"])
    w = dynamic_weights(rules, st, np.array([0]))
    base = card_weights(rules)
    d = parse_cards("Kd")[0]
    assert w[0, d] == pytest.approx(base[d] - CardWeights().coin)
    check_weights(rules, w)


# --------------------------------------------------------------------------------------------------------------
# Helpers.


def test_check_weights_rejects_uneven_suits() -> None:
    rules = get_rules("classic")
    w = card_weights(rules).copy()
    check_weights(rules, w)
    w[parse_cards("5s")[0]] += 0.1
    with pytest.raises(ValueError, match="same weight"):
        check_weights(rules, w)


def test_hit_probability_is_hypergeometric() -> None:
    # 30 unseen cards, 3 of them sevens, the opponent holds 3: P(no seven) = C(27,3)/C(30,3)
    assert hit_probability(30, 3, 3) == pytest.approx(1 - (27 * 26 * 25) / (30 * 29 * 28))
    assert hit_probability(10, 0, 3) == 0.0
    assert hit_probability(3, 1, 3) == 1.0


def test_segment_argmax_takes_the_first_maximum() -> None:
    values = np.array([1.0, 3.0, 3.0, -1.0, -2.0, 5.0])
    starts: npt.NDArray[np.intp] = np.array([0, 3, 5, 6])
    assert segment_argmax(values, starts).tolist() == [1, 3, 5]
