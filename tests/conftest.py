"""Fixtures that several test files share: the smoke training runs, trained once a session (each a few seconds of
torch) instead of once in each file or test that reads them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------------------------- the numba code, compiled once

_COMPILE: dict[str, Any] = {}
"""The background compile of this session, when one was started: its process and log file."""


def _compiled_already() -> bool:
    """Whether the disk cache holds the kernel and the search, once their stale files (a source newer) are gone."""
    from agents.search import compiled
    from scopa_env.engine import kernel

    search_places = kernel.cache_places(os.path.dirname(os.path.abspath(compiled.__file__)))
    kernel.drop_stale_cache()
    kernel.drop_stale_cache(search_places, compiled.COMPILED_WITH)
    return kernel.cached_already("_kernel_calls", kernel.cache_places()) and kernel.cached_already(
        "kernel_search", search_places
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """On a fresh clone, compile the kernel and the agents' search (about 75 s of one core) in a process of its own
    while the tests start: the tests that need them wait on the disk cache's lock (``kernel.load_or_compile``) and
    then load them, and the others run meanwhile on the other core. Only in the process that runs the session (the
    xdist controller, or pytest alone), and only when the disk cache does not hold them already."""
    if hasattr(session.config, "workerinput") or _compiled_already():
        return
    log = Path(tempfile.mkstemp(prefix="scopa-compile-", suffix=".log")[1])
    _COMPILE["log"] = log
    with log.open("w") as out:
        _COMPILE["process"] = subprocess.Popen(
            [sys.executable, "-c", "from agents.search import compiled; compiled.jit()"],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parent.parent,
        )


def pytest_report_header(config: pytest.Config) -> str | None:
    if "process" not in _COMPILE:
        return None
    return (
        "numba: compiling the kernel and the agents' search once, in a background process (about 1:15 on a quiet "
        "2-core machine); the tests that need them wait for it"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    process = _COMPILE.get("process")
    if process is None:
        return
    rc, log = process.poll(), _COMPILE["log"]
    if rc is None:  # the session was cut short: the compile finishes on its own and caches what it compiled
        terminalreporter.write_line(f"numba: still compiling in the background (process {process.pid}, log {log})")
    elif rc == 0:
        done = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("scopa: compiled")]
        terminalreporter.write_line(f"numba, in the background: {'; '.join(done) or 'loaded from the disk cache'}")
    else:
        terminalreporter.write_line(f"numba: the background compile failed (exit {rc}); its log, {log}:", red=True)
        terminalreporter.write_line(log.read_text(errors="replace")[-4000:])
