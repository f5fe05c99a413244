"""``bench/single_game.py`` (installed as ``scopa_bench.single_game``): its Gymnasium loop, its help and its error
when PettingZoo's leduc_holdem_v4 cannot be imported. The full run (``performance_benchmark``, 5 s per env and
round) is ``-m slow``."""

from __future__ import annotations

import json
import sys

import pytest

from scopa_bench import single_game as bench


def test_gym_loop_counts_steps() -> None:
    assert bench.gym_steps_per_s("classic", 0.2) > 10


def test_help_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0 and "leduc_holdem_v4" in capsys.readouterr().out
    for argv, message in [
        (["--rounds", "0"], "argument --rounds: expected a whole number >= 1, got '0'"),
        (["--gym-seconds", "nan"], "argument --gym-seconds: expected a finite number of seconds > 0, got 'nan'"),
        (["--variants", "nope"], "--variants: unknown variant 'nope'"),
    ]:
        with pytest.raises(SystemExit) as e:
            bench.main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err


def test_missing_rlcard_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m.startswith(("pettingzoo.classic", "rlcard"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "rlcard", None)  # import rlcard now raises ImportError
    assert bench.main(["--rounds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and "pip install -e '.[bench]'" in err[0]


@pytest.mark.slow
def test_full_run_prints_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("rlcard")
    pytest.importorskip("pygame")
    assert bench.main(["--variants", "classic", "--rounds", "1", "--gym-seconds", "0.5"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["leduc_turns_per_s"] > 0 and last["aec"]["classic"]["ratio_to_leduc"] > 0
    assert last["gym"]["classic"]["steps_per_s"] > 0 and len(last["load_before"]) == 3


def test_search_speed_bench_runs_and_prints_its_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    """``bench/search_speed.py`` on one position: old and new paths choose the same action, ratios are printed."""
    from scopa_bench import search_speed

    assert search_speed.main(["--variants", "classic", "--positions", "1", "--rounds", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["pimc classic"]["same_actions"] == 1 and out["end game classic"]["same_actions"] == 1
    assert out["pimc classic"]["ratio"] > 0 and "load_before" in out
