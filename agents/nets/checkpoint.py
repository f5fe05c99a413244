"""Neural policies: a checkpoint written by ``train.py``, or a frozen copy of the learner for the league.

A checkpoint is the stable-baselines3 ``.zip`` of a ``MaskablePPO`` model (``model.save``) with one more member,
``scopa_meta.json``, that says what it was trained for::

    {"format": 1, "variant": "classic", "obs_version": 1, "obs_size": 287, "num_cards": 40, "num_players": 2,
     "steps": 10485760, "kind": "best", "code_version": "a2cafb2", "config": {...}, "eval": {...}}

Loading checks that metadata against the variant it is asked to play, so a bot is never run on observations it was
not trained on. Checkpoints are written atomically (``save_checkpoint``): a crash never leaves a half-written file
where a good one was.

    make_agent("runs/classic__default__0__20260101-120000/best.zip", "classic")   # the "file" factory
    make_agent("neural:path=runs/.../best.zip,sample=true", "classic")          # sample instead of argmax

A ``NeuralPolicy`` acts with one forward pass of the policy network per ``act`` call: the logits of illegal cards
are masked out and the best legal card is played (``sample=true``: drawn from the masked softmax with the agent's
seeded generator, at ``temperature``). It reads the observation only, never the game state, unless ``endgame=N``
(N > 0): then the hand's last N plies, once they are an open book, are played exactly by the minimax solver that
``expert`` uses (``agents.search.endgame.play_exact_endgame``). A checkpoint trained with ``train.py``'s ``endgame``
records it (``"endgame"`` in its metadata) and plays that way unless the spec says otherwise::

    make_agent("neural:path=runs/.../best.zip,endgame=0", "classic")            # the network alone
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from agents.base import AgentSpecError, path_kind, register_agent
from agents.cli.atomic import write_atomic
from agents.nets.mlp import TORCH_ACTIVATIONS
from agents.nets.weights import (
    CHECKPOINT_FORMAT,
    META_NAME,
    Layers,
    check_meta,
    read_activation,
    read_checkpoint_meta,
    read_weights,
)
from scopa_env.engine import observation
from scopa_env.games.policy import MASKED_LOGIT, ActBatch, Policy
from scopa_env.rules import Rules, get_rules

__all__ = [
    "ActorNet",
    "NeuralPolicy",
    "checkpoint_meta",
    "load_checkpoint_policy",
    "policy_from_weights",
    "save_checkpoint",
]


# --------------------------------------------------------------------------------------------------- metadata


def checkpoint_meta(rules: Rules | str, steps: int, **extra: Any) -> dict[str, Any]:
    """The metadata of a checkpoint for ``rules`` after ``steps`` training steps, plus ``extra`` keys."""
    rules = get_rules(rules)
    meta: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "variant": rules.name,
        "obs_version": observation.observation_version(rules),
        "obs_size": observation.observation_size(rules),
        "num_cards": rules.num_actions,  # the number of actions (card ids, and cirulla's stop / knocks)
        "num_players": rules.num_players,
        "steps": int(steps),
    }
    meta.update(extra)
    return meta


def save_checkpoint(
    model: Any, path: str | Path, meta: dict[str, Any], extra_members: dict[str, bytes] | None = None
) -> Path:
    """Save an SB3 ``model`` to ``path`` with ``meta`` as ``scopa_meta.json`` (and ``extra_members``), atomically."""
    buf = io.BytesIO()
    model.save(buf)
    with zipfile.ZipFile(buf, mode="a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(META_NAME, json.dumps(meta, indent=1, sort_keys=True, default=str))
        for name, data in (extra_members or {}).items():
            archive.writestr(name, data)
    return write_atomic(path, buf.getvalue())


# --------------------------------------------------------------------------------------------------- network


class ActorNet(nn.Module):
    """The acting half of an SB3 actor-critic policy: features extractor, policy MLP and action head -> logits."""

    def __init__(self, features: nn.Module, policy_net: nn.Module, action_net: nn.Module) -> None:
        super().__init__()
        self.features = features
        self.policy_net = policy_net
        self.action_net = action_net

    @classmethod
    def from_sb3(cls, policy: Any) -> ActorNet:
        """A frozen copy (no gradients, eval mode) of ``policy``'s actor; later training does not change it."""
        try:
            parts = (policy.pi_features_extractor, policy.mlp_extractor.policy_net, policy.action_net)
        except AttributeError as e:
            raise TypeError(
                f"expected a stable-baselines3 actor-critic policy (MlpPolicy), got {type(policy).__name__}: {e}"
            ) from None
        net = cls(*(copy.deepcopy(p) for p in parts)).to("cpu")
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
        return net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(n, num_cards) action logits for (n, obs_size) float observations."""
        return self.action_net(self.policy_net(self.features(obs.float())))


def masked_logits(net: nn.Module, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """(n, num_cards) logits of ``net`` with illegal actions at ``MASKED_LOGIT``; one forward pass, no gradients."""
    with torch.inference_mode():
        logits = net(torch.as_tensor(np.ascontiguousarray(obs, dtype=np.float32))).numpy()
    return np.where(mask, logits, np.float32(MASKED_LOGIT)).astype(np.float32)


# --------------------------------------------------------------------------------------------------- policy


class NeuralPolicy(Policy):
    """A policy network acting on observations: argmax of the masked logits, or a sample (``sample=True``)."""

    name = "neural"
    needs_state = False
    endgame = 0  # class default: league snapshots pickled before the option existed

    def __init__(
        self,
        rules: Rules,
        net: nn.Module,
        seed: int | None = None,
        sample: bool = False,
        temperature: float = 1.0,
        name: str | None = None,
        meta: dict[str, Any] | None = None,
        endgame: int = 0,
    ) -> None:
        super().__init__(rules, seed)
        if temperature <= 0:
            raise AgentSpecError(f"temperature must be positive, got {temperature}")
        if isinstance(endgame, bool) or int(endgame) != endgame or endgame < 0:
            raise AgentSpecError(f"neural: endgame must be >= 0 plies (0: the network alone), got {endgame!r}")
        self.net = net
        self.sample = bool(sample)
        self.temperature = float(temperature)
        self.meta = dict(meta or {})
        self.endgame = int(endgame)
        self.needs_state = self.endgame > 0
        if name is not None:
            self.name = name

    @classmethod
    def from_sb3_policy(
        cls, policy: Any, rules: Rules, name: str = "snapshot", seed: int | None = None, **kwargs: Any
    ) -> NeuralPolicy:
        """A frozen copy of an SB3 policy's actor (the learner's current weights), e.g. a league snapshot."""
        return cls(rules, ActorNet.from_sb3(policy), seed=seed, name=name, **kwargs)

    @classmethod
    def _from_checkpoint(
        cls,
        path: str | Path,
        rules: Rules,
        seed: int | None = None,
        any_variant: bool = False,
        **kwargs: Any,
    ) -> NeuralPolicy:
        """Load a ``train.py`` checkpoint (the ``file`` / ``neural`` specs: ``make_agent`` is the door); raises
        ``AgentSpecError`` if it cannot play ``rules``. ``endgame`` defaults to the checkpoint's (``endgame`` of its
        run; 0 for older checkpoints)."""
        rules = get_rules(rules)
        net, meta = load_checkpoint_policy(path, rules, any_variant=any_variant)
        kwargs.setdefault("endgame", int(meta.get("endgame", 0)))
        return cls(rules, net, seed=seed, name=str(path), meta=meta, **kwargs)

    def logits(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        """(n, num_cards) masked logits (illegal actions at ``MASKED_LOGIT``)."""
        return masked_logits(self.net, obs, mask)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        if len(batch) == 0:
            return np.zeros(0, dtype=np.int64)
        logits = self.logits(batch.obs, batch.mask)
        if self.sample:  # Gumbel-max: a draw from softmax(logits / temperature) over the legal actions
            logits = logits / self.temperature - np.log(-np.log(self.rng.random(logits.shape)))
        actions = np.where(batch.mask, logits, -np.inf).argmax(axis=1).astype(np.int64)  # legal ones only
        if self.endgame > 0:
            from agents.search.endgame import play_exact_endgame

            actions = play_exact_endgame(batch, actions, self.endgame, f"{self.name} (endgame={self.endgame})")
        return actions


def _layer_sizes(state: dict[str, Any], prefix: str) -> list[int]:
    """Output sizes of the Linear layers ``prefix.0``, ``prefix.2``, ... of an SB3 MLP state dict."""
    sizes, k = [], 0
    while f"{prefix}.{k}.weight" in state:
        sizes.append(int(state[f"{prefix}.{k}.weight"].shape[0]))
        k += 2
    return sizes


def new_policy(rules: Rules, net_arch: dict[str, list[int]], activation: str, inputs: int | None = None) -> Any:
    """An untrained SB3 ``MaskableActorCriticPolicy`` for ``rules``' observations and actions: hidden sizes
    ``net_arch`` (``{"pi": [...], "vf": [...]}``), ``activation`` a ``torch.nn`` class name (``ReLU``); ``inputs``:
    another input width than the observation's (a network over derived inputs, ``agents.nets.sweep_inputs``)."""
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    size = observation.observation_size(rules) if inputs is None else inputs
    return MaskableActorCriticPolicy(
        spaces.Box(low=-np.inf, high=np.inf, shape=(size,), dtype=np.float32),
        spaces.Discrete(rules.num_actions),
        lambda _: 0.0,
        net_arch=net_arch,
        activation_fn=getattr(nn, activation),
    )


