"""Fixtures that several test files share: the smoke training runs, trained once a session (each a few seconds of
torch) instead of once in each file or test that reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import train_smoke

FIXED = ("--lr-end-fraction", "1")
"""A constant learning rate: a run cut at 2,048 steps and resumed trains like the whole one."""


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished smoke run (4,096 steps; step files at 2,048 and 4,096), trained once a session and shared: a test
    that changes anything in it works on a copy (``shutil.copytree(smoke_run, tmp_path / "run")``)."""
    return train_smoke(tmp_path_factory.mktemp("smoke"), "smoke", *FIXED)


@pytest.fixture(scope="session")
def _smoke_half_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_smoke(tmp_path_factory.mktemp("half"), "half", *FIXED, "--total-steps", "2048")


@pytest.fixture
def smoke_half(_smoke_half_once: Path, tmp_path: Path) -> Path:
    """The first half of ``smoke_run`` (stopped at 2,048 steps, to be resumed), this test's own copy of a run
    trained once a session."""
    return Path(shutil.copytree(_smoke_half_once, tmp_path / _smoke_half_once.name))
