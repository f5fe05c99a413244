"""The compiled single-game kernel: one game of any variant (cirulla's included) as a small int64 array of bit masks,
with legal actions, step, scoring, plies left and observations compiled by numba (``scopa_env.engine._kernel_jit``: the
rules; ``_kernel_observe``: the observation; ``_kernel_calls``: the envs' fused calls, the random player, the plies
left and the open book).

It serves everything that plays one game, or many small branching games, at a time:
``scopa_env.engine.single.SingleGame`` (the AEC / parallel / Gymnasium envs, the web and terminal games), and the
agents' compiled search (``agents.search.compiled``: candidates, greedy rollouts, max^n, worlds, the exact end game),
which compiles on the public functions of ``_kernel_jit`` and ``_kernel_calls`` and loads itself with this module's
means (``cache_places``, ``drop_stale_cache``, ``CompileProgress``, ``warm_up_position``). The batched numpy core
(``scopa_env.engine.core``) stays the engine of the vector env and of batched play; ``tests/test_kernel.py`` checks
the two move for move, mask for mask, observation for observation and score for score on every variant (and
``scopa_env.oracle.reference``, the plain oracle, against both).

The compiled code is cached on disk (numba's ``cache=True``, in ``scopa_env/engine/__pycache__`` or in
``NUMBA_CACHE_DIR``): the first use after an install compiles it once (a line on stderr says so), later processes
load it. ``kernel_for(rules)`` raises ``KernelUnavailableError`` (what to install) when numba is missing or the
compilation fails.

    k = kernel_for("classic")
    st = k.new_state(seed=7)             # (STATE_SIZE,) int64
    k.step(st, int(k.legal_list(st)[0]))
"""

from __future__ import annotations

import glob
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import IO, Any

import numpy as np
import numpy.typing as npt

try:
    import fcntl
except ImportError:  # not on Windows: no lock, each process compiles what the cache lacks
    fcntl = None  # type: ignore[assignment]

from scopa_env.errors import ScopaEnvError
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.captures import partitions
from scopa_env.rules.cards import parse_card
from scopa_env.rules.moves import FIFTEEN_TOTAL, MAX_PER_RANK, move_tables
from scopa_env.rules.scoring import GRANDE, NAPOLI_RUN, point_fields
from scopa_env.rules.variant import hook_class

__all__ = [
    "CompileProgress",
    "Kernel",
    "KernelUnavailableError",
    "cache_places",
    "cached_already",
    "compile_namespace",
    "drop_stale_cache",
    "jit",
    "kernel_for",
    "load_or_compile",
    "pack_states",
    "warm_up_position",
]

_JIT: ModuleType | None = None


class KernelUnavailableError(ScopaEnvError, RuntimeError):
    """The compiled kernel cannot be loaded: numba is missing, or compiling failed."""


def cache_places(folder: str | None = None) -> list[str]:
    """Where numba keeps the disk cache of the compiled modules in ``folder`` (default: this one's): ``NUMBA_CACHE_DIR``
    when set (numba then uses it alone), else beside the modules (``folder/__pycache__``) or, where that cannot be
    written, the user-wide cache."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return [os.environ["NUMBA_CACHE_DIR"]]
    here = folder if folder is not None else os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "__pycache__"), os.path.expanduser(os.path.join("~", ".cache", "numba"))]


def cached_already(module: str, places: list[str]) -> bool:
    """Whether numba's disk cache of the compiled module ``module`` (its name, without the package) exists in one of
    ``places`` (so loading it will not compile)."""
    return any(glob.glob(os.path.join(p, "**", f"{module}.*.nbi"), recursive=True) for p in places)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``scopa_env`` package's folder."""
