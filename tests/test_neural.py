"""Neural policies: checkpoint metadata, atomic saves, loading through make_agent, and clear errors."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.base import AgentSpecError, make_agent
from agents.nets.checkpoint import NeuralPolicy, checkpoint_meta, save_checkpoint
from agents.nets.weights import META_NAME, read_checkpoint_meta
from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch
from scopa_env.rules import get_rules
from tests.helpers import play_every_rotation


@pytest.fixture(scope="module")
def model() -> Any:
    from sb3_contrib import MaskablePPO

    from scopa_env.envs.gym import ScopaVecEnv

    torch.manual_seed(0)
    venv = ScopaVecEnv("classic", 4, opponents="random", seed=0)
    return MaskablePPO(
        "MlpPolicy", venv, n_steps=8, batch_size=32, policy_kwargs={"net_arch": [16]}, seed=0, device="cpu"
    )


@pytest.fixture(scope="module")
def checkpoint(model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "best.zip"
    save_checkpoint(model, path, checkpoint_meta("classic", 123, kind="best"))
    return path


def _batch(n: int = 64, seed: int = 0) -> ActBatch:
    rules = get_rules("classic")
    state = core.reset(rules, np.arange(n) + seed)
    return ActBatch(rules, observation.observe(rules, state), core.legal_action_mask(rules, state), state, np.arange(n))


def test_checkpoint_carries_its_metadata(checkpoint: Path) -> None:
    meta = read_checkpoint_meta(checkpoint)
    assert meta["variant"] == "classic"
    assert meta["obs_version"] == observation.OBS_VERSION
    assert meta["obs_size"] == observation.observation_size("classic")
    assert meta["num_cards"] == 40 and meta["steps"] == 123 and meta["kind"] == "best"


def test_make_agent_loads_a_checkpoint_path_and_plays_legal_moves(checkpoint: Path, model: Any) -> None:
    agent = make_agent(str(checkpoint), "classic", seed=0)
    assert isinstance(agent, NeuralPolicy) and not agent.needs_state
    batch = _batch()
    actions = agent.act(batch)
    assert actions.dtype == np.int64 and batch.mask[np.arange(len(batch)), actions].all()
    # same choice as the SB3 policy's deterministic masked action
    expected, _ = model.predict(batch.obs, action_masks=batch.mask, deterministic=True)
    assert np.array_equal(actions, expected)
    # full games against random: the core raises on any illegal action
    res = play_every_rotation("classic", agent, make_agent("random", "classic", 1), 20, mode="hands")
    assert res.hands.sum() == 40


def test_neural_spec_options_sample_reproducibly(checkpoint: Path) -> None:
    a = make_agent(f"neural:path={checkpoint},sample=true,temperature=2", "classic", seed=5)
    b = make_agent(f"neural:path={checkpoint},sample=true,temperature=2", "classic", seed=5)
    batch = _batch(256)
    xa, xb = a.act(batch), b.act(batch)
    assert np.array_equal(xa, xb)
    assert batch.mask[np.arange(len(batch)), xa].all()
    assert not np.array_equal(xa, make_agent(str(checkpoint), "classic").act(batch))  # sampling differs from argmax


def test_endgame_option_defaults_to_the_checkpoints_and_plays_the_solver(
    model: Any, checkpoint: Path, tmp_path: Path
) -> None:
    from tests.helpers import check_endgame_option

    rules = get_rules("classic")
    assert make_agent(str(checkpoint), rules).endgame == 0  # older checkpoints carry no "endgame"
    trained = tmp_path / "exact.zip"
    save_checkpoint(model, trained, checkpoint_meta("classic", 1, kind="best", endgame=8))
    exact = make_agent(str(trained), rules)
    plain = make_agent(f"neural:path={trained},endgame=0", rules)
    assert (exact.endgame, plain.endgame) == (8, 0)
    obs, mask = check_endgame_option(rules, plain, exact)
    with pytest.raises(AgentSpecError, match="endgame must be >= 0"):
        make_agent(f"neural:path={trained},endgame=-2", rules)
    with pytest.raises(ValueError, match="needs the game state"):
        exact.act(ActBatch(rules, obs[:1], mask[:1]))
    snap = NeuralPolicy.from_sb3_policy(model.policy, rules, endgame=6)
    assert snap.endgame == 6 and snap.needs_state


def test_snapshot_is_frozen(model: Any) -> None:
    snap = NeuralPolicy.from_sb3_policy(model.policy, "classic", name="snap")
    batch = _batch()
    before = snap.logits(batch.obs, batch.mask)
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(1.0)
    try:
        assert np.array_equal(before, snap.logits(batch.obs, batch.mask))
    finally:
        with torch.no_grad():
            for p in model.policy.parameters():
                p.sub_(1.0)
    assert not any(p.requires_grad for p in snap.net.parameters())


def test_missing_and_corrupt_files_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="does not exist"):
        make_agent(str(tmp_path / "nope.zip"), "classic")
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"this is not a zip archive")
    with pytest.raises(AgentSpecError, match="not a zip"):
        make_agent(str(junk), "classic")
    with pytest.raises(AgentSpecError, match="directory"):
        make_agent(str(tmp_path) + "/", "classic")
    with pytest.raises(AgentSpecError, match=r"\.zip"):
        make_agent(str(tmp_path / "model.pt"), "classic")


def test_truncated_checkpoint_fails_clearly(checkpoint: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.zip"
    data = checkpoint.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(AgentSpecError, match=r"cut\.zip"):
        make_agent(str(cut), "classic")


def test_plain_sb3_zip_without_metadata_is_refused(model: Any, tmp_path: Path) -> None:
    path = tmp_path / "plain.zip"
    model.save(path)
    with pytest.raises(AgentSpecError, match=f"no {re.escape(META_NAME)}"):
        make_agent(str(path), "classic")


def _with_meta(src: Path, dst: Path, **changes: Any) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            if item == META_NAME:
                data = json.dumps({**json.loads(data), **changes}).encode()
            zout.writestr(item, data)
    return dst


def test_other_variant_and_observation_version_are_refused(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="trained for 'classic', not 'scopa-a-quattro'"):
        make_agent(str(checkpoint), "scopa-a-quattro")
    old = _with_meta(checkpoint, tmp_path / "old.zip", obs_version=observation.OBS_VERSION + 1)
    with pytest.raises(AgentSpecError, match="observation version"):
        make_agent(str(old), "classic")
    # a variant with the same observation shape is accepted only when asked for
    with pytest.raises(AgentSpecError, match="any_variant"):
        make_agent(str(checkpoint), "classic-21")
    agent = make_agent(f"neural:path={checkpoint},any_variant=true", "classic-21")
    assert agent.rules.name == "classic-21"
    with pytest.raises(AgentSpecError, match="observations of size"):
        make_agent(f"neural:path={checkpoint},any_variant=true", "scopa-a-quattro")


def test_failed_save_keeps_the_previous_checkpoint(
    model: Any, checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = checkpoint.read_bytes()

    def broken_save(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    import agents.cli.atomic as atomic

    monkeypatch.setattr(model, "save", broken_save)
    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(model, checkpoint, checkpoint_meta("classic", 999))
    monkeypatch.undo()
    real_replace = atomic.os.replace
    monkeypatch.setattr(atomic.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("crash before rename")))
    with pytest.raises(OSError, match="crash before rename"):
        save_checkpoint(model, checkpoint, checkpoint_meta("classic", 999))
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    assert checkpoint.read_bytes() == before
    assert read_checkpoint_meta(checkpoint)["steps"] == 123
    assert [p.name for p in checkpoint.parent.iterdir()] == [checkpoint.name]  # no temporary file left behind
