"""The ONNX side of the export, and its check: the policy half of a MaskablePPO actor as a torch module
``(obs, action_mask) -> (probs, action)``, written as ``policy.onnx`` (``write_onnx``), and ``check_export``: torch,
onnxruntime and numpy give the same masked action probabilities on ``sample_inputs`` (random observations and masks,
single-legal-action rows, observations from real games), else ``ExportCheckError``. ``agents.nets.export`` runs them.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from agents.nets.bot import Bot
from agents.nets.mlp import ExportError
from scopa_env.engine import core, observation
from scopa_env.games.policy import MASKED_LOGIT
from scopa_env.rules import Rules

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_CHECK_ROWS", "ExportCheckError", "check_export", "sample_inputs", "torch_probs", "write_onnx"]


DEFAULT_CHECK_ROWS = 2048
"""Rows of observations and masks the export is checked on by default."""


class ExportCheckError(ExportError):
    """The exported bot does not give the torch policy's probabilities (the written files were removed)."""


def _policy_module(actor: Any) -> torch.nn.Module:
    """A torch module ``(obs, action_mask) -> (probs, action)`` around the actor's layers."""
    import torch
    from torch import nn

    class MaskedPolicy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = actor

        def forward(self, obs: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.actor(obs)
            masked = torch.where(action_mask, logits, torch.full_like(logits, MASKED_LOGIT))
            probs = torch.softmax(masked, dim=-1)
            return probs, torch.argmax(probs, dim=-1)

    return MaskedPolicy().eval()


def torch_probs(actor: Any, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """The torch policy's masked probabilities: the actor's logits through sb3-contrib's ``MaskableCategorical``."""
    import torch
    from sb3_contrib.common.maskable.distributions import MaskableCategorical

    with torch.no_grad():
        logits = actor(torch.as_tensor(np.ascontiguousarray(obs, dtype=np.float32)))
        return MaskableCategorical(logits=logits, masks=mask).probs.cpu().numpy().astype(np.float32)


def write_onnx(actor: Any, path: Path, obs_size: int, num_cards: int) -> None:
    import torch

    module = _policy_module(actor)
    obs = torch.zeros((2, obs_size), dtype=torch.float32)
    mask = torch.ones((2, num_cards), dtype=torch.bool)
    batch = torch.export.Dim("batch", min=1)
    onnx_logger = logging.getLogger("torch.onnx")
    level = onnx_logger.level
    onnx_logger.setLevel(logging.ERROR)  # silence "torchvision is not installed" notes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (UserWarning, FutureWarning, DeprecationWarning))
            program = torch.onnx.export(
                module,
                (obs, mask),
                dynamo=True,
                input_names=["obs", "action_mask"],
                output_names=["probs", "action"],
                dynamic_shapes={"obs": {0: batch}, "action_mask": {0: batch}},
                external_data=False,
                verbose=False,
            )
        if program is None:
            raise ExportError("torch.onnx.export returned no program")
        program.save(str(path), external_data=False)
        import onnx

        onnx.checker.check_model(str(path))
    except ImportError as e:
        raise ExportError(f"the ONNX export needs onnx and onnxscript ({e}); pip install -e '.[export]'") from None
    finally:
        onnx_logger.setLevel(level)


def sample_inputs(rules: Rules, rows: int, seed: int = 0) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    """Observations and masks to compare backends on: half from random games, half random values and masks.

    The random half mixes uniform observations in [0, 1), 0/1 observations and masks with one legal action,
    a few, or every action.
    """
    rng = np.random.default_rng(seed)
    d, size = rules.num_actions, observation.observation_size(rules)
    from scopa_env.games.policy import ActBatch, RandomAgent

    games = max(1, rows // 64)
    state = core.reset(rules, rng.integers(0, 2**31, size=games).astype(np.uint64))
    agent = RandomAgent(rules, seed)
    obs_list, mask_list = [], []
    taken = 0
    while taken < rows // 2 and not state.done.all():
        live = np.flatnonzero(~state.done)
        mask = core.legal_action_mask(rules, state)
        obs = observation.observe(rules, state)
        obs_list.append(obs[live])
        mask_list.append(mask[live])
        taken += live.size
        actions = np.zeros(state.batch_size, dtype=np.int64)
        actions[live] = agent.act(ActBatch(rules, obs[live], mask[live], state, live))
        core.step(rules, state, actions)
    n_rand = rows - min(taken, rows // 2)
    rand_obs = rng.random((n_rand, size), dtype=np.float32)
    rand_obs[::2] = np.round(rand_obs[::2])
    rand_mask = np.zeros((n_rand, d), dtype=np.bool_)
    for i in range(n_rand):
        k = (1, 2, 3, int(rng.integers(1, d + 1)), d)[i % 5]
        rand_mask[i, rng.choice(d, size=k, replace=False)] = True
    obs_all = np.concatenate([*obs_list, rand_obs])[:rows]
    mask_all = np.concatenate([*mask_list, rand_mask])[:rows]
    return obs_all.astype(np.float32), mask_all


def check_export(
    actor: Any, directory: Path, rules: Rules, rows: int = DEFAULT_CHECK_ROWS, seed: int = 0
) -> dict[str, Any]:
    """Compare the torch policy, the ONNX file (onnxruntime) and the numpy weights on ``sample_inputs``.

    Returns the maximum absolute differences of the probabilities, the share of rows where the chosen actions agree
    with torch's argmax, and the largest probability given to an illegal action (must be 0).
    """
    obs, mask = sample_inputs(rules, rows, seed)
    p_torch = torch_probs(actor, obs, mask)
    numpy_bot = Bot.load(directory, prefer="numpy", rules=rules)
    p_numpy = numpy_bot.probs(obs, mask)
    out: dict[str, Any] = {"rows": int(obs.shape[0]), "seed": seed}
    out["max_abs_diff_numpy"] = float(np.abs(p_numpy - p_torch).max())
    a_torch = p_torch.argmax(axis=1)
    out["actions_agree_numpy"] = float((numpy_bot.act(obs, mask) == a_torch).mean())
    out["masked_prob_max"] = float(np.abs(np.where(mask, 0, p_numpy)).max())
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        out["max_abs_diff_onnx"] = None
    else:
        onnx_bot = Bot.load(directory, prefer="onnx", rules=rules)
        p_onnx = onnx_bot.probs(obs, mask)
        out["max_abs_diff_onnx"] = float(np.abs(p_onnx - p_torch).max())
        out["actions_agree_onnx"] = float((onnx_bot.act(obs, mask) == a_torch).mean())
        out["masked_prob_max"] = max(out["masked_prob_max"], float(np.abs(np.where(mask, 0, p_onnx)).max()))
    return out