_RULES = ("engine/_kernel_layout.py", "rules/shuffle.py")
COMPILED_WITH = {
    "_kernel_jit": tuple(os.path.join(_PACKAGE, p) for p in _RULES),
    "_kernel_observe": tuple(os.path.join(_PACKAGE, p) for p in ("engine/_kernel_jit.py", *_RULES)),
    "_kernel_calls": tuple(
        os.path.join(_PACKAGE, p) for p in ("engine/_kernel_jit.py", "engine/_kernel_observe.py", *_RULES)
    ),
}
"""Each compiled module of the kernel and the other sources numba compiles into it (their functions and constants),
as paths."""


def drop_stale_cache(places: list[str] | None = None, compiled_with: dict[str, tuple[str, ...]] | None = None) -> int:
    """Remove a compiled module's disk cache where it is older than a source compiled into it; how many files went.
    ``compiled_with``: each module's name and those sources' paths (default: the kernel's, ``COMPILED_WITH``);
    ``places``: where to look (default: ``cache_places()``).

    numba keys a module's cache on that module's file alone, but the kernel's modules compile the rules' functions
    into themselves (and the agents' search compiles the kernel's), and all compile the layout's offsets and
    SplitMix64 (``shuffle.mix64``): after a change of those alone, the cache would still hold the old code.
    """
    removed = 0
    for module, sources in (COMPILED_WITH if compiled_with is None else compiled_with).items():
        try:
            changed = max(os.path.getmtime(src) for src in sources)
        except OSError:
            continue
        for place in cache_places() if places is None else places:
            for index in glob.glob(os.path.join(place, "**", f"{module}.*.nbi"), recursive=True):
                try:
                    if os.path.getmtime(index) >= changed:
                        continue
                    folder = os.path.dirname(index)
                    for f in glob.glob(os.path.join(folder, f"{module}.*.nb[ic]")):
                        os.remove(f)
                        removed += 1
                except OSError:  # another process got there first, or a read-only cache: numba recompiles as needed
                    continue
    return removed


def jit() -> ModuleType:
    """The compiled functions (``scopa_env.engine._kernel_jit``, ``_kernel_observe`` and ``_kernel_calls``, with the
    layout's offsets of ``scopa_env.engine._kernel_layout``, in one namespace), compiled on first use, then loaded from
    the disk cache."""
    global _JIT
    if _JIT is not None:
        return _JIT
    try:
        import numba  # noqa: F401
    except ImportError as e:
        raise KernelUnavailableError(
            "scopa's single-game kernel is compiled with numba, which is not installed "
            f"({e}); install it with `pip install numba` (or reinstall scopa: `pip install -e .`)"
        ) from None

    def parts() -> list[ModuleType]:
        import scopa_env.engine._kernel_calls as calls_part
        import scopa_env.engine._kernel_jit as rules_part
        import scopa_env.engine._kernel_layout as layout
        import scopa_env.engine._kernel_observe as observe_part

        return [layout, rules_part, observe_part, calls_part]

    _JIT = compiled = load_or_compile(
        "scopa_env.engine.kernel.compiled",
        parts,
        _warm_up,
        "single-game kernel",
        module="_kernel_calls",
        places=cache_places(),
        compiled_with=COMPILED_WITH,
        new_progress=lambda: CompileProgress(sys.stderr),
    )
    return compiled


def load_or_compile(
    name: str,
    parts: Callable[[], list[ModuleType]],
    warm_up: Callable[[ModuleType, Callable[[tuple[str, str]], None]], None],
    what: str,
    *,
    module: str,
    places: list[str],
    compiled_with: dict[str, tuple[str, ...]],
    new_progress: Callable[[], CompileProgress],
) -> ModuleType:
    """``compile_namespace`` with the disk cache's lock: load the compiled module ``module`` from the cache in
    ``places`` (its stale files dropped first, by ``compiled_with``), or compile it with ``new_progress()`` ticking
    where the cache does not hold it. The kernel's (``jit``) and the agents' search's (``agents.search.compiled.jit``).

    Processes started together on a fresh install (the test suite's workers, ``evaluate.py --workers``, Ray workers, a
    command beside ``make setup``) would each compile the same code, and one could load a cache another is writing.
    So one compiles while holding the cache's lock (an exclusive ``flock`` on ``<module>.compile.lock`` in the first
    writable place), and the others, which load under a shared lock, wait for it with a line on stderr, then load what
    it wrote. Where no place can hold a lock file (or without ``fcntl``), each process goes on alone, as numba would."""
    lock = _lock_file(places, module)
    try:
        _flock(lock, "shared", what)
        drop_stale_cache(places, compiled_with)
        progress = None
        if not cached_already(module, places):
            _flock(lock, "exclusive", what)
            if not cached_already(module, places):  # else another process compiled it while this one waited
                progress = new_progress()
        return compile_namespace(name, parts, warm_up, progress, what)
    finally:
        if lock is not None:
            lock.close()  # releases the lock


