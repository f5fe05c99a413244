"""The moves of a state and how its hand ends, on the batched core's ``State``: the legal move classes of many games
(``move_classes``, built on the one batched enumerator of ``scopa_env.rules.moves``, which the agents' candidate moves
also build on), expanded into every ``(card, captured set)`` pair (``legal_moves`` for one game, ``legal_move_lists``
for many, ``enumerate_captures`` for a card on a table), the next action of a chosen move (``move_actions``), and the
hand's end (``remaining_plies``, ``is_last_play``, ``is_open``: an open book, where the acting seat can deduce every
hidden card). Its entry points take ``Rules`` or a name and check the state as the core's do.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scopa_env.engine.core import Phase, State, Tables, checked_tables, tables_for
from scopa_env.errors import whole_number
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.arrays import rank_counts, rows_any
from scopa_env.rules.moves import MoveClasses, enumerate_moves, expand_captures

__all__ = [
    "NO_END",
    "enumerate_captures",
    "is_last_play",
    "is_open",
    "legal_move_lists",
    "legal_moves",
    "move_actions",
    "move_classes",
    "remaining_plies",
]

_PLAY, _CHOOSE, _DONE, _KNOCK = (int(p) for p in Phase)  # plain ints compare faster


NO_END = 10**6
"""``remaining_plies`` of a hand whose stock is not empty yet (more cards will be dealt)."""


def _game_rows(state: State, games: npt.ArrayLike | None) -> npt.NDArray[np.intp]:
    """``games`` as an intp index array into the state's games (every game when None), else a ``ValueError``."""
    if games is None:
        return np.arange(state.batch_size)
    rows = np.asarray(games)
    if rows.dtype != np.intp or rows.ndim != 1:
        if rows.dtype.kind not in "iu":
            raise TypeError(f"games must be integer indices into the state's games, got dtype {rows.dtype}")
        rows = rows.astype(np.intp).reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= state.batch_size):
        raise ValueError(f"games must be indices 0..{state.batch_size - 1} into the state's games, got {games!r}")
    return rows


def remaining_plies(rules: Rules, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.intp]:
    """(n,) moves left in the hand of each game in ``games`` (default: all), counting a capture being chosen as one
    move; ``NO_END`` while the stock is not empty (more cards will be dealt)."""
    checked_tables(rules, state)
    return _remaining_plies(rules, state, _game_rows(state, games))


