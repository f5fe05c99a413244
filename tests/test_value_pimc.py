"""The learned leaf value (``agents.nets.vpimc``, fitted by ``bench/value_pimc.py``): collect and fit write what the
next step reads, and ``vpimc`` plays legal moves (also through evaluate's plugin hook, as older commands name it),
deterministic for a seed and blind to hidden cards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evaluate
from agents.base import MODEL_CARD, AgentSpecError, make_agent
from agents.baselines.greedy import greedy_moves
from agents.nets import vpimc
from agents.nets.bot import BotPolicy
from agents.nets.export import export_bot
from agents.nets.mlp import ExportArgumentError
from agents.nets.weights import VALUE, file_sha256
from agents.search.lookahead import move_margins
from scopa_bench import value_pimc
from scopa_env.rules import get_rules
from tests.helpers import assert_blind_to_hidden_cards, decisions, random_positions
from tests.test_netsearch import random_net


@pytest.fixture(scope="module")
def value_net(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny value network for scopone, collected and fitted by the module's own command line."""
    d = tmp_path_factory.mktemp("value")
    data, net = d / "data.npz", d / "value.npz"
    assert value_pimc.main(["collect", "--hands", "30", "--seed", "1", "--all-seats", "--out", str(data)]) == 0
    with np.load(data, allow_pickle=False) as z:
        x, y, hand = z["x"], z["y"], z["hand"]
    rules = get_rules("scopone-scientifico")
    assert x.shape == (30 * 39 * 4, vpimc.feature_size(rules)) and x.dtype == np.uint8 and y.shape == (len(x),)
    assert np.bincount(hand).tolist() == [39 * 4] * 30, "each row names its hand (fit holds out whole hands)"
    # every position is seen from the four chairs, two on each side: their margins cancel out, and they vary
    assert abs(float(y.astype(np.float64).sum())) < 1e-6 and y.std() > 1
    fit = ["fit", "--data", str(data), "--arch", "16", "--epochs", "1", "--threads", "1", "--out", str(net)]
    assert value_pimc.main(fit) == 0
    return net


def test_collect_with_a_share_values_each_position_by_the_networks_best_play_from_it(tmp_path: Path) -> None:
    """``--share``: each kept position valued by the network's argmax play from it. Where the hands themselves are
    played by the argmax (``--temp 0``), that play is the rest of the hand: with every position kept (share 1), the
    rows and targets are those of the plain collect, each valued by its hand's outcome; a share keeps about that
    share of them."""
    common = ["collect", "--hands", "12", "--seed", "4", "--all-seats", "--temp", "0"]
    data = {}
    for share in ("0", "1", "0.3"):
        assert value_pimc.main([*common, "--share", share, "--out", str(tmp_path / f"{share}.npz")]) == 0
        with np.load(tmp_path / f"{share}.npz", allow_pickle=False) as z:
            data[share] = {k: z[k] for k in ("x", "y", "hand")}
    for k in ("x", "y", "hand"):
        assert np.array_equal(data["0"][k], data["1"][k]), k
    assert 0.15 < len(data["0.3"]["y"]) / len(data["0"]["y"]) < 0.45


