"""Benchmarks, installed as the package ``scopa_bench`` and runnable as scripts from a checkout:

- ``env_speed.py``: the batched core, the reference engine and the SB3 vector env (``scopa-bench``, ``make bench``);
- ``agents_speed.py``: milliseconds per decision of each agent;
- ``agents_ladder.py``: the agents' strength ladder;
- ``bot_latency.py``: the exported bot's latency.

The package holds what the scripts share: ``variant_rules``, a command's ``--variant`` read.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scopa_env.rules import Rules


def variant_rules(parser: argparse.ArgumentParser, name: str) -> Rules:
    """The rules of the variant a command's ``--variant`` names; an unknown name is ``parser.error`` (one line
    naming the option and the variants, exit status 2)."""
    from scopa_env.rules import get_rules

    try:
        return get_rules(name)
    except ValueError as e:
        parser.error(f"--variant: {e}")
