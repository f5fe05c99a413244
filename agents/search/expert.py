"""``expert``: a rule-based player an Italian club player would recognise.

On top of ``greedy``'s immediate value it

- remembers which cards are gone: weights drop for categories already decided (``features.dynamic_weights``),
  and every risk below is computed from the cards still unseen;
- does not open the table to a scopa and keeps sevens, coins and the settebello safe: a move is charged the
  expected value of the next opponent's best reply on the table it leaves (for each rank, the best capture with
  that rank, scopa included, weighted by the hypergeometric chance that the opponent holds it);
- plays doubles: laying one card of a pair earns a bonus when the opponent is unlikely to take it, since the other
  card of the pair takes it back;
- knows the end game: once the stock is empty and the unseen cards all sit in one opponent's hand the position is
  an open book, and the rest of the hand (last capture and leftovers included) is solved exactly by minimax
  (``agents.search.endgame.solve_open``) when at most ``endgame`` plies are left.

Cirulla: fifteens are captures like the others (and the next opponent's fifteens are part of its feared reply),
the napoli and grande coins are valued by who already holds which of them (``features.dynamic_weights``), a knocked
hand of the next opponent is known for sure (``State.revealed``), and in the KNOCK phase it knocks whenever allowed,
three of a kind first (``knock=never``: it never knocks; knocking measured clearly better, docs/agents.md).

All of it is in ``agents.baselines.features`` (shared with the search agents' rollouts). Deterministic.
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
    check_at_least,
    check_knock_rule,
    choose,
    dynamic_weights,
    expert_scores,
    generate_moves,
    pick_best,
)
from agents.search.endgame import play_open_endgames
from scopa_env.engine.core import State
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__ = ["ExpertAgent", "expert_moves"]


def expert_moves(
    rules: Rules, state: State, games: npt.NDArray[np.intp], weights: CardWeights = DEFAULT_WEIGHTS
) -> tuple[Moves, npt.NDArray[np.intp]]:
    """The candidates of each game and the index of the expert heuristic's choice (no end-game solving)."""
    w = dynamic_weights(rules, state, games, weights)
    moves = generate_moves(rules, state, games, w)
    return moves, pick_best(moves, expert_scores(rules, state, moves, weights))


class ExpertAgent(StatePolicy):
    """Greedy plus scopa safety, card counting, doubles and exact end-game play (batched, deterministic)."""

    name = "expert"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        weights: CardWeights = DEFAULT_WEIGHTS,
        endgame: int = 8,
        knock: KnockRule = "always",
    ) -> None:
        super().__init__(rules, seed)
        check_at_least("expert", "endgame", endgame, 0, "0 turns exact end-game play off", " plies")
        self.weights = weights
        self.endgame = int(endgame)
        self.knock = check_knock_rule("expert", knock)

    def _play(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        moves, best = expert_moves(self.rules, state, games, self.weights)
        actions = choose(state, games, moves, best)
        if self.endgame > 0:
            actions = play_open_endgames(self.rules, state, games, actions, self.endgame)
        return actions


@register_agent(
    "expert",
    "greedy + scopa safety, card counting, doubles, exact open end game; options endgame=8, knock=always|never",
)
def _make_expert(rules: Rules, seed: int | None = None, endgame: int = 8, knock: str = "always") -> Policy:
    return ExpertAgent(rules, seed, endgame=endgame, knock=knock)  # type: ignore[arg-type]
