"""``random``: uniform over legal cards, then uniform over that card's legal captures.

The policy itself lives with the envs (``scopa_env.games.policy.RandomAgent``, the envs' built-in opponent); this module
registers it as the ``random`` agent spec.
"""

from __future__ import annotations

from agents.base import register_agent
from scopa_env.games.policy import Policy, RandomAgent
from scopa_env.rules import Rules

__all__: list[str] = []


@register_agent("random", "uniform over legal cards and over captures")
def _make_random(rules: Rules, seed: int | None = None) -> Policy:
    return RandomAgent(rules, seed)
