"""Single-decision latency of an exported bot on one CPU core, numpy and onnxruntime paths.

    python bench/bot_latency.py                                # the shipped bot (agents/bots/classic)
    python bench/bot_latency.py --bot DIR                      # any export directory
    python bench/bot_latency.py --synthetic 256,256            # an untrained MlpPolicy of that size, exported

Four single-decision calls are timed per backend: ``act`` on one observation and mask (the network alone),
``probs`` (the same, returning the probabilities) and ``act_state`` (observe the core state, mask and act: the
one-call helper; for a search bot, ``--bot agents/bots/classic-search``, its search, timed on positions from all
of a hand, at most 300 calls, while ``act`` and ``probs`` time its network alone). ``policy`` times the network as
an agent plays it (``bot:path=DIR,search=false``: its card's end game included, ``endgame_worlds`` too), at most
2000 calls on positions from the deal to the hand's last move. Then ``act`` on batches (``--batch``) for throughput.
The process is pinned to one core and BLAS / onnxruntime use one thread. Prints a table, then one JSON line. Every
argument is checked (the bot loaded on both backends) before the process is pinned or anything is timed; a bad one
exits with status 2 and one ``python bench/bot_latency.py: error: ...`` line.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.cli.threads import pin_blas_threads  # noqa: E402

pin_blas_threads(force=True)  # before numpy loads: one BLAS / OpenMP thread, whatever the environment says

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    add_field_options,
    parse_options,
    setting,
)
from agents.nets.bot import Bot  # noqa: E402
from scopa_bench.env_speed import MAX_SEED  # noqa: E402
from scopa_env.engine import core  # noqa: E402
from scopa_env.games.policy import uniform_legal  # noqa: E402
from scopa_env.rules import get_rules, variant_names  # noqa: E402

SHIPPED = ROOT / "agents" / "bots" / "classic"
SAMPLE_ROWS = 4096
"""Rows ``agents.nets.export_onnx.sample_inputs`` draws; the first half (from real games) is what the bot is timed
on."""
MAX_BATCH = SAMPLE_ROWS // 2
"""The largest ``--batch``: the throughput batch is cut from the observations of real games."""
MAX_CALLS = 10**6
"""The most ``--calls`` (timed single decisions per measure; six measures, a few minutes at 10**6)."""
MAX_LAYERS = 8
"""The most hidden layers of ``--synthetic``."""
MAX_WIDTH = 4096
"""The widest hidden layer of ``--synthetic``."""
SEARCH_CALLS = 300
"""The most timed ``act_state`` calls of a search bot (tens of milliseconds each)."""
SPREAD = 34
"""A search bot's positions are taken after 0..SPREAD-1 moves of a hand."""
POLICY_CALLS = 2000
"""The most timed ``policy`` calls (the network as an agent plays it, its end game included)."""


def _pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"cpu {cpu}"
    return "not pinned (no sched_setaffinity)"


def time_calls(fn: Callable[[int], object], calls: int, warmup: int = 200) -> dict[str, float]:
    """Per-call wall time of ``fn(i)`` in microseconds: median, p90, p99, mean."""
    for i in range(warmup):
        fn(i)
    times = np.empty(calls)
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        fn(i)
        times[i] = clock() - t0
    us = times / 1e3
    return {
        "median_us": float(np.median(us)),
        "p90_us": float(np.percentile(us, 90)),
        "p99_us": float(np.percentile(us, 99)),
        "mean_us": float(us.mean()),
    }


def synthetic_bot(hidden: list[int], variant: str, out: Path) -> Path:
    """Export an untrained MaskablePPO MlpPolicy with ``hidden`` layers (needs torch and sb3-contrib)."""
    from sb3_contrib import MaskablePPO

    from agents.nets.checkpoint import checkpoint_meta, save_checkpoint
    from agents.nets.export import export_checkpoint
    from scopa_env.envs.gym import ScopaEnv

    env = ScopaEnv(variant, opponents="random")
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": hidden}, device="cpu", seed=0)
    ckpt = save_checkpoint(model, out / "synthetic.zip", checkpoint_meta(variant, 0, kind="synthetic"))
    export_checkpoint(ckpt, out / "bot", name=f"synthetic-{'x'.join(map(str, hidden))}", check_rows=256)
    return out / "bot"


def game_positions(rules: Any, count: int, seed: int, spread: int = SPREAD) -> list[core.State]:
    """``count`` one-game states spread over a hand: game g after ``g % spread`` random legal moves (from the
    deal to late in the hand, where a search bot's cost per move differs most)."""
    rng = np.random.default_rng(seed)
    state = core.reset(rules, np.arange(count, dtype=np.uint64) + np.uint64(seed))
    out: list[core.State | None] = [None] * count
    for ply in range(spread):
        for g in range(ply, count, spread):
            out[g] = state.take([g])
        core.step(rules, state, uniform_legal(core.legal_action_mask(rules, state), rng), autoreset=True)
    return [s for s in out if s is not None]


