"""The policy interface the envs call, and the one policy they ship: uniform random over legal moves.

A policy acts on a *batch* of decisions at once (``Policy.act(ActBatch) -> actions``). Each decision row comes
with the acting seat's observation and legal-action mask; policies that reason about the game (rule-based, search)
also get the batched core ``State`` and the index of each row's game in it. They may read only what the acting
seat may know (RULES.md section 7): its own hand, the table, the piles, scores, hand sizes, the stock size, and the
set of unseen cards, never other hands or the stock order.

This module is part of the env layer (``scopa_env``), which never imports the ``agents`` package: the envs take
``Policy`` objects. Spec strings such as ``"greedy"`` or ``"runs/.../best.zip"`` are turned into policies by a
*resolver* that the ``agents`` package registers when it is imported (``set_spec_resolver``), or that is found
through the ``scopa.policy_resolvers`` entry point of the installed package; ``"random"`` works without it::

    from scopa_env.games.policy import RandomAgent, resolve_policy
    resolve_policy("random", "classic", seed=0)        # RandomAgent, no agents package needed
    resolve_policy("greedy", "classic", seed=0)        # through agents.base.make_agent
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from scopa_env.engine.core import Phase, State
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import Deck
from scopa_env.rules.shuffle import GOLDEN, MIX1, MIX2, splitmix64

__all__ = [
    "MASKED_LOGIT",
    "ActBatch",
    "Policy",
    "PositionStreams",
    "RandomAgent",
    "SpecResolver",
    "any_needs_obs",
    "position_key",
    "position_random",
    "resolve_policy",
    "set_spec_resolver",
    "uniform_capture_picks",
    "uniform_legal",
]


MASKED_LOGIT = -1e8
"""The logit every illegal action gets before a softmax (the bots, the exported ONNX graph, the warm start and the
neural agents alike): finite in float32, and exactly 0 probability after the softmax, as in sb3-contrib's
``MaskableCategorical``."""


@dataclass
class ActBatch:
    """One batch of decisions. Row i is game ``games[i]`` of ``state``; all rows have the same rules."""

    rules: Rules
    """The variant being played."""
    obs: npt.NDArray[np.float32]
    """(n, obs_size) float32: ``observation.observe`` for each row's acting seat."""
    mask: npt.NDArray[np.bool_]
    """(n, num_cards) bool: legal actions of each row."""
    state: State | None = None
    """The batched core state the rows come from (read only the acting seat's knowledge)."""
    games: npt.NDArray[np.intp] | None = None
    """(n,) index of each row's game in ``state``."""

    def __len__(self) -> int:
        return int(self.mask.shape[0])


