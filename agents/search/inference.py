"""Opponent inference for the sampled-deal searches: worlds weighted by how likely the opponent's moves were.

pimc deals the unseen cards uniformly; a player who watched the opponent discard a seven beside a capturable seven
deals differently. ``DealMemory`` keeps, per game of the batch, the opponent's moves of the *current deal* (the
earlier deals' hands are spent: their moves say nothing about the cards held now), reconstructed from public
information only: the table and the opponent's pile at the seat's previous decision (after its own move) against
those at this one. ``inferred_worlds`` then deals ``pool`` times as many uniform worlds as the search needs,
weighs each by the probability of the opponent's recorded moves under a model of the opponent (a softmax of
``greedy``'s move values at temperature ``temp``, with the world's hand plus the cards played since as the hand it
chose from), and resamples the search's worlds by those weights.

Two seats only (classic and its targets, scopa d'assi, the 2-player beginners' rules); other variants search
uniform worlds. The memory is the agent's: ``seed()`` clears it, and a game whose public state does not follow
from the one remembered (a new game in the slot, a row the agent did not see) starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agents.baselines.features import dynamic_weights, expert_scores, generate_moves, greedy_scores
from agents.search.lookahead import sample_worlds
from scopa_env.engine import core, observation
from scopa_env.engine.core import Phase, State
from scopa_env.rules import Rules


class NetModel(Protocol):
    """A network as opponent model (``agents.nets.az.NetEvaluator``, opened by ``agents.base.load_network``)."""

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """(n, num_cards) raw logits of the observations ``obs`` (n, obs_size)."""
        ...


MODELS = ("greedy", "expert")
"""Opponent models by name: the softmax of ``greedy``'s move values or of ``expert``'s move scores; a
``NetEvaluator`` (``pimc:model=PATH``, a bot directory or checkpoint) is the softmax of a network's card logits."""

Model = str | NetModel

__all__ = [
    "MODELS",
    "DealMemory",
    "InferredWorlds",
    "Model",
    "NetModel",
    "OpponentMove",
    "supports_inference",
]


def supports_inference(rules: Rules) -> bool:
    """Whether ``DealMemory`` can follow this variant's opponents (two seats, no knocks)."""
    return rules.num_players == 2 and not rules.knocks


@dataclass
class OpponentMove:
    table: npt.NDArray[np.bool_]
    """(D,) the table the opponent played to."""
    card: int
    captured: npt.NDArray[np.bool_]
    """(D,) the table cards it took."""


@dataclass
class _Game:
    table: npt.NDArray[np.bool_]  # after the seat's own last move
    opp_pile: npt.NDArray[np.bool_]
    stock_pos: int
    moves: list[OpponentMove] = field(default_factory=list)  # this deal's
    deal: int = -1  # stock_pos when ``moves`` were made


