"""train.py under kills, signals and damaged files: nothing saved is lost, every failure says what to do."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

import train
from agents.nets.weights import read_checkpoint_meta
from agents.training.train_config import load_config
from agents.training.trainer import Trainer
from tests.helpers import same_weights

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "configs" / "smoke.yaml")


def _history(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def _eval_steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "eval.jsonl").read_text().splitlines()]


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_bytes(path: Path) -> None:
    """Damage the middle of the file (a CRC / zlib error on reading, the zip directory still intact)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 3
    data[mid : mid + 64] = bytes(64)
    path.write_bytes(bytes(data))


def _damage_resume_member(path: Path, at: int = 100, n: int = 32) -> None:
    """Zero ``n`` bytes ``at`` bytes into the compressed data of the resume state inside a checkpoint (a zlib error
    on reading it; the zip directory and the other members intact)."""
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo("scopa_resume.npz").header_offset
    data = bytearray(path.read_bytes())
    name_len = int.from_bytes(data[offset + 26 : offset + 28], "little")
    extra_len = int.from_bytes(data[offset + 28 : offset + 30], "little")
    start = offset + 30 + name_len + extra_len + at
    data[start : start + n] = bytes(n)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip_bytes, _damage_resume_member])
def test_a_damaged_last_zip_resumes_from_the_newest_intact_step_file(
    smoke_run: Path, tmp_path: Path, damage: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    damage(run / "last.zip")
    damage(run / "checkpoints" / "step_000004096.zip")
    assert train.main(["--resume", str(run), "--total-steps", "4096"]) == 0
    err = capsys.readouterr().err
    assert "skipped damaged checkpoints" in err and "checkpoints/step_000002048.zip (step 2,048)" in err
    assert "Traceback" not in err
    assert same_weights(smoke_run / "last.zip", run / "last.zip")  # it trained 2,048 -> 4,096 again, exactly
    assert _eval_steps(run) == _eval_steps(smoke_run) == [0, 2048, 4096]  # no duplicate evaluation lines
    assert [e.get("from_step") for e in _history(run) if e["event"] == "resume"] == [2048]


@pytest.mark.parametrize("damage", [_truncate, _damage_resume_member])
def test_nothing_intact_says_so_and_what_to_do(
    smoke_run: Path, tmp_path: Path, damage: Any, capsys: pytest.CaptureFixture
) -> None:
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    for p in [run / "last.zip", *(run / "checkpoints").iterdir()]:
        damage(p)
    assert train.main(["--resume", str(run), "--total-steps", "8192"]) == 2
    err = capsys.readouterr().err
    assert "no intact checkpoint" in err and "last.zip" in err and "step_000002048.zip" in err
    assert "start a" in err and "Traceback" not in err


def test_a_step_file_newer_than_last_zip_wins(smoke_half: Path) -> None:
    """A kill between writing a step file and last.zip leaves last.zip behind: the step file is used."""
    half = smoke_half
    old_last = (half / "last.zip").read_bytes()
    assert train.main(["--resume", str(half), "--total-steps", "4096"]) == 0
    (half / "last.zip").write_bytes(old_last)  # as if killed after step_4096.zip, before last.zip
    (half / "checkpoints" / "step_000000001.zip").write_bytes(b"orphan")  # beyond keep_checkpoints
    (half / ".last.zip.abc123.tmp").write_bytes(b"half-written")
    assert train.main(["--resume", str(half), "--total-steps", "6144"]) == 0
    assert [e.get("from_step") for e in _history(half) if e["event"] == "resume"] == [2048, 4096]
    assert sorted(p.name for p in (half / "checkpoints").iterdir()) == ["step_000004096.zip", "step_000006144.zip"]
    assert not list(half.glob("*.tmp")) and not list(half.glob(".*.tmp"))


@pytest.mark.parametrize("name", ["last.zip", "best.zip"])
def test_a_folder_in_place_of_a_checkpoint_file_is_refused_before_training(
    smoke_run: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    (run / name).unlink()
    (run / name).mkdir()
    history = (run / "history.jsonl").read_text()
    assert train.main(["--resume", str(run), "--total-steps", "6144"]) == 2
    err = capsys.readouterr().err
    assert f"{name} is a folder" in err and "mv " in err and "Traceback" not in err
    assert (run / "history.jsonl").read_text() == history  # nothing trained, nothing written
    assert (run / name).is_dir()  # the user's folder is left alone


def test_step_files_stand_in_for_last_zip(smoke_run: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    (run / "last.zip").unlink()
    assert train.main(["--resume", str(run), "--total-steps", "4096"]) == 0  # step_4096: already done
    assert train.main(["--resume", str(run), "--total-steps", "6144"]) == 0
    assert read_checkpoint_meta(run / "last.zip")["steps"] == 6144


def test_a_checkpoint_exists_from_the_first_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(SMOKE, {"run_root": str(tmp_path), "name": "early", "lr_end_fraction": 1.0})
    trainer = Trainer.create(cfg)
    original = Trainer.on_step

    def on_step(self: Trainer, local: dict[str, Any]) -> bool:
        if self.model.num_timesteps >= 512:  # the first rollout, long before the first step checkpoint (2,048)
            self.stop_requested = True
        return original(self, local)

    monkeypatch.setattr(Trainer, "on_step", on_step)
    assert trainer.run() == 130
    monkeypatch.undo()
    (run,) = list(tmp_path.iterdir())
    assert read_checkpoint_meta(run / "last.zip")["steps"] == 0  # the warm start is kept
    assert train.main(["--resume", str(run), "--total-steps", "2048"]) == 0


def test_a_no_op_resume_changes_nothing(smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "history.jsonl"}
    assert train.main(["--resume", str(run), "--total-steps", "100"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "history.jsonl"}
    assert before.keys() == after.keys() and all(before[k] == after[k] for k in before if k != "events")


# SIGHUP goes through the same StopSignals handler as SIGTERM (tests/test_signals.py sends both in-process): its
# train.py subprocess, another ten seconds, runs under -m slow.
@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)])
def test_a_signal_saves_a_checkpoint_and_the_run_resumes_from_python(tmp_path: Path, sig: signal.Signals) -> None:
    """The run is started from the command line (``__main__``) and resumed through ``Trainer.resume``."""
    cmd = [sys.executable, str(ROOT / "train.py"), "--config", SMOKE, "--run-root", str(tmp_path), "--name", "sig"]
    cmd += ["--total-steps", "1e9", "--num-envs", "16", "--n-steps", "8", "--batch-size", "128"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if line.startswith("training classic"):
            break
        assert time.monotonic() < deadline, "training did not start"
    time.sleep(1.0)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + int(sig), err
    assert "interrupted: saved" in out + err and "--resume" in out + err and "Traceback" not in err
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    steps = read_checkpoint_meta(run / "last.zip")["steps"]
    trainer = Trainer.resume(run, None, {"total_steps": steps + 256, "progress": False})
    assert trainer.run() == 0
    assert read_checkpoint_meta(run / "last.zip")["steps"] >= steps + 256


def test_a_signal_lost_during_the_set_up_still_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM's exception discarded during the set-up (as numpy discards one raised inside an attribute look-up):
    the run stops when the set-up ends instead of training on."""

    def create(cfg: Any) -> Any:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)  # the handler runs (and raises) here
        except BaseException:  # the point: the exception is lost here
            pass
        return pytest.fail  # a trainer whose run() would fail the test

    monkeypatch.setattr(Trainer, "create", staticmethod(create))
    assert train.main(["--config", SMOKE, "--run-root", str(tmp_path)]) == 128 + int(signal.SIGTERM)
    assert "interrupted before training started" in capsys.readouterr().err