class Policy(ABC):
    """A batched, seeded policy. Subclasses set ``name`` and implement ``act``."""

    name: str = "policy"
    needs_state: bool = False
    """True if ``act`` needs ``batch.state`` (rule-based and search agents). The driver and the envs always pass
    the state; ``scopa_env.envs.interop.act_observation`` (an action from an observation alone) refuses such a policy
    and points to ``act_env``."""
    needs_obs: bool = True
    """False if ``act`` never reads ``batch.obs``: callers may then pass a zero-width array and skip
    computing observations (rule-based and search agents)."""

    def __init__(self, rules: Rules | str, seed: int | None = None) -> None:
        self.rules = get_rules(rules)
        self.seed(seed)

    def seed(self, seed: int | None = None) -> None:
        """Reset the agent's random generator."""
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        """(n,) int64: one legal action per row."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, variant={self.rules.name!r})"


def any_needs_obs(policies: Iterable[Policy | None]) -> bool:
    """Whether any of ``policies`` reads ``ActBatch.obs`` (callers may skip ``observation.observe`` otherwise)."""
    return any(getattr(p, "needs_obs", True) for p in policies)


def uniform_legal(mask: npt.NDArray[np.bool_], rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """(n,) a uniformly random True column of each row of ``mask`` (rows must not be empty)."""
    keys = rng.random(mask.shape)
    keys[~mask] = -1.0
    return keys.argmax(axis=1)


def uniform_capture_picks(
    rules: Rules, state: State, games: npt.NDArray[np.intp], mask: npt.NDArray[np.bool_], rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """(n,) the next pick for games in the CHOOSE phase that makes the whole capture uniform among legal captures.

    Picks go in increasing card order: with picks ``p`` and ``t`` still to add up, each table card ``x`` above
    ``max(p)`` is picked with probability proportional to the number of captures whose lowest card beyond ``p``
    is ``x``, i.e. the number of sets of available cards above ``x`` adding up to ``t - value(x)``. The
    probabilities multiply out to 1 / (number of legal captures) for every capture. When the pending card's
    rank is on the table the captures are single cards, and the pick is uniform over the mask.
    """
    deck = rules.deck
    d = deck.num_cards
    value, rank = _deck_arrays(deck)
    n = games.size
    table = state.table[games]
    picked = state.picked[games]
    pending = state.pending[games].astype(np.int64)
    equal = (table & (rank[None, :] == rank[pending][:, None])).any(axis=1)
    target = value[pending] - (picked * value).sum(axis=1)
    top = np.where(picked.any(axis=1), d - 1 - np.argmax(picked[:, ::-1], axis=1), -1)
    weights = np.zeros((n, d), dtype=np.float64)
    live = np.flatnonzero(~equal)  # the sums' rows (an equal rank's picks are uniform over the mask)
    if live.size:
        avail = table[live] & ~picked[live]
        target, top = target[live], top[live]
        max_t = int(target.max())
        # counts[:, s]: number of subsets of the available cards above the current one adding up to s (exact
        # integers). A row reads its entries up to its own target only, for cards above its last pick: the cards
        # it may pick next are the only ones that change what it reads.
        counts = np.zeros((live.size, max_t + 1), dtype=np.float64)
        counts[:, 0] = 1.0
        may_pick = (avail & (np.arange(d)[None, :] > top[:, None]) & (value[None, :] <= target[:, None])).T.copy()
        found = np.zeros((live.size, d), dtype=np.float64)
        for k in np.flatnonzero(may_pick.any(axis=1))[::-1].tolist():
            v = int(value[k])
            rows = may_pick[k].nonzero()[0]  # (1-D: nonzero, not flatnonzero's wrappers, in this loop)
            found[rows, k] = counts[rows, target[rows] - v]
            counts[rows, v:] += counts[rows, : max_t + 1 - v]
        weights[live] = found
    weights = np.where(equal[:, None], mask.astype(np.float64), weights)
    # weighted draw (Efraimidis-Spirakis); the cards of weight 0 get -1, so their power is skipped (x ** 1e300 takes
    # libm's slow path: it was most of this function's time)
    keys = rng.random(weights.shape) ** np.where(weights > 0, 1.0 / np.maximum(weights, 1e-300), 1.0)
    keys[weights <= 0] = -1.0
    return keys.argmax(axis=1)


_DECK_ARRAYS: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}


def _deck_arrays(deck: Deck) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(value, rank) of every card id, cached per deck."""
    if deck.name not in _DECK_ARRAYS:
        _DECK_ARRAYS[deck.name] = (deck.value.astype(np.int64), deck.rank.astype(np.int64))
    return _DECK_ARRAYS[deck.name]


_MIX = MIX2
_COLUMNS = np.arange(1, 257, dtype=np.uint64) * GOLDEN


_M64 = (1 << 64) - 1
_GOLDEN_INT, _MIX1_INT, _MIX2_INT = int(GOLDEN), int(MIX1), int(MIX2)
"""``shuffle``'s SplitMix64 constants as Python ints, for the one-position path (Python ints are faster there)."""
_SUB_STREAM = 0xC4A5E
"""What a subset of rows' keys are xor-ed with (``PositionStreams.rows``: CHOOSE-phase picks draw apart)."""


def _splitmix_int(x: int) -> int:
    """``shuffle.splitmix64`` on one Python int (the same bits)."""
    z = (x + _GOLDEN_INT) & _M64
    z = ((z ^ (z >> 30)) * _MIX1_INT) & _M64
    z = ((z ^ (z >> 27)) * _MIX2_INT) & _M64
    return z ^ (z >> 31)


