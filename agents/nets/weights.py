"""The one way into a network's files for the code that runs its layers itself: ``open_network`` reads a bot export
directory (numpy, torch-free: ``agents.nets.bot``) or a ``train.py`` checkpoint (weights only:
``agents.nets.checkpoint``) as numpy layers and a name of the one activation table, checked against the rules by
the one compatibility check (``agents.nets.compat``).

The network-guided searches (``az``, ``pimc:model=PATH``: ``agents.nets.netsearch.load_net``) and expert
iteration's start from a bot read their networks through it. What a path is comes from the registry's one path
sniffer (``agents.base.path_kind``), which also routes agent specs to the bot and checkpoint agents.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, path_kind
from scopa_env.rules import Rules

__all__ = ["Layers", "Network", "open_network"]

Layers = list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]


@dataclass(frozen=True)
class Network:
    """A policy network read from its files."""

    layers: Layers
    """``(weight (in, out), bias (out,))`` float32 arrays, input layer first; the last gives the card logits."""
    activation: str
    """The hidden activation, a name of ``agents.nets.mlp.ACTIVATIONS``."""
    source: str
    """The path it was read from."""


def open_network(rules: Rules, path: str | Path, who: str = "") -> Network:
    """The network of a bot export directory or of a ``train.py`` checkpoint ``.zip``, for ``rules``.

    A bot that cannot be read or does not fit the rules raises ``BotError``, a checkpoint ``AgentSpecError``; a path
    that is neither raises ``AgentSpecError`` (``who`` starts its message, e.g. ``agent az: ``).
    """
    kind = path_kind(path)
    if kind in ("bot", "dir"):
        from agents.nets.bot import Bot

        bot = Bot.load(path, prefer="numpy", rules=rules)
        if bot.layers is None or bot.activation is None:
            raise AgentSpecError(f"{who}{path} is a search-only bot (pimc, no network): give a bot with a network")
        return Network(bot.layers, bot.activation, str(path))
    if kind == "checkpoint":
        from agents.nets.checkpoint import load_checkpoint_policy
        from agents.nets.mlp import extract_mlp

        actor, _ = load_checkpoint_policy(path, rules)
        layers, activation = extract_mlp(actor)
        return Network([(w.T, b) for w, b in layers], activation, str(path))
    raise AgentSpecError(f"{who}{path} is neither a bot directory nor a train.py checkpoint (.zip)")
