"""What the whole suite shares: the smoke training runs, trained once a session (each a few seconds of torch)
instead of once in each file or test that reads them; and the compiled kernel and search, compiled (on a fresh clone,
or after a change of their code) in the background while the tests that need neither run first.

The compile: about a minute of one core, which ``make test`` used to wait for before the tests started. Now the
session starts one process that compiles (or just loads) the kernel and the search (``agents.search.compiled.jit``)
as soon as the tests are collected, and orders the tests so that the modules of ``KERNEL_FREE`` (about 700 tests and
a minute of both cores, none of which load the compiled code) run first; before any other test, a worker loads the
compiled code itself, waiting on the cache's lock (``kernel.load_or_compile``) until that compile is done. So no test
(nor a process that it starts) sees a compile in progress, and the other core is busy meanwhile. A module missing
from ``KERNEL_FREE`` only runs later; one listed that starts to use the compiled code waits inside its test. The
modules of ``LONG_FIRST`` come next, so that the suite ends on short tests and both cores finish together."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, train_smoke

FIXED = ("--lr-end-fraction", "1")
"""A constant learning rate: a run cut at 2,048 steps and resumed trains like the whole one."""


@pytest.fixture(scope="session", autouse=True)
def _sb3_logs_in_the_sessions_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """stable-baselines3 makes a folder /tmp/SB3-<time> for every model whose logger it configures itself (the
    tests' own MaskablePPO models; the trainer sets its own): here they go to the session's temporary folder, which
    pytest cleans up, instead of piling up in /tmp (processes the tests start inherit it)."""
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3"))


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


KERNEL_FREE = frozenset(
    """
    test_activations test_bench test_core test_core_cirulla test_differential test_docs test_docs_commands
    test_docs_site test_errors test_fuzz_bench_scripts test_fuzz_labels test_fuzz_record_play test_hostile_labels
    test_install test_leaderboard_inputs test_league test_moves test_path_kind test_random_agent test_random_streams
    test_ratings test_record test_reference test_reference_cirulla test_scoring test_suit_symmetry test_suite_order
    test_sweep_inputs test_threads
    """.split()
)
"""The test modules none of whose tests load the compiled kernel or search, which run while they compile (found by
running the suite with the compiled code made to fail; ``tests/test_suite_order.py`` checks it under ``-m slow``)."""


def _kernel_free(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (``tests/test_x.py::...``) is in a module of ``KERNEL_FREE``."""
    return Path(nodeid.split("::", 1)[0]).stem in KERNEL_FREE


LONG_FIRST = (
    "test_web_browser",
    "test_web_load",
    "test_ray",
    "test_integrations",
    "test_web",
    "test_train",
    "test_train_reliability",
)
"""The modules of the longest tests (a browser, a loaded server, Ray clusters, other libraries' trainers, training runs
stopped by signals: 2-13 s each), run first after ``KERNEL_FREE`` rather than last in the alphabet: at the end of the
suite they left one core idle for about half a minute while the other worker finished them. The suite now ends on
short tests, and both workers finish together."""


def _order(nodeid: str) -> tuple[bool, int]:
    module = Path(nodeid.split("::", 1)[0]).stem
    return (module not in KERNEL_FREE, LONG_FIRST.index(module) if module in LONG_FIRST else len(LONG_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of ``KERNEL_FREE`` first, then those of ``LONG_FIRST``, then the others (a stable sort: each worker
    orders its collection alike)."""
    items.sort(key=lambda item: _order(item.nodeid))


class _Compile:
    """The session's compile of the kernel and the search, in a process of its own (started once, by the process that
    schedules the tests), its output kept in a file and shown if it fails."""

    process: subprocess.Popen[bytes] | None = None
    log: Any = None

    @classmethod
    def start(cls, config: pytest.Config, nodeids: list[str]) -> None:
        if cls.process is not None or config.option.collectonly or all(_kernel_free(n) for n in nodeids):
            return
        from agents.search import compiled
        from scopa_env.engine import kernel

        fresh = not (
            kernel.cached_already("_kernel_calls", kernel.cache_places())
            and kernel.cached_already("kernel_search", kernel.cache_places(os.path.dirname(compiled.__file__)))
        )
        if fresh:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.ensure_newline()
                reporter.write_line(
                    "scopa: compiling the numba kernel and search (about a minute of one core) while the tests "
                    "that need neither run first"
                )
        cls.log = tempfile.TemporaryFile()
        cls.process = subprocess.Popen(
            [sys.executable, "-c", "from agents.search import compiled; compiled.jit()"],
            cwd=ROOT,
            stdout=cls.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the suite leaves it to finish the cache, not half-written
        )

    @classmethod
    def finish(cls, reporter: Any) -> None:
        if cls.process is None or cls.process.poll() is None:
            return  # not started, or still running (the suite was cut short): it finishes on its own
        if cls.process.returncode != 0:
            cls.log.seek(0)
            reporter.write_sep("-", "the compile of the kernel and search failed")
            reporter.write_line(cls.log.read().decode(errors="replace"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without workers (``-n 0``), this process starts the compile once it knows its tests."""
    if not hasattr(session.config, "workerinput") and not session.config.pluginmanager.hasplugin("dsession"):
        _Compile.start(session.config, [item.nodeid for item in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """With workers (``-n 2``), the scheduling process starts it when the first worker has collected."""
    _Compile.start(node.config, ids)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    _Compile.finish(terminalreporter)


_LOADED = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the first test outside ``KERNEL_FREE``, load the compiled code here (waiting for the compile, if it is
    still going on)."""
    global _LOADED
    if _LOADED or _kernel_free(item.nodeid):
        return
    _LOADED = True  # once: if it cannot be loaded, the tests that use it say so themselves
    from agents.search import compiled

    compiled.jit()
