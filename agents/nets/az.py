"""The ``az`` search itself (see ``agents.nets.netsearch``, which loads its networks and registers the spec): the
network evaluator, the network rollout policy and ``AZAgent``. It imports nothing of ``agents.nets.bot``, so a search
bot (``agents.nets.bot.Bot.search_policy``) can build one without an import circle."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError
from agents.baselines.features import (
    Moves,
    StatePolicy,
    check_at_least,
    dynamic_weights,
    expert_scores,
    generate_moves,
    greedy_scores,
    pick_best,
)
from agents.baselines.greedy import greedy_moves
from agents.nets.mlp import ACTIVATIONS, mlp_logits
from agents.nets.weights import Layers
from agents.search.compiled import KernelMoves
from agents.search.endgame import best_actions
from agents.search.lookahead import RolloutPolicy, check_search_options, move_margins, search_plan
from agents.search.pimc import NamedRollout
from scopa_env.engine import observation
from scopa_env.engine.core import State
from scopa_env.rules import Rules

__all__ = ["PRIOR_FLOOR", "AZAgent", "NetEvaluator", "net_rollout_policy", "one_blas_thread"]

PRIOR_FLOOR = -5.0
"""Lowest log-probability the prior adds (a move the network all but rules out is not pushed further down)."""


_BLAS: Any = None


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """A context in which numpy's BLAS uses one thread (``threadpoolctl``): the search's many small products are
    far slower spread over threads, and much slower still on a loaded machine (measured 0.5 ms against 36 ms per
    forward pass of 8 rows on the 2-core VM at load 5). A no-op without ``threadpoolctl``."""
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency; kept optional for stripped installs
            _BLAS = False
        else:
            _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas") if _BLAS else contextlib.nullcontext()


class NetEvaluator:
    """A policy network's card logits in numpy: layers ``(weight (in, out), bias)`` and an activation."""

    def __init__(self, rules: Rules, layers: Layers, activation: str, source: str) -> None:
        self.rules = rules
        self.layers = [(np.ascontiguousarray(w, dtype=np.float32), b.astype(np.float32)) for w, b in layers]
        self.activation = activation
        self.source = source
        size = observation.observation_size(rules)
        if self.layers[0][0].shape[0] != size or self.layers[-1][0].shape[1] != rules.num_actions:
            raise AgentSpecError(
                f"{source}: the network maps {self.layers[0][0].shape[0]} inputs to {self.layers[-1][0].shape[1]} "
                f"actions, but {rules.name} needs {size} observation entries and {rules.num_actions} actions"
            )

    @property
    def act_fn(self) -> Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]:
        """The activation's numpy function, looked up by name on use (so the evaluator saves in a checkpoint)."""
        return ACTIVATIONS[self.activation].numpy

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """(n, num_cards) raw logits of the observations ``obs`` (n, obs_size)."""
        return mlp_logits(self.layers, self.act_fn, obs)

    def state_logits(self, state: State) -> npt.NDArray[np.float32]:
        """(B, num_cards) logits of the acting seat of every game of ``state``."""
        return self.logits(observation.observe(self.rules, state))


