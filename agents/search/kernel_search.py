"""The agents' compiled search (numba, ``cache=True``) on the single-game kernel's public compiled functions
(``scopa_env.engine._kernel_jit``'s rules: ``step``, ``legal_bits``, ``complete_move``...; ``_kernel_calls``' plies
left and open book): the candidates of one game (``agents.baselines.features.generate_moves``), whole candidate moves,
the greedy rollouts, one max^n tree (``max_n``: pimc / az to a depth, the exact end game to the end of the hand) and
the worlds of a sampled search. ``agents.search.compiled`` is their face (``jit``: compiled once, with the kernel, then
loaded from the disk cache). Each reproduces the batched search (``agents.search.lookahead``) number for number:
``tests/test_kernel.py`` and ``tests/test_search.py`` check it.

numba keys this module's disk cache on its own file, and the functions here compile the kernel's functions (and the
layout's constants, and ``MoveKind``'s) into themselves: ``agents.search.compiled`` drops the cache when a source
compiled into it is newer (``SOURCES``).
"""

from __future__ import annotations

import numpy as np

from scopa_env.engine._kernel_calls import is_open, remaining_plies
from scopa_env.engine._kernel_jit import (
    clear_info,
    complete_move,
    knock_options,
    lowbit,
    njit,
    popcount,
    step,
)
from scopa_env.engine._kernel_layout import (
    CHOOSE,
    CURRENT,
    DECK,
    DONE,
    HANDS,
    I_HAND_OVER,
    I_POINTS,
    INFO_SIZE,
    KNOCK,
    NMAX,
    PENDING,
    PHASE,
    PICKED,
    PILES,
    PLAY,
    R_ACE_ALL,
    R_D,
    R_FF_L,
    R_FF_P,
    R_FF_S,
    R_FIFTEENS,
    R_FIT_L,
    R_FIT_P,
    R_FIT_S,
    R_GUARD,
    R_MASKW,
    R_N,
    R_NFIELDS,
    R_R,
    R_RANKMASK,
    R_S,
    R_SIDE,
    REVEALED,
    SEED_HI,
    SEED_LO,
    SMAX,
    STATE_SIZE,
    STOCK,
    TABLE,
)
from scopa_env.rules.moves import MoveKind

K_LAY, K_EQUAL, K_SUM, K_ACE_ALL, K_FIFTEEN = (int(k) for k in MoveKind)
"""The kinds of a candidate (``scopa_env.rules.moves.MoveKind``, as the batched ``features.generate_moves`` lists
them), as plain ints for numba."""
MAX_MOVES = 256
"""Room for one position's candidates (rows of a ``moves`` buffer)."""

# ----------------------------------------------------------------------------------------------- candidates


@njit(cache=True)
def packed_counts(rc: np.ndarray, cards: int) -> int:
    """The rank counts of ``cards`` packed 4 bits a rank (rank k at bit 4k)."""
    out = 0
    for k in range(rc[R_R]):
        out |= popcount(cards & rc[R_RANKMASK + k]) << (4 * k)
    return out


@njit(cache=True)
def _fits_packed(have: int, need: int, guard: int) -> bool:
    """Every rank's count in ``have`` is at least its count in ``need`` (packed counts; one subtraction)."""
    return (((have | guard) - need) & guard) == guard


@njit(cache=True)
def _take_lowest(cards: int, need: int) -> tuple[int, int]:
    """The ``need`` lowest cards of ``cards`` (fewer if there are not enough) and how many are still needed."""
    out = 0
    while need > 0 and cards:
        low = cards & -cards
        out |= low
        cards ^= low
        need -= 1
    return out, need


@njit(cache=True)
def _best_suits(rc: np.ndarray, pc: np.ndarray, p: int, table: int, picked: int) -> int:
    """The cards partition ``p`` captures by ``agents.baselines.features``' taking order: within a rank the picked cards
    first, then suit order (coins first)."""
    r = rc[R_R]
    ranks = pc[p, r + 1]
    cap = 0
    while ranks:
        k = lowbit(ranks)
        ranks &= ranks - 1
        mask = table & rc[R_RANKMASK + k]
        got, need = _take_lowest(mask & picked, pc[p, k])
        cap |= got
        got, need = _take_lowest(mask & ~picked, need)
        cap |= got
    return cap


