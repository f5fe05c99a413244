"""Opponent inference (``agents/search/inference.py``, ``pimc:infer=T``): the memory reconstructs the opponent's moves
of the current deal from public cards only, the world weights favour hands that explain the moves, and the agent stays
legal, deterministic for a seed and blind to hidden cards across a whole hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.base import make_agent
from agents.search.inference import DealMemory, OpponentMove, _log_likelihood, supports_inference
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core, observation
from scopa_env.engine.core import Phase, State
from scopa_env.games.policy import ActBatch
from scopa_env.rules import get_rules
from scopa_env.rules.cards import parse_card
from tests.helpers import position
from tests.test_search import reshuffle_hidden


def _random_action(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    keys = rng.random(mask.shape)
    keys[~mask] = -1
    return keys.argmax(axis=1)


def test_the_memory_records_the_opponents_moves_of_the_current_deal() -> None:
    """Random play in 32 games; seat 0 keeps the memory, seat 1's true moves are read from the full state."""
    rules = get_rules("classic")
    rng = np.random.default_rng(0)
    st = core.reset(rules, np.arange(32, dtype=np.uint64))
    memory = DealMemory(rules)
    truth: dict[int, list[tuple[int, int, tuple[int, ...]]]] = {g: [] for g in range(32)}  # (deal, card, captured)
    checked = 0
    seen: set[int] = set()
    for _ in range(60):
        mask = core.legal_action_mask(rules, st)
        seat0 = np.flatnonzero((st.current == 0) & (st.phase != Phase.DONE))
        if seat0.size:
            memory.observe(st, seat0)
            for g in seat0.tolist():
                want = [(c, k) for deal, c, k in truth[g] if deal == int(st.stock_pos[g])]
                got = [(m.card, tuple(np.flatnonzero(m.captured))) for m in memory.recorded(st, g)]
                assert got == want, (g, got, want)
                checked += len(want)
        before = st.copy()
        actions = _random_action(rng, mask)
        if seat0.size:
            memory.remember(st, seat0, actions[seat0])
            seen.update(seat0.tolist())  # the opponent's moves before seat 0's first decision are never seen
        core.step(rules, st, actions)
        for g in np.flatnonzero(st.stock_pos < before.stock_pos).tolist():
            truth[g] = []  # a new hand of the match; the memory follows it from seat 0's move that ended the last
            if before.current[g] != 0:
                seen.discard(g)
        for g in np.flatnonzero((before.current == 1) & (before.phase != Phase.DONE)).tolist():
            if g not in seen or st.phase[g] == Phase.CHOOSE:
                continue  # the move ends with its capture choice
            played = np.flatnonzero(before.hands[g, 1] & ~st.hands[g, 1])
            if before.phase[g] == Phase.CHOOSE:
                played = np.array([int(before.pending[g])])
            # the deal whose hand the card came from: the stock position before the move (a deal may follow it)
            truth[g].append(
                (int(before.stock_pos[g]), int(played[0]), tuple(np.flatnonzero(before.table[g] & ~st.table[g])))
            )
        if st.done.all():
            break
    assert checked > 50, "too few opponent moves were checked for the test to mean anything"


@pytest.mark.parametrize("model", ["greedy", "expert"])
def test_a_hand_that_explains_the_move_weighs_more(model: str) -> None:
    """The opponent laid the 2 of cups on a table holding the settebello:

        table:   7d  4b                 opponent laid: 2c
        world A: the opponent also held 7c Qs (it could have taken the settebello, and did not)
        world B: it held 5s 6s (nothing takes the 7, and no sum makes 7 or 4)

    Under either model world B explains the lay far better than world A."""
    rules = get_rules("classic")
    worlds = State.concat([position(rules, ["Ad", opp], table="7d 4b")[1] for opp in ("7c Qs", "5s 6s")])
    two_cups = parse_card("2c")
    move = OpponentMove(worlds.table[0].copy(), two_cups, np.zeros(rules.num_cards, dtype=np.bool_))
    later = np.zeros((2, rules.num_cards), dtype=np.bool_)
    logp = _log_likelihood(rules, worlds, np.arange(2), move, later, temp=1.0, model=model)
    assert logp[1] > logp[0] + 1.0, logp
    assert logp.max() <= 0.0


