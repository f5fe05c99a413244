"""``greedy``: take the move of highest immediate value (scopa, settebello, coins, sevens / primiera, cards).

Captures are worth the ``features.card_weights`` of the cards won (played card included) plus one point for a
scopa; when nothing can be taken the least valuable card is laid. No memory, no look-ahead: the baseline every
other agent must beat, and the fast rollout policy of the search agents. Deterministic: ties go to the lowest card
id, then to the first capture in ``features.generate_moves`` order.

Cirulla: fifteens are valued like any capture (the cards won, a scopa when it sweeps), the napoli and grande coins
weigh their share of those points (``features.card_weights``), and in the KNOCK phase it knocks whenever allowed,
three of a kind first (``knock=never``: it never knocks).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agents.base import register_agent
from agents.baselines.features import (
    DEFAULT_WEIGHTS,
    CardWeights,
    KnockRule,
    Moves,
    StatePolicy,
    check_knock_rule,
    choose,
    generate_moves,
    greedy_scores,
    pick_best,
)
from scopa_env.engine.core import State
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__ = ["GreedyAgent", "greedy_moves"]


def greedy_moves(
    rules: Rules, state: State, games: npt.NDArray[np.intp], weights: CardWeights = DEFAULT_WEIGHTS
) -> tuple[Moves, npt.NDArray[np.intp]]:
    """The candidates of each game and the index of the greedy choice among them."""
    moves = generate_moves(rules, state, games)
    return moves, pick_best(moves, greedy_scores(rules, moves, weights))


class GreedyAgent(StatePolicy):
    """Maximise the immediate value of the move (batched, deterministic)."""

    name = "greedy"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        weights: CardWeights = DEFAULT_WEIGHTS,
        knock: KnockRule = "always",
    ) -> None:
        super().__init__(rules, seed)
        self.weights = weights
        self.knock = check_knock_rule("greedy", knock)

    def _play(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        moves, best = greedy_moves(self.rules, state, games, self.weights)
        return choose(state, games, moves, best)


@register_agent(
    "greedy", "highest immediate value: scopa, settebello, coins, sevens, cards; cirulla: knock=always|never"
)
def _make_greedy(rules: Rules, seed: int | None = None, knock: str = "always") -> Policy:
    return GreedyAgent(rules, seed, knock=knock)  # type: ignore[arg-type]