def net_rollout_policy(
    net: NetEvaluator, temp: float = 0.0, rng: Callable[[], np.random.Generator] | None = None
) -> RolloutPolicy:
    """A rollout policy: the card of highest logit for the seat to act (``temp=0``), or a card sampled from the
    network's softmax at temperature ``temp`` (from the generator ``rng()`` returns: an agent's current one), with
    greedy's capture for that card."""
    if temp > 0 and rng is None:
        raise ValueError("a sampled rollout (temp > 0) needs a random generator")

    def policy(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> tuple[Moves, npt.NDArray[np.intp]]:
        moves = generate_moves(rules, state, games)
        sub = state if games.size == state.batch_size else state.take(games)
        logits = net.state_logits(sub).astype(np.float64)
        if temp > 0:
            assert rng is not None
            # Gumbel-max: the argmax of logits / temp + Gumbel noise (one draw per row and card, shared by the
            # card's captures) is a sample of the softmax at temperature temp.
            logits = logits / temp + rng().gumbel(size=logits.shape)
        # Card first (the network), then among that card's captures greedy's value breaks the tie (scaled well
        # below any logit gap that matters).
        score = logits[moves.row, moves.card] * 1e3 + greedy_scores(rules, moves)
        return moves, pick_best(moves, score)

    return policy


def _log_prior(net: NetEvaluator, state: State, games: npt.NDArray[np.intp], moves: Moves) -> npt.NDArray[np.float64]:
    """(m,) the network's log-probability of each candidate's card (over the seat's hand), floored."""
    sub = state.take(games)
    logits = net.state_logits(sub)[:, : net.rules.num_cards].astype(np.float64)  # the card ids (not stop / knocks)
    hand = sub.hands[np.arange(games.size), sub.current.astype(np.intp)]
    has_hand = hand.any(axis=1)  # a CHOOSE-phase row: its card is already played, every candidate shares it
    hand[~has_hand] = True
    logits = np.where(hand, logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    logp[~has_hand] = 0.0
    return np.maximum(logp[moves.row, moves.card], PRIOR_FLOOR)


class AZAgent(NamedRollout, StatePolicy):
    """Sampled-deal search with a network's rollouts and prior (see the module docstring)."""

    name = "az"

    def __init__(
        self,
        rules: Rules,
        net: NetEvaluator,
        seed: int | None = None,
        worlds: int = 16,
        depth: int = 1,
        endgame: int = 6,
        prior: float = 0.5,
        rollout: str = "net",
        temp: float = 0.0,
        expert: float = 0.0,
    ) -> None:
        super().__init__(rules, seed)
        check_search_options("az", worlds, depth, endgame)
        check_at_least("az", "prior", prior, 0, "weight of the network's log-probability")
        if rollout not in ("net", "greedy"):
            raise AgentSpecError(f"az: rollout must be 'net' or 'greedy', got {rollout!r}")
        check_at_least("az", "expert", expert, 0, "the expert heuristic's weight, as pimc's")
        if temp < 0 or (temp > 0 and rollout != "net"):
            raise AgentSpecError(f"az: temp must be >= 0 and needs rollout=net (sampled network rollouts), got {temp}")
        self.net = net
        self.worlds, self.depth, self.endgame, self.prior = int(worlds), int(depth), int(endgame), float(prior)
        self.rollout_name, self.rollout_fn = rollout, None
        self.temp = float(temp)
        self.expert = float(expert)

    def named_rollout(self) -> RolloutPolicy:
        """greedy's rollout, or the network's (reading the agent's current generator), made on use from the options."""
        if self.rollout_name == "net":
            return net_rollout_policy(self.net, self.temp, lambda: self.rng)
        return greedy_moves

    def search(
        self, state: State, games: npt.NDArray[np.intp]
    ) -> tuple[Moves | KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """The search of each game's decision: candidates (first world's), mean margins (n, width), first index.

        The margins include the prior; ``-inf`` pads rows with fewer candidates."""
        rules = self.rules
        exact, counts, limits = search_plan(rules, state, games, self.worlds, self.depth, self.endgame)
        # The weights live inside the scores (1: any prior; 0 skips the prior's work, as before ``expert``).
        prior = np.where(exact, 0.0, 1.0 if self.prior > 0 or self.expert > 0 else 0.0)

        def log_prior() -> tuple[Moves, npt.NDArray[np.float64]]:
            weights = dynamic_weights(rules, state, games) if self.expert > 0 else None  # expert's suit choice
            real = generate_moves(rules, state, games, weights)
            scores = self.prior * _log_prior(self.net, state, games, real)
            if self.expert > 0:
                scores = scores + self.expert * expert_scores(rules, state, real)
            return real, scores

        return move_margins(rules, state, games, counts, limits, self.policy, self.rng, prior, log_prior)

    def act_state(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        with one_blas_thread():  # cirulla's knock decisions follow the search agents' fixed rule (tris, then sum)
            return super().act_state(state, games)

    def _play(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        return best_actions(state, games, self.search(state, games))
