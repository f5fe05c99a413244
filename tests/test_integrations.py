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

from scopa_env import scopa_v0
from scopa_env.engine import core
from tests.helpers import run_python

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
SECTIONS = {"tianshou": 0, "torchrl": 1, "rllib": 2, "sb3": 3}
NEEDS = {"tianshou": ["tianshou"], "torchrl": ["torchrl", "tensordict"], "rllib": ["ray.rllib"], "sb3": ["sb3_contrib"]}


def _strict_env(**kwargs: Any) -> Any:
    """``scopa_v0.env`` without the illegal-move-loses wrapper: an illegal card raises ``IllegalActionError``."""
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(scopa_v0.raw_env(**kwargs)))


def _import_tianshou_without_jit() -> None:
    """Import Tianshou with its numba functions (returns, buffer indices) left as plain Python: compiled, they cost
    about 10 s of a core at their first call in every test process (Tianshou does not cache them), while plain Python
    runs the block's 300 steps in less. numba reads ``DISABLE_JIT`` when it decorates, so the switch is on for this
    import only; the kernel's functions, compiled before, are untouched. (Where another test imported Tianshou
    first, its functions are compiled as before.)"""
    import numba

    was, numba.config.DISABLE_JIT = numba.config.DISABLE_JIT, True
    try:
        pytest.importorskip("tianshou")
    finally:
        numba.config.DISABLE_JIT = was


def _run_block(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    if name == "tianshou":
        _import_tianshou_without_jit()
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

    from scopa_env.envs.rllib import ScopaMultiAgentEnv, masked_ppo_config

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
    """Importing ``scopa_env.envs.rllib`` loads no Ray; without RLlib the classes' ImportError names the extra."""
    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import scopa_env.envs.rllib as r\n"
        "assert 'ray' in sys.modules and sys.modules['ray'] is None\n"
        "try:\n"
        "    r.ScopaMultiAgentEnv\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'scopa[rllib]'" in run_python(code).stdout


def test_sb3(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_block("sb3", monkeypatch)
    assert ns["model"].num_timesteps >= 256


class _Touch:
    """Unpickling this creates ``path`` (tests/test_security.py's payload: a stand-in for any code)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_rllib_against_fixed_opponents_then_evaluate_py(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One PPO iteration against ``greedy`` (the env plays its seats), the checkpoint saved with its loadable files,
    the rebuilt actor's logits equal to the RLlib module's, ``evaluate.py --agents rllib:path=...`` plays it, and
    pickle payloads planted in the checkpoint never run."""
    pytest.importorskip("ray.rllib")
    import pickle
    import shutil

    import ray
    import torch

    import evaluate
    from agents.base import AgentSpecError, make_agent
    from agents.nets.rllib import main, save_rllib_checkpoint
    from agents.nets.weights import RLLIB_META_FILE as META_FILE
    from agents.nets.weights import RLLIB_WEIGHTS_FILE as WEIGHTS_FILE
    from scopa_env.envs.rllib import masked_ppo_config

    monkeypatch.setattr(scopa_v0, "env", _strict_env)  # the opponents' cards are legal too
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        config = (
            masked_ppo_config("classic", opponents="greedy")
            .env_runners(num_env_runners=0)
            .learners(num_learners=0)
            .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [32], "head_fcnet_hiddens": [16]})
            .debugging(seed=0)
        )
        algo = config.build_algo()
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 128
        ckpt = save_rllib_checkpoint(algo, tmp_path / "ckpt")
        module = algo.get_module("shared")
        env = scopa_v0.env(variant="classic")
        env.reset(seed=4)
        obs = env.observe(env.agent_selection)
        batch = {"obs": {"observations": torch.as_tensor(obs["observation"][None]),
                         "action_mask": torch.as_tensor(obs["action_mask"][None].astype(np.float32))}}  # fmt: skip
        with torch.no_grad():
            theirs = module.forward_inference(batch)["action_dist_inputs"].numpy()[0]
        plain = tmp_path / "plain"
        algo.save(str(plain))  # RLlib's files only
        algo.stop()
    finally:
        ray.shutdown()
    agent = make_agent(f"rllib:path={ckpt}", "classic", seed=0)
    ours = agent.logits(obs["observation"][None], obs["action_mask"][None].astype(bool))[0]
    legal = obs["action_mask"].astype(bool)
    assert np.allclose(ours[legal], theirs[legal], atol=1e-5) and (theirs[~legal] < -1e30).all()

    out = tmp_path / "eval"
    argv = ["--agents", f"rllib:path={ckpt}", "greedy", "--hands", "20", "--workers", "1", "--out", str(out)]
    assert evaluate.main([*argv, "--no-progress", "--quiet", "--no-plot", "--bootstrap", "0"]) == 0
    assert (out / "results.json").is_file()

    # payloads in every pickle file of the checkpoint: loading it reads the JSON and the tensors only
    marker = tmp_path / "pwned"
    for pkl in ckpt.rglob("*.pkl"):
        pkl.write_bytes(pickle.dumps(_Touch(marker)))
    make_agent(f"rllib:path={ckpt}", "classic", seed=0)
    with pytest.raises(AgentSpecError, match=r"not a state dict|unreadable"):  # a payload as the weights: refused
        (ckpt / WEIGHTS_FILE).write_bytes(pickle.dumps(_Touch(marker)))
        make_agent(f"rllib:path={ckpt}", "classic", seed=0)
    assert not marker.exists()
    # a checkpoint saved by algo.save alone: refused with the way out, its pickles unread
    shutil.copytree(plain, tmp_path / "plain_payload")
    for pkl in (tmp_path / "plain_payload").rglob("*.pkl"):
        pkl.write_bytes(pickle.dumps(_Touch(marker)))
    with pytest.raises(AgentSpecError, match=r"pickle.*python -m agents.nets.rllib"):
        make_agent(f"rllib:path={tmp_path / 'plain_payload'}", "classic", seed=0)
    assert not marker.exists()
    # ... and the command adds the files to a checkpoint one trusts: the same agent
    assert main([str(plain)]) == 0 and (plain / META_FILE).is_file()
    again = make_agent(f"rllib:path={plain}", "classic", seed=0)
    assert np.array_equal(again.logits(obs["observation"][None], legal[None]), ours[None])


