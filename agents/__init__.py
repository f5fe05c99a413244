"""Agents, one subpackage per floor (docs/architecture.md): ``baselines``, ``search``, ``nets``, ``evaluation`` and
``play``, ``training``; at the top, the agent registry (``base``), the errors, the settings machinery and the
thread pinning.

The front door, both imported lazily: ``from agents import make_agent`` (an agent from a spec) and
``from agents import Bot`` (an exported policy, numpy / onnxruntime only).
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
