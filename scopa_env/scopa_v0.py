"""``from scopa_env import scopa_v0``: the PettingZoo entry point, ``scopa_v0.env(...)`` and ``scopa_v0.raw_env``.

The environment's documentation is the docstring of ``scopa_env.aec``.
"""

from __future__ import annotations

from scopa_env.aec import env, raw_env

__all__ = ["env", "raw_env"]
