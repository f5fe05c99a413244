"""Search agents that never read hidden cards: sampled-deal ``pimc`` and information-set MCTS ``ismcts``.

Both sample *worlds* (determinizations): the cards the acting seat has not seen (RULES.md section 7: other hands
and the stock) are dealt at random, from the agent's own seeded generator, into the other hands (whose sizes are
public) and the stock. Only the unseen *set* is read, so the decisions are the same whatever the hidden cards
really are (``tests/test_search.py`` reshuffles them and checks).

- ``pimc`` (perfect-information Monte Carlo, "sampled deal"): for each world, every candidate move is searched
  ``depth`` plies deep, full width, with max^n / minimax on the hand-points margin of each side; positions at the
  horizon are valued by a fast rollout policy (``greedy`` by default) played to the end of the hand. The move with
  the best average margin over the worlds plus ``prior`` times the expert heuristic's score of the move is played
  (the heuristic steadies the choice between moves whose sampled values differ by less than their noise). Once the
  stock is empty and at most ``endgame`` plies remain, each world is solved exactly to the end of the hand (last
  capture and leftovers included) and the prior is dropped; when the unseen cards can only lie in one hand (two
  players, empty stock) a single world is searched. ``depth`` > 1 lets the opponents choose with sight of the
  sampled world (strategy fusion), which measured weaker than ``depth=1``.
- ``ismcts``: single-observer information-set MCTS (Cowling, Powley and Whitehouse 2012): one tree of move
  sequences per decision, a new world for every iteration, UCB selection with availability counts, one node added
  per iteration, rollouts to the end of the hand. Iterations run ``parallel`` at a time per decision (virtual
  visits keep them apart) so the rules core and the rollouts are batched.

All worlds of all decisions of a batch advance together through the batched core (``scopa_env.core``): a tree level
or a rollout ply is a single ``core.step`` on a big batch. The value of a finished hand for a side is its hand
points minus the mean of the other sides' (for two sides: the points margin).

Specs: ``pimc`` (``worlds=64,depth=1,endgame=6,prior=1.0,rollout=greedy``), ``ismcts``
(``iters=400,c=2.0,parallel=50,rollout=greedy,final=visits``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt

from agents.base import ActBatch, Policy, register_agent
from agents.expert import expert_moves
from agents.features import (
    Moves,
    dynamic_weights,
    expert_scores,
    generate_moves,
    require_state,
    segment_argmax,
    unseen_cards,
)
from agents.greedy import greedy_moves
from scopa_env import core
from scopa_env.core import Phase, State
from scopa_env.rules import Rules

__all__ = [
    "ROLLOUT_POLICIES",
    "ISMCTSAgent",
    "PIMCAgent",
    "apply_moves",
    "is_open",
    "open_endgame_rows",
    "optimal_open_actions",
    "play_exact_endgame",
    "play_open_endgames",
    "rollout",
    "sample_worlds",
    "search_tree",
    "solve_open",
]

RolloutPolicy = Callable[[Rules, State, npt.NDArray[np.intp]], tuple[Moves, npt.NDArray[np.intp]]]
ROLLOUT_POLICIES: dict[str, RolloutPolicy] = {"greedy": greedy_moves, "expert": expert_moves}
"""Rollout policies by name: functions ``(rules, state, games) -> (moves, index of the chosen move)``."""


# --------------------------------------------------------------------------------------------------- worlds


def is_open(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n,) the acting seat can deduce every hidden card: the stock is empty and one other seat holds cards."""
    seat = state.current[games].astype(np.intp)
    sizes = state.hands[games].sum(axis=2)  # (n, N)
    sizes[np.arange(games.size), seat] = 0
    return (state.stock_pos[games] >= rules.num_cards) & ((sizes > 0).sum(axis=1) <= 1)


