"""The inference upper-bound experiment (``bench/oracle_pimc.py``): its worlds keep every hand and shuffle only the
stock, and the cheating agent plays legal moves through evaluate's plugin hook."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.base import ActBatch, make_agent
from scopa_bench.oracle_pimc import OraclePIMC, oracle_worlds
from scopa_env import core
from scopa_env.core import Phase
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
    actions = agent.act(ActBatch(rules, core.observe(rules, st)[rows], mask, st, rows))
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
