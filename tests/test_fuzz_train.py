"""Malformed values at every train.py option and config key: exit status 2, one ``error:`` line naming the option,
no traceback, no run directory left behind."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

import train
from agents.training.train_config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "configs" / "smoke.yaml")  # a wrongly accepted value would train for seconds, not hours

BY_TYPE: dict[typing.Any, list[str]] = {
    int: ["abc", "-1", "1.5", "nan", "inf", "1e30", "", "0x10"],
    float: ["abc", "-1", "nan", "inf", "-inf", "", "1e400"],
    bool: ["maybe", "2", ""],
    list[int]: ["abc", "0", "-3", "1.5", "100000", ""],
}
STRINGS: dict[str, list[str]] = {
    "name": ["", "a b", "x__y", "../up"],
    "variant": ["nope", "", "cirulla-5"],
    "device": ["tpu", "cuda:99"],
    "reward": ["win", ""],
    "episode": ["game", ""],
    "learner_seat": ["7", "-1", "left"],
    "partner": ["nope", "/missing.zip"],
    "activation": ["gelu", ""],
    "pretrain_teacher": ["nope", "pimc:worlds=-1", "/missing.zip"],
    "baselines": ["nope", "greedy,nope", "/missing.zip"],
    "eval_opponents": ["nope", ""],
    "init_from": ["/missing.zip", str(ROOT / "README.md"), str(ROOT)],
    "run_root": [str(ROOT / "README.md")],
    "ray": ["nowhere", "host:", "a b:1", "http://x:1"],
}
CHECKED_AT_START = {"device", "partner", "pretrain_teacher", "baselines", "eval_opponents", "init_from", "run_root"}
"""Fields checked when the run starts (agents built, files read, the run directory made), not by the config."""
ONE_OFF = {"total_steps": ["0"], "eval_deals": ["0", "2000000"], "num_envs": ["0", "99999999"], "n_steps": ["0"]}


def _cases() -> list[tuple[str, str]]:
    hints = typing.get_type_hints(TrainConfig)
    cases = []
    for f in dataclasses.fields(TrainConfig):
        tp = hints[f.name]
        if f.name in STRINGS:
            values = STRINGS[f.name]
        elif tp in BY_TYPE:
            values = BY_TYPE[tp]
        elif tp == float | None:
            values = [v for v in BY_TYPE[float] if v]  # "" is null: no KL limit
        else:
            raise AssertionError(f"no malformed values for {f.name} ({tp})")
        cases += [(f.name, v) for v in [*values, *ONE_OFF.get(f.name, [])]]
    return cases


@pytest.mark.parametrize(("key", "value"), _cases())
def test_every_option_refuses_malformed_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    runs = tmp_path / "runs"
    flag = "--" + key.replace("_", "-")
    try:
        checked_at_start = key in CHECKED_AT_START  # the others are checked with the config (--print-config)
        extra = [] if checked_at_start else ["--print-config"]
        if key == "init_from":  # with a warm start the combination itself is refused; test the file checks
            extra.append("--pretrain-teacher=none")
        status = train.main(["--config", SMOKE, "--run-root", str(runs), f"{flag}={value}", *extra])
    except SystemExit as e:  # argparse's own error path (e.g. --progress=maybe): usage + error line, status 2
        status = e.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2, f"{flag}={value!r} was accepted"
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("train.py: error:") and "Traceback" not in err, err
    assert key in lines[-1] or flag in lines[-1], lines[-1]
    assert not runs.exists() or not any(runs.iterdir()), "a run directory was left behind"


@pytest.mark.parametrize(
    "text",
    [
        "seed: five\n",
        "seed: [1]\n",
        "seed: true\n",
        "variant: [classic]\n",
        "net_arch: {a: 1}\n",
        "baselines: [[random]]\n",
        "nope: 1\n",
        "- a list\n",
        "a: [\n",
        "total_steps: 5.7\n",
        "learning_rate: .nan\n",
    ],
)
def test_config_files_with_wrong_types_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert train.main(["--config", str(path), "--run-root", str(tmp_path / "runs"), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("train.py: error:") and str(path) in err and "Traceback" not in err


@pytest.mark.parametrize("content", [b"\xff\xfe\x00binary", None])
def test_unreadable_config_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: bytes | None
) -> None:
    path = tmp_path / "c.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    assert train.main(["--config", str(path), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("train.py: error:") and "Traceback" not in err


@pytest.mark.parametrize("run", ["/missing/run", str(ROOT / "README.md"), str(ROOT)])
def test_resume_of_something_that_is_not_a_run(capsys: pytest.CaptureFixture[str], run: str) -> None:
    assert train.main(["--resume", run]) == 2
    err = capsys.readouterr().err
    assert err.startswith("train.py: error: --resume") and "Traceback" not in err