def bench(bot_dir: Path, calls: int, batch: int, seed: int) -> dict[str, Any]:
    probe = Bot.load(bot_dir, prefer="numpy")
    rules = get_rules(probe.variant)
    from agents.nets.export_onnx import sample_inputs

    obs, mask = sample_inputs(rules, SAMPLE_ROWS, seed)
    obs, mask = obs[: obs.shape[0] // 2], mask[: mask.shape[0] // 2]  # observations from real games
    n = obs.shape[0]
    search = probe.search is not None
    if search:  # a search bot's cost depends on how much of the hand is left: positions from all of it
        singles = game_positions(rules, 256, seed)
    else:
        states = core.reset(rules, np.arange(256, dtype=np.uint64) + np.uint64(seed))
        singles = [states.take([g]) for g in range(256)]
    bo, bm = obs[:batch], mask[:batch]
    # the network as an agent plays it: positions from the deal to the hand's last move (its end game included)
    whole_hand = game_positions(rules, 400, seed, spread=rules.num_cards) if probe.has_network else []
    results: dict[str, Any] = {}
    for backend in ("numpy", "onnx"):
        bot = Bot.load(bot_dir, prefer=backend)  # type: ignore[arg-type]
        if bot.backend != backend:
            results[backend] = None
            continue

        def act(i: int, b: Bot = bot) -> object:
            return b.act_network(obs[i % n][None], mask[i % n][None])

        def probs(i: int, b: Bot = bot) -> object:
            return b.probs(obs[i % n][None], mask[i % n][None])

        def act_state(i: int, b: Bot = bot) -> object:
            return b.act_state(singles[i % len(singles)])

        def act_batch(i: int, b: Bot = bot) -> object:
            return b.act_network(bo, bm)

        row: dict[str, Any] = {}
        row["act"] = time_calls(act, calls)
        row["probs"] = time_calls(probs, calls)
        if search:
            row["act_state"] = time_calls(act_state, min(calls, SEARCH_CALLS), warmup=5)
        else:
            row["act_state"] = time_calls(act_state, calls)
        if whole_hand:
            from agents.nets.bot import make_bot_policy
            from scopa_env.engine.observation import observe
            from scopa_env.games.policy import ActBatch

            agent = make_bot_policy(rules, seed, path=str(bot_dir), prefer=backend, search=False)
            one = np.zeros(1, dtype=np.intp)

            def policy(i: int, a: Any = agent, one: Any = one) -> object:
                st = whole_hand[i % len(whole_hand)]
                return a.act(ActBatch(rules, observe(rules, st), core.legal_action_mask(rules, st), st, one))

            row["policy"] = time_calls(policy, min(calls, POLICY_CALLS), warmup=20)
        t = time_calls(act_batch, max(3, calls // 200), warmup=3)
        row["batch"] = {"size": int(bo.shape[0]), **t, "decisions_per_s": bo.shape[0] / (t["median_us"] / 1e6)}
        results[backend] = row
    return {
        "bot": str(bot_dir),
        "search": probe.search,
        "search_agent": probe.search_agent,
        "variant": probe.variant,
        "architecture": probe.card.get("architecture"),
        "policy": (
            f"endgame={probe.card.get('endgame', 0)}, endgame_worlds={probe.card.get('endgame_worlds', 0)}"
            if probe.has_network
            else None
        ),
        "results": results,
    }


def parse_hidden(text: str) -> list[int]:
    """``'256,256'`` -> ``[256, 256]`` (empty items skipped); raises ``ValueError`` saying what to write instead."""
    example = "e.g. --synthetic 256,256"
    sizes = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        try:
            size = int(item, 10)
        except ValueError:
            size = 0
        if not 1 <= size <= MAX_WIDTH:
            shown = item if len(item) <= 40 else item[:37] + "..."
            raise ValueError(f"layer size {shown!r} is not a whole number from 1 to {MAX_WIDTH}; {example}")
        sizes.append(size)
    if not sizes:
        raise ValueError(f"no layer size given; {example}")
    if len(sizes) > MAX_LAYERS:
        raise ValueError(f"{len(sizes)} hidden layers, at most {MAX_LAYERS}; {example}")
    return sizes


def _check_bot(parser: argparse.ArgumentParser, text: str | None) -> Path:
    """The export directory of ``--bot`` (default: the shipped bot), loaded once on each backend to check it."""
    if text is not None and not text.strip():
        parser.error("--bot: an empty path; give an export directory (e.g. agents/bots/classic)")
    if text is not None and "\x00" in text:
        parser.error(f"--bot {text[:60]!r}: a path cannot hold a NUL character; give an export directory")
    bot_dir = Path(text) if text is not None else SHIPPED
    try:
        for prefer in ("numpy", "onnx"):
            Bot.load(bot_dir, prefer=prefer)  # type: ignore[arg-type]
    except (OSError, ValueError) as e:  # BotError is a ValueError
        detail = " ".join(str(e).split())
        parser.error(
            f"--bot {str(bot_dir)!r}: not a usable export directory ({detail}); pass --bot DIR or --synthetic 256,256"
        )
    return bot_dir


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    bot: str | None = setting(None, f"export directory (default {SHIPPED.relative_to(ROOT)})", show_default=False)
    synthetic: str | None = setting(
        None, "bench an untrained MlpPolicy of these sizes", metavar="H1,H2,...", show_default=False
    )
    variant: str | None = setting(
        None, f"variant of --synthetic (default classic; {', '.join(variant_names())})", show_default=False
    )
    calls: int = setting(
        5000,
        f"timed single decisions per measure (5000; at most {MAX_CALLS})",
        parse=int_arg(1, MAX_CALLS),
        show_default=False,
    )
    batch: int = setting(
        1024,
        f"batch size of the throughput measure (1024; at most {MAX_BATCH})",
        parse=int_arg(1, MAX_BATCH),
        show_default=False,
    )
    seed: int = setting(0, "seed of the sampled games (0..2**63-1)", parse=int_arg(0, MAX_SEED), show_default=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/bot_latency.py", description=__doc__.split("\n\n")[0])
    add_field_options(parser, Options, typed=True, once=False)
    args = parse_options(parser, Options, argv)
    hidden: list[int] = []
    if args.synthetic is not None:
        if args.bot is not None:
            parser.error("--bot and --synthetic both given; bench an export directory or a synthetic bot, not both")
        try:
            hidden = parse_hidden(args.synthetic)
        except ValueError as e:
            parser.error(f"--synthetic {args.synthetic[:40]!r}: {e}")
        variant = "classic" if args.variant is None else args.variant
        try:
            get_rules(variant)
        except ValueError as e:
            parser.error(f"--variant: {e}")
        missing = [m for m in ("torch", "sb3_contrib") if importlib.util.find_spec(m) is None]
        if missing:
            parser.error(
                f"--synthetic needs {' and '.join(missing)}, not installed; install the project with its "
                "dependencies (pip install -e .) or bench an export directory with --bot DIR"
            )
    else:
        if args.variant is not None:
            parser.error("--variant applies to --synthetic only (an export directory carries its own variant)")
        bot_dir = _check_bot(parser, args.bot)
    pinned = _pin_one_core()
    with tempfile.TemporaryDirectory() as tmp:
        if args.synthetic is not None:
            bot_dir = synthetic_bot(hidden, variant, Path(tmp))
        out = bench(bot_dir, args.calls, args.batch, args.seed)
    out.update(pinned=pinned, cpu=platform.processor() or platform.machine(), python=platform.python_version())
    arch = out["architecture"] or {}
    print(f"bot {out['bot']} ({out['variant']}, MLP {arch.get('input')}-{arch.get('hidden')}-{arch.get('output')})")
    print(f"one core ({pinned}), {args.calls} timed calls each; microseconds per single decision")
    if out["search"] is not None:
        print(
            f"a search bot ({out['search_agent']} {out['search']}): act and probs are its network alone; act_state is "
            f"its search, {min(args.calls, SEARCH_CALLS)} calls on positions from all of a hand"
        )
    if out["policy"] is not None:
        print(
            f"policy: the network as an agent plays it (bot:path=DIR,search=false, {out['policy']}), "
            f"{min(args.calls, POLICY_CALLS)} calls on positions from the deal to the hand's last move"
        )
    print(f"{'backend':<8} {'call':<10} {'median':>8} {'p90':>8} {'p99':>8} {'mean':>8}")
    for backend, row in out["results"].items():
        if row is None:
            print(f"{backend:<8} (not available: onnxruntime not installed or no policy.onnx)")
            continue
        for call in ("act", "probs", "act_state", "policy"):
            if call not in row:
                continue
            t = row[call]
            print(
                f"{backend:<8} {call:<10} {t['median_us']:8.1f} {t['p90_us']:8.1f} {t['p99_us']:8.1f} "
                f"{t['mean_us']:8.1f}"
            )
        b = row["batch"]
        print(
            f"{backend:<8} batch {b['size']:<4} {b['median_us']:8.0f} us/batch, {b['decisions_per_s']:,.0f} decisions/s"
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
