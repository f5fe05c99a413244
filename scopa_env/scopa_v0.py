"""``from scopa_env import scopa_v0``: the PettingZoo entry points ``scopa_v0.env(...)``, ``scopa_v0.raw_env`` and
``scopa_v0.parallel_env(...)``.

The environment's documentation is the docstring of ``scopa_env.envs.aec``; the parallel face is
``scopa_env.envs.parallel``.
"""

from __future__ import annotations

from scopa_env.envs.aec import env, raw_env
from scopa_env.envs.parallel import parallel_env

__all__ = ["env", "parallel_env", "raw_env"]
