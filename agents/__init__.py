"""Agents: the batched policy interface, baselines (random, greedy, expert, search), neural policies, the bot.

``Bot`` (exported policy, numpy / onnxruntime only) is imported lazily: ``from agents import Bot``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Bot", "make_agent"]


def __getattr__(name: str) -> Any:
    if name == "Bot":
        from agents.nets.bot import Bot

        return Bot
    if name == "make_agent":
        from agents.base import make_agent

        return make_agent
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
