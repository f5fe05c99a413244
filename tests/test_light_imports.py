"""``import scopa_env``, ``gymnasium.make("scopa/...")`` and ``act_env`` on its env stay light: no torch,
stable-baselines3, sb3-contrib or PettingZoo. The vector env (``scopa_env.envs.vec_env``) is the one stable-baselines3
importer of the package; it still answers to its old name, ``scopa_env.envs.gym.ScopaVecEnv`` (``test_architecture``'s
``test_every_env_module_imports_with_agents_blocked`` steps it under that name).

Checked in a fresh interpreter (what a user's process loads) and read from the source (who may import what).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "pettingzoo")

IMPORTERS = {
    "stable_baselines3": {"scopa_env.envs.vec_env"},
    "sb3_contrib": set(),
    "torch": {"scopa_env.envs.rllib"},  # inside the function that builds the RLlib classes (Ray's extra)
    "ray": {"scopa_env.envs.rllib"},
    "pettingzoo": {"scopa_env.envs.aec", "scopa_env.envs.parallel"},
}
"""The only ``scopa_env`` modules that may import each heavy library."""

_PROBE = f"""
import json, sys
HEAVY = {HEAVY!r}
stages = {{}}
def loaded(stage):
    stages[stage] = sorted(m for m in HEAVY if m in sys.modules)

import scopa_env
loaded("import scopa_env")
import scopa_env.envs.gym
loaded("import scopa_env.envs.gym")
import gymnasium
from scopa_env.envs.registration import ENV_IDS
for id in ENV_IDS:
    gymnasium.make(id).close()
loaded("gymnasium.make of every id")
env = gymnasium.make("scopa/Classic-v0", opponents="random")
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(int(env.unwrapped.action_masks().argmax()))
assert env.observation_space.contains(obs)
loaded("Classic-v0 reset and step")
from scopa_env.envs.interop import act_env
from scopa_env.games.policy import RandomAgent
env.step(act_env(RandomAgent("classic", seed=0), env))
loaded("act_env on Classic-v0")

print(json.dumps(stages))
"""


def test_the_package_and_its_gymnasium_ids_load_no_heavy_library() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    stages = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(stages) == 5
    heavy = {stage: mods for stage, mods in stages.items() if mods}
    assert not heavy, f"heavy libraries loaded by a light use of the package: {heavy}"


def test_an_unknown_name_of_scopa_env_gym_is_still_an_attribute_error() -> None:
    import scopa_env.envs.gym

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEnv'"):
        scopa_env.envs.gym.NoSuchEnv  # noqa: B018
    with pytest.raises(ImportError, match="NoSuchEnv"):
        from scopa_env.envs.gym import NoSuchEnv  # noqa: F401


def _top_imports(path: Path) -> set[str]:
    """Top-level package names ``path`` imports anywhere (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_named_modules_import_the_heavy_libraries() -> None:
    importers: dict[str, set[str]] = {lib: set() for lib in IMPORTERS}
    for path in sorted((ROOT / "scopa_env").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for lib in _top_imports(path) & set(IMPORTERS):
            importers[lib].add(module)
    wrong = {lib: sorted(mods) for lib, mods in importers.items() if mods != IMPORTERS[lib]}
    assert not wrong, f"heavy libraries imported by other scopa_env modules than {IMPORTERS}: {wrong}"