def _lock_file(places: list[str], module: str) -> IO[str] | None:
    """``<module>.compile.lock`` opened in the first of ``places`` where it can be, or None."""
    if fcntl is None:
        return None
    for place in places:
        try:
            os.makedirs(place, exist_ok=True)
            return open(os.path.join(place, f"{module}.compile.lock"), "a")  # closed by the caller
        except OSError:
            continue
    return None


def _flock(lock: IO[str] | None, kind: str, what: str) -> None:
    """Take the ``kind`` ("shared" or "exclusive") lock on ``lock``, saying on stderr when it has to wait."""
    if lock is None or fcntl is None:
        return
    op = fcntl.LOCK_SH if kind == "shared" else fcntl.LOCK_EX
    try:
        fcntl.flock(lock, op | fcntl.LOCK_NB)
    except BlockingIOError:
        print(
            f"scopa: another process is compiling (or loading) the {what}; waiting for it, then loading it from the "
            "disk cache",
            file=sys.stderr,
            flush=True,
        )
        fcntl.flock(lock, op)


def compile_namespace(
    name: str,
    parts: Callable[[], list[ModuleType]],
    warm_up: Callable[[ModuleType, Callable[[tuple[str, str]], None]], None],
    progress: CompileProgress | None,
    what: str,
) -> ModuleType:
    """The compiled modules ``parts()`` in one namespace (``name``), warmed up (``warm_up(namespace, tick)``, which
    compiles or loads them) with ``progress`` ticking (None: the disk cache holds them, nothing to show); raises
    ``KernelUnavailableError`` naming ``what`` if numba fails. The kernel's (``jit``) and the agents' search's."""
    try:
        compiled = ModuleType(name, f"The {what}'s compiled functions and constants.")
        for part in parts():
            compiled.__dict__.update((k, v) for k, v in vars(part).items() if not k.startswith("__"))
        warm_up(compiled, progress.tick if progress is not None else lambda step: None)
    except Exception as e:  # numba's errors: typing, lowering, a cache directory that cannot be written...
        raise KernelUnavailableError(
            f"scopa's {what} could not be compiled by numba ({type(e).__name__}: {e}); check that numba "
            "matches the installed numpy (`pip install -U numba`), or set NUMBA_CACHE_DIR to a writable directory"
        ) from e
    if progress is not None:
        progress.done()
    return compiled


COMPILE_SECONDS = 30
"""About how long the first compile takes on a quiet 2-core machine (the project's development VM), in seconds: the
estimate shown before a step is done (measured: 24-25 s of CPU, alone or beside two trainings; 35 s before the
kernel's calls passed their constants as plain values, ``_kernel_jit``'s docstring)."""
WARM_UP_STEPS = {
    ("classic", "observations"): 0.38,
    ("classic", "random play"): 0.52,
    ("classic", "moves"): 0.10,
    ("cirulla", "observations"): 0.0,  # cirulla's calls have classic's argument types: nothing more compiles
    ("cirulla", "random play"): 0.0,
    ("cirulla", "moves"): 0.0,
}
"""The warm-up's steps (``_warm_up``'s ticks, in order) and each one's share of a cold compile's time (measured on
the development machine: 9.6, 13.3 and 2.5 s of CPU of 25.4 s): the progress line's fraction done."""