def position_key(key: int, seed: int, parts: Sequence[int]) -> int:
    """``PositionStreams``' key of one game alone in its position, in Python ints: the agent's ``key``, the game's
    ``seed`` and ``parts`` = (hand_no, deal_no, stock_pos, cards in all hands, cards picked, phase, seat to act)."""
    h = _splitmix_int((seed ^ key) & _M64)
    for part in parts:
        h = _splitmix_int(h ^ (((part + 1) * _GOLDEN_INT) & _M64))
    return h


def position_random(h: int, call: int, width: int, sub: bool = False) -> list[float]:
    """Row ``h``'s numbers of ``PositionStreams.random`` at its ``call``-th call (1 the first), as Python floats;
    ``sub``: of the stream ``rows`` gives (the CHOOSE picks')."""
    if sub:
        h ^= _SUB_STREAM
    base = _splitmix_int((h + call * _GOLDEN_INT) & _M64)
    out = []
    for j in range(1, width + 1):
        z = (base + j * _GOLDEN_INT) & _M64
        z = ((z ^ (z >> 31)) * _MIX2_INT) & _M64
        z ^= z >> 29
        out.append((z >> 11) * 2.0**-53)
    return out


_BYTES = np.uint64(0x0101010101010101)


def _count_true(rows: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
    """(n,) the True entries of each row of a C-contiguous (n, w) bool array (``np.count_nonzero(rows, axis=1)``):
    with w a multiple of 8 and below 256, as sums of 8-byte words whose bytes are then added up."""
    w = rows.shape[1]
    if w % 8 or w >= 256 or not rows.flags.c_contiguous:
        return np.count_nonzero(rows, axis=1).astype(np.uint64)
    with np.errstate(over="ignore"):
        words = rows.view(np.uint64).sum(axis=1, dtype=np.uint64)  # each byte: a count below 256
        return (words * _BYTES) >> np.uint64(56)  # the top byte: the sum of the bytes (w < 256)


class PositionStreams:
    """Random numbers keyed by position: row ``i`` of ``random((n, width))`` is a pure function of a key, game
    ``games[i]``'s seed and where that game stands (hand, deal, cards left in the hands, picks, phase, seat to act),
    hashed with SplitMix64 like the deal's shuffle. A policy drawing from it decides a game the same way whichever
    games share its batch, and in whatever order the batches come.

    A stand-in for ``np.random.Generator`` in ``uniform_legal`` and ``uniform_capture_picks``: build one per call
    (``PositionStreams(key, state, games)``); each ``random`` call of the same rows draws fresh numbers.
    """

    def __init__(self, key: np.uint64, state: State, games: npt.NDArray[np.intp]) -> None:
        g = np.asarray(games, dtype=np.intp)
        n = g.size
        parts = np.empty((7, n), dtype=np.uint64)  # hand, deal, stock, cards in hands, cards picked, phase, seat
        parts[0] = state.hand_no[g]
        parts[1] = state.deal_no[g]
        parts[2] = state.stock_pos[g]
        parts[3] = _count_true(state.hands[g].reshape(n, -1))
        parts[4] = _count_true(state.picked[g])
        parts[5] = state.phase[g]
        parts[6] = state.current[g]
        with np.errstate(over="ignore"):
            parts += np.uint64(1)
            parts *= GOLDEN
            h = splitmix64(state.seed[g].astype(np.uint64) ^ np.uint64(key))
            for part in parts:
                h = splitmix64(h ^ part)
            # rows at the very same position of the same deal (copies of one state) count off 0, 1, 2, ... in row
            # order, so copies draw independently; a game alone in its position (the usual case) is occurrence 0
            ordered = np.sort(h)
            if n > 1 and (ordered[1:] == ordered[:-1]).any():
                _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
                order = np.argsort(inverse, kind="stable")
                occurrence = np.empty(h.size, dtype=np.uint64)
                occurrence[order] = (np.arange(h.size) - (np.cumsum(counts) - counts)[inverse[order]]).astype(np.uint64)
                h = np.where(occurrence > 0, splitmix64(h ^ occurrence * _MIX), h)
        self.keys = h
        self.calls = np.uint64(0)

    def random(self, shape: tuple[int, int]) -> npt.NDArray[np.float64]:
        n, width = shape
        if n != self.keys.size:
            raise ValueError(f"PositionStreams holds {self.keys.size} rows, asked for {n}")
        self.calls += np.uint64(1)
        with np.errstate(over="ignore"):
            base = splitmix64(self.keys + self.calls * GOLDEN)  # a well-mixed key per row and call
            z = base[:, None] + _COLUMNS[:width][None, :]  # one cheap mixing round per column (a Weyl step apart)
            t = z >> np.uint64(31)  # z = (z ^ (z >> 31)) * _MIX; z ^= z >> 29, in place
            z ^= t
            z *= _MIX
            np.right_shift(z, np.uint64(29), out=t)
            z ^= t
            np.right_shift(z, np.uint64(11), out=z)
        out = z.astype(np.float64)
        out *= 2.0**-53
        return out

    def rows(self, rows: npt.NDArray[np.intp]) -> PositionStreams:
        """The streams of a subset of the rows (the same keys; its draws differ from this one's)."""
        sub = PositionStreams.__new__(PositionStreams)
        sub.keys = self.keys[rows] ^ np.uint64(_SUB_STREAM)
        sub.calls = np.uint64(0)
        return sub


class RandomAgent(Policy):
    """Uniform over legal cards and over captures (no memory, no observation needed).

    With the state (the driver, the envs), each game's draws come from its own position-keyed stream
    (``PositionStreams``, keyed by the agent's seed): the same seed plays a game the same way whether it is played
    alone or in a batch of any size. Without the state, draws come from the agent's generator."""

    name = "random"
    needs_state = True
    needs_obs = False

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        self.key = np.uint64(self.rng.integers(0, 2**63, dtype=np.int64)) ^ np.uint64(0x5EED5)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        if batch.state is None or batch.games is None:
            return uniform_legal(batch.mask, self.rng)  # without the state, CHOOSE picks are uniform over the mask
        streams = PositionStreams(self.key, batch.state, batch.games)
        actions = uniform_legal(batch.mask, cast(np.random.Generator, streams))
        rows = np.flatnonzero(batch.state.phase[batch.games] == Phase.CHOOSE)
        if rows.size and not batch.rules.fifteens:  # cirulla's fifteens: picks stay uniform over the legal mask
            actions[rows] = uniform_capture_picks(
                batch.rules,
                batch.state,
                batch.games[rows],
                batch.mask[rows],
                cast(np.random.Generator, streams.rows(rows)),
            )
        return actions


SpecResolver = Callable[[str, Rules, "int | None"], Policy]
"""``resolver(spec, rules, seed) -> Policy``: turns an agent spec string into a policy (``agents.base.make_agent``)."""
_resolver: SpecResolver | None = None
ENTRY_POINT_GROUP = "scopa.policy_resolvers"


def set_spec_resolver(resolver: SpecResolver | None) -> None:
    """Register the function that builds policies from spec strings (the ``agents`` package does on import)."""
    global _resolver
    _resolver = resolver


def _find_resolver() -> SpecResolver | None:
    if _resolver is None:  # not imported yet: an installed package may offer one
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                set_spec_resolver(ep.load())
            except ImportError:  # the package that offers it is not importable here: "random" only
                continue
            break
    return _resolver


def resolve_policy(spec: str | Policy, rules: Rules | str, seed: int | None = None, what: str = "policy") -> Policy:
    """A ``Policy`` for ``rules`` from a policy (returned as is) or a spec string."""
    rules = get_rules(rules)
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"{what} must be a scopa_env.games.policy.Policy or an agent spec string such as 'random', "
            f"got {type(spec).__name__}"
        )
    resolver = _find_resolver()
    if resolver is None:
        if spec.strip() == "random":
            return RandomAgent(rules, seed)
        raise ValueError(
            f"{what} {spec!r}: agent specs other than 'random' are built by the agents package; install the "
            "project (pip install .) or import agents first, or pass a Policy object"
        )
    return resolver(spec, rules, seed)