@njit(cache=True)
def _put_move(moves: np.ndarray, m: int, card: int, kind: int, part: int, cap: int, ntaken: int, scopa: bool) -> int:
    moves[m, 0] = card
    moves[m, 1] = kind
    moves[m, 2] = part
    moves[m, 3] = cap
    moves[m, 4] = scopa
    moves[m, 5] = ntaken
    return m + 1


@njit(cache=True)
def _part_moves(
    rc: np.ndarray,
    pc: np.ndarray,
    moves: np.ndarray,
    m: int,
    card: int,
    kind: int,
    key: int,
    have: int,
    have_picked: int,
    table: int,
    picked: int,
    no_scopa: bool,
    suits: bool,
) -> tuple[int, bool]:
    """The candidates of ``card`` for the partitions of the move tables' list ``key`` (sums by target and present
    ranks, or fifteens by card value and present ranks: ``kind``) that the table holds and that can include the
    picked cards. Returns (rows used, any found)."""
    r = rc[R_R]
    guard = rc[R_GUARD]
    ncards = popcount(table)
    found = False
    if kind == K_SUM:
        b, n = rc[R_FIT_P] + rc[rc[R_FIT_S] + key], rc[rc[R_FIT_L] + key]
    else:
        b, n = rc[R_FF_P] + rc[rc[R_FF_S] + key], rc[rc[R_FF_L] + key]
    for q in range(b, b + n):
        p = rc[q]
        need = pc[p, r + 2]
        if _fits_packed(have, need, guard) and _fits_packed(need, have_picked, guard):
            n_taken = pc[p, r]
            cap = _best_suits(rc, pc, p, table, picked) if suits else -1
            m = _put_move(moves, m, card, kind, p, cap, n_taken, n_taken == ncards and not no_scopa)
            found = True
    return m, found


@njit(cache=True)
def candidates(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, moves: np.ndarray, suits: bool = True) -> int:
    """``agents.baselines.features.generate_moves`` of one game (PLAY or CHOOSE phase): one candidate per move class of
    ``state_moves.move_classes``, ordered by card, then partition, each taking the best suits. Rows of ``moves``:
    (card, kind, partition or -1, captured cards, scopa, cards taken); returns how many. ``suits`` False leaves
    the captured cards of sums and fifteens at -1 (``capture_of`` fills in the one played: the rollouts)."""
    r = rc[R_R]
    cirulla = rc[R_FIFTEENS] != 0
    table = st[TABLE]
    if st[PHASE] == PLAY:
        playable = st[HANDS + st[CURRENT]]
        picked = 0
    else:
        playable = 1 << st[PENDING]
        picked = st[PICKED] & table
    ncards = popcount(table)
    no_scopa = remaining_plies(rc, st) == 1  # the hand's last play never scores a scopa
    have = packed_counts(rc, table)
    have_picked = packed_counts(rc, picked) if picked else 0
    npicked = popcount(picked)
    low = (1 << r) - 1
    present = (table | (table >> r) | (table >> (2 * r)) | (table >> (3 * r))) & low  # the ranks on the table
    m = 0
    while playable:
        card = lowbit(playable)
        playable &= playable - 1
        rank = card % r
        v = rank + 1
        same = table & rc[R_RANKMASK + rank]
        equal = same != 0
        ace_all = rc[R_ACE_ALL] != 0 and rank == 0 and not equal and ncards > 0
        if not cirulla:
            if equal:
                first = same & picked if same & picked else same
                cap = first & -first
                m = _put_move(moves, m, card, K_EQUAL, -1, cap, 1, ncards == 1 and not no_scopa)
            elif ace_all:
                m = _put_move(moves, m, card, K_ACE_ALL, -1, table, ncards, False)
            else:
                key = v * rc[R_MASKW] + (present & ((1 << max(v - 1, 0)) - 1))
                # np.int64(m): typing this loop, numba sees m as the literal 0 first and would compile a copy of
                # _part_moves for it (constant arguments: scopa_env.engine._kernel_jit's docstring). The search's
                # other constants (the kinds, suits, next_hand) stay literal on purpose: with them all plain, pimc
                # was a third slower in scopone.
                m, found = _part_moves(
                    rc, pc, moves, np.int64(m), card, K_SUM, key, have, have_picked, table, picked, no_scopa, suits
                )
                if not found:
                    m = _put_move(moves, m, card, K_LAY, -1, 0, 0, False)
            continue
        prank = (have_picked >> (4 * rank)) & 15
        equal_ok = equal and npicked == prank and prank <= 1
        start = m
        m += 1  # room for the single class, listed first
        has_multi = False
        if not equal and not ace_all:
            key = v * rc[R_MASKW] + (present & ((1 << max(v - 1, 0)) - 1))
            m, found = _part_moves(
                rc, pc, moves, np.int64(m), card, K_SUM, key, have, have_picked, table, picked, no_scopa, suits
            )
            has_multi = has_multi or found
        if not ace_all:
            key = v * 2 * rc[R_MASKW] + present
            m, found = _part_moves(
                rc, pc, moves, np.int64(m), card, K_FIFTEEN, key, have, have_picked, table, picked, no_scopa, suits
            )
            has_multi = has_multi or found
        if equal_ok:
            first = same & picked if same & picked else same
            _put_move(moves, start, card, K_EQUAL, -1, first & -first, 1, ncards == 1 and not no_scopa)
        elif ace_all:
            _put_move(moves, start, card, K_ACE_ALL, -1, table, ncards, False)
        elif not equal and not has_multi:
            _put_move(moves, start, card, K_LAY, -1, 0, 0, False)
        else:  # no single class: close the gap
            for i in range(start, m - 1):
                for j in range(6):
                    moves[i, j] = moves[i + 1, j]
            m -= 1
    return m


