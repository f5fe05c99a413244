"""The search agents' look-ahead: one search, with two engines under it.

Worlds (``sample_worlds``: the unseen cards dealt at random into the other hands and the stock, never reading
where they really are), ``apply_moves``, ``rollout`` to the end of the hand, the depth-limited max^n tree
(``search_tree``) and the mean margin of every candidate move over the worlds (``move_margins``).
``agents.search.pimc`` (``pimc``, ``ismcts``) and ``agents.search.endgame`` (the open-book solver ``expert`` and the
bots play end games with) build on them. ``move_margins`` searches on the compiled search
(``agents.search.compiled``: worlds, tree and greedy rollouts in numba) whenever the rollout policy is greedy, and on
the batched core here only where a caller needs it: another rollout policy (expert, a network: they score a batch of
positions at once) or a custom world sampler (``agents.search.inference``). Both paths deal the same worlds (the
compiled dealing, ``compiled.deal_worlds``), list the same candidates, back up max^n with the same tie-breaks and end
in the same margins and choice. The open-book test ``is_open`` and the plies left in a hand (``remaining_plies``) are
the core's (``scopa_env.engine.core``; ``is_open`` is re-exported here). The value of a finished hand for a side is
its hand points minus the mean of the other sides' (``scopa_env.rules.scoring.margin_vs_mean_of_others``).

Cirulla: cards revealed by a knock (``State.revealed``) are public, so they stay in their seat's hand in every
world; a hand that reaches a new deal inside a search meets KNOCK phases, which ``resolve_knocks`` settles with a
fixed rule (knock whenever allowed, three of a kind first: ``features.knock_actions``), so every rollout finishes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from agents.baselines.features import (
    KnockRule,
    Moves,
    check_at_least,
    dynamic_weights,
    expert_scores,
    generate_moves,
    knock_actions,
    segment_argmax,
)
from agents.baselines.greedy import greedy_moves
from agents.search.compiled import KernelMoves, deal_worlds, kernel_sampled_search, kernel_search_tree, unpack_cards
from scopa_env.engine import core, state_moves
from scopa_env.engine._kernel_layout import DECK, HANDS
from scopa_env.engine.core import Phase, State
from scopa_env.engine.state_moves import is_open, remaining_plies
from scopa_env.rules import Rules
from scopa_env.rules.scoring import margin_vs_mean_of_others

__all__ = [
    "RolloutPolicy",
    "apply_moves",
    "check_search_options",
    "mean_margins",
    "move_margins",
    "play_ply",
    "resolve_knocks",
    "rollout",
    "sample_worlds",
    "search_plan",
    "search_tree",
]

RolloutPolicy = Callable[[Rules, State, npt.NDArray[np.intp]], tuple[Moves, npt.NDArray[np.intp]]]
"""``(rules, state, games) -> (moves, index of the chosen move)``: a rollout policy (greedy, expert...)."""
WorldSampler = Callable[
    [Rules, State, npt.NDArray[np.intp], npt.ArrayLike, np.random.Generator], tuple[State, npt.NDArray[np.intp]]
]
"""``sample_worlds``' signature: another way of dealing the worlds (``agents.search.inference``)."""


# --------------------------------------------------------------------------------------------------- worlds


def sample_worlds(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.ArrayLike,
    rng: np.random.Generator,
) -> tuple[State, npt.NDArray[np.intp]]:
    """Deal the unseen cards of each game's acting seat at random, ``counts[i]`` times for game ``games[i]``.

    Returns the worlds (a new batched State, worlds of game i contiguous) and each world's row in ``games``. The
    other seats keep their hand sizes; the stock keeps its size; cirulla's knocked cards (``State.revealed``) stay
    in their seat's hand. Nothing hidden is read: the worlds depend only on the acting seat's knowledge and on
    ``rng``. The compiled search deals them (``compiled.deal_worlds``, the one dealing of both search paths); here
    they come back as the core's games.
    """
    dealt, wrow = deal_worlds(rules, state, games, counts, rng)
    worlds = state.take(np.asarray(games, dtype=np.intp)[wrow])
    if wrow.size:
        worlds.hands[:] = unpack_cards(dealt[:, HANDS : HANDS + rules.num_players], rules.num_cards)
        worlds.deck = dealt[:, DECK : DECK + rules.num_cards].astype(np.int8)
        worlds.seed[:] = 0  # later hands are never looked at; drop the real seed that fixes them
    return worlds, wrow


