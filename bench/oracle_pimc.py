"""An upper bound for opponent inference: ``oracle-pimc``, pimc that *sees the other hands* (it cheats).

pimc deals the cards its seat has not seen uniformly into the other hands and the stock. A search that inferred
the opponents' hands from their moves could at best know them; this agent does (the stock stays unknown and is
shuffled in every world), so its margin against plain pimc bounds what better world sampling can gain. It is an
experiment, never a baseline: it reads hidden cards, and it is registered only when this module is imported::

    python evaluate.py --plugin scopa_bench.oracle_pimc --variant classic --gauntlet oracle=oracle-pimc \\
        --agents pimc --hands 400 --seed 20261215 --workers 1 --out runs/eval_oracle_pimc

Options are pimc's (``worlds=64,depth=1,endgame=6,prior=1.0,rollout=greedy``). Results: docs/strength.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import Policy, register_agent
from agents.search import PIMCAgent
from scopa_env.core import State
from scopa_env.rules import Rules

__all__ = ["OraclePIMC", "oracle_worlds"]


def oracle_worlds(
    rules: Rules, state: State, games: npt.NDArray[np.intp], counts: npt.ArrayLike, rng: np.random.Generator
) -> tuple[State, npt.NDArray[np.intp]]:
    """``lookahead.sample_worlds`` with every hand kept as it is: only the stock is shuffled in each world."""
    games = np.asarray(games, dtype=np.intp)
    counts = np.broadcast_to(np.asarray(counts, dtype=np.intp), games.shape)
    wrow = np.repeat(np.arange(games.size), counts)
    worlds = state.take(games[wrow])
    d = rules.num_cards
    pos = worlds.stock_pos.astype(np.intp)
    j = np.arange(d)
    keys = np.where(j[None, :] >= pos[:, None], rng.random((wrow.size, d)), -1.0 + j[None, :] / d)  # dealt: in place
    order = np.argsort(keys, axis=1, kind="stable")
    worlds.deck = np.take_along_axis(worlds.deck, order, axis=1).astype(np.int8)
    worlds.seed[:] = 0
    return worlds, wrow


class OraclePIMC(PIMCAgent):
    """pimc whose worlds hold the true hands of every seat (see the module docstring)."""

    name = "oracle-pimc"

    def __init__(self, rules: Rules | str, seed: int | None = None, **options: Any) -> None:
        super().__init__(rules, seed, **options)
        self.memory, self.sampler = None, oracle_worlds  # its worlds, whatever infer says


@register_agent("oracle-pimc", "EXPERIMENT, reads hidden cards: pimc that sees the other hands (bench/oracle_pimc.py)")
def _make_oracle_pimc(rules: Rules, seed: int | None = None, **options: Any) -> Policy:
    return OraclePIMC(rules, seed, **options)
