"""The agents' compiled search: its face. The compiled functions (``agents.search.kernel_search``, numba) run the
searches' worlds, max^n trees and greedy rollouts on the single-game kernel (``scopa_env.engine.kernel``); here they
are loaded (``jit``), and called on the batched core's ``State`` (``kernel_search_tree``, ``kernel_rollout``,
``kernel_sampled_search``: ``lookahead.move_margins`` uses them whenever the rollout policy is greedy, the end game
(``agents.search.endgame``) and the review always).

``jit()`` compiles the kernel (``kernel.jit``) and then the search, once per install, each with its progress line,
and caches both on disk; ``make setup`` and ``make test`` run it, so that no later command compiles. numba keys the
search's cache on ``kernel_search.py`` alone, but the search compiles the kernel's functions into itself: its cache
goes when one of ``COMPILED_WITH``'s sources is newer (``kernel.drop_stale_cache``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.baselines.features import DEFAULT_WEIGHTS, card_weights
from agents.baselines.table_eval import feature_tables, static_lookup
from scopa_env.engine import kernel
from scopa_env.engine.core import Phase, State
from scopa_env.engine.kernel import Kernel, kernel_for, pack_states
from scopa_env.rules import Rules, get_rules

__all__ = [
    "KernelMoves",
    "deal_worlds",
    "greedy_tables",
    "jit",
    "kernel_rollout",
    "kernel_sampled_search",
    "kernel_search_tree",
    "unpack_cards",
]

_HERE = os.path.dirname(os.path.abspath(__file__))
_SCOPA_ENV = os.path.dirname(os.path.dirname(os.path.abspath(kernel.__file__)))
COMPILED_WITH = {
    "kernel_search": tuple(
        os.path.join(_SCOPA_ENV, *p.split("/"))
        for p in (
            "engine/_kernel_jit.py",
            "engine/_kernel_observe.py",
            "engine/_kernel_calls.py",
            "engine/_kernel_layout.py",
            "rules/shuffle.py",
            "rules/moves.py",
        )
    )
}
"""The search's compiled module and the sources numba compiles into it (the kernel's functions, the layout's
offsets, SplitMix64, ``MoveKind``), as paths."""
COMPILE_SECONDS = 35
"""About how long the search's first compile takes on a quiet 2-core machine (see ``kernel.COMPILE_SECONDS``), in
seconds (measured: 30-34 s of CPU, alone or beside two trainings)."""
WARM_UP_STEPS = {
    ("classic", "end game"): 0.78,
    ("classic", "search"): 0.22,
    ("cirulla", "end game"): 0.0,  # cirulla's calls have classic's argument types: nothing more compiles
    ("cirulla", "search"): 0.0,
}
"""The search's warm-up steps (``_warm_up``'s ticks, in order) and each one's share of a cold compile (measured
with the kernel: 141 and 41 s of 182 s)."""

_JIT: ModuleType | None = None


def jit() -> ModuleType:
    """The kernel's compiled functions and constants (``kernel.jit``) and the search's (``kernel_search``) in one
    namespace, compiled on first use (each with its progress line on stderr), then loaded from the disk cache;
    ``KernelUnavailableError`` if they cannot be."""
    global _JIT
    if _JIT is not None:
        return _JIT
    engine = kernel.jit()

    def parts() -> list[ModuleType]:
        import agents.search.kernel_search as search_part

        return [engine, search_part]

    _JIT = compiled = kernel.load_or_compile(
        "agents.search.compiled.compiled",
        parts,
        _warm_up,
        "search",
        module="kernel_search",
        places=kernel.cache_places(_HERE),
        compiled_with=COMPILED_WITH,
        new_progress=lambda: kernel.CompileProgress(sys.stderr, "the numba search", COMPILE_SECONDS, WARM_UP_STEPS),
    )
    return compiled


def _warm_up(mod: ModuleType, tick: Callable[[tuple[str, str]], None] = lambda step: None) -> None:
    """Compile (or load) every search entry point that Python calls, with its callers' argument types, on an end game
    of classic and one of cirulla (``tests/test_kernel_warmup.py`` checks that the commands' paths add no signature).
    ``tick(name)`` after each step (``WARM_UP_STEPS``)."""
    for name in ("classic", "cirulla"):
        k = Kernel(get_rules(name), mod)
        rc, pc = k.rc, k.pc
        st = kernel.warm_up_position(k)
        moves = np.zeros((mod.MAX_MOVES, 6), dtype=np.int64)
        values = np.zeros((mod.MAX_MOVES, mod.SMAX))
        mod.solve_root(rc, pc, st, moves, values)
        acts, margins = np.zeros((1, mod.MAX_MOVES), np.int64), np.zeros((1, mod.MAX_MOVES))
        mod.solve_open_batch(rc, pc, st[None], acts, margins, np.zeros(1, np.int64))
        tick((name, "end game"))
        r, d = k.rules.deck.num_ranks, k.rules.num_cards
        greedy = (np.zeros(d), np.zeros(r * 50), np.zeros(r * 10), np.full((len(pc), 1), -1), np.ones(2))
        mod.deal_worlds(rc, st, np.zeros((2, d)), np.zeros((2, mod.STATE_SIZE), dtype=np.int64))
        mod.rollout_many(rc, pc, st[None].copy(), np.zeros((1, mod.SMAX)), greedy)
        one = np.ones(1, dtype=np.int64)
        mod.search_worlds(rc, pc, st[None], one, moves[None], values[None], one.copy(), greedy)
        tick((name, "search"))


@dataclass
class KernelMoves:
    """The root candidates of ``kernel_search_tree`` (``Moves``' fields that the searches read)."""

    row: npt.NDArray[np.intp]
    """(m,) the world of each candidate."""
    card: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    part: npt.NDArray[np.intp]
    capture_bits: npt.NDArray[np.int64]
    """(m,) the table cards each candidate captures, as bit masks."""
    scopa: npt.NDArray[np.bool_]
    starts: npt.NDArray[np.intp]
    """(n + 1,) segment offsets."""
    num_cards: int

    def __len__(self) -> int:
        return int(self.row.size)

    def captures(self, idx: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """(k, D) the table cards captured by candidates ``idx``."""
        bits = self.capture_bits[np.asarray(idx, dtype=np.intp).reshape(-1)]
        return ((bits[:, None] >> np.arange(self.num_cards)[None, :]) & 1).astype(np.bool_)

    @property
    def capture(self) -> npt.NDArray[np.bool_]:
        """(m, D) the table cards captured by every candidate."""
        return self.captures(np.arange(len(self)))


_GREEDY_TABLES: dict[Rules, tuple[npt.NDArray[Any], ...]] = {}


def greedy_tables(rules: Rules) -> tuple[npt.NDArray[Any], ...]:
    """The greedy rollout policy's weights as the kernel reads them: (w, lk, lkt, pflat, knobs)."""
    out = _GREEDY_TABLES.get(rules)
    if out is None:
        w = np.array(card_weights(rules), dtype=np.float64)  # a writable copy: numba types read-only arrays apart
        lk, lkt = static_lookup(rules, w)
        ft = feature_tables(rules)
        pflat = np.where(ft.p_flat == rules.deck.num_ranks * 5, -1, ft.p_flat).astype(np.int64)
        knobs = np.array([DEFAULT_WEIGHTS.lay, DEFAULT_WEIGHTS.scopa], dtype=np.float64)
        out = _GREEDY_TABLES[rules] = (w, lk.reshape(-1).copy(), lkt.reshape(-1).copy(), pflat, knobs)
    return out


_BUFFERS = threading.local()
"""Each thread's output buffers of ``kernel_search_tree`` (big, so kept between calls rather than allocated)."""


def _search_buffers(nw: int, width: int, sides: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(nw, width, 6) int64 and (nw, width, sides) float64 views of this thread's buffers (grown as needed)."""
    moves: npt.NDArray[np.int64] | None = getattr(_BUFFERS, "moves", None)
    values: npt.NDArray[np.float64] | None = getattr(_BUFFERS, "values", None)
    if moves is None or values is None or moves.shape[0] < nw:
        moves = _BUFFERS.moves = np.empty((nw, width, 6), dtype=np.int64)
        values = _BUFFERS.values = np.empty((nw, width, sides))
    return moves[:nw], values[:nw]


def kernel_search_tree(
    rules: Rules, roots: State, limits: npt.NDArray[np.intp]
) -> tuple[KernelMoves, npt.NDArray[np.float64]]:
    """``search_tree`` with the greedy rollout policy, on the compiled kernel (``kernel_search``): the same
    root candidates, the same max^n with the same tie-breaks and the same greedy rollouts, world by world."""
    return _kernel_search(rules, pack_states(rules, roots, np.arange(roots.batch_size)), limits)


def kernel_rollout(rules: Rules, state: State) -> npt.NDArray[np.float64]:
    """``rollout(rules, state, greedy_moves)``'s points on the compiled kernel, leaving ``state`` as it was (the
    games are played out on copies): (B, S) hand points, 0 for games already over. Every running game must be in
    the PLAY or KNOCK phase (no capture being chosen)."""
    if (state.phase == Phase.CHOOSE).any():
        raise ValueError("kernel_rollout: a game is choosing a capture (CHOOSE phase); finish its move first")
    k = kernel_for(rules)
    states = pack_states(rules, state, np.arange(state.batch_size))
    points = np.zeros((state.batch_size, rules.num_sides))
    jit().rollout_many(k.rc, k.pc, states, points, greedy_tables(rules))
    return points


def deal_worlds(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.ArrayLike,
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """The worlds of ``lookahead.sample_worlds`` as kernel games, dealt by the kernel (``kernel_search.deal_worlds``)
    from one draw of ``rng`` (``rng.random((worlds, D))``, none for no world): ``counts[i]`` worlds of game
    ``games[i]``, contiguous. Returns them (worlds, STATE_SIZE) and each world's row in ``games``."""
    k = kernel_for(rules)
    m = jit()
    games = np.asarray(games, dtype=np.intp)
    counts = np.broadcast_to(np.asarray(counts, dtype=np.intp), games.shape)
    wrow = np.repeat(np.arange(games.size), counts)
    nw = wrow.size
    worlds = np.empty((nw, m.STATE_SIZE), dtype=np.int64)
    if nw:
        keys = rng.random((nw, rules.num_cards))
        packed = pack_states(rules, state, games)
        at = 0
        for i, c in enumerate(counts.tolist()):
            if c and not m.deal_worlds(k.rc, packed[i], keys[at : at + c], worlds[at : at + c]):
                raise RuntimeError(
                    "sample_worlds: unseen cards do not match hand sizes plus stock; the state is inconsistent"
                )
            at += c
    return worlds, wrow


def unpack_cards(bits: npt.NDArray[np.int64], num_cards: int) -> npt.NDArray[np.bool_]:
    """(...) int64 card bit masks -> (..., D) bool card sets (``pack_states``' reverse for one field)."""
    return ((bits[..., None] >> np.arange(num_cards)) & 1).astype(np.bool_)


def kernel_sampled_search(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    counts: npt.NDArray[np.intp],
    limits: npt.NDArray[np.intp],
    rng: np.random.Generator,
) -> tuple[KernelMoves, npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """``sample_worlds`` then ``kernel_search_tree``, both on the kernel: the worlds (``deal_worlds``) stay kernel
    games. Returns the root candidates, their values and each world's row in ``games``."""
    worlds, wrow = deal_worlds(rules, state, games, counts, rng)
    moves, values = _kernel_search(rules, worlds, np.asarray(limits)[wrow])
    return moves, values, wrow


def _kernel_search(
    rules: Rules, states: npt.NDArray[np.int64], limits: npt.NDArray[np.intp]
) -> tuple[KernelMoves, npt.NDArray[np.float64]]:
    """``kernel_search_tree`` of worlds already in the kernel's form (one row each)."""
    k = kernel_for(rules)
    m = jit()
    nw = states.shape[0]
    moves, values = _search_buffers(nw, m.MAX_MOVES, m.SMAX)  # the kernel fills what is read back
    counts = np.zeros(nw, dtype=np.int64)
    lim = np.asarray(limits, dtype=np.int64)
    m.search_worlds(k.rc, k.pc, states, lim, moves, values, counts, greedy_tables(rules))
    row = np.repeat(np.arange(nw, dtype=np.intp), counts)
    keep = np.arange(m.MAX_MOVES)[None, :] < counts[:, None]
    flat = moves[keep]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.intp)
    km = KernelMoves(
        row=row,
        card=flat[:, 0].copy(),
        kind=flat[:, 1].astype(np.int8),
        part=flat[:, 2].astype(np.intp),
        capture_bits=flat[:, 3].copy(),
        scopa=flat[:, 4].astype(np.bool_),
        starts=starts,
        num_cards=rules.num_cards,
    )
    return km, values[keep][:, : rules.num_sides].copy()
