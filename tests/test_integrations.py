"""Third-party RL libraries on the Scopa envs without glue (docs/integrations.md): every Python block of the page
runs here, a few hundred steps through Tianshou's, TorchRL's, RLlib's and SB3's own collectors and trainers.

Each block is skipped when its library is missing (``make test`` installs them all: the ``integrations`` extra).
The blocks run against a strict ``scopa_v0.env`` whose illegal card raises instead of ending the match with -1,
so a library that ignored the masks fails here instead of learning silently from forfeits.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.utils import wrappers

from scopa_env import core, scopa_v0

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
SECTIONS = {"tianshou": 0, "torchrl": 1, "rllib": 2, "sb3": 3}
NEEDS = {"tianshou": ["tianshou"], "torchrl": ["torchrl", "tensordict"], "rllib": ["ray.rllib"], "sb3": ["sb3_contrib"]}


def _strict_env(**kwargs: Any) -> Any:
    """``scopa_v0.env`` without the illegal-move-loses wrapper: an illegal card raises ``IllegalActionError``."""
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(scopa_v0.raw_env(**kwargs)))


def _run_block(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    if name == "tianshou" and "numba" not in sys.modules:
        # Tianshou's returns are numba functions: compiling them takes ~10 s, plain Python runs 300 steps in less
        monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    for module in NEEDS[name]:
        pytest.importorskip(module)
    monkeypatch.setattr(scopa_v0, "env", _strict_env)
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    exec(compile(BLOCKS[SECTIONS[name]], f"docs/integrations.md[{name}]", "exec"), namespace)
    return namespace


def test_the_page_has_one_block_per_library() -> None:
    assert len(BLOCKS) == len(SECTIONS)
    for name, index in SECTIONS.items():
        assert name.replace("sb3", "sb3_contrib") in BLOCKS[index], f"block {index} is not the {name} example"


def test_the_strict_env_refuses_an_illegal_card() -> None:
    env = _strict_env(variant="classic")
    env.reset(seed=0)
    mask = env.observe(env.agent_selection)["action_mask"]
    with pytest.raises(core.IllegalActionError):
        env.step(int(np.flatnonzero(mask == 0)[0]))


def test_tianshou(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_block("tianshou", monkeypatch)
    assert ns["result"].train_step >= 300
    assert ns["result"].update_step > 0  # the DQN learner took gradient steps


def test_torchrl(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_block("torchrl", monkeypatch)
    assert ns["frames"] == 400


def test_rllib(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        ns = _run_block("rllib", monkeypatch)
    finally:  # a failed block must not leave its Ray cluster to the next test of this process
        if "ray" in sys.modules and sys.modules["ray"] is not None and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()
    runners, learner = ns["result"]["env_runners"], ns["result"]["learners"]["shared"]
    assert runners["num_env_steps_sampled_lifetime"] >= 256
    assert learner["num_module_steps_trained"] > 0 and np.isfinite(learner["total_loss"])


def test_rllib_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    """One match through ``ScopaMultiAgentEnv`` by hand: RLlib's keys, one agent at a time, every agent at the end."""
    pytest.importorskip("ray.rllib")
    monkeypatch.setattr(scopa_v0, "env", _strict_env)
    import pickle

    from scopa_env.rllib import ScopaMultiAgentEnv, masked_ppo_config

    assert masked_ppo_config("classic").env is ScopaMultiAgentEnv  # the classes are built once
    assert pickle.loads(pickle.dumps(ScopaMultiAgentEnv)) is ScopaMultiAgentEnv  # and pickle by reference
    env = ScopaMultiAgentEnv({"variant": "scopa-a-quattro", "reward": "match"})
    assert set(env.observation_spaces) == set(env.possible_agents) == {f"player_{i}" for i in range(4)}
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    steps, totals = 0, dict.fromkeys(env.possible_agents, 0.0)
    while True:
        (agent,) = obs
        assert set(obs[agent]) == {"observations", "action_mask"} and obs[agent]["action_mask"].dtype == np.float32
        assert env.observation_spaces[agent].contains(obs[agent])
        action = int(rng.choice(np.flatnonzero(obs[agent]["action_mask"])))
        obs, rewards, terminated, truncated, _ = env.step({agent: action})
        steps += 1
        for a, r in rewards.items():
            totals[a] += r
        if terminated["__all__"] or truncated["__all__"]:
            break
    assert set(obs) == set(env.possible_agents) and terminated["__all__"] and not truncated["__all__"]
    assert sorted(totals.values()) == [-1.0, -1.0, 1.0, 1.0]  # two teams: one wins, one loses
    assert steps > 36 and env.agents == env.possible_agents  # RLlib's checker wants every reported agent listed
    with pytest.raises(ValueError, match="is to act"):
        env.reset(seed=0)
        env.step({"nobody": 0})


def test_rllib_module_is_lazy_and_says_what_to_install() -> None:
    """Importing ``scopa_env.rllib`` loads no Ray; without RLlib the classes' ImportError names the extra."""
    import subprocess

    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import scopa_env.rllib as r\n"
        "assert 'ray' in sys.modules and sys.modules['ray'] is None\n"
        "try:\n"
        "    r.ScopaMultiAgentEnv\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install 'scopa[rllib]'" in out.stdout


def test_sb3(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_block("sb3", monkeypatch)
    assert ns["model"].num_timesteps >= 256
