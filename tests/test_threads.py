"""The BLAS thread pinning helper (agents/cli/threads.py): it loads no numpy, keeps or overrides the variables, restores
them, and the scripts that pin call it before numpy is imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.cli.threads import THREAD_VARS, pin_blas_threads, restore_threads

ROOT = Path(__file__).resolve().parent.parent


def test_importing_the_helper_loads_no_numpy() -> None:
    code = "import sys; import agents.cli.threads; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_pin_keeps_a_set_variable_unless_forced_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREAD_VARS[0], "4")
    for var in THREAD_VARS[1:]:
        monkeypatch.delenv(var, raising=False)
    saved = pin_blas_threads()
    assert os.environ[THREAD_VARS[0]] == "4" and all(os.environ[v] == "1" for v in THREAD_VARS[1:])
    assert saved == {THREAD_VARS[0]: "4", **{v: None for v in THREAD_VARS[1:]}}
    again = pin_blas_threads(force=True)
    assert all(os.environ[v] == "1" for v in THREAD_VARS)
    restore_threads(again)
    assert os.environ[THREAD_VARS[0]] == "4"
    restore_threads(saved)
    assert all(v not in os.environ for v in THREAD_VARS[1:])


@pytest.mark.parametrize("script", ["env_speed", "agents_speed", "agents_ladder", "bot_latency"])
def test_bench_scripts_pin_before_numpy_loads(script: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['{script}.py', '--help']\n"
        "import builtins\n"
        "real = builtins.__import__\n"
        "def spy(name, *a, **k):\n"
        "    if name == 'numpy' and 'numpy' not in sys.modules:\n"
        "        import os\n"
        "        print('pinned' if os.environ.get('OPENBLAS_NUM_THREADS') == '1' else 'late', file=sys.stderr)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = spy\n"
        f"runpy.run_path('bench/{script}.py', run_name='__main__')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.stderr.splitlines()[0] == "pinned", out.stderr[-2000:]