def test_rllib_env_plays_fixed_opponents_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """``opponents=``: the env plays those seats (project agents, reading the state inside the env); RLlib sees one
    side only, a different side each match, and the match's end for every learner seat."""
    pytest.importorskip("ray.rllib")
    monkeypatch.setattr(scopa_v0, "env", _strict_env)  # an illegal card by an opponent would raise
    from scopa_env.envs.rllib import ScopaMultiAgentEnv

    env = ScopaMultiAgentEnv({"variant": "scopa-a-quattro", "reward": "match", "opponents": ["greedy", "expert"]})
    rng = np.random.default_rng(0)
    sides = []
    for match in range(2):
        obs, _ = env.reset(seed=match)
        sides.append(tuple(env.learners))
        seen, totals = set(), {}
        while True:
            (agent,) = obs
            seen.add(agent)
            obs, rewards, terminated, truncated, _ = env.step(
                {agent: int(rng.choice(np.flatnonzero(obs[agent]["action_mask"])))}
            )
            for a, r in rewards.items():
                totals[a] = totals.get(a, 0.0) + r
            if terminated["__all__"] or truncated["__all__"]:
                break
        assert seen == set(obs) == set(totals) == set(env.learners) and len(seen) == 2
        assert len(set(totals.values())) == 1 and abs(next(iter(totals.values()))) == 1.0  # the team wins or loses
    assert sides == [("player_0", "player_2"), ("player_1", "player_3")]
    with pytest.raises(ValueError, match="unknown agent"):
        ScopaMultiAgentEnv({"variant": "classic", "opponents": "nope"})
