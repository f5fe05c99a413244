"""``pip install .`` gives every tool as a command that works from any directory, with the shipped configs and
bots found as package data (a wheel built from this tree, installed into a fresh folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("scopa-train", "scopa-evaluate", "scopa-play", "scopa-record", "scopa-export", "scopa-bench", "scopa-web")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("install")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(ROOT)], check=True)
    (wheel,) = (tmp / "dist").glob("scopa-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp / "site"), str(wheel)], check=True)
    return tmp / "site"


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
        "(SHIPPED_BOTS / 'classic' / 'model_card.json').is_file(), DEFAULT_CONFIG.is_file())"
    )
    out = _run(installed, sys.executable, "-c", code)
    assert out.stdout.split() == ["True", "True", "True"], out.stdout + out.stderr
    assert str(installed) in _run(installed, sys.executable, "-c", "import train; print(train.__file__)").stdout


def test_the_benchmarks_are_installed_as_scopa_bench(installed: Path) -> None:
    for module in ("scopa_bench.env_speed",):
        out = _run(installed, sys.executable, "-m", module, "--help")
        assert out.returncode == 0 and out.stdout.startswith("usage:"), out.stderr
    assert (installed / "scopa_bench" / "agents_speed.py").is_file()
