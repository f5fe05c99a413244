"""The layers of a trained actor as numpy arrays: what ``agents.nets.export`` writes and ``az`` runs from a ``.zip``.

Its own module so that the search (``agents.nets.netsearch``) can read a checkpoint's network without importing the
exporter (which imports ``agents.nets.bot``, which builds search bots: an import circle otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from agents.errors import ScopaError

__all__ = [
    "ACTIVATIONS",
    "TORCH_ACTIVATIONS",
    "Activation",
    "ExportArgumentError",
    "ExportError",
    "extract_mlp",
    "mlp_logits",
]


class ExportError(ScopaError, RuntimeError):
    """A checkpoint that cannot be exported, or an export that failed its checks."""


class ExportArgumentError(ExportError, ValueError):
    """An argument of an export (``agents.nets.export``, or the model card's evidence in ``agents.nets.card``) that is
    wrong, found before any work."""


def extract_mlp(actor: Any) -> tuple[list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]], str]:
    """The actor's layers as ``(weight (out, in), bias (out,))`` float32 arrays and its activation name.

    ``actor`` is an ``agents.nets.checkpoint.ActorNet`` (or anything with ``features``, ``policy_net`` and
    ``action_net``). Raises ``ExportError`` for networks the bot cannot run: feature extractors other than a flatten,
    layers other than Linear (with bias) and one supported activation.
    """
    import torch.nn as nn
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if not isinstance(actor.features, (FlattenExtractor, nn.Flatten)):
        raise ExportError(
            f"only MlpPolicy networks can be exported; the policy uses the features extractor "
            f"{type(actor.features).__name__} (train with the default FlattenExtractor)"
        )
    modules = [*actor.policy_net, actor.action_net]
    layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] = []
    activations: set[str] = set()
    for i, m in enumerate(modules):
        if isinstance(m, nn.Linear):
            if m.bias is None:
                raise ExportError(f"layer {i} ({m}) has no bias; the exporter expects Linear layers with bias")
            weight = m.weight.detach().cpu().numpy().astype(np.float32)
            layers.append((weight, m.bias.detach().cpu().numpy().astype(np.float32)))
        elif type(m).__name__ in TORCH_ACTIVATIONS:
            if isinstance(m, nn.LeakyReLU) and m.negative_slope != 0.01:
                raise ExportError(f"LeakyReLU with negative_slope {m.negative_slope} is not supported (only 0.01)")
            if isinstance(m, nn.ELU) and m.alpha != 1.0:
                raise ExportError(f"ELU with alpha {m.alpha} is not supported (only 1.0)")
            activations.add(TORCH_ACTIVATIONS[type(m).__name__])
        else:
            raise ExportError(
                f"layer {i} of the policy network is a {type(m).__name__}; the bot supports Linear layers and the "
                f"activations {', '.join(TORCH_ACTIVATIONS)} (train with one of those as activation_fn)"
            )
    if len(activations) > 1:
        raise ExportError(f"the policy network mixes activations {sorted(activations)}; the exporter needs one")
    kinds = ["L" if isinstance(m, nn.Linear) else "A" for m in modules]
    if kinds != ["L", "A"] * (len(layers) - 1) + ["L"]:
        raise ExportError(f"the policy network must alternate Linear and activation layers, got {modules}")
    return layers, (activations.pop() if activations else "identity")


def _leaky_relu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.where(x >= 0, x, np.float32(0.01) * x)


def _elu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _sigmoid(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


class Activation(NamedTuple):
    """One hidden activation as every path runs it."""

    torch: str
    """The ``torch.nn`` class, with its default parameters (training, checkpoints, the ONNX export)."""
    numpy: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]
    """The same function on numpy arrays (the bots, ``az``)."""


ACTIVATIONS: dict[str, Activation] = {
    "relu": Activation("ReLU", lambda x: np.maximum(x, np.float32(0))),
    "tanh": Activation("Tanh", np.tanh),
    "leaky_relu": Activation("LeakyReLU", _leaky_relu),
    "elu": Activation("ELU", _elu),
    "sigmoid": Activation("Sigmoid", _sigmoid),
    "silu": Activation("SiLU", lambda x: x * _sigmoid(x)),
    "identity": Activation("Identity", lambda x: x),
}
"""The one activation table: the hidden activations a network may use, by the name ``train.py``'s config, a
checkpoint's config and a bot's ``policy.npz`` give it. Each runs in torch and in numpy, so whatever trains also
exports and plays as a bot; ``train.py`` refuses any other name, and a checkpoint whose network uses another torch
activation (GELU, Mish, ...) is refused when it is loaded."""
TORCH_ACTIVATIONS = {a.torch: name for name, a in ACTIVATIONS.items()}
"""``torch.nn`` class name -> the table's name."""


def mlp_logits(
    layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    activation: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]],
    obs: npt.ArrayLike,
) -> npt.NDArray[np.float32]:
    """(n, outputs) float32: an MLP's raw outputs; ``layers`` are ``(weight (in, out), bias)``, ``activation``
    between them (the bot's forward pass, also the ``az`` search's)."""
    x = np.asarray(obs, dtype=np.float32)
    last = len(layers) - 1
    for i, (wt, b) in enumerate(layers):
        x = x @ wt
        x += b
        if i < last:
            x = activation(x)
    return x