# ----------------------------------------------------------------------------------------------- the tree


@njit(cache=True)
def settle_knocks(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, info: np.ndarray) -> None:
    """Cirulla: every KNOCK-phase decision by the searches' fixed rule (``features.knock_actions``' ``always``:
    knock whenever allowed, three of a kind first)."""
    d = rc[R_D]
    while st[PHASE] == KNOCK:
        by_sum, tris = knock_options(rc, st[HANDS + st[CURRENT]])
        step(rc, pc, st, d + 2 if tris else (d + 1 if by_sum else d), info)


@njit(cache=True)
def do_move(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, move: np.ndarray, info: np.ndarray) -> bool:
    """Play a whole candidate move (a row of ``candidates``) in place, as ``lookahead.apply_moves`` does: a hand
    that ends is scored and left DONE (``info`` has its points), knocks after a new deal are settled. Returns
    whether the hand ended."""
    clear_info(info)
    seat = st[CURRENT]
    card = move[0]
    if st[PHASE] == PLAY:
        st[HANDS + seat] &= ~(1 << card)
        st[REVEALED + seat] &= ~(1 << card)
    kind = move[1]
    complete_move(rc, st, seat, card, move[3], kind != K_LAY, kind == K_ACE_ALL, info, False)
    if st[PHASE] == KNOCK:
        settle_knocks(rc, pc, st, info)
    return info[I_HAND_OVER] == 1


@njit(cache=True)
def _own_margin(vals: np.ndarray, side: int, s: int) -> float:
    """``scoring.margin_vs_mean_of_others`` of one side."""
    total = 0.0
    for i in range(s):
        total += vals[i]
    return vals[side] - (total - vals[side]) / (s - 1)


@njit(cache=True)
def max_n(
    rc: np.ndarray,
    pc: np.ndarray,
    st: np.ndarray,
    depth: int,
    moves: np.ndarray,
    values: np.ndarray,
    best: np.ndarray,
    level: int,
    ws_moves: np.ndarray,
    ws_child: np.ndarray,
    ws_vals: np.ndarray,
    info: np.ndarray,
    greedy: tuple,
) -> int:
    """The max^n tree of a perfect-information position (PLAY or CHOOSE phase): its candidates into ``moves`` and
    the value (hand points of each side) of each, the best for the side to move (its own margin, the first of
    equals) into ``best[:S]``, and at the root (the workspace's top level) every candidate's into ``values[j, :S]``.
    Returns how many.

    A candidate that ends the hand is worth its points; below the others the tree goes on ``depth`` plies in all
    (more than the cards in the hands: to the end of the hand, the exact end game), valued at the horizon by greedy
    rollouts (``greedy``: ``greedy_pick``'s tables; unused by the exact end game). The children's candidates,
    states and values go to row ``level`` of the workspace (``_workspace``), their children's to the row below.

    numba's disk cache of a recursive function breaks (a crash when loaded) if a caller passes it a constant: every
    argument here is a value read at run time."""
    s, f = rc[R_S], rc[R_NFIELDS]
    keep = level == ws_moves.shape[0] - 1  # the root
    m = candidates(rc, pc, st, moves)
    mover = rc[R_SIDE + st[CURRENT]]
    child = ws_child[level]
    vals = ws_vals[level]
    below = ws_moves[level]  # a child's candidates, or a rollout's
    top = -1e300
    for j in range(m):
        child[:] = st
        if do_move(rc, pc, child, moves[j], info):
            for i in range(s):
                vals[i] = info[I_POINTS + i * f + f - 1]
        elif depth > 1:
            max_n(
                rc, pc, child, depth - 1, below, values, vals, level - 1, ws_moves, ws_child, ws_vals, info,
                greedy,
            )  # fmt: skip
        else:
            rollout(rc, pc, child, vals, below, info, greedy)
        if keep:
            for i in range(s):
                values[j, i] = vals[i]
        own = _own_margin(vals, mover, s)
        if own > top:
            top = own
            for i in range(s):
                best[i] = vals[i]
    return m


