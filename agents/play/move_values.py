"""The value of every legal move at one decision, in points per hand, for the game review (``agents.play.review``).

``value_moves`` plays each legal move in ``worlds`` deals of the cards the mover has not seen (pimc's sampled worlds,
``lookahead.sample_worlds``), then the rest of the hand by greedy rollouts on the kernel, or solved exactly once the
stock is empty and at most ``ENDGAME_PLIES`` moves are left; with ``open_hands`` the real deal is the one world
(hindsight). ``settled_values`` doubles the deals while a verdict is unsettled (``SETTLE_Z``, ``SETTLE_ROUNDS``), and
``MARKS`` names a loss (blunder, mistake, inaccuracy) by its thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.baselines.features import segment_argmax
from agents.baselines.greedy import greedy_moves
from agents.search.compiled import kernel_rollout, kernel_search_tree
from agents.search.lookahead import apply_moves, resolve_knocks, sample_worlds
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.rules import Rules
from scopa_env.rules.cards import format_card, format_cards
from scopa_env.rules.scoring import margin_vs_mean_of_others, point_fields

__all__ = [
    "BLUNDER",
    "ENDGAME_PLIES",
    "INACCURACY",
    "MARKS",
    "MISTAKE",
    "SETTLE_ROUNDS",
    "SETTLE_Z",
    "MoveValues",
    "move_text",
    "play_out",
    "settled_values",
    "value_moves",
]


ENDGAME_PLIES = 6
"""Once the stock is empty and at most this many moves are left in the hand, each world is solved to its end (pimc's
default ``endgame``)."""
BLUNDER, MISTAKE, INACCURACY = 0.8, 0.35, 0.12
"""The marks' thresholds in points per hand: a scopa or the settebello is one point, so a blunder gives away most of a
point, a mistake about a third of one, an inaccuracy about an eighth."""
MARKS: tuple[tuple[str, float], ...] = (("blunder", BLUNDER), ("mistake", MISTAKE), ("inaccuracy", INACCURACY))
"""Each mark and the loss (points) from which a decision earns it, the worst first."""
SETTLE_Z = 2.0
"""A decision's verdict is *unsettled* while the played move's gap to the best lies within this many standard errors
of a mark's threshold, or another move called an inaccuracy lies within this many of the best (``_unsettled``): more
deals are then sampled (``SETTLE_ROUNDS``)."""
SETTLE_ROUNDS = 4
"""How many times an unsettled decision's deals are doubled at most (``worlds`` up to 16 times the default)."""


def move_text(rules: Rules, card: int, capture: frozenset[int] | Sequence[int]) -> str:
    """A whole move as the review writes it, in the record's card notation: ``7d`` (laid) or ``7d x 3s 4c``."""
    deck = rules.deck
    taken = format_cards(sorted(capture), deck)
    return format_card(card, deck) + (" x " + " ".join(taken) if taken else "")


@dataclass
class MoveValues:
    """The values of every legal move of one position (``value_moves``)."""

    moves: list[tuple[int, frozenset[int]]]
    """The legal moves, in ``state_moves.legal_moves``' order."""
    margins: npt.NDArray[np.float64]
    """(W, L) each move's margin (points of the mover's side minus the others') in each world."""
    worlds: State
    """The W worlds (before the move), for playing the moves out again."""
    method: str
    """``exact`` (one world, solved), ``solved`` (each sampled world solved to the end of the hand) or ``rollouts``."""

    @property
    def value(self) -> npt.NDArray[np.float64]:
        return np.asarray(self.margins.mean(axis=0))

    @property
    def se(self) -> npt.NDArray[np.float64]:
        w = self.margins.shape[0]
        if w < 2:
            return np.zeros(self.margins.shape[1])
        return np.asarray(self.margins.std(axis=0, ddof=1) / math.sqrt(w))


def _move_arrays(rules: Rules, moves: Sequence[tuple[int, frozenset[int]]]) -> tuple[npt.NDArray[np.int64], Any]:
    cards = np.array([c for c, _ in moves], dtype=np.int64)
    caps = np.zeros((len(moves), rules.num_cards), dtype=np.bool_)
    for i, (_, cap) in enumerate(moves):
        caps[i, sorted(cap)] = True
    return cards, caps