class CompileProgress:
    """The first compile's progress on ``out``: what is happening (``what``) and about how long it takes
    (``seconds``), then the fraction done with the time left (estimated from the time the steps done so far took, by
    the shares of ``steps``). On a terminal one line redrawn in place; elsewhere (a log, a pipe) a line every
    ``LINE_S`` seconds. The kernel's (``jit``) and the agents' search's (``agents.search.compiled.jit``)."""

    LINE_S = 15.0

    def __init__(
        self,
        out: Any,
        what: str = "the numba kernel",
        seconds: float = COMPILE_SECONDS,
        steps: dict[tuple[str, str], float] | None = None,
    ) -> None:
        self.out = out
        self.what, self.seconds = what, seconds
        self.steps = WARM_UP_STEPS if steps is None else steps
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.t0 = self.last = time.perf_counter()
        self.fraction = 0.0
        self._print(
            f"scopa: compiling {what} once, about {_clock(seconds)} on a quiet 2-core machine (more "
            "when it is busy); it is cached on disk, later runs load it in about a second",
            end="\n",
        )

    def _print(self, text: str, end: str) -> None:
        print(text, end=end, file=self.out, flush=True)

    def tick(self, step: tuple[str, str]) -> None:
        """One warm-up step done: (variant, step), a key of the steps' shares."""
        self.fraction = min(1.0, self.fraction + self.steps[step])
        now = time.perf_counter()
        elapsed = now - self.t0
        left = elapsed * (1 - self.fraction) / self.fraction if self.fraction > 0 else self.seconds - elapsed
        text = (
            f"scopa: compiling {self.what}: {100 * self.fraction:3.0f}%, {_clock(elapsed)}, about {_clock(left)} left"
        )
        if self.tty:
            self._print("\r" + text, end="")
        elif now - self.last >= self.LINE_S:
            self.last = now
            self._print(text, end="\n")

    def done(self) -> None:
        text = f"scopa: compiled {self.what} in {_clock(time.perf_counter() - self.t0)}"
        self._print(("\r" + text + " " * 20) if self.tty else text, end="\n")


def _clock(seconds: float) -> str:
    """``m:ss``."""
    s = max(0, round(seconds))
    return f"{s // 60}:{s % 60:02d}"


def warm_up_position(k: Kernel, seed: int = 11) -> npt.NDArray[np.int64]:
    """A game of the kernel ``k`` played from the deal of ``seed`` (its lowest legal action each time, with
    ``play`` and ``step``) to a move with at most 3 plies left in the hand: a small end game for the warm-ups."""
    mod = k.mod
    st = k.new_state(seed)
    info = np.zeros(mod.INFO_SIZE, dtype=np.int64)
    while mod.remaining_plies(k.rc, st) > 3 or st[mod.PHASE] not in (mod.PLAY, mod.CHOOSE):
        mod.play(k.rc, k.pc, st, mod.lowbit(mod.legal_bits(k.rc, k.pc, st)), info)
    mod.step(k.rc, k.pc, st, mod.lowbit(mod.legal_bits(k.rc, k.pc, st)), info)
    if st[mod.PHASE] not in (mod.PLAY, mod.CHOOSE):  # the deal of seed 11 leaves a move to search in both
        raise RuntimeError("kernel warm-up: the game ended before its end game")
    return st


