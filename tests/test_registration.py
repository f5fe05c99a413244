"""Gymnasium ids (issue 20, item 1): one ``scopa/<Variant>-v0`` per variant, registered on ``import scopa_env``;
``gymnasium.make`` passes Gymnasium's env checker and ``make_vec`` vectorises it. Importing the package stays cheap."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import scopa_env  # noqa: F401  (registers the ids)
from scopa_env.envs.gym import ScopaEnv
from scopa_env.envs.registration import ENV_IDS, env_id, variant_of
from scopa_env.rules import VARIANTS
from tests.helpers import run_python

ROOT = Path(__file__).resolve().parents[1]


def test_one_id_per_variant_in_camel_case() -> None:
    assert list(ENV_IDS.values()) == list(VARIANTS)
    assert env_id("classic") == "scopa/Classic-v0"
    assert env_id("scopa-a-quattro") == "scopa/ScopaAQuattro-v0"
    assert env_id("scopone-scientifico") == "scopa/ScoponeScientifico-v0"
    assert env_id("simple-4-teams") == "scopa/Simple4Teams-v0"
    assert env_id("classic-15") == "scopa/Classic15-v0"
    assert env_id("cirulla-4") == "scopa/Cirulla4-v0"
    for id, variant in ENV_IDS.items():
        assert id in gymnasium.registry
        assert variant_of(id) == variant
    with pytest.raises(ValueError, match="not a Scopa id"):
        variant_of("scopa/Cirulla5-v0")


def test_the_docs_list_every_id() -> None:
    text = (ROOT / "docs" / "ecosystem.md").read_text()
    listed = re.findall(r"`(scopa/\w+-v0)` \| `([\w-]+)`", text)
    assert listed == list(ENV_IDS.items())


@pytest.mark.parametrize("id", list(ENV_IDS))
def test_make_passes_the_env_checker(id: str) -> None:
    env = gymnasium.make(id, opponents="random", max_hands=2)
    assert isinstance(env.unwrapped, ScopaEnv) and env.unwrapped.rules.name == ENV_IDS[id]
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    mask = env.unwrapped.action_masks()
    obs, _reward, _terminated, _truncated, info = env.step(int(np.flatnonzero(mask)[0]))
    assert "learner_seat" in info


def test_make_passes_options_and_gives_the_same_game_as_the_class() -> None:
    made = gymnasium.make("scopa/ScopaAQuattro-v0", opponents="greedy", reward="points", episode="hand")
    direct = ScopaEnv("scopa-a-quattro", opponents="greedy", reward="points", episode="hand")
    a, _ = made.reset(seed=11)
    b, _ = direct.reset(seed=11)
    while True:
        assert np.array_equal(a, b)
        act = int(np.flatnonzero(direct.action_masks())[-1])
        a, ra, ta, ua, _ = made.step(act)
        b, rb, tb, ub, _ = direct.step(act)
        assert (ra, ta, ua) == (rb, tb, ub)
        if tb or ub:
            break


def test_module_prefix_id_and_make_vec() -> None:
    env = gymnasium.make("scopa_env:scopa/Classic-v0")
    assert env.unwrapped.rules.name == "classic"
    venv = gymnasium.make_vec("scopa/Simple3-v0", num_envs=3, opponents="random")
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (3, venv.single_observation_space.shape[0])
    masks = np.stack(venv.call("action_masks"))
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    obs, reward, _terminated, _truncated, _infos = venv.step(actions)
    assert reward.shape == (3,) and obs.shape[0] == 3
    venv.close()


def test_importing_the_package_registers_without_heavy_imports() -> None:
    code = (
        "import sys, gymnasium\n"
        "import scopa_env\n"
        "assert 'scopa/Classic-v0' in gymnasium.registry\n"
        "heavy = ('torch', 'stable_baselines3', 'pettingzoo', 'scopa_env.envs.gym', 'agents')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    assert run_python(code).stdout.strip() == "[]"


DOC_BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "ecosystem.md").read_text(encoding="utf-8"), re.S)


def test_ecosystem_doc_has_examples() -> None:
    assert len(DOC_BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(DOC_BLOCKS)))
def test_ecosystem_doc_example_runs(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples name agents/bots/classic relative to the repository
    exec(compile(DOC_BLOCKS[index], f"docs/ecosystem.md[python block {index}]", "exec"), {"__name__": "__doc__"})
