"""Fixtures that several test files share: the smoke training runs, trained once a session (each a few seconds of
torch) instead of once in each file or test that reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SMOKE_CONFIG = str(Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml")
"""configs/smoke.yaml: 4,096 steps, an evaluation and a step file every 2,048."""


def _smoke(root: Path, name: str, *extra: str) -> Path:
    """Train the smoke config with a constant learning rate (so that a run cut at 2,048 steps and resumed trains
    like the whole one) under ``root``; returns the run's folder."""
    import train

    assert (
        train.main(
            ["--config", SMOKE_CONFIG, "--run-root", str(root), "--name", name, "--lr-end-fraction", "1", *extra]
        )
        == 0
    )
    (run,) = [p for p in root.iterdir() if p.is_dir() and f"__{name}__" in p.name]
    return run


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished smoke run (4,096 steps; step files at 2,048 and 4,096), trained once a session and shared: a test
    that changes anything in it works on a copy (``shutil.copytree(smoke_run, tmp_path / "run")``)."""
    return _smoke(tmp_path_factory.mktemp("smoke"), "smoke")


@pytest.fixture(scope="session")
def _smoke_half_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _smoke(tmp_path_factory.mktemp("half"), "half", "--total-steps", "2048")


@pytest.fixture
def smoke_half(_smoke_half_once: Path, tmp_path: Path) -> Path:
    """The first half of ``smoke_run`` (stopped at 2,048 steps, to be resumed), this test's own copy of a run
    trained once a session."""
    return Path(shutil.copytree(_smoke_half_once, tmp_path / _smoke_half_once.name))
