"""Exact play of open-book end games: once the stock is empty and every unseen card can only be in one hand, the
hand's last plies are solved by minimax to the end of the hand (last capture and leftovers included), on the
compiled search (``agents.search.compiled``, on the single-game kernel: the same candidates as
``features.generate_moves``, the same max^n and tie-breaks as ``lookahead.search_tree``, at a fraction of the cost).

``solve_open`` plays one best move, ``optimal_open_actions`` gives every best first action (ties included),
``play_open_endgames`` / ``play_exact_endgame`` override a policy's actions in such positions (``expert``, the
neural and bot agents with ``endgame=N``), and ``ExactEndgameMask`` narrows a learner's mask to them (the envs'
``mask_filter``, ``train.py``'s ``exact_endgame``).

Cirulla: a KNOCK-phase decision is never an end-game row (it is no card move; the last deal's knocks come before
its first card), and the best first actions may include ``stop`` (a capture strictly inside another).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agents.baselines.features import Moves, require_state
from agents.search.compiled import KernelMoves, jit
from scopa_env.engine import state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.engine.kernel import kernel_for, pack_states
from scopa_env.engine.state_moves import is_open, remaining_plies
from scopa_env.errors import whole_number
from scopa_env.games.policy import ActBatch
from scopa_env.rules import Rules

__all__ = [
    "ExactEndgameMask",
    "open_endgame_rows",
    "optimal_open_actions",
    "play_exact_endgame",
    "play_open_endgames",
    "solve_open",
]


def open_endgame_rows(rules: Rules, state: State, games: npt.NDArray[np.intp], max_plies: int) -> npt.NDArray[np.intp]:
    """Rows whose position is an open book (``is_open``) with at most ``max_plies`` moves left (finished games and
    cirulla's KNOCK-phase decisions excluded)."""
    left = remaining_plies(rules, state, games)
    phase = state.phase[games]
    playing = (phase == Phase.PLAY) | (phase == Phase.CHOOSE)
    return np.flatnonzero(is_open(rules, state, games) & (left <= max_plies) & playing)


def play_open_endgames(
    rules: Rules, state: State, games: npt.NDArray[np.intp], actions: npt.NDArray[np.int64], max_plies: int
) -> npt.NDArray[np.int64]:
    """``actions`` with the rows whose position is an open book with at most ``max_plies`` left replaced by exact
    play (``solve_open``); a copy when any row changes, else ``actions`` itself."""
    rows = open_endgame_rows(rules, state, games, max_plies)
    if rows.size:
        actions = np.array(actions, dtype=np.int64)
        actions[rows] = solve_open(rules, state, games[rows])
    return actions


def play_exact_endgame(
    batch: ActBatch, actions: npt.NDArray[np.int64], plies: int, agent: str
) -> npt.NDArray[np.int64]:
    """A policy's ``actions`` for ``batch`` with its open-book end games of at most ``plies`` moves left played
    exactly (``play_open_endgames``; ``plies`` 0: unchanged). ``agent`` names the caller in the error raised when the
    batch carries no game state."""
    if plies <= 0 or len(batch) == 0:
        return actions
    state, games = require_state(batch, agent)
    return play_open_endgames(batch.rules, state, games, actions, plies)


def best_actions(
    state: State,
    games: npt.NDArray[np.intp],
    searched: tuple[Moves | KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]],
) -> npt.NDArray[np.int64]:
    """The action that starts each row's move of best mean margin, from ``move_margins``' result."""
    moves, total, first_move = searched
    pick = first_move + np.argmax(total, axis=1)
    return state_moves.move_actions(state.take(games), moves.card[pick], moves.captures(pick))


def _solve_open_kernel(
    rules: Rules, state: State, games: npt.NDArray[np.intp], caller: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Exact max^n on the compiled search (``agents.search.compiled``) for open-book positions, to the end of the hand.

    The only possible world of an open book is the position itself (its hidden cards can only be where they are),
    so it is searched as it stands, with ``features.generate_moves``' candidates. Returns the first action of each
    row's candidates and their margins for the side to move (n, width; -inf past a row's candidates).
    """
    k = kernel_for(rules)
    m = jit()
    packed = pack_states(rules, state, games)
    width = m.MAX_MOVES
    actions = np.zeros((games.size, width), dtype=np.int64)
    margins = np.full((games.size, width), -np.inf)
    counts = np.zeros(games.size, dtype=np.int64)
    if m.solve_open_batch(k.rc, k.pc, packed, actions, margins, counts) >= 0:
        raise ValueError(f"{caller}: some positions still hide cards; use open_endgame_rows to select open ones")
    top = int(counts.max())
    return actions[:, :top], margins[:, :top]


def solve_open(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """Exact play for open-book positions (``is_open``): minimax on the only possible world to the end of the hand."""
    games = np.asarray(games, dtype=np.intp)
    if games.size == 0:
        return np.zeros(0, dtype=np.int64)
    actions, margins = _solve_open_kernel(rules, state, games, "solve_open")
    return actions[np.arange(games.size), np.argmax(margins, axis=1)]


def optimal_open_actions(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n, A) bool (A = ``rules.num_actions``): for open-book positions, every action that starts a move of the
    best exact value (ties included; ``solve_open`` plays one of them)."""
    games = np.asarray(games, dtype=np.intp)
    if games.size == 0:
        return np.zeros((0, rules.num_actions), dtype=np.bool_)
    actions, margins = _solve_open_kernel(rules, state, games, "optimal_open_actions")
    rows, js = np.nonzero(margins >= margins.max(axis=1, keepdims=True) - 1e-9)
    out = np.zeros((games.size, rules.num_actions), dtype=np.bool_)
    out[rows, actions[rows, js]] = True
    return out


class ExactEndgameMask:
    """The learner's mask narrowed to the exact solver's best moves in open end games of at most ``plies`` plies
    left: a ``mask_filter`` for ``scopa_env.envs.gym`` envs (``train.py``'s ``exact_endgame``)."""

    def __init__(self, plies: int) -> None:
        if not whole_number(plies, 1):
            raise ValueError(
                f"exact_endgame must be a number of plies >= 1 (8 covers a two-player hand's last round), got {plies!r}"
            )
        self.plies = int(plies)

    def __call__(
        self, rules: Rules, state: State, games: npt.NDArray[np.intp], mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        rows = open_endgame_rows(rules, state, games, self.plies)
        if rows.size:
            mask = mask.copy()
            mask[rows] = optimal_open_actions(rules, state, games[rows])
        return mask

    def __repr__(self) -> str:
        return f"ExactEndgameMask({self.plies})"