def _remaining_plies(rules: Rules, state: State, g: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """``remaining_plies`` without the argument checks."""
    hands = state.hands[g].reshape(g.size, -1)
    in_hands = (hands.astype(np.float32) @ np.ones(hands.shape[1], dtype=np.float32)).astype(np.intp)  # exact
    in_hands += state.phase[g] == _CHOOSE
    return np.where(state.stock_pos[g] >= rules.num_cards, in_hands, NO_END).astype(np.intp)


def is_last_play(rules: Rules, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_]:
    """(n,) the move to make is the hand's last play (stock empty, one card left in all the hands): it never
    scores a scopa, and the cards left on the table go to the last side that captured."""
    return remaining_plies(rules, state, games) == 1


def is_open(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_]:
    """(n,) an open book: the stock is empty and at most one seat other than the acting one holds cards, so the
    acting seat can deduce every hidden card (where each unseen card is)."""
    rules = get_rules(rules)
    checked_tables(rules, state)
    g = _game_rows(state, games)
    seat = state.current[g].astype(np.intp)
    sizes = state.hands[g].sum(axis=2)  # (n, N)
    sizes[np.arange(g.size), seat] = 0
    return (state.stock_pos[g] >= rules.num_cards) & ((sizes > 0).sum(axis=1) <= 1)


def move_classes(rules: Rules | str, state: State, games: npt.ArrayLike | None = None) -> MoveClasses:
    """Every legal move class of each game in ``games`` (default: all), by ``scopa_env.rules.moves.enumerate_moves``.

    In the PLAY phase the acting seat's hand may be played; in the CHOOSE phase only the pending card, with the
    classes that can still include the cards picked so far. Finished games (DONE) have no classes. Expand the
    classes into captured-card sets with ``scopa_env.rules.moves.expand_captures(rules, classes, state.table[games],
    state.picked[games])``.
    """
    rules = get_rules(rules)
    tb = checked_tables(rules, state)
    g = _game_rows(state, games)
    return _move_classes(rules, tb, state, g, _remaining_plies(rules, state, g) == 1)


def _move_classes(
    rules: Rules, tb: Tables, state: State, g: npt.NDArray[np.intp], last_play: npt.NDArray[np.bool_] | None
) -> MoveClasses:
    """``move_classes`` without the argument checks."""
    phase = state.phase[g]
    table = state.table[g]
    playable = state.hands[g, state.current[g]]
    counts = rank_counts(table, tb.r)
    picked_counts = None
    if (phase != _PLAY).any():
        choose = np.flatnonzero(phase == _CHOOSE)
        if choose.size:
            playable[choose] = False
            playable[choose, state.pending[g[choose]]] = True
            picked_counts = rank_counts(state.picked[g] & table, tb.r)  # nothing is picked outside CHOOSE
        playable[(phase == _DONE) | (phase == _KNOCK)] = False
    return enumerate_moves(rules, playable, counts, picked_counts, last_play)


def _listed(
    rules: Rules, classes: MoveClasses, table: npt.NDArray[np.bool_], picked: npt.NDArray[np.bool_] | None
) -> list[list[tuple[int, frozenset[int]]]]:
    """The classes of each position expanded to ``(card, captured cards)`` lists, each sorted by card, then by the
    sorted captured cards."""
    index, captured = expand_captures(rules, classes, table, picked)
    n = classes.starts.size - 1
    rows = classes.row[index]
    per_row = np.bincount(rows, minlength=n).tolist()
    cards = classes.card[index].tolist()
    sizes = captured.sum(axis=1).tolist()
    ids = np.nonzero(captured)[1].tolist()
    out: list[list[tuple[int, frozenset[int]]]] = []
    at = k = 0
    for count in per_row:
        moves: list[tuple[tuple[int, list[int]], tuple[int, frozenset[int]]]] = []
        for i in range(k, k + count):
            taken = ids[at : at + sizes[i]]
            at += sizes[i]
            moves.append(((cards[i], taken), (cards[i], frozenset(taken))))
        k += count
        moves.sort(key=lambda m: m[0])
        out.append([m for _, m in moves])
    return out


def legal_move_lists(
    rules: Rules | str, state: State, games: npt.ArrayLike | None = None
) -> list[list[tuple[int, frozenset[int]]]]:
    """``legal_moves`` of every game in ``games`` (default: all), enumerated together (much faster than one
    ``legal_moves`` call per game)."""
    rules = get_rules(rules)
    tb = checked_tables(rules, state)
    g = _game_rows(state, games)
    phase = state.phase[g]
    choosing = phase == _CHOOSE
    picked = state.picked[g] if choosing.any() else None
    lists = _listed(rules, _move_classes(rules, tb, state, g, None), state.table[g], picked)
    for i in np.flatnonzero(choosing).tolist():  # the pending card's captures only (never a lay)
        lists[i] = [m for m in lists[i] if m[1]]
    return lists


def enumerate_captures(rules: Rules, table: list[int], card: int) -> list[frozenset[int]]:
    """Every legal capture of playing ``card`` on ``table`` (list of card ids); ``[]`` means a lay."""
    tb = tables_for(rules)
    on_table = np.zeros((1, tb.d), dtype=np.bool_)
    on_table[0, table] = True
    playable = np.zeros((1, tb.d), dtype=np.bool_)
    playable[0, card] = True
    classes = enumerate_moves(rules, playable, rank_counts(on_table, tb.r))
    return [cap for _, cap in _listed(rules, classes, on_table, None)[0] if cap]


def legal_moves(rules: Rules | str, state: State, game: int) -> list[tuple[int, frozenset[int]]]:
    """The legal moves of one game as ``(card, captured cards)``, sorted by card, then by the sorted captured
    cards; a lay has an empty set.

    In the CHOOSE phase only the pending card's captures consistent with the cards picked so far are listed.
    Built on ``move_classes`` (every suit choice of each class, ``scopa_env.rules.moves.expand_captures``); for many
    games at once, ``legal_move_lists``.
    """
    rules = get_rules(rules)
    checked_tables(rules, state)
    if not whole_number(game, 0, state.batch_size - 1):
        raise ValueError(f"game must be an index 0..{state.batch_size - 1} into the state's games, got {game!r}")
    return legal_move_lists(rules, state, [game])[0]


def move_actions(state: State, cards: npt.ArrayLike, captures: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """(B,) the next action that carries out the chosen move ``(cards[i], captures[i])`` in each game.

    In the PLAY phase that is the card; in the CHOOSE phase it is the lowest-id card of the chosen capture not
    picked yet, or cirulla's ``stop`` once every card of it is picked (a capture strictly inside another). Call it
    again at every decision until the move completes (``info.move_done``). Cirulla's KNOCK phase has no moves:
    there the action is ``stop`` (no knock).
    """
    cards = np.asarray(cards, dtype=np.int64)
    todo = captures & ~state.picked
    first = np.argmax(todo, axis=1)
    out = np.where(state.phase == Phase.CHOOSE, first, cards)
    stop = state.table.shape[1]  # cirulla's stop action id (num_cards)
    if (state.phase == _KNOCK).any():
        out[state.phase == _KNOCK] = stop
    choosing = np.flatnonzero(state.phase == _CHOOSE)
    if choosing.size:
        out[choosing[~rows_any(todo[choosing])]] = stop
    return out