class DealMemory:
    """The opponent's moves of the current deal, per game of the batch (see the module docstring)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.games: dict[int, _Game] = {}

    def clear(self) -> None:
        self.games.clear()

    def observe(self, state: State, games: npt.NDArray[np.intp]) -> None:
        """Reconstruct the opponent's move since each game's previous decision (public cards only)."""
        side_of = np.asarray(self.rules.seat_side, dtype=np.intp)
        for g in games.tolist():
            m = self.games.get(g)
            if m is None:
                continue
            opp = 1 - int(side_of[int(state.current[g])])
            table, pile, pos = state.table[g], state.piles[g, opp], int(state.stock_pos[g])
            new_pile = pile & ~m.opp_pile
            captured = m.table & ~table
            laid = table & ~m.table
            if pos < m.stock_pos or (m.opp_pile & ~pile).any():
                del self.games[g]  # a new hand (or game) in the slot: start afresh
                continue
            if np.array_equal(table, m.table) and not new_pile.any():
                continue  # no opponent move in between (the seat's own CHOOSE step)
            played = np.flatnonzero(laid) if laid.any() else np.flatnonzero(new_pile & ~captured)
            won = captured.copy()  # what the opponent's pile must have gained: a capture's cards and its card
            if captured.any() and played.size:
                won[played[0]] = True
            consistent = (
                played.size == 1
                and (captured.any() != bool(laid.any()))  # a capture or a lay, not both
                and np.array_equal(new_pile, won)
            )
            if not consistent:
                del self.games[g]  # not the game remembered: start afresh
                continue
            if m.deal != pos:
                m.moves, m.deal = [], pos
            # A deal since the seat's own move: the opponent moved before it (its hand is full again, as the
            # seat's) or after it (one card fewer); a move of the spent deal says nothing of the hand held now.
            seat = int(state.current[g])
            if pos == m.stock_pos or state.hands[g, 1 - seat].sum() < state.hands[g, seat].sum():
                m.moves.append(OpponentMove(m.table.copy(), int(played[0]), captured))

    def remember(self, state: State, games: npt.NDArray[np.intp], actions: npt.NDArray[np.int64]) -> None:
        """Store each game's public position after the seat's action (a copy is stepped; only its table, the
        opponent's pile and the stock position are read)."""
        if games.size == 0:
            return
        after = state.take(games)
        core.step(self.rules, after, np.asarray(actions, dtype=np.int64))
        side_of = np.asarray(self.rules.seat_side, dtype=np.intp)
        for i, g in enumerate(games.tolist()):
            if after.phase[i] == Phase.DONE:
                self.games.pop(g, None)
                continue
            opp = 1 - int(side_of[int(state.current[g])])
            m = self.games.get(g)
            moves, deal = (m.moves, m.deal) if m is not None else ([], -1)
            self.games[g] = _Game(
                after.table[i].copy(), after.piles[i, opp].copy(), int(after.stock_pos[i]), moves, deal
            )

    def recorded(self, state: State, g: int) -> list[OpponentMove]:
        """The opponent's moves of game ``g``'s current deal."""
        m = self.games.get(g)
        return m.moves if m is not None and m.deal == int(state.stock_pos[g]) else []


def _log_likelihood(
    rules: Rules,
    worlds: State,
    rows: npt.NDArray[np.intp],
    move: OpponentMove,
    later: npt.NDArray[np.bool_],
    temp: float,
    model: Model = "greedy",
) -> npt.NDArray[np.float64]:
    """(len(rows),) log-probability of ``move`` in each world ``rows`` under the opponent model, its hand then being
    the world's opponent hand plus ``later`` (the cards it played since) plus the card. A network model gives the
    probability of the card (its logits over the hand, at temperature ``temp``), the others of the whole move."""
    pos = worlds.take(rows)
    n = rows.size
    me = pos.current.astype(np.intp)
    opp = 1 - me  # two seats
    ar = np.arange(n, dtype=np.intp)
    pos.hands[ar, opp] |= later
    pos.hands[ar, opp, move.card] = True
    pos.table[:] = move.table
    pos.current[:] = opp
    pos.phase[:] = Phase.PLAY
    pos.pending[:] = -1
    if not isinstance(model, str):  # a network: the card's probability in the opponent's observation then
        logits = model.logits(observation.observe(rules, pos))[:, : rules.num_cards].astype(np.float64) / temp
        hand = pos.hands[ar, opp]
        logits = np.where(hand, logits, -np.inf)
        top = logits.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(logits - top).sum(axis=1)) + top[:, 0]
        return np.maximum(logits[:, move.card] - log_norm, -30.0)
    if model == "expert":
        moves = generate_moves(rules, pos, ar, dynamic_weights(rules, pos, ar))
        score = expert_scores(rules, pos, moves) / temp
    else:
        moves = generate_moves(rules, pos, ar)
        score = greedy_scores(rules, moves) / temp
    seg_max = np.maximum.reduceat(score, moves.starts[:-1])
    z = np.exp(score - seg_max[moves.row])
    log_norm = np.log(np.add.reduceat(z, moves.starts[:-1])) + seg_max
    hit = (moves.card == move.card) & (moves.capture == move.captured[None, :]).all(axis=1)
    logp = np.full(n, -30.0)
    np.maximum.at(logp, moves.row[hit], (score - log_norm[moves.row])[hit])
    return logp


class InferredWorlds:
    """A world sampler for ``lookahead.move_margins``: ``pool`` x uniform worlds, resampled by the likelihood of
    each game's recorded opponent moves (games without any keep uniform worlds). A class rather than a closure, so a
    search that holds one saves in a training checkpoint (``safe_state`` stores no functions)."""

    def __init__(self, memory: DealMemory, temp: float, pool: int, model: Model = "greedy") -> None:
        self.memory, self.temp, self.pool, self.model = memory, temp, pool, model

    def __call__(
        self, rules: Rules, state: State, games: npt.NDArray[np.intp], counts: npt.ArrayLike, rng: np.random.Generator
    ) -> tuple[State, npt.NDArray[np.intp]]:
        memory, temp, pool, model = self.memory, self.temp, self.pool, self.model
        counts = np.broadcast_to(np.asarray(counts, dtype=np.intp), games.shape)
        recorded = [memory.recorded(state, int(g)) for g in games]
        has_moves = np.array([bool(r) for r in recorded], dtype=np.bool_)
        big = np.where(has_moves & (counts > 1), counts * pool, counts).astype(np.intp)
        worlds, wrow = sample_worlds(rules, state, games, big, rng)
        if (big == counts).all():
            return worlds, wrow
        keep = []
        starts = np.concatenate([[0], np.cumsum(big)])
        for i, moves in enumerate(recorded):
            rows = np.arange(starts[i], starts[i + 1])
            if big[i] == counts[i]:
                keep.append(rows)
                continue
            logw = np.zeros(rows.size)
            later = np.zeros((rows.size, rules.num_cards), dtype=np.bool_)
            for move in reversed(moves):  # the last move first: its hand had only the cards played after it
                logw += _log_likelihood(rules, worlds, rows, move, later, temp, model)
                later[:, move.card] = True
            w = np.exp(logw - logw.max())
            keep.append(rows[rng.choice(rows.size, size=int(counts[i]), p=w / w.sum())])
        idx = np.concatenate(keep)
        return worlds.take(idx), wrow[idx]
