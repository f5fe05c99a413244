"""``pip install .`` gives every tool as a command that works from any directory, with the shipped configs and
bots found as package data (a wheel built from this tree, installed into a fresh folder); the build declares its data
folders, so that setuptools warns about nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (
    "scopa-train",
    "scopa-evaluate",
    "scopa-play",
    "scopa-record",
    "scopa-export",
    "scopa-bench",
    "scopa-web",
    "scopa-review",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel built from the checkout, and what the build printed: built once a session, in the folder that the
    suite's workers share, under a lock (two builds at once in the checkout's build folders break each other)."""
    from filelock import FileLock  # torch's dependency

    shared = tmp_path_factory.getbasetemp().parent / "scopa-wheel"
    with FileLock(f"{shared}.lock"):
        printed = shared / "printed.txt"
        if not printed.is_file():
            pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
            cmd = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(shared / "dist"), str(ROOT)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            assert out.returncode == 0, out.stdout + out.stderr
            printed.write_text(out.stdout + out.stderr, encoding="utf-8")
    (wheel,) = (shared / "dist").glob("scopa-*.whl")
    return wheel, printed.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def installed(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("install")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp / "site"), str(built[0])], check=True)
    return tmp / "site"


DATA_FOLDERS = ("agents/bots", "agents/play/web/static", "configs")
"""The checkout's data folders: the shipped bots (one folder per variant), the browser game's page, the configs."""


def _data_files() -> list[str]:
    """The files of ``DATA_FOLDERS`` as the wheel names them (``configs`` is installed as ``scopa_configs``)."""
    files = [p for d in DATA_FOLDERS for p in (ROOT / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    names = [p.relative_to(ROOT).as_posix() for p in files if p.suffix != ".pyc"]
    return [n.replace("configs/", "scopa_configs/", 1) if n.startswith("configs/") else n for n in names]


def test_the_wheel_holds_every_data_file_and_lists_it(built: tuple[Path, str]) -> None:
    """Every model card, weight file and web asset of the checkout is in the wheel and in its metadata's file list
    (RECORD), and no folder is left out of the build: setuptools printed nothing (no "Package would be ignored")."""
    wheel, printed = built
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        listed = {line.split(",")[0] for line in z.read(record).decode().splitlines()}
    wanted = _data_files()
    assert any(n.startswith("agents/bots/classic/") for n in wanted) and "agents/play/web/static/app.js" in wanted
    assert not [n for n in wanted if n not in names], "data files missing from the wheel"
    assert not [n for n in wanted if n not in listed], "data files missing from the wheel's RECORD"
    assert "would be ignored" not in printed and "Warning" not in printed, printed[-3000:]


def _run(site: Path, *cmd: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}  # the installed copy, not the checkout
    return subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=site.parent, timeout=300)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(installed: Path, command: str) -> None:
    out = _run(installed, str(installed / "bin" / command), "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage:"), out.stdout[:200]


def test_the_installed_copy_finds_its_configs_and_bots(installed: Path) -> None:
    out = _run(installed, str(installed / "bin" / "scopa-train"), "--config", "strong", "--print-config")
    assert out.returncode == 0 and "name: strong" in out.stdout, out.stderr
    code = (
        "import train, agents; from pathlib import Path; "
        "from agents.nets.bot import SHIPPED_BOTS; from agents.training.train_config import DEFAULT_CONFIG; "
        "print(Path(train.__file__).parent == Path(agents.__file__).parent.parent, "
        "(SHIPPED_BOTS / 'classic' / 'model_card.json').is_file(), DEFAULT_CONFIG.is_file()); print(train.__file__)"
    )
    out = _run(installed, sys.executable, "-c", code)  # one process: each start imports torch through train
    found, where = out.stdout.splitlines()
    assert found.split() == ["True", "True", "True"], out.stdout + out.stderr
    assert str(installed) in where, where


def test_the_benchmarks_are_installed_as_scopa_bench(installed: Path) -> None:
    for module in ("scopa_bench.env_speed",):
        out = _run(installed, sys.executable, "-m", module, "--help")
        assert out.returncode == 0 and out.stdout.startswith("usage:"), out.stderr
    assert (installed / "scopa_bench" / "agents_speed.py").is_file()
