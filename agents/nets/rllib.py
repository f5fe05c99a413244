"""RLlib-trained policies as project agents: ``rllib:path=CHECKPOINT_DIR`` in ``evaluate.py``, tournaments, the league.

RLlib (``scopa_env.envs.rllib``, docs/integrations.md) saves its checkpoints as pickle files, which can run code when
loaded, so this agent never opens them. Instead the acting half of the module (actor encoder and policy head: the
weights as tensors, the layer activations by name) is written beside them in two plain files:

- ``scopa_rllib_module.pt``: the module's state dict, read back with ``torch.load(weights_only=True)``;
- ``scopa_rllib_module.json``: what the network is (variant, observation size, activations, module id).

``save_rllib_checkpoint(algo, path)`` does both (``algo.save(path)`` plus the two files); for a checkpoint saved by
``algo.save`` alone, ``python -m agents.nets.rllib CHECKPOINT_DIR`` restores its module with RLlib (which unpickles
it: only for checkpoints you made or trust) and adds the two files. The agent plays the argmax of the masked logits,
like a ``train.py`` checkpoint (``agents.nets.checkpoint.NeuralPolicy``)::

    python evaluate.py --agents rllib:path=runs/rllib/ckpt greedy --hands 2000
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from agents.base import AgentSpecError, register_agent
from agents.cli.settings import add_field_options, parse_options, setting
from agents.nets.checkpoint import NeuralPolicy
from agents.nets.mlp import ACTIVATIONS
from agents.nets.weights import RLLIB_FORMAT, RLLIB_META_FILE, RLLIB_WEIGHTS_FILE, read_rllib_module
from scopa_env.engine import observation
from scopa_env.rules import Rules, get_rules

__all__ = [
    "RLLIB_ACTIVATIONS",
    "export_module",
    "main",
    "rllib_actor",
    "save_rllib_checkpoint",
]

RLLIB_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "elu": "elu", "swish": "silu", "silu": "silu", "linear": None}
"""RLlib's activation names -> the one activation table's (``agents.nets.mlp.ACTIVATIONS``); ``linear``: none."""


def _torch_activation(name: str) -> Any:
    """The ``torch.nn`` class of an RLlib activation name (None for ``linear``)."""
    ours = RLLIB_ACTIVATIONS[name]
    return None if ours is None else getattr(nn, ACTIVATIONS[ours].torch)


_ENCODERS = ("encoder.actor_encoder.net.mlp", "encoder.encoder.net.mlp")  # separate / shared (vf_share_layers)
_HEAD = "pi.net.mlp"


def _effective_model_config(module: Any) -> dict[str, Any]:
    import dataclasses

    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config = {f.name: getattr(DefaultModelConfig(), f.name) for f in dataclasses.fields(DefaultModelConfig)}
    given = module.model_config
    if dataclasses.is_dataclass(given) and not isinstance(given, type):
        given = dataclasses.asdict(given)
    config.update(dict(given or {}))
    return config


def export_module(module: Any, path: str | Path, variant: str, module_id: str = "shared") -> Path:
    """Write ``module``'s (an ``ActionMaskingPPOModule``) weights and description into the folder ``path``
    (``RLLIB_WEIGHTS_FILE``, ``RLLIB_META_FILE``); returns the folder. Refuses networks this loader cannot rebuild."""
    rules = get_rules(variant)
    config = _effective_model_config(module)
    for key in ("fcnet_use_layernorm", "head_fcnet_use_layernorm", "use_lstm"):
        if config.get(key):
            raise ValueError(f"cannot export an RLlib module with {key}=True: rllib agents rebuild plain MLPs only")
    for key in ("fcnet_activation", "head_fcnet_activation"):
        if str(config[key]).lower() not in RLLIB_ACTIVATIONS:
            raise ValueError(f"cannot export {key}={config[key]!r}: supported are {', '.join(RLLIB_ACTIVATIONS)}")
    state = {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}
    first = next((state[f"{p}.0.weight"] for p in (*_ENCODERS, _HEAD) if f"{p}.0.weight" in state), None)
    if first is None or first.shape[1] != observation.observation_size(rules):
        raise ValueError(
            f"the module's input is not a {rules.name} observation ({observation.observation_size(rules)} numbers); "
            "give the variant it was trained on"
        )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(state, out / RLLIB_WEIGHTS_FILE)
    meta = {
        "format": RLLIB_FORMAT,
        "kind": "rllib-ppo-module",
        "variant": rules.name,
        "obs_version": observation.observation_version(rules),
        "obs_size": observation.observation_size(rules),
        "num_cards": rules.num_actions,
        "module_id": module_id,
        "fcnet_activation": str(config["fcnet_activation"]).lower(),
        "head_fcnet_activation": str(config["head_fcnet_activation"]).lower(),
    }
    (out / RLLIB_META_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    return out


def save_rllib_checkpoint(algo: Any, path: str | Path, module_id: str = "shared") -> Path:
    """``algo.save(path)`` plus the module's weights in files ``rllib:path=...`` loads without unpickling anything;
    returns the checkpoint folder. ``algo`` is an RLlib ``Algorithm`` built from ``scopa_env.envs.rllib``'s config."""
    path = Path(path).resolve()
    algo.save(str(path))
    variant = algo.config.env_config.get("variant", "classic")
    return export_module(algo.get_module(module_id), path, variant, module_id)