def _best_of(rules: Rules, roots: State) -> tuple[Any, npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """Each root solved to the end of its hand (``kernel_search_tree``, max^n): its candidates, the index of the one
    best for the side to move (the first of equals, as the search backs up) and every candidate's points (m, S)."""
    moves, vals = kernel_search_tree(rules, roots, np.full(roots.batch_size, rules.num_cards + 1, dtype=np.intp))
    side_of = np.asarray(rules.seat_side, dtype=np.intp)
    mover = side_of[roots.current.astype(np.intp)][moves.row]
    own = margin_vs_mean_of_others(vals)[np.arange(len(moves)), mover]
    return moves, segment_argmax(own, moves.starts), vals


def value_moves(
    rules: Rules,
    state: State,
    worlds: int,
    rng: np.random.Generator,
    *,
    open_hands: bool = False,
    endgame: int = ENDGAME_PLIES,
) -> MoveValues:
    """Value every legal move of game 0 of ``state`` (a PLAY-phase position) for the seat to move (see the module's
    doc): ``worlds`` sampled deals (one where the seat can deduce every card, or with ``open_hands``), each move played
    in each world, the rest of the hand rolled out greedily or, in the end game, solved."""
    games = np.zeros(1, dtype=np.intp)
    moves = state_moves.legal_moves(rules, state, 0)
    left = int(state_moves.remaining_plies(rules, state, games)[0])
    known = open_hands or bool(state_moves.is_open(rules, state, games)[0])
    solved = left <= endgame
    if open_hands:
        world_states = state.take(games)
        world_states.seed[:] = 0  # hindsight sees this hand's cards, not the later hands'
    else:
        world_states, _ = sample_worlds(rules, state, games, 1 if known else worlds, rng)
    w, n = world_states.batch_size, len(moves)
    kids = world_states.take(np.repeat(np.arange(w), n))
    cards, caps = _move_arrays(rules, moves)
    ended, points = apply_moves(rules, kids, np.tile(cards, w), np.tile(caps, (w, 1)))
    live = np.flatnonzero(~ended)
    if live.size:
        rest = kids.take(live)
        if solved:
            _, best, vals = _best_of(rules, rest)
            points[live] = vals[best]
        else:
            points[live] = kernel_rollout(rules, rest)
    side = rules.seat_side[int(state.current[0])]
    margins = margin_vs_mean_of_others(points)[:, side].reshape(w, n)
    method = ("exact" if known else "solved") if solved else "rollouts"
    return MoveValues(moves, margins, world_states, method)


def _unsettled(mv: MoveValues, played: int) -> bool:
    """Whether the verdict could change with other deals (``SETTLE_Z`` standard errors of each move's gap to the
    best): the played move's gap near a mark's threshold, or another move that this review calls an inaccuracy (or
    worse) near enough to the best to be the best in another review."""
    w = mv.margins.shape[0]
    if w < 2:
        return False
    gaps = mv.margins[:, [int(np.argmax(mv.value))]] - mv.margins  # (W, L): every move's gap in each world
    gap, band = gaps.mean(axis=0), SETTLE_Z * gaps.std(axis=0, ddof=1) / math.sqrt(w)
    if any(abs(gap[played] - t) < band[played] for _, t in MARKS):
        return True
    return bool(np.any((gap >= INACCURACY) & (gap < band)))


def settled_values(
    rules: Rules, state: State, played: int, worlds: int, rng: np.random.Generator, open_hands: bool
) -> MoveValues:
    """``value_moves`` with ``worlds`` deals, then as many again, and twice that, ... while the verdict is unsettled
    (``_unsettled``), at most ``SETTLE_ROUNDS`` times: the clear decisions cost the default, the close ones more."""
    mv = value_moves(rules, state, worlds, rng, open_hands=open_hands)
    for _ in range(SETTLE_ROUNDS):
        if mv.method == "exact" or not _unsettled(mv, played):
            break
        more = value_moves(rules, state, mv.margins.shape[0], rng, open_hands=open_hands)
        mv = MoveValues(
            mv.moves,
            np.concatenate([mv.margins, more.margins]),
            State.concat([mv.worlds, more.worlds]),
            mv.method,
        )
    return mv


def play_out(rules: Rules, starts: Sequence[tuple[State, int, frozenset[int]]], solved: bool) -> list[Any]:
    """For each ``(worlds, card, capture)``: (W, S, F) the hand's points in each world (``point_fields``' categories)
    after the move, the rest played as ``value_moves`` values it: greedy (the rollouts' policy, float for float the
    kernel's) or solved. All of them are played together, one core step a ply."""
    st = State.concat([w for w, _, _ in starts])
    sizes = [w.batch_size for w, _, _ in starts]
    b = st.batch_size
    cards = np.repeat([c for _, c, _ in starts], sizes).astype(np.int64)
    caps = np.repeat(_move_arrays(rules, [(c, cap) for _, c, cap in starts])[1], sizes, axis=0)
    out = np.zeros((b, rules.num_sides, len(point_fields(rules))))
    running = np.ones(b, dtype=np.bool_)
    first = True
    while running.any():
        pick = np.flatnonzero(running & (st.phase == Phase.PLAY))
        if pick.size and not first:
            if solved:
                found, best, _ = _best_of(rules, st.take(pick))
            else:
                found, best = greedy_moves(rules, st, pick)
            cards[pick], caps[pick] = found.card[best], found.captures(best)
        first = False
        info = core.step(rules, st, state_moves.move_actions(st, cards, caps))
        over = info.hand_over & running
        out[over] = info.hand_points[over]
        running &= ~info.hand_over
        st.phase[~running] = Phase.DONE
        resolve_knocks(rules, st)
    return np.split(out, np.cumsum(sizes)[:-1])