@njit(cache=True)
def _workspace(rc: np.ndarray, states: np.ndarray, depths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``max_n``'s workspace for the trees of ``states`` searched ``depths`` deep: one row a level, as many levels as
    the deepest tree nests (its depth, bounded by the plies left in the hand and the deck's size), so that the
    level a node works on, counted down from the root's (the last row), never goes below 0."""
    levels = 1
    for i in range(states.shape[0]):
        levels = max(levels, min(depths[i], remaining_plies(rc, states[i]), rc[R_D]) + 1)
    return (
        np.empty((levels, MAX_MOVES, 6), dtype=np.int64),
        np.empty((levels, STATE_SIZE), dtype=np.int64),
        np.empty((levels, SMAX), dtype=np.float64),
    )


@njit(cache=True)
def _solve_root(
    rc: np.ndarray, pc: np.ndarray, st: np.ndarray, moves: np.ndarray, values: np.ndarray, ws: tuple, info: np.ndarray
) -> int:
    none = np.empty(0, dtype=np.float64)  # no rollouts
    best = np.empty(SMAX, dtype=np.float64)
    ws_moves, ws_child, ws_vals = ws
    level = ws_moves.shape[0] - 1
    return max_n(
        rc, pc, st, rc[R_D] + 1, moves, values, best, level, ws_moves, ws_child, ws_vals, info,
        (none, none, none, np.empty((0, 1), np.int64), none),
    )  # fmt: skip


@njit(cache=True)
def solve_root(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, moves: np.ndarray, values: np.ndarray) -> int:
    """The exact end game of a position: its candidates (into ``moves``) and the max^n value of each to the end of
    the hand (``values`` (m, S) hand points); returns how many."""
    depth = np.empty(1, dtype=np.int64)
    depth[0] = rc[R_D] + 1
    ws = _workspace(rc, st.reshape(1, -1), depth)
    return _solve_root(rc, pc, st, moves, values, ws, np.empty(INFO_SIZE, dtype=np.int64))


# ----------------------------------------------------------------------------------------------- rollouts


@njit(cache=True)
def _np_sum(vals: np.ndarray, n: int) -> float:
    """``numpy.sum`` of ``vals[:n]`` bit for bit (its pairwise summation: 8 accumulators from 8 values on)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += vals[i]
        return res
    r = np.empty(8, dtype=np.float64)
    for j in range(8):
        r[j] = vals[j]
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += vals[i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += vals[i]
        i += 1
    return res


@njit(cache=True)
def greedy_pick(
    rc: np.ndarray,
    st: np.ndarray,
    moves: np.ndarray,
    m: int,
    greedy: tuple,
    keys: np.ndarray,
    parts: np.ndarray,
) -> int:
    """``greedy.greedy_moves``' choice among the candidates ``moves[:m]`` of a position in the PLAY phase: the first
    best of ``features.greedy_scores`` (cards won plus the scopa; a lay costs the card laid), float for float.

    ``greedy``: the policy's tables (``compiled.greedy_tables``), (w, lk, lkt, pflat, knobs): ``w`` the static card
    weights; ``lk`` / ``lkt``: ``table_eval.static_lookup``'s tables, flattened; ``pflat``:
    ``table_eval.FeatureTables.p_flat`` (-1 for its dummy column); ``knobs``: (lay, scopa) weights; ``keys`` and
    ``parts``: scratch arrays of 16."""
    w, lk, lkt, pflat, knobs = greedy
    r = rc[R_R]
    table = st[TABLE]
    have = packed_counts(rc, table)
    for k in range(r):
        keys[k] = 2 * ((have >> (4 * k)) & 15) + ((table >> k) & 1)
    best = -1e300
    pick = 0
    for j in range(m):
        card = moves[j, 0]
        kind = moves[j, 1]
        wc = w[card]
        if kind == K_LAY:
            score = -knobs[0] * wc
        else:
            if kind == K_EQUAL:
                rank = card % r
                tw = lk[(rank * 10 + keys[rank]) * 5 + 1]
            elif kind == K_ACE_ALL:
                for k in range(r):
                    parts[k] = lkt[k * 10 + keys[k]]
                tw = _np_sum(parts, r)
            else:
                p = moves[j, 2]
                width = pflat.shape[1]
                for i in range(width):
                    e = pflat[p, i]
                    if e < 0:
                        parts[i] = 0.0
                    else:
                        k, n = e // 5, e % 5
                        parts[i] = lk[(k * 10 + keys[k]) * 5 + n]
                tw = _np_sum(parts, width)
            score = (tw + wc) + knobs[1] * (1.0 if moves[j, 4] else 0.0)
        if score > best:
            best = score
            pick = j
    return pick


@njit(cache=True)
def rollout(
    rc: np.ndarray,
    pc: np.ndarray,
    st: np.ndarray,
    out: np.ndarray,
    moves: np.ndarray,
    info: np.ndarray,
    greedy: tuple,
) -> None:
    """``lookahead.rollout`` with the greedy policy: play ``st`` (in place) to the end of its hand; the hand points
    of each side into ``out[:S]``."""
    s, f = rc[R_S], rc[R_NFIELDS]
    if st[PHASE] == KNOCK:
        settle_knocks(rc, pc, st, info)
    keys = np.empty(16, dtype=np.int64)
    parts = np.empty(16, dtype=np.float64)
    while True:
        m = candidates(rc, pc, st, moves, False)  # greedy's scores need no suits: only the move played does
        j = greedy_pick(rc, st, moves, m, greedy, keys, parts)
        if moves[j, 3] < 0:
            moves[j, 3] = _best_suits(rc, pc, moves[j, 2], st[TABLE], 0)
        if do_move(rc, pc, st, moves[j], info):
            for i in range(s):
                out[i] = info[I_POINTS + i * f + f - 1]
            return


@njit(cache=True)
def search_worlds(
    rc: np.ndarray,
    pc: np.ndarray,
    states: np.ndarray,
    limits: np.ndarray,
    moves: np.ndarray,
    values: np.ndarray,
    counts: np.ndarray,
    greedy: tuple,
) -> None:
    """``lookahead.search_tree`` of many perfect-information worlds with greedy rollouts: for world i its root
    candidates (``moves[i, :counts[i]]``) and the value of each (``values[i, j, :S]`` hand points), searched
    ``limits[i]`` plies deep (``max_n``)."""
    best = np.empty(SMAX, dtype=np.float64)
    info = np.empty(INFO_SIZE, dtype=np.int64)
    ws_moves, ws_child, ws_vals = _workspace(rc, states, limits)
    level = ws_moves.shape[0] - 1
    for wi in range(states.shape[0]):
        counts[wi] = max_n(
            rc, pc, states[wi], limits[wi], moves[wi], values[wi], best, level, ws_moves, ws_child, ws_vals, info,
            greedy,
        )  # fmt: skip


@njit(cache=True)
def move_action(rc: np.ndarray, st: np.ndarray, card: int, capture: int) -> int:
    """``state_moves.move_actions`` of one game: the next action carrying out the move (card, capture): the card in the
    PLAY phase; in the CHOOSE phase the lowest card of the capture not picked yet, or ``stop`` once all are."""
    if st[PHASE] != CHOOSE:
        return card
    todo = capture & ~st[PICKED]
    return lowbit(todo) if todo else rc[R_D]


@njit(cache=True)
def solve_open_batch(
    rc: np.ndarray, pc: np.ndarray, states: np.ndarray, actions: np.ndarray, margins: np.ndarray, counts: np.ndarray
) -> int:
    """The exact end game of many open-book positions: for row i, the first action of each root candidate
    (``actions[i, :counts[i]]``) and its max^n margin for the side to move (``margins[i, j]``, the mean-of-others
    margin). Returns the first row that is not an open book (nothing solved from it on), else -1."""
    s = rc[R_S]
    moves = np.empty((MAX_MOVES, 6), dtype=np.int64)
    values = np.empty((MAX_MOVES, SMAX), dtype=np.float64)
    info = np.empty(INFO_SIZE, dtype=np.int64)
    depths = np.full(states.shape[0], rc[R_D] + 1, dtype=np.int64)
    ws = _workspace(rc, states, depths)
    for i in range(states.shape[0]):
        st = states[i]
        if not is_open(rc, st):
            return i
        m = _solve_root(rc, pc, st, moves, values, ws, info)
        counts[i] = m
        own = rc[R_SIDE + st[CURRENT]]
        for j in range(m):
            actions[i, j] = move_action(rc, st, moves[j, 0], moves[j, 3])
            margins[i, j] = _own_margin(values[j], own, s)
    return -1


# ----------------------------------------------------------------------------------------------- worlds


@njit(cache=True)
def deal_worlds(rc: np.ndarray, st: np.ndarray, keys: np.ndarray, out: np.ndarray) -> bool:
    """``lookahead.sample_worlds`` of one game from its random ``keys`` (nw, D) (``rng.random``'s draw): world i
    (``out[i]``) deals the cards the acting seat has not seen, in the order of their keys, into the other seats'
    hands (in play order after it, their sizes kept; cirulla's revealed cards stay) and then the stock; the deck
    keeps the known cards (ascending) before the stock. Returns False if the unseen cards do not match the hand
    sizes plus the stock (an inconsistent state)."""
    n, d = rc[R_N], rc[R_D]
    seat = st[CURRENT]
    seen = st[HANDS + seat] | st[TABLE] | st[PICKED]
    if st[PENDING] >= 0:
        seen |= 1 << st[PENDING]
    for i in range(rc[R_S]):
        seen |= st[PILES + i]
    for i in range(n):
        seen |= st[REVEALED + i]
    unseen = ((1 << d) - 1) & ~seen
    num_unseen = popcount(unseen)
    ends = np.empty(NMAX, dtype=np.int64)
    total = 0
    for i in range(n - 1):
        other = (seat + 1 + i) % n
        total += popcount(st[HANDS + other]) - popcount(st[REVEALED + other])
        ends[i] = total
    in_hands = total
    stock_pos = st[STOCK]
    if num_unseen - in_hands != d - stock_pos:
        return False
    k = np.empty(d, dtype=np.float64)
    for w in range(keys.shape[0]):
        row = out[w]
        row[:] = st
        for c in range(d):
            k[c] = keys[w, c] if (unseen >> c) & 1 else 2.0
        perm = np.argsort(k, kind="mergesort")
        for i in range(n - 1):
            other = (seat + 1 + i) % n
            row[HANDS + other] = st[REVEALED + other]
        container = 0
        for j in range(in_hands):
            while j >= ends[container]:
                container += 1
            row[HANDS + (seat + 1 + container) % n] |= 1 << perm[j]
        stock = 0
        for j in range(in_hands, num_unseen):
            stock |= 1 << perm[j]
        at = 0
        for c in range(d):  # the known cards, ascending, where the dealt cards were
            if not (stock >> c) & 1 and at < stock_pos:
                row[DECK + at] = c
                at += 1
        for j in range(stock_pos, d):
            row[DECK + j] = perm[min(max(in_hands + j - stock_pos, 0), d - 1)]
        row[SEED_LO] = 0
        row[SEED_HI] = 0
    return True


@njit(cache=True)
def rollout_many(
    rc: np.ndarray,
    pc: np.ndarray,
    states: np.ndarray,
    points: np.ndarray,
    greedy: tuple,
) -> None:
    """``lookahead.rollout`` with the greedy policy of many games (rows of ``states``, played in place): each
    one's hand points into ``points[i, :S]`` (0 for a game already over)."""
    moves = np.empty((MAX_MOVES, 6), dtype=np.int64)
    info = np.empty(INFO_SIZE, dtype=np.int64)
    vals = np.empty(SMAX, dtype=np.float64)
    for i in range(states.shape[0]):
        for j in range(rc[R_S]):
            points[i, j] = 0.0
        if states[i, PHASE] == DONE:
            continue
        rollout(rc, pc, states[i], vals, moves, info, greedy)
        for j in range(rc[R_S]):
            points[i, j] = vals[j]
