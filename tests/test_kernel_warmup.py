"""The compiled kernel and the agents' search on it are compiled once, up front (``agents.search.compiled.jit``'s
warm-up after ``scopa_env.engine.kernel.jit``'s, which ``make setup`` runs): no command's later call compiles a new
signature, and the first compile says what it does with an honest estimate."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.search import compiled
from scopa_env.engine import kernel

ROOT = Path(__file__).resolve().parents[1]

COMMANDS_PATHS = """
import io, numpy as np
from agents.search import compiled
m = compiled.jit()
def signatures():
    return {k: {str(s) for s in v.signatures} for k, v in vars(m).items() if hasattr(v, "signatures")}
before = signatures()
from agents.play.terminal import PlayConfig, run
cards = "\\n".join(r + s for r in "A234567JQK" for s in "dcsb")
for variant, opponent in (("classic", "pimc:worlds=4"), ("classic", None), ("cirulla", "ismcts:iterations=50")):
    run(PlayConfig(variant=variant, opponent=opponent, seed=3), io.StringIO(f"hint\\n{cards}\\nhint\\n"), io.StringIO())
from scopa_env.envs.gym import ScopaEnv
from scopa_env.scopa_v0 import env as aec_env
e = aec_env(variant="classic")
e.reset(seed=1)
for _ in e.agent_iter(80):
    obs, _, done, cut, _ = e.last()
    e.step(None if done or cut else int(np.flatnonzero(obs["action_mask"])[0]))
g = ScopaEnv(variant="classic")
g.reset(seed=0)
for _ in range(40):
    if any(g.step(int(np.flatnonzero(g.action_masks())[0]))[2:4]):
        g.reset()
after = signatures()
print(sorted(k for k in after if after[k] - before.get(k, set())))
"""


def test_no_later_call_compiles_a_new_signature() -> None:
    """The terminal game's hints (pimc, the shipped bot, ismcts on cirulla: the search functions), the AEC env's
    fused step and ScopaEnv's random opponents call the compiled functions only with the warm-up's signatures, so a
    process after ``make setup`` loads and never compiles (a new signature would compile for seconds, silently)."""
    out = subprocess.run([sys.executable, "-c", COMMANDS_PATHS], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_compile_progress_estimates_from_the_steps_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any step the reference time; after each step the time left from the time taken and the steps' shares
    (on a log: a line every ``LINE_S`` seconds); the last line says how long it took."""
    clock = _Clock()
    monkeypatch.setattr(kernel.time, "perf_counter", clock)
    out = io.StringIO()
    progress = kernel.CompileProgress(out)
    assert "compiling the numba kernel once, about 0:30" in out.getvalue()
    steps = list(kernel.WARM_UP_STEPS)
    assert sum(kernel.WARM_UP_STEPS.values()) == pytest.approx(1.0)
    assert sum(compiled.WARM_UP_STEPS.values()) == pytest.approx(1.0)
    clock.now = 20.0
    progress.tick(steps[0])  # 38% in 20 s: 0:33 left
    assert out.getvalue().splitlines()[-1] == "scopa: compiling the numba kernel:  38%, 0:20, about 0:33 left"
    clock.now = 25.0
    progress.tick(steps[1])  # under LINE_S since the last line: no line on a log
    assert out.getvalue().count("\n") == 2
    for step in steps[2:]:
        progress.tick(step)
    clock.now = 90.0
    progress.done()
    assert out.getvalue().splitlines()[-1] == "scopa: compiled the numba kernel in 1:30"
    search = io.StringIO()
    progress = kernel.CompileProgress(search, "the numba search", compiled.COMPILE_SECONDS, compiled.WARM_UP_STEPS)
    assert "compiling the numba search once, about 0:35" in search.getvalue()
    clock.now = 110.0
    progress.tick(next(iter(compiled.WARM_UP_STEPS)))  # 78% in 20 s: 0:06 left
    assert search.getvalue().splitlines()[-1] == "scopa: compiling the numba search:  78%, 0:20, about 0:06 left"


def test_numba_cache_dir_is_the_only_cache_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With NUMBA_CACHE_DIR set numba caches there alone: the kernel looks for its cache there alone (a cache beside
    the modules must not hide a cold compile's progress)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert kernel.cache_places() == [str(tmp_path)] and not kernel.cached_already("_kernel_calls", [str(tmp_path)])
    assert kernel.cache_places(os.path.dirname(compiled.__file__)) == [str(tmp_path)]
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert kernel.cache_places()[0] == os.path.join(os.path.dirname(kernel.__file__), "__pycache__")
    here = os.path.dirname(compiled.__file__)
    assert kernel.cache_places(here)[0] == os.path.join(here, "__pycache__")


@pytest.mark.slow
def test_a_cold_compile_shows_its_progress_and_a_second_process_loads(tmp_path: Path) -> None:
    """Two processes started together on an empty cache: one compiles (the progress lines on stderr, the kernel's then
    the search's), the other waits for it and loads what it wrote; then a new process loads both, silently."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    code = "from agents.search import compiled; compiled.jit()"
    both = [
        subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errs = [p.communicate(timeout=1800)[1] for p in both]
    assert [p.returncode for p in both] == [0, 0], errs
    cold, waited = sorted(errs, key=lambda err: "compiling the numba kernel once" not in err)
    assert "compiling the numba kernel once" in cold and "compiled the numba kernel in" in cold
    assert "compiling the numba search once" in cold and "compiled the numba search in" in cold
    assert "compiling" not in waited.replace("another process is compiling", "")
    assert "waiting for it" in waited
    warm = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0 and warm.stderr == "", warm.stderr[-2000:]


def _fake_load(places: list[str], progress: list[str]) -> None:
    """``kernel.load_or_compile`` of a fake module ``fake`` whose warm-up writes numba's index file (as a compile
    would); ``progress`` gets "compile" where it was given a progress line to tick."""

    def warm_up(mod: object, tick: object) -> None:
        Path(places[0], "fake.f-1.py311.nbi").write_bytes(b"")

    def new_progress() -> kernel.CompileProgress:
        progress.append("compile")
        return kernel.CompileProgress(io.StringIO())

    kernel.load_or_compile(
        "fake", list, warm_up, "fake", module="fake", places=places, compiled_with={}, new_progress=new_progress
    )


def test_one_process_compiles_the_others_wait_and_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The disk cache's lock (``kernel.load_or_compile``): while another holds it to compile, a process waits (and
    says so), then loads what the other wrote instead of compiling it again; alone on an empty cache, it compiles."""
    import fcntl
    import threading

    places, progress = [str(tmp_path)], list[str]()
    with open(tmp_path / "fake.compile.lock", "a") as other:  # another process compiling: its exclusive lock
        fcntl.flock(other, fcntl.LOCK_EX)
        waiter = threading.Thread(target=_fake_load, args=(places, progress))
        waiter.start()
        waiter.join(timeout=1.0)
        assert waiter.is_alive()  # it waits on the lock
        (tmp_path / "fake.f-1.py311.nbi").write_bytes(b"")  # the other's compile done, cached
        fcntl.flock(other, fcntl.LOCK_UN)
        waiter.join(timeout=30)
    assert not waiter.is_alive() and progress == []  # loaded, not compiled
    assert "another process is compiling (or loading) the fake; waiting for it" in capsys.readouterr().err
    (tmp_path / "fake.f-1.py311.nbi").unlink()
    _fake_load(places, progress)
    assert progress == ["compile"] and "waiting" not in capsys.readouterr().err