def _warm_up(mod: ModuleType, tick: Callable[[tuple[str, str]], None] = lambda step: None) -> None:
    """Compile (or load) every entry point that Python calls, with the argument types its callers pass, on one game
    of classic and one of cirulla, so that no later call compiles (``tests/test_kernel_warmup.py`` plays the commands'
    paths and checks that none adds a signature). ``tick(name)`` after each step (``WARM_UP_STEPS``). The agents'
    search warms its own functions up (``agents.search.compiled``)."""
    for name in ("classic", "cirulla"):
        k = Kernel(get_rules(name), mod)
        rc, pc = k.rc, k.pc
        st = k.new_state(11)
        info = np.zeros(mod.INFO_SIZE, dtype=np.int64)
        out = np.zeros(k.obs_size, dtype=np.float32)
        mask8, mask = np.zeros(k.rules.num_actions, np.int8), np.zeros(k.rules.num_actions, np.bool_)
        mod.observe(rc, st, int(st[mod.CURRENT]), out)
        mod.observe_masked(rc, pc, st, int(st[mod.CURRENT]), out, True, mask8)
        tick((name, "observations"))
        mod.position_key(rc, st, 1)
        mod.play_random(rc, pc, st.copy(), 1, 0, info, True)
        # the single-game face's fused calls (scopa_env.engine.single: the AEC env's step, ScopaEnv's random opponents)
        mod.play_observed(rc, pc, st.copy(), int(mod.lowbit(mod.legal_bits(rc, pc, st))), info, 1, out, mask8)
        wide = np.zeros(2 * mod.INFO_SIZE, dtype=np.int64)
        mod.play_then_random(
            rc, pc, st.copy(), int(mod.lowbit(mod.legal_bits(rc, pc, st))), wide, 1, 0, out, mask, True
        )
        tick((name, "random play"))
        mod.is_open(rc, st)
        for dtype in (np.bool_, np.int8):
            mod.legal_mask(rc, pc, st, np.zeros(k.rules.num_actions, dtype=dtype))
        warm_up_position(k)
        tick((name, "moves"))