def sample_worlds(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.ArrayLike,
    rng: np.random.Generator,
) -> tuple[State, npt.NDArray[np.intp]]:
    """Deal the unseen cards of each game's acting seat at random, ``counts[i]`` times for game ``games[i]``.

    Returns the worlds (a new batched State, worlds of game i contiguous) and each world's row in ``games``. The
    other seats keep their hand sizes; the stock keeps its size. Nothing hidden is read: the worlds depend only on
    the acting seat's knowledge and on ``rng``.
    """
    games = np.asarray(games, dtype=np.intp)
    counts = np.broadcast_to(np.asarray(counts, dtype=np.intp), games.shape)
    wrow = np.repeat(np.arange(games.size), counts)
    src = games[wrow]
    worlds = state.take(src)
    nw, d, n_players = wrow.size, rules.num_cards, rules.num_players
    if nw == 0:
        return worlds, wrow
    seat = worlds.current.astype(np.intp)
    unseen = unseen_cards(state, games, state.current[games].astype(np.intp))[wrow]
    num_unseen = unseen.sum(axis=1)
    # Containers in play order after the acting seat: the other seats' hands, then the stock.
    others = (seat[:, None] + 1 + np.arange(n_players - 1)) % n_players  # (nw, N-1)
    sizes = worlds.hands[np.arange(nw)[:, None], others].sum(axis=2)  # (nw, N-1)
    ends = np.cumsum(sizes, axis=1)
    in_hands = ends[:, -1]
    j = np.arange(d)
    keys = rng.random((nw, d))
    keys[~unseen] = 2.0
    perm = np.argsort(keys, axis=1, kind="stable")  # unseen cards first, in random order
    stock_pos = worlds.stock_pos.astype(np.intp)
    if not np.array_equal(num_unseen - in_hands, d - stock_pos):
        raise RuntimeError("sample_worlds: unseen cards do not match hand sizes plus stock; the state is inconsistent")
    worlds.hands[np.arange(nw)[:, None], others] = False
    container = (j[None, None, :] >= ends[:, :, None]).sum(axis=1)  # (nw, D) index into others, N-1 = stock
    w_i, j_i = np.nonzero((container < n_players - 1) & (j[None, :] < in_hands[:, None]))
    worlds.hands[w_i, others[w_i, container[w_i, j_i]], perm[w_i, j_i]] = True
    # Deck: the known cards (sorted) where the dealt cards were, then the sampled stock.
    stock_cards = np.zeros((nw, d), dtype=np.bool_)
    s_w, s_j = np.nonzero((j[None, :] >= in_hands[:, None]) & (j[None, :] < num_unseen[:, None]))
    stock_cards[s_w, perm[s_w, s_j]] = True
    known_sorted = np.argsort(np.where(stock_cards, d + j, j), axis=1, kind="stable")
    from_stock = np.take_along_axis(perm, np.clip(in_hands[:, None] + j - stock_pos[:, None], 0, d - 1), axis=1)
    worlds.deck = np.where(j[None, :] < stock_pos[:, None], known_sorted, from_stock).astype(np.int8)
    worlds.seed[:] = 0  # later hands are never looked at; drop the real seed that fixes them
    return worlds, wrow


# --------------------------------------------------------------------------------------------------- playing


