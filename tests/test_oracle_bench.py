"""The inference upper-bound experiment (``bench/oracle_pimc.py``): its worlds keep every hand and shuffle only the
stock, and the cheating agent plays legal moves through evaluate's plugin hook."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.base import make_agent
from scopa_bench.oracle_pimc import OraclePIMC, oracle_worlds, partial_oracle_worlds
from scopa_env.engine import core, observation
from scopa_env.engine.core import Phase
from scopa_env.games.policy import ActBatch
from scopa_env.rules import get_rules
from tests.test_search import random_positions


def test_oracle_worlds_keep_the_hands_and_shuffle_the_stock() -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 6, 9, seed=3)
    games = np.arange(6, dtype=np.intp)
    worlds, wrow = oracle_worlds(rules, st, games, 4, np.random.default_rng(0))
    real = st.take(games[wrow])
    assert np.array_equal(worlds.hands, real.hands) and np.array_equal(worlds.table, real.table)
    pos = real.stock_pos.astype(np.intp)
    assert (pos < rules.num_cards).all(), "every position has a stock: the test would be void"
    moved = False
    for i in range(wrow.size):
        a, b = real.deck[i], worlds.deck[i]
        assert np.array_equal(a[: pos[i]], b[: pos[i]]) and sorted(a[pos[i] :]) == sorted(b[pos[i] :])
        moved |= not np.array_equal(a, b)
    assert moved, "no world's stock was shuffled"


def test_oracle_pimc_plays_legal_moves() -> None:
    rules = get_rules("classic")
    agent = make_agent("oracle-pimc:worlds=4", rules, seed=0)
    assert isinstance(agent, OraclePIMC)
    st = random_positions(rules, 8, 11, seed=5)
    rows = np.flatnonzero(st.phase != Phase.DONE)
    mask = core.legal_action_mask(rules, st)[rows]
    actions = agent.act(ActBatch(rules, observation.observe(rules, st)[rows], mask, st, rows))
    assert mask[np.arange(rows.size), actions].all()


def test_inference_accuracy_reports_the_true_cards_found(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_fuzz_bench_scripts import load_script

    script = load_script("inference_accuracy")
    assert script.main(["--hands", "2", "--specs", "pimc:worlds=4,infer=0.5,pool=2", "--opponent", "greedy"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["pimc:worlds=4,infer=0.5,pool=2"]
    assert result["decisions"] > 0 and 0 < result["uniform"] < 1 and 0 <= result["inferred"] <= 1
    with pytest.raises(SystemExit) as e:
        script.main(["--hands", "1", "--specs", "greedy"])
    assert e.value.code == 2 and "inference on" in capsys.readouterr().err


def test_partial_oracle_worlds_hold_the_shown_cards_and_deal_the_rest() -> None:
    # see=1 keeps the true hand in every world; see=0 is pimc's uniform deal; in between, every world's
    # opponent hand holds more of the true cards than uniform worlds do, and each world stays a legal deal
    # (the same cards in the opponent's hand plus the stock as the real position).
    rules = get_rules("classic")
    st = random_positions(rules, 12, 7, seed=11)
    games = np.flatnonzero(st.phase != Phase.DONE)
    share = {}
    for see in (0.0, 0.5, 1.0):
        worlds, wrow = partial_oracle_worlds(see)(rules, st, games, 32, np.random.default_rng(1))
        real = st.take(games[wrow])
        opp = 1 - real.current.astype(np.intp)
        rows = np.arange(wrow.size)
        true_hand, world_hand = real.hands[rows, opp], worlds.hands[rows, opp]
        assert (true_hand.sum(axis=1) == world_hand.sum(axis=1)).all()
        pos = real.stock_pos.astype(np.intp)
        for i in range(wrow.size):
            hidden = sorted(np.flatnonzero(true_hand[i]).tolist() + real.deck[i, pos[i] :].tolist())
            assert hidden == sorted(np.flatnonzero(world_hand[i]).tolist() + worlds.deck[i, pos[i] :].tolist())
            assert sorted(worlds.deck[i].tolist()) == list(range(rules.num_cards))  # still a permutation
        share[see] = (true_hand & world_hand).sum() / true_hand.sum()
    assert share[1.0] == 1.0 and share[0.0] < share[0.5] < 1.0
    with pytest.raises(ValueError, match="see must be in"):
        make_agent("oracle-pimc:see=1.5", rules, seed=0)
    agent = make_agent("oracle-pimc:worlds=4,see=0.5", rules, seed=0)
    rows = np.flatnonzero(st.phase != Phase.DONE)
    mask = core.legal_action_mask(rules, st)[rows]
    actions = agent.act(ActBatch(rules, observation.observe(rules, st)[rows], mask, st, rows))
    assert mask[np.arange(rows.size), actions].all()


def _results(path: Path, label: str, spec: str, margin: float, half: float, flip: bool = False) -> Path:
    """A minimal evaluate.py results.json with one pairing of ``label`` against pimc (or listed the other way)."""
    m = {"value": margin, "low": margin - half, "high": margin + half}
    if flip:
        m = {"value": -margin, "low": -margin - half, "high": -margin + half}
    pair = {"agent": "pimc", "opponent": label} if flip else {"agent": label, "opponent": "pimc"}
    data = {
        "agents": [{"label": label, "spec": spec}, {"label": "pimc", "spec": "pimc"}],
        "pairings": [{**pair, "deals": 1000, "margin": m}],
    }
    path.write_text(json.dumps(data))
    return path


def test_information_curve_fits_the_oracle_points_and_draws_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_fuzz_bench_scripts import load_script

    script = load_script("information_curve")
    a = _results(tmp_path / "a.json", "see0.25", "oracle-pimc:see=0.25", 0.2, 0.08)
    b = _results(tmp_path / "b.json", "see0.5", "oracle-pimc:see=0.5", 0.4, 0.08, flip=True)  # pimc listed first
    bot = _results(tmp_path / "bot.json", "fast", "bot:path=agents/bots/classic", -0.07, 0.1)
    out = tmp_path / "img" / "curve.png"
    argv = [str(a), str(b), "--mark", f"fast bot={bot}", "--inference", "0.28", "--uniform", "0.25", "--out", str(out)]
    assert script.main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["slope"] == pytest.approx(0.8)  # both points lie on margin = 0.8 p
    assert summary["share_needed"]["0.4"] == pytest.approx(0.5)
    assert summary["inference_see"] == pytest.approx(0.04)
    assert summary["marks"][0]["margin"] == -0.07
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit) as e:
        script.main([str(bot), "--out", str(tmp_path / "x.png")])
    assert e.value.code == 2 and "is not oracle-pimc" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        script.main([str(a), "--mark", "nolabel", "--out", str(tmp_path / "x.png")])
    assert e.value.code == 2 and "LABEL=FILE.json" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_information_curve_reads_a_bots_margin_from_its_model_card(tmp_path: Path) -> None:
    """A shipped bot's card carries its evaluations: the pairing against pimc at its defaults (the largest sample)
    is its mark; a pimc with options is another opponent."""
    from tests.test_fuzz_bench_scripts import load_script

    script = load_script("information_curve")
    root = Path(__file__).resolve().parent.parent
    label, _, margin, low, high, deals = script.read_margin(root / "agents/bots/classic-search/model_card.json")
    assert label == "search" and deals >= 1000 and low < margin < high
    card = {
        "ratings": {"ratings": [{"agent": "pimc", "spec": "pimc:worlds=8"}], "pairings": []},
        "more_ratings": [
            {
                "ratings": [{"agent": "pimc", "spec": "pimc:worlds=8"}],
                "pairings": [
                    {"agent": "b", "opponent": "pimc", "deals": 9, "margin": {"value": 1, "low": 0, "high": 2}}
                ],
            }
        ],
    }
    (tmp_path / "card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="no pairing against 'pimc'"):
        script.read_margin(tmp_path / "card.json")
