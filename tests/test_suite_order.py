"""The suite's own scheduling (``tests/conftest.py``): the modules of ``KERNEL_FREE`` run first, while the kernel and
the search compile in the background, so they must exist and must never load (or compile) the compiled code; the long
modules of ``LONG_FIRST`` come next."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parent.parent


def test_every_kernel_free_name_is_a_test_module() -> None:
    missing = sorted(name for name in conftest.KERNEL_FREE if not (ROOT / "tests" / f"{name}.py").is_file())
    assert not missing, f"KERNEL_FREE names test modules that do not exist: {missing}"


def test_every_long_first_name_is_a_test_module_outside_kernel_free() -> None:
    missing = sorted(name for name in conftest.LONG_FIRST if not (ROOT / "tests" / f"{name}.py").is_file())
    assert not missing, f"LONG_FIRST names test modules that do not exist: {missing}"
    assert not set(conftest.LONG_FIRST) & conftest.KERNEL_FREE


def test_the_kernel_free_tests_come_first_then_the_long_ones_in_their_order() -> None:
    ids = [
        "tests/test_kernel.py::test_a",
        "tests/test_core.py::test_b[1]",
        "tests/test_search.py::test_c",
        "tests/test_ray.py::test_f",
        "tests/test_core.py::test_d",
        "tests/test_web_browser.py::test_g",
        "tests/test_moves.py::test_e",
        "tests/test_ray.py::test_h",
    ]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    order = [1, 4, 6, 5, 3, 7, 0, 2]  # KERNEL_FREE; then LONG_FIRST's modules in its order; then the rest
    assert [item.nodeid for item in items] == [ids[i] for i in order]


@pytest.mark.slow
def test_the_kernel_free_modules_compile_nothing(tmp_path: Path) -> None:
    """Run with an empty numba cache of their own, the modules of ``KERNEL_FREE`` (and every process they start) leave
    it empty: none of them loads the compiled kernel or search, which would compile them into it."""
    cache = tmp_path / "numba"
    cache.mkdir()
    modules = sorted(f"tests/{name}.py" for name in conftest.KERNEL_FREE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())
    assert not written, f"a KERNEL_FREE module compiled or loaded the kernel: {written[:10]}"
