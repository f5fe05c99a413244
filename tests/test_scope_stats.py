"""``bench/scope_stats.py``: scope made and conceded per hand, per agent, from an evaluation's game records."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import evaluate

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "scope_stats.py"


def _module():
    spec = importlib.util.spec_from_file_location("bench_scope_stats", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # registered before it runs, as importlib's recipe does (its dataclass needs it)
    spec.loader.exec_module(mod)
    return mod


def _hand(scope: list[int]) -> dict:
    return {"points": [{"scope": s, "total": s} for s in scope]}


def test_counts_made_and_conceded_per_hand(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    records = [
        {"agents": ["a", "b"], "hands": [_hand([2, 0]), _hand([0, 1])]},
        {"agents": ["b", "a"], "hands": [_hand([3, 1])]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    stats = _module().scope_stats([path])
    assert stats["a"]["hands"] == 3 and stats["b"]["hands"] == 3
    assert stats["a"]["made"][0] == pytest.approx((2 + 0 + 1) / 3)
    assert stats["a"]["conceded"][0] == pytest.approx((0 + 1 + 3) / 3)
    assert stats["b"]["made"][0] == pytest.approx(stats["a"]["conceded"][0])


def test_three_sides_concede_the_mean_of_the_others(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"agents": ["a", "b", "c"], "hands": [_hand([0, 2, 4])]}) + "\n", encoding="utf-8")
    stats = _module().scope_stats([path])
    assert stats["a"]["conceded"][0] == pytest.approx(3.0)
    assert stats["c"]["conceded"][0] == pytest.approx(1.0)


def test_records_of_a_real_evaluation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "games.jsonl"
    evaluate.main(
        [
            "--variant",
            "scopone-scientifico",
            "--gauntlet",
            "greedy",
            "--agents",
            "random",
            "--hands",
            "3",
            "--seed",
            "5",
            "--workers",
            "1",
            "--out",
            str(tmp_path / "eval"),
            "--records",
            str(records),
            "--quiet",
            "--no-progress",
            "--no-plot",
        ]
    )
    capsys.readouterr()
    mod = _module()
    stats = mod.scope_stats([records])
    assert set(stats) == {"greedy", "random"}
    total = sum(len(json.loads(line)["hands"]) for line in records.read_text().splitlines())
    assert stats["greedy"]["hands"] == total
    mod.main([str(records)])
    out = capsys.readouterr().out
    assert "| greedy |" in out and "| random |" in out


def test_a_record_without_agents_says_how_to_write_one(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"hands": [_hand([1, 0])]}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"evaluate\.py --records"):
        _module().scope_stats([path])
