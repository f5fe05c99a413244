"""Sampled-deal search ``pimc`` (perfect-information Monte Carlo), which never reads hidden cards.

It samples *worlds* (determinizations): the cards the acting seat has not seen (RULES.md section 7: other hands
and the stock) are dealt at random, from the agent's own seeded generator, into the other hands (whose sizes are
public) and the stock. Only the unseen *set* is read, so the decisions are the same whatever the hidden cards
really are (``tests/test_search.py`` reshuffles them and checks). ``agents.search.ismcts`` samples worlds the same
way and shares the rollout policies named here (``ROLLOUT_POLICIES``).

For each world, every candidate move is searched ``depth`` plies deep, full width, with max^n / minimax on the
hand-points margin of each side; positions at the horizon are valued by a fast rollout policy (``greedy`` by
default) played to the end of the hand. The move with the best average margin over the worlds plus ``prior`` times
the expert heuristic's score of the move is played (the heuristic steadies the choice between moves whose sampled
values differ by less than their noise). Once the stock is empty and at most ``endgame`` plies remain, each world is
solved exactly to the end of the hand (last capture and leftovers included) and the prior is dropped; when the
unseen cards can only lie in one hand (two players, empty stock) a single world is searched. ``depth`` > 1 lets the
opponents choose with sight of the sampled world (strategy fusion), which measured weaker than ``depth=1``.

Cirulla: knocked cards stay in their seat in every world (``lookahead.sample_worlds``); the agent's own KNOCK-phase
decisions, and every knock met inside a search, follow the fixed rule of ``features.knock_actions`` (knock whenever
allowed, three of a kind first): in a sampled world showing one's cards costs nothing, so a search would only ever
confirm it.

All worlds of all decisions of a batch advance together through the batched core (``scopa_env.engine.core``): a tree
level or a rollout ply is a single ``core.step`` on a big batch. The value of a finished hand for a side is its hand
points minus the mean of the other sides' (for two sides: the points margin).

Spec: ``pimc[:worlds=W,depth=D,...]``: the options are ``PIMCAgent``'s keyword arguments, their defaults written there
once (``DEFAULTS``; ``evaluate.py --list-agents`` prints them).
"""

from __future__ import annotations

import inspect

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, load_network, register_agent
from agents.baselines.features import (
    Moves,
    StatePolicy,
    check_at_least,
)
from agents.baselines.greedy import greedy_moves
from agents.search.compiled import KernelMoves
from agents.search.endgame import (
    best_actions,
)
from agents.search.expert import expert_moves
from agents.search.inference import MODELS, DealMemory, InferredWorlds, Model, supports_inference
from agents.search.lookahead import RolloutPolicy, WorldSampler, check_search_options, move_margins, search_plan
from scopa_env.engine import core
from scopa_env.rules import Rules

__all__ = ["DEFAULTS", "ROLLOUT_POLICIES", "NamedRollout", "PIMCAgent"]

ROLLOUT_POLICIES: dict[str, RolloutPolicy] = {"greedy": greedy_moves, "expert": expert_moves}
"""Rollout policies by name: functions ``(rules, state, games) -> (moves, index of the chosen move)``."""


# --------------------------------------------------------------------------------------------------- agents


def check_rollout(name: str, rollout_name: str) -> RolloutPolicy:
    """The rollout policy ``rollout_name`` names (``ROLLOUT_POLICIES``), else ``AgentSpecError`` for agent ``name``."""
    if rollout_name not in ROLLOUT_POLICIES:
        raise AgentSpecError(
            f"{name}: unknown rollout policy {rollout_name!r}; choose one of {sorted(ROLLOUT_POLICIES)}"
        )
    return ROLLOUT_POLICIES[rollout_name]


