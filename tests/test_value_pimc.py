"""The learned-leaf experiment (``bench/value_pimc.py``): its collect and fit steps write what the next step reads, and
``vpimc`` plays legal moves through evaluate's plugin hook, deterministic for a seed and blind to hidden cards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evaluate
from agents.base import AgentSpecError, make_agent
from agents.baselines.greedy import greedy_moves
from agents.search.lookahead import move_margins
from scopa_bench import value_pimc
from scopa_env.rules import get_rules
from tests.helpers import assert_blind_to_hidden_cards, decisions, random_positions


@pytest.fixture(scope="module")
def value_net(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny value network for scopone, collected and fitted by the module's own command line."""
    d = tmp_path_factory.mktemp("value")
    data, net = d / "data.npz", d / "value.npz"
    assert value_pimc.main(["collect", "--hands", "30", "--seed", "1", "--all-seats", "--out", str(data)]) == 0
    with np.load(data, allow_pickle=False) as z:
        x, y, hand = z["x"], z["y"], z["hand"]
    rules = get_rules("scopone-scientifico")
    assert x.shape == (30 * 39 * 4, value_pimc.feature_size(rules)) and x.dtype == np.uint8 and y.shape == (len(x),)
    assert np.bincount(hand).tolist() == [39 * 4] * 30, "each row names its hand (fit holds out whole hands)"
    # every position is seen from the four chairs, two on each side: their margins cancel out, and they vary
    assert abs(float(y.astype(np.float64).sum())) < 1e-6 and y.std() > 1
    fit = ["fit", "--data", str(data), "--arch", "16", "--epochs", "1", "--threads", "1", "--out", str(net)]
    assert value_pimc.main(fit) == 0
    return net


def test_features_are_the_deal_from_the_seats_chair() -> None:
    rules = get_rules("scopone-scientifico")
    st = random_positions(rules, 4, 9, seed=2)
    for seat in range(rules.num_players):
        raw = value_pimc.raw_features(rules, st, np.full(4, seat))
        d = rules.num_cards
        assert np.array_equal(raw[:, :d], st.hands[:, seat]), "the chair's own hand comes first"
        assert np.array_equal(raw[:, d : 2 * d], st.hands[:, (seat + 1) % 4]), "then the next seat's"
        assert raw[:, -4:].sum(axis=1).tolist() == [1] * 4, "one seat to move"
    x = value_pimc.features(rules, st, np.zeros(4, dtype=np.intp))
    assert x.dtype == np.float32 and x.shape == (4, value_pimc.feature_size(rules))


def test_vpimc_plays_legal_hands_through_the_plugin(value_net: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    argv = ["--plugin", "scopa_bench.value_pimc", "--variant", "scopone-scientifico", "--hands", "2", "--seed", "3"]
    argv += ["--gauntlet", f"v=vpimc:value={value_net},worlds=3,endgame=4,reply=3", "--agents", "greedy"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(out), "--no-progress", "--quiet", "--no-plot"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["pairings"][0]["hands"] == 4  # evaluate's referee refuses an illegal action


@pytest.mark.parametrize("options", ["reply=0", "reply=3,prior=2", "reply=3,prior=1,mix=0.5,rworlds=4"])
def test_vpimc_is_deterministic_and_blind_to_hidden_cards(value_net: Path, options: str) -> None:
    rules = get_rules("scopone-scientifico")
    spec = f"vpimc:value={value_net},worlds=3,endgame=4,{options}"
    st = random_positions(rules, 6, 12, seed=4)
    a = decisions(make_agent(spec, rules, seed=5), rules, st, seed=5)
    assert np.array_equal(a, decisions(make_agent(spec, rules, seed=99), rules, st, seed=5))
    assert_blind_to_hidden_cards(make_agent(spec, rules, seed=0), rules)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("", "value=PATH"),
        ("VALUE,reply=-1", "reply must be >= 0"),
        ("VALUE,depth=2", "depth must be 1"),
        ("VALUE,mix=1", "mix must be in"),
        ("VALUE,rworlds=-1", "rworlds must be >= 0"),
        ("VALUE,mix=half", "mix must be a number"),
    ],
)
def test_vpimc_options_are_checked(value_net: Path, options: str, message: str) -> None:
    spec = "vpimc:" + options.replace("VALUE", f"value={value_net}") if options else "vpimc"
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec, get_rules("scopone-scientifico"))


def test_mix_weighs_the_value_against_greedy_rollouts_over_worlds_of_their_own(value_net: Path) -> None:
    """``mix=w``: each move's margin is ``(1 - w)`` x the value search's (prior included) plus ``w`` x pimc's greedy
    rollouts to the end of the hand, over ``rworlds`` worlds dealt after the value search's."""
    rules = get_rules("scopone-scientifico")
    agent = make_agent(f"vpimc:value={value_net},worlds=3,endgame=4,reply=3,prior=1,mix=0.25,rworlds=5", rules, seed=1)
    assert isinstance(agent, value_pimc.ValuePIMC)
    st = random_positions(rules, 6, 12, seed=4)
    games = np.arange(6)
    found = agent.value_search(st, games)
    agent.rng = np.random.default_rng(7)
    moves, mixed, first = agent.mixed(st, games, found)
    counts, limits = np.full(6, 5, dtype=np.intp), np.ones(6, dtype=np.intp)
    _, rolled, _ = move_margins(rules, st, games, counts, limits, greedy_moves, np.random.default_rng(7))
    valid = np.isfinite(found[1])
    assert moves is found[0] and first is found[2] and np.array_equal(valid, np.isfinite(mixed))
    assert np.allclose(mixed[valid], 0.75 * found[1][valid] + 0.25 * rolled[valid])
    assert not np.allclose(mixed[valid], found[1][valid])


def test_read_data_puts_the_files_one_after_another_with_their_hands_numbered_apart(
    value_net: Path, tmp_path: Path
) -> None:
    data = value_net.parent / "data.npz"
    with np.load(data, allow_pickle=False) as z:
        x, y, hand = z["x"], z["y"], z["hand"]
    old = tmp_path / "old.npz"  # a file written before collect kept the hands
    np.savez(old, x=x[:10], y=y[:10])
    both_x, both_y, both_hand = value_pimc.read_data([data, data])
    assert np.array_equal(both_x, np.concatenate([x, x])) and np.array_equal(both_y, np.concatenate([y, y]))
    assert both_hand is not None and np.array_equal(both_hand, np.concatenate([hand, hand + 30]))
    assert value_pimc.read_data([data, old])[2] is None  # the split falls back to rows


def test_the_ablation_value_greedy_is_pimcs_greedy_rollouts_in_the_values_place() -> None:
    """``value=greedy``: the value network's hand-written counterpart (greedy rolled out from the leaf, which after
    greedy's reply plies is greedy's rollout from the move): the value search is pimc's, on the same worlds."""
    rules = get_rules("scopone-scientifico")
    agent = make_agent("vpimc:value=greedy,worlds=5,endgame=4,reply=3,prior=1,mix=0.5,rworlds=4", rules, seed=1)
    assert isinstance(agent, value_pimc.ValuePIMC)
    st = random_positions(rules, 6, 12, seed=4)
    games = np.arange(6)
    agent.rng = np.random.default_rng(3)
    _, found, _ = agent.value_search(st, games)
    counts, limits, prior = np.full(6, 5, dtype=np.intp), np.ones(6, dtype=np.intp), np.ones(6)
    _, pimc, _ = move_margins(rules, st, games, counts, limits, greedy_moves, np.random.default_rng(3), prior)
    assert np.array_equal(found, pimc)
    assert_blind_to_hidden_cards(agent, rules)