@pytest.mark.parametrize("share", ["1.5", "-0.1", "nan", "half"])
def test_collect_refuses_a_share_outside_0_to_1(share: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        value_pimc.main(["collect", "--hands", "1", "--share", share, "--out", str(tmp_path / "d.npz")])
    assert e.value.code == 2
    assert f"argument --share: expected a finite number from 0 to 1, got '{share}'" in capsys.readouterr().err
    assert not (tmp_path / "d.npz").exists()


def test_features_are_the_deal_from_the_seats_chair() -> None:
    rules = get_rules("scopone-scientifico")
    st = random_positions(rules, 4, 9, seed=2)
    for seat in range(rules.num_players):
        raw = vpimc.raw_features(rules, st, np.full(4, seat))
        d = rules.num_cards
        assert np.array_equal(raw[:, :d], st.hands[:, seat]), "the chair's own hand comes first"
        assert np.array_equal(raw[:, d : 2 * d], st.hands[:, (seat + 1) % 4]), "then the next seat's"
        assert raw[:, -4:].sum(axis=1).tolist() == [1] * 4, "one seat to move"
    x = vpimc.features(rules, st, np.zeros(4, dtype=np.intp))
    assert x.dtype == np.float32 and x.shape == (4, vpimc.feature_size(rules))


def test_vpimc_plays_legal_hands_through_the_plugin(value_net: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    argv = ["--plugin", "scopa_bench.value_pimc", "--variant", "scopone-scientifico", "--hands", "2", "--seed", "3"]
    argv += ["--gauntlet", f"v=vpimc:value={value_net},worlds=3,endgame=4,reply=3", "--agents", "greedy"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(out), "--no-progress", "--quiet", "--no-plot"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["pairings"][0]["hands"] == 4  # evaluate's referee refuses an illegal action


@pytest.mark.parametrize(
    "options", ["reply=0", "reply=3,prior=2", "reply=3,prior=1,mix=0.5,rworlds=4", "reply=1,prior=2,mix=0.5,rworlds=4"]
)
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
    assert isinstance(agent, vpimc.ValuePIMC)
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
    assert isinstance(agent, vpimc.ValuePIMC)
    st = random_positions(rules, 6, 12, seed=4)
    games = np.arange(6)
    agent.rng = np.random.default_rng(3)
    _, found, _ = agent.value_search(st, games)
    counts, limits, prior = np.full(6, 5, dtype=np.intp), np.ones(6, dtype=np.intp), np.ones(6)
    _, pimc, _ = move_margins(rules, st, games, counts, limits, greedy_moves, np.random.default_rng(3), prior)
    assert np.array_equal(found, pimc)
    assert_blind_to_hidden_cards(agent, rules)


# --------------------------------------------------------------------------------------------------- the search bot


def test_a_vpimc_search_bot_plays_the_vpimc_spec_with_its_value_network(value_net: Path, tmp_path: Path) -> None:
    """``export --search vpimc:... --value FILE``: the bot directory carries the value network (listed with its
    sha256), and ``bot:path=DIR`` plays exactly the ``vpimc`` spec of the same options and file; ``search=false`` is
    the network alone."""
    rules = get_rules("scopone-scientifico")
    src = random_net(tmp_path / "net", rules.name)
    opts = "worlds=3,endgame=4,prior=2,reply=3,mix=0.5,rworlds=4"
    card = export_bot(src, tmp_path / "bot", search=f"vpimc:{opts}", value=value_net)
    assert card["search"]["agent"] == "vpimc" and card["files"][VALUE]["sha256"] == file_sha256(value_net)
    bot = make_agent(f"bot:path={tmp_path / 'bot'}", rules, seed=5)
    assert isinstance(bot, vpimc.ValuePIMC)
    st = random_positions(rules, 6, 12, seed=4)
    same = decisions(make_agent(f"vpimc:value={value_net},{opts}", rules, seed=5), rules, st, seed=5)
    assert np.array_equal(decisions(bot, rules, st, seed=5), same)
    assert_blind_to_hidden_cards(make_agent(f"bot:path={tmp_path / 'bot'}", rules, seed=0), rules)
    assert isinstance(make_agent(f"bot:path={tmp_path / 'bot'},search=false", rules), BotPolicy)
    # a copy exported from it keeps the value network when it keeps the search
    again = export_bot(tmp_path / "bot", tmp_path / "again", search=f"vpimc:{opts}")
    assert again["files"][VALUE] == card["files"][VALUE]


def test_a_vpimc_bot_with_a_changed_or_unlisted_value_network_is_refused(value_net: Path, tmp_path: Path) -> None:
    rules = get_rules("scopone-scientifico")
    src = random_net(tmp_path / "net", rules.name)
    d = tmp_path / "bot"
    export_bot(src, d, search="vpimc:worlds=3,endgame=4", value=value_net)
    data = bytearray((d / VALUE).read_bytes())
    data[-100] ^= 1
    (d / VALUE).write_bytes(bytes(data))
    with pytest.raises(AgentSpecError, match="does not match its model card"):
        make_agent(f"bot:path={d}", rules)
    card = json.loads((d / MODEL_CARD).read_text())
    del card["files"][VALUE]
    (d / MODEL_CARD).write_text(json.dumps(card))
    with pytest.raises(AgentSpecError, match="which its card does not list"):
        make_agent(f"bot:path={d}", rules)


def test_export_checks_the_value_network_before_writing(value_net: Path, tmp_path: Path) -> None:
    scopone = random_net(tmp_path / "net", "scopone-scientifico")
    out = tmp_path / "out"
    with pytest.raises(ExportArgumentError, match="needs --value FILE"):
        export_bot(scopone, out, search="vpimc:worlds=3")
    with pytest.raises(ExportArgumentError, match="--value is the value network of a vpimc search"):
        export_bot(scopone, out, search="pimc:worlds=3", value=value_net)
    classic = random_net(tmp_path / "classic", "classic")
    width = vpimc.feature_size(get_rules("classic"))
    with pytest.raises(ExportArgumentError, match=f"takes the {width} features of classic"):
        export_bot(classic, out, search="vpimc:worlds=3", value=value_net)
    with pytest.raises(ExportArgumentError, match="'mix' must be a number in"):
        export_bot(scopone, out, search="vpimc:worlds=3,mix=1", value=value_net)
    assert not out.exists()


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"W0": np.zeros((289, 4)), "b0": np.zeros(4)}, "layer 0 is W"),  # no single output
        ({"W0": np.zeros((289, 1)), "b0": np.zeros(1), "extra": np.zeros(1)}, "not a value network"),
        ({"W0": np.full((289, 1), np.nan), "b0": np.zeros(1)}, "NaN or infinite"),
        ({"W0": np.zeros((289, 1), dtype=np.int64), "b0": np.zeros(1)}, r"\(float arrays\)"),
        ({"W0": np.array([None] * 289, dtype=object).reshape(289, 1), "b0": np.zeros(1)}, "object"),
    ],
)
def test_read_value_net_refuses_what_is_not_a_value_network(arrays: dict, message: str, tmp_path: Path) -> None:
    path = tmp_path / "v.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=message):
        vpimc.read_value_net(path, get_rules("scopone-scientifico"))
    with pytest.raises(AgentSpecError, match="vpimc: value="):
        make_agent(f"vpimc:value={path}", "scopone-scientifico")