def _rules_constants(rules: Rules, mod: ModuleType) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``rc`` (the rules as int64 constants) and ``pc`` (the capture partitions) of a variant; see ``_kernel_jit``."""
    deck = rules.deck
    r, d = deck.num_ranks, deck.num_cards
    family = hook_class(rules)  # the variant family (scopa_env.rules.variant): its flag and its wild card below
    cirulla = family.family == "cirulla"
    rc = np.zeros(mod.RC_SIZE, dtype=np.int64)
    rc[mod.R_N], rc[mod.R_S], rc[mod.R_D], rc[mod.R_R] = rules.num_players, rules.num_sides, d, r
    rc[mod.R_TABLE] = rules.table_cards
    rc[mod.R_NDEALS] = rules.num_deals
    rc[mod.R_TARGET] = rules.target
    flags = (  # the rules' flags as the kernel's table of constants (one int each)
        (mod.R_ACE_ALL, rules.ace_takes_all),
        (mod.R_SIMPLE_PRIM, rules.simple_primiera),
        (mod.R_VOID_KINGS, rules.void_on_kings),
        (mod.R_SHARED, rules.shared_lead_scores),
        (mod.R_FIFTEENS, rules.fifteens),
        (mod.R_KNOCKS, rules.knocks),
        (mod.R_TTAKE, rules.table_take),
        (mod.R_VOID_ACES, rules.void_on_aces),
        (mod.R_NAPOLI, rules.napoli_grande),
        (mod.R_MAJORITY, rules.majority_needed),
        (mod.R_CIRULLA, cirulla),
    )
    for at, on in flags:
        rc[at] = int(bool(on))
    rc[mod.R_SETTE] = deck.settebello
    rc[mod.R_SEVEN] = deck.ranks.index("7")
    rc[mod.R_KING] = deck.king_rank
    rc[mod.R_MATTA] = parse_card(family.matta, deck) if family.matta is not None else 0
    rc[mod.R_MAXHAND] = rules.max_hand_size
    rc[mod.R_NFIELDS] = len(point_fields(rules))
    rc[mod.R_NACTIONS] = rules.num_actions
    rc[mod.R_DEALS : mod.R_DEALS + rules.num_deals] = rules.deal_sizes
    rc[mod.R_SIDE : mod.R_SIDE + rules.num_players] = rules.seat_side
    rc[mod.R_PRIM : mod.R_PRIM + r] = deck.primiera[:r]
    for k in range(r):
        rc[mod.R_RANKMASK + k] = sum(1 << (suit * r + k) for suit in range(4))
    if cirulla:
        rc[mod.R_RUN : mod.R_RUN + len(NAPOLI_RUN)] = [deck.ranks.index(x) for x in NAPOLI_RUN]
        rc[mod.R_NAP : mod.R_NAP + 3] = [deck.ranks.index(x) for x in "A23"]
        rc[mod.R_GRANDE : mod.R_GRANDE + 3] = [deck.ranks.index(x) for x in GRANDE]
    # Partitions: the move tables' (sums by target, then cirulla's fifteens by card value), then the capture
    # table's (every partition of each target 0..R, single parts included) for the CHOOSE-phase look-ups.
    mt = move_tables(rules)
    rows: list[list[int]] = [list(map(int, c)) for c in mt.p_count]
    for t in range(r + 1):
        rc[mod.R_SUM_BEGIN + t] = mt.seg_begin[t] if t < mt.seg_begin.size else len(rows)
        rc[mod.R_SUM_LEN + t] = mt.seg_len[t] if t < mt.seg_len.size else 0
    if rules.fifteens:
        fif = np.arange(mt.num_sum_parts, mt.p_target.size)
        for v in range(1, r + 1):
            seg = fif[mt.p_target[fif] == FIFTEEN_TOTAL - v]
            rc[mod.R_FIF_BEGIN + v] = int(seg[0]) if seg.size else 0
            rc[mod.R_FIF_LEN + v] = seg.size
            if seg.size and not np.array_equal(seg, np.arange(seg[0], seg[0] + seg.size)):
                raise RuntimeError("kernel: the move tables' fifteens of a card value are not contiguous")
    for t in range(r + 1):
        rc[mod.R_LK_BEGIN + t] = len(rows)
        for parts in partitions(t, min(t, r)):
            c = [0] * r
            for p in parts:
                c[p - 1] += 1
            if max(c, default=0) <= MAX_PER_RANK:
                rows.append(c)
        rc[mod.R_LK_LEN + t] = len(rows) - rc[mod.R_LK_BEGIN + t]
    # The move tables' lists of the partitions that fit the ranks present (CSR), after the fixed part of rc.
    blocks = [mt.fit_start.reshape(-1), mt.fit_len.reshape(-1), mt.fit_parts]
    if rules.fifteens:
        blocks += [mt.f_start.reshape(-1), mt.f_len.reshape(-1), mt.f_parts]
    at = mod.RC_SIZE
    slots = (mod.R_FIT_S, mod.R_FIT_L, mod.R_FIT_P, mod.R_FF_S, mod.R_FF_L, mod.R_FF_P)[: len(blocks)]
    for slot, block in zip(slots, blocks, strict=True):
        rc[slot] = at
        at += block.size
    rc[mod.R_MASKW] = 1 << (r - 1)
    rc = np.concatenate([rc, *[b.astype(np.int64) for b in blocks]])
    pc = np.zeros((len(rows), r + 3), dtype=np.int64)
    for i, c in enumerate(rows):
        pc[i, :r] = c
        pc[i, r] = sum(c)
        pc[i, r + 1] = sum(1 << k for k in range(r) if c[k])
        pc[i, r + 2] = sum(n << (4 * k) for k, n in enumerate(c))
    rc[mod.R_GUARD] = sum(8 << (4 * k) for k in range(r))
    return rc, pc


class Kernel:
    """The kernel bound to one variant's rules: ``rc`` and ``pc`` (the rules as arrays) and thin calls."""

    def __init__(self, rules: Rules, mod: ModuleType | None = None) -> None:
        self.rules = rules
        self.mod = m = mod if mod is not None else jit()
        self.rc, self.pc = _rules_constants(rules, m)
        from scopa_env.engine.observation import observation_size  # the layout's size (the observation module owns it)

        self.obs_size = observation_size(rules)
        self.d = rules.num_cards

    def new_state(self, seed: int) -> npt.NDArray[np.int64]:
        """A new (STATE_SIZE,) game: the match of ``seed`` (an int in [0, 2**64))."""
        st = np.zeros(self.mod.STATE_SIZE, dtype=np.int64)
        self.mod.new_match(self.rc, st, seed & 0xFFFFFFFF, seed >> 32)
        return st

    def legal_list(self, st: npt.NDArray[np.int64]) -> list[int]:
        bits = int(self.mod.legal_bits(self.rc, self.pc, st))
        return [a for a in range(self.rules.num_actions) if bits >> a & 1]

    def step(self, st: npt.NDArray[np.int64], action: int, info: npt.NDArray[np.int64] | None = None) -> int:
        if info is None:
            info = np.zeros(self.mod.INFO_SIZE, dtype=np.int64)
        return int(self.mod.step(self.rc, self.pc, st, int(action), info))