def policy_from_layers(
    rules: Rules,
    layers: Layers,
    activation: str,
    vf: list[int] | None = None,
) -> Any:
    """A ``new_policy`` whose actor holds ``layers`` (``(weight (out, in), bias)``, as ``mlp.extract_mlp`` gives
    them; the hidden sizes follow from them) and whose critic is untrained, with hidden sizes ``vf`` (default: the
    actor's); its input width is the first layer's (the observation's, or wider for derived inputs)."""
    hidden = [int(w.shape[0]) for w, _ in layers[:-1]]
    net_arch = {"pi": hidden, "vf": hidden if vf is None else vf}
    policy = new_policy(rules, net_arch, activation, inputs=int(layers[0][0].shape[1]))
    linears: list[Any] = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    linears.append(policy.action_net)
    with torch.no_grad():
        for lin, (w, b) in zip(linears, layers, strict=True):
            lin.weight.copy_(torch.as_tensor(w))
            lin.bias.copy_(torch.as_tensor(b))
    return policy


def policy_from_weights(state: dict[str, Any], activation: str, rules: Rules, path: str | Path) -> Any:
    """The SB3 ``MaskableActorCriticPolicy`` of a checkpoint, rebuilt from its weights (layer sizes from the tensors)
    and its activation (a ``torch.nn`` class name) rather than from SB3's pickled ``data``."""
    where = f"checkpoint {str(path)!r}"
    if activation not in TORCH_ACTIVATIONS:
        raise AgentSpecError(f"{where}: activation {activation!r} is not one of {', '.join(TORCH_ACTIVATIONS)}")
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise AgentSpecError(f"{where}: weights {', '.join(bad[:3])} hold NaN or infinite values; the file is damaged")
    net_arch = {
        "pi": _layer_sizes(state, "mlp_extractor.policy_net"),
        "vf": _layer_sizes(state, "mlp_extractor.value_net"),
    }
    try:
        policy = new_policy(rules, net_arch, activation)
        policy.load_state_dict(state)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AgentSpecError(f"{where}: cannot rebuild its policy network from its weights ({first})") from None
    return policy


