"""Batched games between agents: ``play`` and ``GameResults`` of the one game driver, ``scopa_env.driver``.

Kept so that ``from agents.arena import play`` (the ladder, ``evaluate.py``, the trainer's evaluation) keeps working::

    results = play(rules, [greedy, expert], lineups, seeds, mode="hands")
"""

from __future__ import annotations

from scopa_env.driver import GameResults, play

__all__ = ["GameResults", "play"]