def apply_moves(
    rules: Rules, state: State, cards: npt.NDArray[np.int64], captures: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Play whole moves ``(cards[i], captures[i])`` in every running game of ``state``, in place.

    Returns ``(ended, points)``: games whose hand ended with the move, and that hand's points per side (B, S).
    Games whose hand ended are left in the DONE phase (a search never looks past the end of the hand).
    """
    b = state.batch_size
    ended = np.zeros(b, dtype=np.bool_)
    points = np.zeros((b, rules.num_sides))
    running = np.flatnonzero(state.phase != Phase.DONE)
    info = core.step(rules, state, core.move_actions(state, cards, captures))
    ended |= info.hand_over
    points[info.hand_over] = info.hand_points[info.hand_over, :, -1]
    more = running[~info.move_done[running]]
    if more.size:  # captures still being picked (CHOOSE phase): finish them on the few games concerned
        sub = state.take(more)
        sub_cards, sub_caps = cards[more], captures[more]
        while (sub.phase == Phase.CHOOSE).any():
            wait = sub.phase != Phase.CHOOSE
            phase_before = sub.phase.copy()
            sub.phase[wait] = Phase.DONE
            sinfo = core.step(rules, sub, core.move_actions(sub, sub_cards, sub_caps))
            sub.phase[wait] = phase_before[wait]
            ended[more[sinfo.hand_over]] = True
            points[more[sinfo.hand_over]] = sinfo.hand_points[sinfo.hand_over, :, -1]
        state.put(more, sub)
    state.phase[ended] = Phase.DONE
    return ended, points


def rollout(rules: Rules, state: State, policy: RolloutPolicy) -> npt.NDArray[np.float64]:
    """Play every game of ``state`` to the end of its hand with ``policy``, in place; (B, S) hand points.

    Games already DONE score zero. Finished games are dropped from the batch as it thins out.
    """
    b = state.batch_size
    points = np.zeros((b, rules.num_sides))
    idx = np.arange(b)
    sub = state
    while True:
        live = np.flatnonzero(sub.phase != Phase.DONE)
        if live.size == 0:
            break
        if live.size < 0.6 * sub.batch_size:
            sub, idx = sub.take(live), idx[live]
            live = np.arange(live.size)
        moves, best = policy(rules, sub, live)
        cards = np.zeros(sub.batch_size, dtype=np.int64)
        caps = np.zeros((sub.batch_size, rules.num_cards), dtype=np.bool_)
        cards[live] = moves.card[best]
        caps[live] = moves.captures(best)
        ended, pts = apply_moves(rules, sub, cards, caps)
        points[idx[ended]] = pts[ended]
    return points


def _margins(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(B, S) each side's points minus the mean of the other sides' points."""
    s = values.shape[1]
    return values - (values.sum(axis=1, keepdims=True) - values) / (s - 1)


def search_tree(
    rules: Rules, roots: State, limits: npt.NDArray[np.intp], policy: RolloutPolicy
) -> tuple[Moves, npt.NDArray[np.float64]]:
    """Full-width max^n search of every root (a perfect-information world) to ``limits[i]`` plies.

    Nodes at the horizon are valued by rolling ``policy`` out to the end of the hand; a node whose hand ended is
    valued by the hand's points. Each side to move picks the child best for its own margin (minimax with two
    sides). Returns the root candidates (``generate_moves`` on the roots) and their values (m, S) in hand points.
    """
    side_of = np.array(rules.seat_side, dtype=np.intp)
    level_states: list[State] = [roots]
    level_root: list[npt.NDArray[np.intp]] = [np.arange(roots.batch_size)]
    level_value: list[npt.NDArray[np.float64]] = [np.zeros((roots.batch_size, rules.num_sides))]
    level_ended: list[npt.NDArray[np.bool_]] = [np.zeros(roots.batch_size, dtype=np.bool_)]
    level_moves: list[Moves] = []
    level_expand: list[npt.NDArray[np.intp]] = []
    level_mover: list[npt.NDArray[np.intp]] = []
    ply = 0
    while True:
        st, root, ended = level_states[-1], level_root[-1], level_ended[-1]
        expand = np.flatnonzero(~ended & (limits[root] > ply))
        if expand.size == 0:
            break
        moves = generate_moves(rules, st, expand)
        children = st.take(expand[moves.row])
        mover = side_of[children.current.astype(np.intp)]
        c_ended, c_points = apply_moves(rules, children, moves.card, moves.capture)
        level_moves.append(moves)
        level_expand.append(expand)
        level_mover.append(mover)
        level_states.append(children)
        level_root.append(root[expand[moves.row]])
        level_value.append(c_points)
        level_ended.append(c_ended)
        ply += 1
    # Horizon nodes (not ended, not expanded) are rolled out together.
    horizon: list[tuple[int, npt.NDArray[np.intp]]] = []
    for lv in range(1, len(level_states)):
        expanded = np.zeros(level_states[lv].batch_size, dtype=np.bool_)
        if lv < len(level_expand):
            expanded[level_expand[lv]] = True
        horizon.append((lv, np.flatnonzero(~level_ended[lv] & ~expanded)))
    if any(h.size for _, h in horizon):
        batch = State.concat([level_states[lv].take(h) for lv, h in horizon if h.size])
        pts = rollout(rules, batch, policy)
        at = 0
        for lv, h in horizon:
            level_value[lv][h] = pts[at : at + h.size]
            at += h.size
    # Back up: each expanded node takes the value of its child best for the side that moves there.
    for lv in range(len(level_moves) - 1, 0, -1):
        moves, expand, mover = level_moves[lv], level_expand[lv], level_mover[lv]
        vals = level_value[lv + 1]
        own = _margins(vals)[np.arange(len(moves)), mover]
        best = segment_argmax(own, moves.starts)
        level_value[lv][expand] = vals[best]
    return level_moves[0], level_value[1]


def _remaining_plies(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """(n,) moves left in the hand, counting a capture being chosen as one; large while the stock is not empty."""
    in_hands = state.hands[games].sum(axis=(1, 2)) + (state.phase[games] == Phase.CHOOSE)
    return np.where(state.stock_pos[games] >= rules.num_cards, in_hands, 10**6).astype(np.intp)


def open_endgame_rows(rules: Rules, state: State, games: npt.NDArray[np.intp], max_plies: int) -> npt.NDArray[np.intp]:
    """Rows whose position is an open book (``is_open``) with at most ``max_plies`` moves left (finished games
    excluded)."""
    left = _remaining_plies(rules, state, games)
    return np.flatnonzero(is_open(rules, state, games) & (left <= max_plies) & (state.phase[games] != Phase.DONE))


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


def _best_actions(
    state: State, games: npt.NDArray[np.intp], searched: tuple[Moves, npt.NDArray[np.float64], npt.NDArray[np.intp]]
) -> npt.NDArray[np.int64]:
    """The action that starts each row's move of best mean margin, from ``_move_margins``' result."""
    moves, total, first_move = searched
    pick = first_move + np.argmax(total, axis=1)
    return core.move_actions(state.take(games), moves.card[pick], moves.capture[pick])


def _move_margins(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.NDArray[np.intp],
    limits: npt.NDArray[np.intp],
    policy: RolloutPolicy,
    rng: np.random.Generator,
    prior: npt.NDArray[np.float64] | None = None,
) -> tuple[Moves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """Sample worlds and search them: the first world's candidate moves, their mean margins per row (n, width;
    -inf past a row's moves) and the index in ``moves`` of each row's first candidate.

    ``prior``: (n,) weight of the expert heuristic's score added to each row's mean margins (None: no prior).
    """
    worlds, wrow = sample_worlds(rules, state, games, counts, rng)
    moves, values = search_tree(rules, worlds, limits[wrow], policy)
    side_of = np.array(rules.seat_side, dtype=np.intp)
    my_side = side_of[state.current[games].astype(np.intp)]
    world_of = moves.row
    row_of = wrow[world_of]
    margin = _margins(values)[np.arange(len(moves)), my_side[row_of]]
    j = np.arange(len(moves)) - moves.starts[world_of]
    width = int(j.max()) + 1
    total = np.zeros((games.size, width))
    np.add.at(total, (row_of, j), margin)
    valid = np.zeros((games.size, width), dtype=np.bool_)
    valid[row_of, j] = True
    total /= counts[:, None]
    if prior is not None and prior.any():
        real = generate_moves(rules, state, games, dynamic_weights(rules, state, games))
        jr = np.arange(len(real)) - real.starts[real.row]
        total[real.row, jr] += prior[real.row] * expert_scores(rules, state, real)
    total[~valid] = -np.inf
    first_world = np.searchsorted(wrow, np.arange(games.size))
    return moves, total, moves.starts[first_world]


def _solve_open_margins(
    rules: Rules, state: State, games: npt.NDArray[np.intp], caller: str
) -> tuple[Moves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """``_move_margins`` on the one possible world of open-book positions, searched to the end of the hand."""
    if not is_open(rules, state, games).all():
        raise ValueError(f"{caller}: some positions still hide cards; use open_endgame_rows to select open ones")
    counts = np.ones(games.size, dtype=np.intp)
    limits = _remaining_plies(rules, state, games)
    # The only world is the true one, but it is rebuilt from the unseen set; the generator is never drawn from
    # in a way that matters (one deal is possible), so a fixed one keeps this function pure.
    return _move_margins(rules, state, games, counts, limits, greedy_moves, np.random.default_rng(0))


def solve_open(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """Exact play for open-book positions (``is_open``): minimax on the only possible world to the end of the hand."""
    games = np.asarray(games, dtype=np.intp)
    if games.size == 0:
        return np.zeros(0, dtype=np.int64)
    return _best_actions(state, games, _solve_open_margins(rules, state, games, "solve_open"))


def optimal_open_actions(rules: Rules, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n, D) bool: for open-book positions, every action that starts a move of the best exact value (ties
    included; ``solve_open`` plays one of them)."""
    games = np.asarray(games, dtype=np.intp)
    if games.size == 0:
        return np.zeros((0, rules.num_cards), dtype=np.bool_)
    moves, total, first_move = _solve_open_margins(rules, state, games, "optimal_open_actions")
    rows, js = np.nonzero(total >= total.max(axis=1, keepdims=True) - 1e-9)
    pick = first_move[rows] + js
    actions = core.move_actions(state.take(games[rows]), moves.card[pick], moves.capture[pick])
    out = np.zeros((games.size, rules.num_cards), dtype=np.bool_)
    out[rows, actions] = True
    return out


def _check_rollout(name: str, rollout_name: str) -> RolloutPolicy:
    if rollout_name not in ROLLOUT_POLICIES:
        raise ValueError(f"{name}: unknown rollout policy {rollout_name!r}; choose one of {sorted(ROLLOUT_POLICIES)}")
    return ROLLOUT_POLICIES[rollout_name]


class PIMCAgent(Policy):
    """Sampled-deal search: ``worlds`` determinizations, ``depth``-ply max^n with rollouts, exact end game.

    ``prior`` weighs the expert heuristic (``features.expert_scores``) added to the mean margin of each move.
    """

    name = "pimc"
    needs_state = True
    needs_obs = False

    def __init__(
        self,
        rules: Rules | str,
        seed: int | None = None,
        worlds: int = 64,
        depth: int = 1,
        endgame: int = 6,
        rollout: str = "greedy",
        prior: float = 1.0,
    ) -> None:
        super().__init__(rules, seed)
        if prior < 0:
            raise ValueError(f"pimc: prior must be >= 0 (weight of the expert heuristic), got {prior}")
        if worlds < 1:
            raise ValueError(f"pimc: worlds must be >= 1 (sampled deals per decision), got {worlds}")
        if depth < 1:
            raise ValueError(f"pimc: depth must be >= 1 (plies searched before the rollout), got {depth}")
        if endgame < 0:
            raise ValueError(f"pimc: endgame must be >= 0 plies (0 turns exact end-game solving off), got {endgame}")
        self.worlds, self.depth, self.endgame = int(worlds), int(depth), int(endgame)
        self.rollout_name = rollout
        self.policy = _check_rollout("pimc", rollout)
        self.prior = float(prior)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        state, games = require_state(batch, self.name)
        rules = self.rules
        remaining = _remaining_plies(rules, state, games)
        exact = remaining <= self.endgame
        counts = np.where(is_open(rules, state, games), 1, self.worlds).astype(np.intp)
        limits = np.where(exact, remaining, self.depth).astype(np.intp)
        prior = np.where(exact, 0.0, self.prior)
        return _best_actions(
            state, games, _move_margins(rules, state, games, counts, limits, self.policy, self.rng, prior)
        )


# --------------------------------------------------------------------------------------------------- ISMCTS


class _Node:
    """A node of the information-set tree: the move sequence that led here, seen from the searching seat."""

    __slots__ = ("avail", "children", "total", "visits")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.total = 0.0


def _move_keys(moves: Moves, num_cards: int) -> list[int]:
    """One int per candidate: the captured cards as bits, then the card played."""
    bits = moves.capture.astype(np.int64) @ (np.int64(1) << np.arange(num_cards, dtype=np.int64))
    return (bits * 64 + moves.card).tolist()


class ISMCTSAgent(Policy):
    """Single-observer information-set MCTS with ``iters`` iterations per decision (``parallel`` at a time)."""

    name = "ismcts"
    needs_state = True
    needs_obs = False

    def __init__(
        self,
        rules: Rules | str,
        seed: int | None = None,
        iters: int = 400,
        c: float = 2.0,
        parallel: int = 50,
        rollout: str = "greedy",
        final: Literal["visits", "value"] = "visits",
    ) -> None:
        super().__init__(rules, seed)
        if iters < 1:
            raise ValueError(f"ismcts: iters must be >= 1 (iterations per decision), got {iters}")
        if parallel < 1:
            raise ValueError(f"ismcts: parallel must be >= 1 (iterations run together), got {parallel}")
        if c < 0:
            raise ValueError(f"ismcts: c must be >= 0 (UCB exploration, in hand points), got {c}")
        if final not in ("visits", "value"):
            raise ValueError(f"ismcts: final must be 'visits' or 'value', got {final!r}")
        self.iters, self.c, self.parallel, self.final = int(iters), float(c), int(parallel), final
        self.rollout_name = rollout
        self.policy = _check_rollout("ismcts", rollout)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        state, games = require_state(batch, self.name)
        rules = self.rules
        d = rules.num_cards
        side_of = np.array(rules.seat_side, dtype=np.intp)
        n = games.size
        roots = [_Node() for _ in range(n)]
        done = 0
        while done < self.iters:
            k = min(self.parallel, self.iters - done)
            done += k
            worlds, wrow = sample_worlds(rules, state, games, k, self.rng)
            nw = wrow.size
            node = [roots[int(i)] for i in wrow]
            paths: list[list[tuple[_Node, int]]] = [[] for _ in range(nw)]
            active = np.arange(nw)
            reward = np.zeros((nw, rules.num_sides))
            to_roll = np.zeros(nw, dtype=np.bool_)
            while active.size:
                moves = generate_moves(rules, worlds, active)
                keys = _move_keys(moves, d)
                movers = side_of[worlds.current[active].astype(np.intp)].tolist()
                starts = moves.starts.tolist()
                choice = np.empty(active.size, dtype=np.intp)
                stop = np.zeros(active.size, dtype=np.bool_)
                for a in range(active.size):
                    w = int(active[a])
                    here = node[w]
                    s, e = starts[a], starts[a + 1]
                    children = here.children
                    fresh = [i for i in range(s, e) if keys[i] not in children]
                    for i in range(s, e):
                        ch = children.get(keys[i])
                        if ch is not None:
                            ch.avail += 1
                    if fresh:
                        i = fresh[int(self.rng.integers(len(fresh)))] if len(fresh) > 1 else fresh[0]
                        ch = children[keys[i]] = _Node()
                        ch.avail = 1
                        stop[a] = True
                    else:
                        best, i = -math.inf, s
                        for t in range(s, e):
                            ch = children[keys[t]]
                            ucb = ch.total / ch.visits + self.c * math.sqrt(math.log(ch.avail) / ch.visits)
                            if ucb > best:
                                best, i = ucb, t
                        ch = children[keys[i]]
                    ch.visits += 1  # virtual visit: the reward is added when the iteration backs up
                    paths[w].append((ch, movers[a]))
                    node[w] = ch
                    choice[a] = i
                cards = np.zeros(nw, dtype=np.int64)
                caps = np.zeros((nw, d), dtype=np.bool_)
                cards[active] = moves.card[choice]
                caps[active] = moves.capture[choice]
                ended, pts = apply_moves(rules, worlds, cards, caps)
                reward[ended] = pts[ended]
                expanded = active[stop & ~ended[active]]
                to_roll[expanded] = True
                worlds.phase[expanded] = Phase.DONE  # pause: rolled out below
                active = active[~stop & ~ended[active]]
            roll = np.flatnonzero(to_roll)
            if roll.size:
                sub = worlds.take(roll)
                sub.phase[:] = np.where(sub.pending >= 0, Phase.CHOOSE, Phase.PLAY)
                reward[roll] = rollout(rules, sub, self.policy)
            margins = _margins(reward).tolist()
            for w in range(nw):
                m = margins[w]
                for ch, mover in paths[w]:
                    ch.total += m[mover]
        # The root's moves in the real position: the most visited (or best valued) child.
        moves = generate_moves(rules, state, games)
        keys = _move_keys(moves, d)
        starts = moves.starts.tolist()
        pick = np.empty(n, dtype=np.intp)
        for r in range(n):
            children = roots[r].children
            best, i = -math.inf, starts[r]
            for t in range(starts[r], starts[r + 1]):
                ch = children.get(keys[t])
                if ch is None or ch.visits == 0:
                    continue
                score = ch.visits if self.final == "visits" else ch.total / ch.visits
                if score > best:
                    best, i = score, t
            pick[r] = i
        return core.move_actions(state.take(games), moves.card[pick], moves.capture[pick])


@register_agent("pimc", "sampled-deal search; options worlds=64, depth=1, endgame=6, prior=1.0, rollout=greedy|expert")
def _make_pimc(
    rules: Rules,
    seed: int | None = None,
    worlds: int = 64,
    depth: int = 1,
    endgame: int = 6,
    rollout: str = "greedy",
    prior: float = 1.0,
) -> Policy:
    return PIMCAgent(rules, seed, worlds=worlds, depth=depth, endgame=endgame, rollout=rollout, prior=prior)


@register_agent("ismcts", "information-set MCTS; options iters=400, c=2.0, parallel=50, rollout=greedy|expert")
def _make_ismcts(
    rules: Rules,
    seed: int | None = None,
    iters: int = 400,
    c: float = 2.0,
    parallel: int = 50,
    rollout: str = "greedy",
    final: str = "visits",
) -> Policy:
    return ISMCTSAgent(rules, seed, iters=iters, c=c, parallel=parallel, rollout=rollout, final=final)  # type: ignore[arg-type]