def _play_hand_collecting(agent: PIMCAgent, rules, seed: int) -> tuple[list[State], list[int]]:  # type: ignore[no-untyped-def]
    """The first hand of a game of the agent (seat 0) against random play; its decision states and actions."""
    rng = np.random.default_rng(seed)
    st = core.reset(rules, np.array([seed], dtype=np.uint64))
    states, actions = [], []
    pos = int(st.stock_pos[0])
    while not st.done[0] and int(st.stock_pos[0]) >= pos:  # to the end of the first hand
        pos = int(st.stock_pos[0])
        mask = core.legal_action_mask(rules, st)
        if int(st.current[0]) == 0:
            states.append(st.copy())
            a = agent.act(ActBatch(rules, observation.observe(rules, st), mask, st, np.zeros(1, np.intp)))
            actions.append(int(a[0]))
        else:
            a = _random_action(rng, mask)
        core.step(rules, st, np.asarray(a, dtype=np.int64))
    return states, actions


CLASSIC_BOT = Path(__file__).resolve().parents[1] / "agents" / "bots" / "classic"


@pytest.mark.parametrize("model", ["greedy", "expert", str(CLASSIC_BOT)])
def test_pimc_infer_is_blind_to_hidden_cards_over_a_hand(model: str) -> None:
    """Replaying the agent's decision states with the unseen cards dealt again at every one (public cards kept)
    gives the same actions: the memory reads nothing hidden (with each opponent model, the network's included)."""
    rules = get_rules("classic")
    agent = make_agent(f"pimc:worlds=6,infer=1,model={model}", rules, seed=3)
    assert isinstance(agent, PIMCAgent) and agent.memory is not None
    rng = np.random.default_rng(1)
    for seed in (11, 12):
        agent.seed(3)
        states, actions = _play_hand_collecting(agent, rules, seed)
        assert len(states) >= 15
        agent.seed(3)
        replay = []
        for st in states:
            other = reshuffle_hidden(rules, st, rng)
            mask = core.legal_action_mask(rules, other)
            replay.append(
                int(agent.act(ActBatch(rules, observation.observe(rules, other), mask, other, np.zeros(1, np.intp)))[0])
            )
        assert replay == actions
        assert any(not np.array_equal(reshuffle_hidden(rules, s, rng).deck, s.deck) for s in states)


def test_pimc_infer_is_deterministic_and_only_infer_deals_other_worlds() -> None:
    rules = get_rules("classic")
    a = make_agent("pimc:worlds=6,infer=1", rules, seed=4)
    b = make_agent("pimc:worlds=6", rules, seed=4)
    runs = []
    for _ in range(2):
        a.seed(4)  # clears the memory too
        runs.append(_play_hand_collecting(a, rules, 21)[1])
    assert runs[0] == runs[1]
    assert isinstance(a, PIMCAgent) and a.sampler is not None and isinstance(b, PIMCAgent) and b.sampler is None


@pytest.mark.parametrize("variant", ["scopa-a-quattro", "cirulla", "simple-3"])
def test_inference_is_off_where_it_cannot_follow_the_opponents(variant: str) -> None:
    rules = get_rules(variant)
    assert not supports_inference(rules)
    agent = make_agent("pimc:worlds=2,infer=1", rules, seed=0)
    assert isinstance(agent, PIMCAgent) and agent.memory is None


def test_infer_options_are_checked() -> None:
    with pytest.raises(ValueError, match="infer must be >= 0"):
        make_agent("pimc:infer=-1", "classic")
    with pytest.raises(ValueError, match="pool must be >= 1"):
        make_agent("pimc:infer=1,pool=0", "classic")
    with pytest.raises(ValueError, match="model must be one of greedy, expert"):
        make_agent("pimc:infer=1,model=oracle", "classic")
    with pytest.raises(ValueError, match="or a network"):
        make_agent(f"pimc:infer=1,model={CLASSIC_BOT.parent / 'scopa-a-quattro'}", "classic")  # another variant's net