class NamedRollout:
    """A search's rollout policy held by its name (``ROLLOUT_POLICIES``'s, or the search's own: ``named_rollout``):
    the agent holds no function, so a league that holds it saves and loads in a training checkpoint (``safe_state``
    stores no functions). ``policy`` is the function; setting it puts a function in place of the named one (the
    kernel-against-core tests and bench)."""

    rollout_name: str
    rollout_fn: RolloutPolicy | None

    def set_rollout(self, agent: str, rollout_name: str) -> None:
        """Use the rollout policy ``rollout_name`` (``AgentSpecError`` for agent ``agent`` if it is unknown)."""
        check_rollout(agent, rollout_name)
        self.rollout_name, self.rollout_fn = rollout_name, None

    def named_rollout(self) -> RolloutPolicy:
        """The rollout policy ``rollout_name`` names (a search with names of its own overrides this)."""
        return ROLLOUT_POLICIES[self.rollout_name]

    @property
    def policy(self) -> RolloutPolicy:
        """The rollout policy in use: the one set in place of the named one, else the named one."""
        return self.rollout_fn if self.rollout_fn is not None else self.named_rollout()

    @policy.setter
    def policy(self, fn: RolloutPolicy) -> None:
        self.rollout_fn = fn


class PIMCAgent(NamedRollout, StatePolicy):
    """Sampled-deal search: ``worlds`` determinizations, ``depth``-ply max^n with rollouts, exact end game.

    ``prior`` weighs the expert heuristic (``features.expert_scores``) added to the mean margin of each move.
    """

    name = "pimc"

    def __init__(
        self,
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
    ) -> None:
        self.memory: DealMemory | None = None
        super().__init__(rules, seed)
        check_at_least("pimc", "infer", infer, 0, "the opponent model's temperature; 0: uniform worlds")
        check_at_least("pimc", "pool", pool, 1, "uniform worlds dealt per world kept")
        check_at_least("pimc", "prior", prior, 0, "weight of the expert heuristic")
        check_search_options("pimc", worlds, depth, endgame)
        self.worlds, self.depth, self.endgame = int(worlds), int(depth), int(endgame)
        self.set_rollout("pimc", rollout)
        self.prior = float(prior)
        self.infer, self.pool = float(infer), int(pool)
        self.sampler: WorldSampler | None = None
        self.model: Model = model
        if model not in MODELS:  # a network: a bot directory or a train.py checkpoint
            try:
                self.model = load_network(self.rules, model)
            except ValueError as e:
                raise AgentSpecError(
                    f"pimc: model must be one of {', '.join(MODELS)} or a network (a bot directory or .zip): {e}"
                ) from None
        if self.infer > 0 and supports_inference(self.rules):
            self.memory = DealMemory(self.rules)
            self.sampler = InferredWorlds(self.memory, self.infer, self.pool, self.model)

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        if self.memory is not None:
            self.memory.clear()

    def act_state(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """The knock rule's or the search's action of each game, remembered by the deal memory (``infer``)."""
        if self.memory is not None:
            self.memory.observe(state, games)
        actions = super().act_state(state, games)
        if self.memory is not None:
            self.memory.remember(state, games, actions)
        return actions

    def _play(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """The action that starts each game's move of best mean margin (plus prior)."""
        return best_actions(state, games, self.search(state, games))

    def search(
        self, state: core.State, games: npt.NDArray[np.intp]
    ) -> tuple[Moves | KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """The search of each game's decision: candidates (first world's), mean margins (n, width), first index.

        The margins include the prior; ``-inf`` pads rows with fewer candidates (as ``AZAgent.search``)."""
        rules = self.rules
        exact, counts, limits = search_plan(rules, state, games, self.worlds, self.depth, self.endgame)
        prior = np.where(exact, 0.0, self.prior)
        return move_margins(rules, state, games, counts, limits, self.policy, self.rng, prior, sampler=self.sampler)


DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(PIMCAgent.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty and name != "seed"
}
"""pimc's options and their defaults, read from ``PIMCAgent``'s signature (the one place they are written)."""

register_agent(
    "pimc",
    f"sampled-deal search; options worlds={DEFAULTS['worlds']}, depth={DEFAULTS['depth']}, "
    f"endgame={DEFAULTS['endgame']}, prior={DEFAULTS['prior']}, rollout={'|'.join(ROLLOUT_POLICIES)}, "
    f"infer={DEFAULTS['infer']:g} (opponent inference: its model's temperature), pool={DEFAULTS['pool']}, "
    f"model={'|'.join(MODELS)}|PATH (a network)",
)(PIMCAgent)
