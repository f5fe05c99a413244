"""Information-set MCTS ``ismcts`` (Cowling, Powley and Whitehouse 2012), which never reads hidden cards.

Single observer: one tree of move sequences per decision, a new world (the unseen cards dealt at random into the
other hands and the stock, as ``pimc`` does) for every iteration, UCB selection with availability counts, one node
added per iteration, rollouts to the end of the hand. Iterations run ``parallel`` at a time per decision (virtual
visits keep them apart) so the rules core and the rollouts are batched. Cirulla knocks follow the fixed rule of
``features.knock_actions``, as in ``pimc``.

Spec: ``ismcts`` (``iters=400,c=2.0,parallel=50,rollout=greedy,final=visits``).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, register_agent
from agents.baselines.features import (
    Moves,
    StatePolicy,
    check_at_least,
    generate_moves,
)
from agents.baselines.greedy import greedy_moves
from agents.search.compiled import kernel_rollout
from agents.search.lookahead import apply_moves, rollout, sample_worlds
from agents.search.pimc import NamedRollout
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase
from scopa_env.rules import Rules
from scopa_env.rules.scoring import margin_vs_mean_of_others

__all__ = ["ISMCTSAgent"]


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


class ISMCTSAgent(NamedRollout, StatePolicy):
    """Single-observer information-set MCTS with ``iters`` iterations per decision (``parallel`` at a time)."""

    name = "ismcts"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        iters: int = 400,
        c: float = 2.0,
        parallel: int = 50,
        rollout: str = "greedy",
        final: Literal["visits", "value"] = "visits",
    ) -> None:
        super().__init__(rules, seed)
        check_at_least("ismcts", "iters", iters, 1, "iterations per decision")
        check_at_least("ismcts", "parallel", parallel, 1, "iterations run together")
        check_at_least("ismcts", "c", c, 0, "UCB exploration, in hand points")
        if final not in ("visits", "value"):
            raise AgentSpecError(f"ismcts: final must be 'visits' or 'value', got {final!r}")
        self.iters, self.c, self.parallel, self.final = int(iters), float(c), int(parallel), final
        self.set_rollout("ismcts", rollout)

    def _play(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
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
                if self.policy is greedy_moves and not (sub.phase == Phase.CHOOSE).any():
                    reward[roll] = kernel_rollout(rules, sub)  # the same points, on the compiled kernel
                else:
                    reward[roll] = rollout(rules, sub, self.policy)
            margins = margin_vs_mean_of_others(reward).tolist()
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
        return state_moves.move_actions(state.take(games), moves.card[pick], moves.capture[pick])


register_agent("ismcts", "information-set MCTS; options iters=400, c=2.0, parallel=50, rollout=greedy|expert")(
    ISMCTSAgent
)
