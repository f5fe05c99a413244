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

Cirulla: knocked cards stay in their seat in every world (``lookahead.sample_worlds``); the agents' own KNOCK-phase
decisions, and every knock met inside a search, follow the fixed rule of ``features.knock_actions`` (knock whenever
allowed, three of a kind first): in a sampled world showing one's cards costs nothing, so a search would only ever
confirm it.

All worlds of all decisions of a batch advance together through the batched core (``scopa_env.core``): a tree level
or a rollout ply is a single ``core.step`` on a big batch. The value of a finished hand for a side is its hand
points minus the mean of the other sides' (for two sides: the points margin).

Specs: ``pimc`` (``worlds=64,depth=1,endgame=6,prior=1.0,rollout=greedy``), ``ismcts``
(``iters=400,c=2.0,parallel=50,rollout=greedy,final=visits``).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from agents.base import ActBatch, Policy, register_agent
from agents.endgame import (
    ExactEndgameMask,
    _best_actions,
    open_endgame_rows,
    optimal_open_actions,
    play_exact_endgame,
    play_open_endgames,
    solve_open,
)
from agents.expert import expert_moves
from agents.features import (
    Moves,
    act_with_knocks,
    generate_moves,
    require_state,
)
from agents.greedy import greedy_moves
from agents.inference import MODELS, DealMemory, Model, inferred_worlds, supports_inference
from agents.lookahead import (
    RolloutPolicy,
    WorldSampler,
    _move_margins,
    apply_moves,
    kernel_rollout,
    rollout,
    sample_worlds,
    search_tree,
)
from scopa_env import core
from scopa_env.core import Phase, is_open, remaining_plies
from scopa_env.rules import Rules
from scopa_env.scoring import margin_vs_mean_of_others

__all__ = [
    "ROLLOUT_POLICIES",
    "ExactEndgameMask",
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

ROLLOUT_POLICIES: dict[str, RolloutPolicy] = {"greedy": greedy_moves, "expert": expert_moves}
"""Rollout policies by name: functions ``(rules, state, games) -> (moves, index of the chosen move)``."""


# --------------------------------------------------------------------------------------------------- agents


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
        infer: float = 0.0,
        pool: int = 4,
        model: str = "greedy",
    ) -> None:
        self.memory: DealMemory | None = None
        super().__init__(rules, seed)
        if infer < 0:
            raise ValueError(
                f"pimc: infer must be >= 0 (the opponent model's temperature; 0: uniform worlds), got {infer}"
            )
        if pool < 1:
            raise ValueError(f"pimc: pool must be >= 1 (uniform worlds dealt per world kept), got {pool}")
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
        self.infer, self.pool = float(infer), int(pool)
        self.sampler: WorldSampler | None = None
        self.model: Model = model
        if model not in MODELS:  # a network: a bot directory or a train.py checkpoint
            from agents.netsearch import load_net

            try:
                self.model = load_net(self.rules, model)
            except ValueError as e:
                raise ValueError(
                    f"pimc: model must be one of {', '.join(MODELS)} or a network (a bot directory or .zip): {e}"
                ) from None
        if self.infer > 0 and supports_inference(self.rules):
            self.memory = DealMemory(self.rules)
            self.sampler = inferred_worlds(self.memory, self.infer, self.pool, self.model)

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        if self.memory is not None:
            self.memory.clear()

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        state, games = require_state(batch, self.name)
        if self.memory is not None:
            self.memory.observe(state, games)
        actions = act_with_knocks(self.rules, state, games, lambda g: self._search(state, g))
        if self.memory is not None:
            self.memory.remember(state, games, actions)
        return actions

    def _search(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        rules = self.rules
        remaining = remaining_plies(rules, state, games)
        exact = remaining <= self.endgame
        counts = np.where(is_open(rules, state, games), 1, self.worlds).astype(np.intp)
        limits = np.where(exact, remaining, self.depth).astype(np.intp)
        prior = np.where(exact, 0.0, self.prior)
        return _best_actions(
            state,
            games,
            _move_margins(rules, state, games, counts, limits, self.policy, self.rng, prior, sampler=self.sampler),
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
        return act_with_knocks(self.rules, state, games, lambda g: self._search(state, g))

    def _search(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
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
        return core.move_actions(state.take(games), moves.card[pick], moves.capture[pick])


@register_agent(
    "pimc",
    "sampled-deal search; options worlds=64, depth=1, endgame=6, prior=1.0, rollout=greedy|expert, infer=0 "
    "(opponent inference: its model's temperature), pool=4, model=greedy|expert|PATH (a network)",
)
def _make_pimc(
    rules: Rules,
    seed: int | None = None,
    worlds: int = 64,
    depth: int = 1,
    endgame: int = 6,
    rollout: str = "greedy",
    prior: float = 1.0,
    infer: float = 0.0,
    pool: int = 4,
    model: str = "greedy",
) -> Policy:
    return PIMCAgent(
        rules,
        seed,
        worlds=worlds,
        depth=depth,
        endgame=endgame,
        rollout=rollout,
        prior=prior,
        infer=infer,
        pool=pool,
        model=model,
    )


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