_KERNELS: dict[Rules, Kernel] = {}


def kernel_for(rules: Rules | str) -> Kernel:
    """The kernel of a variant (compiled or loaded once per process); ``KernelUnavailableError`` if it cannot be."""
    rules = get_rules(rules)
    k = _KERNELS.get(rules)
    if k is None:
        k = _KERNELS[rules] = Kernel(rules, jit())
    return k


def _bit_masks(cards: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """(..., D) bool card sets -> (...) int64 bit masks (D <= 56)."""
    packed = np.packbits(cards, axis=-1, bitorder="little")  # (..., ceil(D / 8))
    wide = np.zeros((*packed.shape[:-1], 8), dtype=np.uint8)
    wide[..., : packed.shape[-1]] = packed
    return wide.view("<i8")[..., 0].astype(np.int64)


def pack_states(rules: Rules, state: Any, games: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Games ``games`` of a ``core.State`` as kernel states: (len(games), STATE_SIZE) int64, one row each."""
    m = jit()
    g = np.asarray(games, dtype=np.intp).reshape(-1)
    n, s, d = rules.num_players, rules.num_sides, rules.num_cards
    out = np.zeros((g.size, m.STATE_SIZE), dtype=np.int64)
    sets = np.concatenate(  # every card set at once: hands, table, piles, picked, revealed
        [state.hands[g], state.table[g, None], state.piles[g], state.picked[g, None], state.revealed[g]], axis=1
    )
    bits = _bit_masks(sets)
    out[:, m.HANDS : m.HANDS + n] = bits[:, :n]
    out[:, m.TABLE] = bits[:, n]
    out[:, m.PILES : m.PILES + s] = bits[:, n + 1 : n + 1 + s]
    out[:, m.PICKED] = bits[:, n + 1 + s]
    out[:, m.REVEALED : m.REVEALED + n] = bits[:, n + 2 + s :]
    out[:, m.DECK : m.DECK + d] = state.deck[g]
    out[:, m.SCOPE : m.SCOPE + s] = state.scope[g]
    out[:, m.SCORES : m.SCORES + s] = state.scores[g]
    out[:, m.KNOCKP : m.KNOCKP + s] = state.knock_points[g]
    for at, arr in (
        (m.STOCK, state.stock_pos),
        (m.CURRENT, state.current),
        (m.DEALER, state.dealer),
        (m.PHASE, state.phase),
        (m.PENDING, state.pending),
        (m.LAST, state.last_capturer),
        (m.HAND_NO, state.hand_no),
        (m.DEAL_NO, state.deal_no),
        (m.WINNER, state.winner),
        (m.TTAKE, state.table_take),
    ):
        out[:, at] = arr[g]
    seed = state.seed[g].astype(np.uint64)
    out[:, m.SEED_LO] = (seed & np.uint64(0xFFFFFFFF)).astype(np.int64)
    out[:, m.SEED_HI] = (seed >> np.uint64(32)).astype(np.int64)
    return out