# --------------------------------------------------------------------------------------------------- playing


def apply_moves(
    rules: Rules, state: State, cards: npt.NDArray[np.int64], captures: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Play whole moves ``(cards[i], captures[i])`` in every running game of ``state``, in place.

    Returns ``(ended, points)``: games whose hand ended with the move, and that hand's points per side (B, S).
    Games whose hand ended are left in the DONE phase (a search never looks past the end of the hand). Cirulla's
    knock decisions after a new deal are settled at once (``resolve_knocks``), so every game left running is in the
    PLAY or CHOOSE phase.
    """
    b = state.batch_size
    ended = np.zeros(b, dtype=np.bool_)
    points = np.zeros((b, rules.num_sides))
    running = np.flatnonzero(state.phase != Phase.DONE)
    info = core.step(rules, state, state_moves.move_actions(state, cards, captures))
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
            sinfo = core.step(rules, sub, state_moves.move_actions(sub, sub_cards, sub_caps))
            sub.phase[wait] = phase_before[wait]
            ended[more[sinfo.hand_over]] = True
            points[more[sinfo.hand_over]] = sinfo.hand_points[sinfo.hand_over, :, -1]
        state.put(more, sub)
    state.phase[ended] = Phase.DONE
    if rules.knocks:
        resolve_knocks(rules, state)
    return ended, points


def resolve_knocks(rules: Rules, state: State, knock: KnockRule = "always") -> None:
    """Settle, in place, every cirulla KNOCK-phase decision of the games of ``state`` with the fixed rule ``knock``
    (``features.knock_actions``: knock whenever allowed, three of a kind first), until each game is in the PLAY
    phase (or DONE). Searches use it where a rollout reaches a new deal. No-op without knocks in the rules."""
    if not rules.knocks:
        return
    g = np.flatnonzero(state.phase == Phase.KNOCK)
    if g.size == 0:
        return
    sub = state.take(g)
    while True:
        at = np.flatnonzero(sub.phase == Phase.KNOCK)
        if at.size == 0:
            break
        wait = sub.phase != Phase.KNOCK
        phase_before = sub.phase.copy()
        sub.phase[wait] = Phase.DONE  # only the games still deciding act
        actions = np.zeros(sub.batch_size, dtype=np.int64)
        actions[at] = knock_actions(rules, sub, at, knock)
        core.step(rules, sub, actions)
        sub.phase[wait] = phase_before[wait]
    state.put(g, sub)


def rollout(rules: Rules, state: State, policy: RolloutPolicy) -> npt.NDArray[np.float64]:
    """Play every game of ``state`` to the end of its hand with ``policy``, in place; (B, S) hand points.

    Games already DONE score zero. Finished games are dropped from the batch as it thins out. Cirulla's knock
    decisions are settled by ``resolve_knocks``.
    """
    resolve_knocks(rules, state)
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
        ended, pts = play_ply(rules, sub, live, policy)
        points[idx[ended]] = pts[ended]
    return points


def play_ply(
    rules: Rules, state: State, live: npt.NDArray[np.intp], policy: RolloutPolicy
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """One move of ``policy`` in each game ``live`` of ``state`` (running games), in place: ``apply_moves``' result."""
    moves, best = policy(rules, state, live)
    cards = np.zeros(state.batch_size, dtype=np.int64)
    caps = np.zeros((state.batch_size, rules.num_cards), dtype=np.bool_)
    cards[live] = moves.card[best]
    caps[live] = moves.captures(best)
    return apply_moves(rules, state, cards, caps)


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
        own = margin_vs_mean_of_others(vals)[np.arange(len(moves)), mover]
        best = segment_argmax(own, moves.starts)
        level_value[lv][expand] = vals[best]
    return level_moves[0], level_value[1]


def check_search_options(name: str, worlds: int, depth: int, endgame: int) -> None:
    """Refuse, with ``AgentSpecError`` for agent ``name``, a sampled-deal search that cannot run: fewer than one
    world or one ply before the rollout, or a negative end-game horizon (``pimc``'s and ``az``'s options)."""
    check_at_least(name, "worlds", worlds, 1, "sampled deals per decision")
    check_at_least(name, "depth", depth, 1, "plies searched before the rollout")
    check_at_least(name, "endgame", endgame, 0, "0 turns exact end-game solving off", " plies")


def search_plan(
    rules: Rules, state: State, games: npt.NDArray[np.intp], worlds: int, depth: int, endgame: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """How each game's decision is searched (``pimc``, ``az``): whether the rest of its hand is solved exactly (at
    most ``endgame`` plies left), its number of worlds (one for an open book, else ``worlds``) and its search depth
    (the plies left when exact, else ``depth``): ``(exact, counts, limits)`` for ``move_margins``."""
    remaining = remaining_plies(rules, state, games)
    exact = remaining <= endgame
    counts = np.where(is_open(rules, state, games), 1, worlds).astype(np.intp)
    limits = np.where(exact, remaining, depth).astype(np.intp)
    return exact, counts, limits


def move_margins(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.NDArray[np.intp],
    limits: npt.NDArray[np.intp],
    policy: RolloutPolicy,
    rng: np.random.Generator,
    prior: npt.NDArray[np.float64] | None = None,
    prior_scores: Callable[[], tuple[Moves, npt.NDArray[np.float64]]] | None = None,
    sampler: WorldSampler | None = None,
) -> tuple[Moves | KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """Sample worlds and search them: the first world's candidate moves, their mean margins per row (n, width;
    -inf past a row's moves) and the index in ``moves`` of each row's first candidate.

    ``prior``: (n,) weight of a prior score added to each row's mean margins (None: no prior); the score is the
    expert heuristic's (pimc), or what ``prior_scores()`` returns: the real position's candidates and a score each
    (az: the network's log-probability). ``sampler`` deals the worlds (default ``sample_worlds``); it returns
    ``counts[i]`` worlds for game i, contiguous.
    """
    moves: Moves | KernelMoves
    if policy is greedy_moves and sampler is None:  # the kernel deals and searches (the same values, much faster)
        moves, values, wrow = kernel_sampled_search(rules, state, games, counts, limits, rng)
    else:
        worlds, wrow = (sampler or sample_worlds)(rules, state, games, counts, rng)
        if policy is greedy_moves:
            moves, values = kernel_search_tree(rules, worlds, limits[wrow])
        else:
            moves, values = search_tree(rules, worlds, limits[wrow], policy)
    side_of = np.array(rules.seat_side, dtype=np.intp)
    my_side = side_of[state.current[games].astype(np.intp)]
    margin = margin_vs_mean_of_others(values)[np.arange(len(moves)), my_side[wrow[moves.row]]]
    return mean_margins(rules, state, games, moves, wrow, counts, margin, prior, prior_scores)


def mean_margins(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    moves: Moves | KernelMoves,
    wrow: npt.NDArray[np.intp],
    counts: npt.NDArray[np.intp],
    margin: npt.NDArray[np.float64],
    prior: npt.NDArray[np.float64] | None = None,
    prior_scores: Callable[[], tuple[Moves, npt.NDArray[np.float64]]] | None = None,
) -> tuple[Moves | KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """``move_margins``' result from each world's candidates ``moves`` (worlds of game i contiguous, ``wrow`` their
    rows) and the acting side's ``margin`` of each: the mean over a game's ``counts`` worlds, plus the prior."""
    world_of = moves.row
    row_of = wrow[world_of]
    j = np.arange(len(moves)) - moves.starts[world_of]
    width = int(j.max()) + 1
    total = np.zeros((games.size, width))
    np.add.at(total, (row_of, j), margin)
    valid = np.zeros((games.size, width), dtype=np.bool_)
    valid[row_of, j] = True
    total /= counts[:, None]
    if prior is not None and prior.any():
        if prior_scores is None:
            real = generate_moves(rules, state, games, dynamic_weights(rules, state, games))
            scores = expert_scores(rules, state, real)
        else:
            real, scores = prior_scores()
        jr = np.arange(len(real)) - real.starts[real.row]
        total[real.row, jr] += prior[real.row] * scores
    total[~valid] = -np.inf
    first_world = np.searchsorted(wrow, np.arange(games.size))
    return moves, total, moves.starts[first_world]