def _layers(state: dict[str, torch.Tensor], prefix: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.weight$")
    idx = sorted(int(m.group(1)) for k in state if (m := pattern.match(k)))
    return [(state[f"{prefix}.{i}.weight"], state[f"{prefix}.{i}.bias"]) for i in idx]


def rllib_actor(state: dict[str, torch.Tensor], meta: dict[str, Any], where: str) -> nn.Module:
    """The actor network (observations -> logits) of an exported module: the actor encoder's layers, each followed
    by ``fcnet_activation``, then the policy head (``head_fcnet_activation`` between its layers, none after)."""
    encoder = next((p for p in _ENCODERS if f"{p}.0.weight" in state), None)
    enc, head = (_layers(state, encoder) if encoder else []), _layers(state, _HEAD)
    if not head or any(w.dim() != 2 or b.dim() != 1 or b.shape[0] != w.shape[0] for w, b in enc + head):
        raise AgentSpecError(f"{where}: its weights are not an RLlib PPO module's (no {_HEAD} layers)")
    acts = []
    for key in ("fcnet_activation", "head_fcnet_activation"):
        name = str(meta.get(key, ""))
        if name not in RLLIB_ACTIVATIONS:
            raise AgentSpecError(f"{where}: {key} {name!r} is not one of {', '.join(RLLIB_ACTIVATIONS)}")
        acts.append(_torch_activation(name))
    parts: list[nn.Module] = []
    layers = [(w, b, acts[0]) for w, b in enc] + [(w, b, acts[1]) for w, b in head[:-1]] + [(*head[-1], None)]
    size = int(meta["obs_size"])
    for w, b, act in layers:
        if w.shape[1] != size or not (torch.isfinite(w).all() and torch.isfinite(b).all()):
            raise AgentSpecError(f"{where}: its layers do not fit together (or hold NaN); the files are damaged")
        linear = nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(w.float())
            linear.bias.copy_(b.float())
        parts.append(linear)
        if act is not None:
            parts.append(act())
        size = w.shape[0]
    if size != meta.get("num_cards"):
        raise AgentSpecError(f"{where}: its policy head has {size} outputs, not {meta.get('num_cards')!r} cards")
    net = nn.Sequential(*parts).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def _rllib_policy(path: str | Path, rules: Rules, seed: int | None = None) -> NeuralPolicy:
    """The agent of an exported RLlib module (``path``: the checkpoint folder holding ``RLLIB_META_FILE`` and
    ``RLLIB_WEIGHTS_FILE``), read by ``agents.nets.weights.read_rllib_module``: JSON and tensors only, RLlib's pickle
    files are never opened."""
    rules = get_rules(rules)
    meta, state = read_rllib_module(path, rules)
    return NeuralPolicy(
        rules, rllib_actor(state, meta, f"rllib checkpoint {str(path)!r}"), seed=seed, name=str(path), meta=meta
    )


@register_agent("rllib", "an RLlib PPO module saved by agents.nets.rllib (rllib:path=CHECKPOINT_DIR); argmax play")
def _make(rules: Rules, seed: int | None = None, path: str = "") -> NeuralPolicy:
    if not path:
        raise AgentSpecError("rllib needs path=CHECKPOINT_DIR, e.g. rllib:path=runs/rllib/ckpt")
    return _rllib_policy(str(path), rules, seed)


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    checkpoint: Path = setting(doc="the folder algo.save() wrote", option="checkpoint")
    module: str = setting("shared", "the module id (default: shared, masked_ppo_config's)", show_default=False)
    variant: str = setting("classic", "the variant it was trained on (default: classic)", show_default=False)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.nets.rllib CHECKPOINT_DIR``: add the loadable files to an RLlib checkpoint."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.nets.rllib",
        description="Add the files rllib:path=... loads (the module's weights as tensors, its description as JSON) "
        "to an RLlib checkpoint saved by algo.save(). This restores the checkpoint's module with RLlib, which "
        "unpickles it: run it only on checkpoints you made or trust.",
    )
    add_field_options(parser, Options, typed=True, once=False)
    ns = parse_options(parser, Options, argv)
    root = Path(ns.checkpoint)
    module_dir = root / "learner_group" / "learner" / "rl_module" / ns.module
    if not module_dir.is_dir():
        print(
            f"python -m agents.nets.rllib: error: {module_dir} does not exist; give an algo.save() folder",
            file=sys.stderr,
        )
        return 2
    try:
        from ray.rllib.core.rl_module.rl_module import RLModule

        import scopa_env.envs.rllib  # noqa: F401  # the module's class, pickled by reference
    except ImportError as e:
        print(f"python -m agents.nets.rllib: error: {e}; pip install 'scopa[rllib]'", file=sys.stderr)
        return 2
    module = RLModule.from_checkpoint(str(module_dir))
    try:
        out = export_module(module, root, ns.variant, ns.module)
    except ValueError as e:
        print(f"python -m agents.nets.rllib: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out / RLLIB_WEIGHTS_FILE} and {out / RLLIB_META_FILE} (variant {ns.variant})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
