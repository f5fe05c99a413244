"""Search and single-game speed: the compiled single-game kernel against the batched-core paths it replaced, in one run.

    python bench/search_speed.py                    # pimc, end game, SingleGame in classic and scopone (~2 min)
    python bench/search_speed.py --positions 40 --rounds 5 --variants classic

For each variant it draws fixed positions from random games and times, alternating old and new on the same
position so a busy machine slows both alike:

- ``pimc`` (defaults: 64 worlds, depth 1, greedy rollouts, end game 6): one decision per position, the old path
  being the same agent searching its worlds on the batched core (``lookahead.search_tree``), the new one on the
  kernel (``agents.search.compiled.kernel_search_tree``); both must choose the same action (checked here too).
- the exact end game (``endgame.solve_open``) on open-book positions of at most 8 plies, one position a call: the
  batched search it replaced (``lookahead.move_margins`` on the core) against the kernel's.
- ``SingleGame``: play + observe per second of random games, the plain-Python engine of ``scopa_env/single.py`` at
  git revision ``--old-rev`` (loaded from git; skipped if git cannot show it) against the kernel's.

It prints per-call medians (ms), the old/new ratio of the medians and the median of the per-position ratios, the
sample sizes and the machine's load (``os.getloadavg``), then one JSON line. The batched core
(``scopa_env.engine.core``) and the vector env do not run on the kernel and are unchanged (``bench/env_speed.py`` times
them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from agents.cli.settings import add_field_options, parse_options, setting, variants_option
from scopa_env.engine import core, state_moves
from scopa_env.games.policy import uniform_legal
from scopa_env.rules import Rules, get_rules

__all__ = ["main"]

OLD_REV = "ce649ad"
"""The commit before the kernel: its ``scopa_env/single.py`` is the plain-Python single-game engine."""
ROOT = Path(__file__).resolve().parents[1]


def _positions(rules: Rules, num: int, seed: int, open_book: bool = False) -> core.State:
    """``num`` positions from random games (PLAY / CHOOSE phases; ``open_book``: open books of <= 8 plies)."""
    from agents.search.endgame import open_endgame_rows

    rng = np.random.default_rng(seed)
    out: list[core.State] = []
    total = 0
    while total < num:
        st = core.reset(rules, np.arange(seed, seed + 32))
        seed += 32
        while not st.done.all() and total < num:
            games = np.arange(st.batch_size)
            if open_book:
                rows = open_endgame_rows(rules, st, games, 8)
            else:
                playing = np.flatnonzero((st.phase == core.Phase.PLAY) | (st.phase == core.Phase.CHOOSE))
                rows = playing[rng.random(playing.size) < 0.05]
            rows = rows[: num - total]
            if rows.size:
                out.append(st.take(rows))
                total += rows.size
            core.step(rules, st, np.where(st.done, 0, uniform_legal(core.legal_action_mask(rules, st), rng)))
    return core.State.concat(out)


def _batched_greedy(rules: Rules, state: core.State, games: Any) -> Any:
    """``greedy_moves`` under another name: the searches then run on the batched core, as before the kernel."""
    from agents.baselines.greedy import greedy_moves

    return greedy_moves(rules, state, games)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _pair(old: list[float], new: list[float]) -> dict[str, Any]:
    return {
        "n": len(old),
        "old_ms": round(1e3 * statistics.median(old), 3),
        "new_ms": round(1e3 * statistics.median(new), 3),
        "ratio": round(statistics.median(old) / statistics.median(new), 2),
        "median_ratio": round(statistics.median(a / b for a, b in zip(old, new, strict=True)), 2),
    }


def bench_pimc(rules: Rules, num: int, seed: int) -> dict[str, Any]:
    from agents.search.pimc import PIMCAgent

    pos = _positions(rules, num, seed)
    old_t, new_t, same = [], [], 0
    row = np.zeros(1, dtype=np.intp)
    for i in range(pos.batch_size):
        one = pos.take([i])
        new, old = PIMCAgent(rules, seed=i), PIMCAgent(rules, seed=i)
        old.policy = _batched_greedy
        tn, a = _timed(partial(new._play, one, row))
        to, b = _timed(partial(old._play, one, row))
        new_t.append(tn)
        old_t.append(to)
        same += int(a[0] == b[0])
    return {**_pair(old_t, new_t), "same_actions": same}


def bench_end_game(rules: Rules, num: int, seed: int) -> dict[str, Any]:
    from agents.search.endgame import best_actions, solve_open
    from agents.search.lookahead import move_margins

    pos = _positions(rules, num, seed, open_book=True)
    old_t, new_t, same = [], [], 0
    row = np.zeros(1, dtype=np.intp)
    ones = np.ones(1, dtype=np.intp)

    def old_solve(one: core.State) -> Any:
        limits = state_moves.remaining_plies(rules, one, row)
        rng = np.random.default_rng(0)
        return best_actions(one, row, move_margins(rules, one, row, ones, limits, _batched_greedy, rng))

    for i in range(pos.batch_size):
        one = pos.take([i])
        tn, a = _timed(partial(solve_open, rules, one, row))
        to, b = _timed(partial(old_solve, one))
        new_t.append(tn)
        old_t.append(to)
        same += int(a[0] == b[0])
    return {**_pair(old_t, new_t), "same_actions": same}


def _old_single(rev: str) -> ModuleType | None:
    """``scopa_env/single.py`` at git revision ``rev`` as a module, or None if git cannot show it."""
    try:
        text = subprocess.run(
            ["git", "show", f"{rev}:scopa_env/single.py"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    # its imports, written before scopa_env was split by job (docs/architecture.md), moved to where the names are now
    text = text.replace("from scopa_env import core\n", "from scopa_env.engine import core\n")
    text = text.replace("from scopa_env.captures import", "from scopa_env.rules.captures import")
    path = Path(tempfile.mkdtemp()) / "old_single.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_single", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_single"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    from types import SimpleNamespace

    from scopa_env.engine import (
        observation,  # the observation left scopa_env.engine.core after that revision: add it back there
    )

    mod.core = SimpleNamespace(**vars(core), **{name: getattr(observation, name) for name in observation.__all__})
    return mod


def _single_steps_per_s(mod: ModuleType, variant: str, steps: int) -> float:
    """Random legal play with an observation at every decision: steps per second."""
    rng = np.random.default_rng(0)
    game = mod.SingleGame(variant, 1)
    seed = 1
    t = time.perf_counter()
    for _ in range(steps):
        if game.done:
            seed += 1
            game.new_match(seed)
        bits = game.legal_bits()
        legal = [a for a in range(bits.bit_length()) if bits >> a & 1]
        game.observe()
        game.play(legal[int(rng.integers(len(legal)))])
    return steps / (time.perf_counter() - t)


def bench_single(variant: str, rounds: int, rev: str) -> dict[str, Any] | None:
    from scopa_env.engine import single

    old = _old_single(rev)
    if old is None:
        return None
    _single_steps_per_s(single, variant, 100)
    old_r, new_r = [], []
    for _ in range(rounds):
        old_r.append(_single_steps_per_s(old, variant, 20_000))
        new_r.append(_single_steps_per_s(single, variant, 20_000))
    return {
        "rounds": rounds,
        "steps_per_round": 20_000,
        "old_steps_per_s": round(statistics.median(old_r)),
        "new_steps_per_s": round(statistics.median(new_r)),
        "ratio": round(statistics.median(new_r) / statistics.median(old_r), 2),
    }


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variants: str = setting("classic,scopone-scientifico", "comma-separated variants", show_default=False)
    positions: int = setting(30, "positions timed per variant and search", parse=int, show_default=False)
    rounds: int = setting(3, "SingleGame rounds (20,000 steps each)", parse=int, show_default=False)
    old_rev: str = setting(OLD_REV, "git revision of the plain-Python SingleGame", show_default=False)
    seed: int = setting(2026, "seed of the positions", parse=int, show_default=False)


def main(argv: Sequence[str] | None = None, prog: str = "python bench/search_speed.py") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_field_options(parser, Options, typed=True, once=False)
    args = parse_options(parser, Options, argv)
    variants = variants_option(parser, args.variants)
    if args.positions < 1 or args.rounds < 1:
        parser.error("--positions and --rounds must be >= 1")
    from agents.search.compiled import jit

    jit()  # compile or load the kernel and the search on it before timing anything
    load_before = os.getloadavg()
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in load_before]}
    print(f"{'what':<34} {'n':>5} {'old ms':>9} {'new ms':>9} {'ratio':>7} {'median ratio':>13} {'same':>6}")
    for v in variants:
        rules = get_rules(v)
        for name, fn in (("pimc", bench_pimc), ("end game", bench_end_game)):
            fn(rules, 2, args.seed + 1)  # warm caches
            r = fn(rules, args.positions, args.seed)
            result[f"{name} {v}"] = r
            print(
                f"{name + ' ' + v:<34} {r['n']:>5} {r['old_ms']:>9.3f} {r['new_ms']:>9.3f} {r['ratio']:>6.1f}x "
                f"{r['median_ratio']:>12.1f}x {r['same_actions']:>6}"
            )
        s = bench_single(v, args.rounds, args.old_rev)
        if s is not None:
            result[f"SingleGame {v}"] = s
            print(
                f"{'SingleGame ' + v:<34} {s['rounds']:>5} steps/s old {s['old_steps_per_s']}, new "
                f"{s['new_steps_per_s']}: {s['ratio']:.2f}x"
            )
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
