"""An upper bound for opponent inference: ``oracle-pimc``, pimc that *sees the other hands* (it cheats).

pimc deals the cards its seat has not seen uniformly into the other hands and the stock. A search that inferred
the opponents' hands from their moves could at best know them; this agent does (the stock stays unknown and is
shuffled in every world), so its margin against plain pimc bounds what better world sampling can gain. It is an
experiment, never a baseline: it reads hidden cards, and it is registered only when this module is imported::

    python evaluate.py --plugin scopa_bench.oracle_pimc --variant classic --gauntlet oracle=oracle-pimc \\
        --agents pimc --hands 400 --seed 20261215 --workers 1 --out runs/eval_oracle_pimc

Options are pimc's (``worlds=64,depth=1,endgame=6,prior=1.0,rollout=greedy``) and ``see=1.0``: the share of the
other hand it sees. With ``see=p < 1`` (two players) each card of the opponent's hand is shown to it with
probability ``p``, a fresh coin per card at every decision, and the rest of the unseen cards are dealt uniformly as
pimc deals them: a world's opponent hand then holds on average ``p + (1 - p) u`` of the true cards, where ``u`` is
what uniform worlds hold (about 25% in classic). Measuring the margin at a few values of ``p`` maps how much
knowledge of the hand a given margin against pimc needs; ``bench/inference_accuracy.py`` measures how much of it
opponent inference recovers. Results: docs/strength.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import register_agent
from agents.search.lookahead import WorldSampler, sample_worlds
from agents.search.pimc import PIMCAgent
from scopa_env.engine.core import State
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__ = ["OraclePIMC", "oracle_worlds", "partial_oracle_worlds"]


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


def partial_oracle_worlds(see: float) -> WorldSampler:
    """A world sampler that shows each card of the (single) opponent's hand with probability ``see``.

    Uniform worlds (``lookahead.sample_worlds``) are dealt first; then, in each world, every shown card the world's
    opponent hand lacks (it lies in the stock) swaps places with a random card of that hand that is not shown. The
    hand's other cards and the stock's order stay uniform given the shown cards (the swap is symmetric in them).
    """
    if not 0.0 <= see <= 1.0:
        raise ValueError(f"oracle-pimc: see must be in [0, 1] (the share of the other hand it sees), got {see}")

    def sampler(
        rules: Rules, state: State, games: npt.NDArray[np.intp], counts: npt.ArrayLike, rng: np.random.Generator
    ) -> tuple[State, npt.NDArray[np.intp]]:
        if rules.num_players != 2:
            raise ValueError(f"oracle-pimc: see < 1 is built for two players, not {rules.num_players}")
        worlds, wrow = sample_worlds(rules, state, games, counts, rng)
        games = np.asarray(games, dtype=np.intp)
        for i, g in enumerate(games.tolist()):
            opp = 1 - int(state.current[g])
            true_hand = np.flatnonzero(state.hands[g, opp])
            shown = true_hand[rng.random(true_hand.size) < see]
            if shown.size == 0:
                continue
            for w in np.flatnonzero(wrow == i).tolist():
                hand = worlds.hands[w, opp]
                missing = shown[~hand[shown]]
                if missing.size == 0:
                    continue
                spare = np.setdiff1d(np.flatnonzero(hand), shown)
                out = rng.choice(spare, size=missing.size, replace=False)
                deck = worlds.deck[w]  # a permutation: the dealt part holds the cards not in the stock
                at_stock = [int(np.flatnonzero(deck == c)[0]) for c in missing.tolist()]
                at_dealt = [int(np.flatnonzero(deck == c)[0]) for c in out.tolist()]
                deck[at_stock], deck[at_dealt] = out, missing
                hand[missing], hand[out] = True, False
        return worlds, wrow

    return sampler


class OraclePIMC(PIMCAgent):
    """pimc whose worlds hold the true hands of every seat, or a share ``see`` of them (the module docstring)."""

    name = "oracle-pimc"

    def __init__(self, rules: Rules, seed: int | None = None, see: float = 1.0, **options: Any) -> None:
        super().__init__(rules, seed, **options)
        self.see = float(see)
        # Its worlds, whatever infer says.
        self.memory, self.sampler = None, oracle_worlds if self.see == 1.0 else partial_oracle_worlds(self.see)


@register_agent(
    "oracle-pimc",
    "EXPERIMENT, reads hidden cards: pimc that sees the other hands, or a share see=p of them (bench/oracle_pimc.py)",
)
def _make_oracle_pimc(rules: Rules, seed: int | None = None, **options: Any) -> Policy:
    return OraclePIMC(rules, seed, **options)