def load_checkpoint_policy(
    path: str | Path, rules: Rules | str, any_variant: bool = False
) -> tuple[ActorNet, dict[str, Any]]:
    """(frozen actor network, metadata) of a checkpoint, after checking that it can play ``rules``.

    Only the JSON metadata and the weights (``torch.load(weights_only=True)``) are read: loading a checkpoint,
    even a crafted one, never runs code from it (the files are read by ``agents.nets.weights``)."""
    rules = get_rules(rules)
    meta = read_checkpoint_meta(path)
    check_meta(meta, rules, path, any_variant=any_variant)
    policy = policy_from_weights(read_weights(path), read_activation(path, meta), rules, path)
    return ActorNet.from_sb3(policy), meta


# --------------------------------------------------------------------------------------------------- factories


def _set_threads(threads: int) -> None:
    if threads < 0:
        raise AgentSpecError(f"threads must be >= 0 (0 leaves torch's setting alone), got {threads}")
    if threads > 0:
        torch.set_num_threads(threads)


@register_agent("file", "a train.py checkpoint given by its path (runs/<run>/best.zip)")
def _make_file(rules: Rules, seed: int | None = None, path: str = "", threads: int = 1, **options: Any) -> Policy:
    if not path:
        raise AgentSpecError("the file agent needs a path, e.g. runs/<run>/best.zip")
    _set_threads(int(threads))
    if path_kind(path) in ("bot", "dir"):
        raise AgentSpecError(f"{path!r} is a directory; give a checkpoint file in it, e.g. {Path(path) / 'best.zip'}")
    if path_kind(path) != "checkpoint":
        raise AgentSpecError(f"cannot load {path!r}: agent files must end in .zip (a train.py checkpoint is .zip)")
    return NeuralPolicy._from_checkpoint(path, rules, seed=seed, **options)


@register_agent(
    "neural",
    "a train.py checkpoint with options: neural:path=FILE[,sample=true,temperature=1.0,threads=1,any_variant=false,"
    "endgame=N (default: the checkpoint's)]",
)
def _make_neural(
    rules: Rules,
    seed: int | None = None,
    path: str = "",
    sample: bool = False,
    temperature: float = 1.0,
    threads: int = 1,
    any_variant: bool = False,
    endgame: int | None = None,
) -> Policy:
    if not path:
        raise AgentSpecError("the neural agent needs a checkpoint: neural:path=runs/<run>/best.zip")
    extra = {} if endgame is None else {"endgame": endgame}
    return _make_file(
        rules,
        seed,
        path=str(path),
        threads=threads,
        sample=sample,
        temperature=temperature,
        any_variant=any_variant,
        **extra,
    )
