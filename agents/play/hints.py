"""Hints: the probability a policy gives each whole legal move (a capture's pick orders summed), for the terminal
game (``agents.play.terminal``) and the browser game (``agents.play.web``).

    fn = probs_function(agent)          # None for rule-based and search agents (they have no probabilities)
    moves = move_probabilities(fn, rules, state, game=0)   # [MoveProb(card, capture, prob), ...]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import Rules

__all__ = ["MoveProb", "move_probabilities", "probs_function"]


@dataclass
class MoveProb:
    """A whole move and the probability an agent gives it."""

    card: int
    capture: frozenset[int]
    prob: float


def move_probabilities(
    probs_fn: Callable[[object], npt.NDArray[np.floating]], rules: Rules, state: core.State, game: int = 0
) -> list[MoveProb]:
    """Every legal move of ``game`` with its probability under a policy, pick sequences of a capture summed.

    ``probs_fn(batch)`` maps an ``scopa_env.games.policy.ActBatch`` to (n, num_cards) masked action probabilities. The
    CHOOSE phase is expanded on copies of the game: the probability of a capture is the sum over the pick orders that
    reach it. The game itself is not changed.
    """
    root = state.take([game])
    out: dict[tuple[int, frozenset[int]], float] = {}

    def probs_of(st: core.State) -> npt.NDArray[np.floating]:
        batch = ActBatch(rules, observation.observe(rules, st), core.legal_action_mask(rules, st), st, np.array([0]))
        return np.asarray(probs_fn(batch), dtype=np.float64)[0]

    def expand(st: core.State, weight: float) -> None:
        mask = core.legal_action_mask(rules, st)[0]
        p = probs_of(st)
        for action in np.flatnonzero(mask):
            child = st.copy()
            info = core.step(rules, child, np.array([action]))
            w = weight * float(p[action])
            if info.move_done[0]:
                key = (int(info.card[0]), frozenset(int(c) for c in np.flatnonzero(info.capture[0])))
                out[key] = out.get(key, 0.0) + w
            else:
                expand(child, w)

    expand(root, 1.0)
    return [MoveProb(card, cap, prob) for (card, cap), prob in out.items()]


def probs_function(agent: Policy) -> Callable[[object], npt.NDArray[np.floating]] | None:
    """The agent's masked action probabilities as a function of an ``ActBatch``, if it has them.

    ``action_probs(batch)`` (exported bots) is used as is; ``logits(obs, mask)`` (checkpoint policies, illegal
    actions at -inf) goes through the masked softmax. Rule-based and search agents have neither.
    """
    probs = getattr(agent, "action_probs", None)
    if callable(probs):
        return probs  # type: ignore[no-any-return]
    logits = getattr(agent, "logits", None)
    if callable(logits):
        from agents.nets.bot import masked_softmax

        return lambda batch: masked_softmax(logits(batch.obs, batch.mask), batch.mask)  # type: ignore[attr-defined]
    return None
