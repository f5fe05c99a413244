"""Single-decision latency of an exported bot on one CPU core, numpy and onnxruntime paths.

    python bench/bot_latency.py                                # the shipped bot (agents/bots/classic)
    python bench/bot_latency.py --bot DIR                      # any export directory
    python bench/bot_latency.py --synthetic 256,256            # an untrained MlpPolicy of that size, exported

Three single-decision calls are timed per backend: ``act`` on one observation and mask (the network alone),
``probs`` (the same, returning the probabilities) and ``act_state`` (observe the core state, mask and act: the
one-call helper). Then ``act`` on batches (``--batch``) for throughput. The process is pinned to one core and
BLAS / onnxruntime use one thread. Prints a table, then one JSON line.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.bot import Bot  # noqa: E402
from scopa_env import core  # noqa: E402
from scopa_env.rules import get_rules  # noqa: E402

SHIPPED = ROOT / "agents" / "bots" / "classic"


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

    from agents.export import export_checkpoint
    from agents.neural import checkpoint_meta, save_checkpoint
    from scopa_env.gym import ScopaEnv

    env = ScopaEnv(variant, opponents="random")
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": hidden}, device="cpu", seed=0)
    ckpt = save_checkpoint(model, out / "synthetic.zip", checkpoint_meta(variant, 0, kind="synthetic"))
    export_checkpoint(ckpt, out / "bot", name=f"synthetic-{'x'.join(map(str, hidden))}", check_rows=256)
    return out / "bot"


def bench(bot_dir: Path, calls: int, batch: int, seed: int) -> dict[str, Any]:
    probe = Bot.load(bot_dir, prefer="numpy")
    rules = get_rules(probe.variant)
    from agents.export import sample_inputs

    obs, mask = sample_inputs(rules, 4096, seed)
    obs, mask = obs[: obs.shape[0] // 2], mask[: mask.shape[0] // 2]  # observations from real games
    n = obs.shape[0]
    states = core.reset(rules, np.arange(256, dtype=np.uint64) + np.uint64(seed))
    singles = [states.take([g]) for g in range(256)]
    bo, bm = obs[:batch], mask[:batch]
    results: dict[str, Any] = {}
    for backend in ("numpy", "onnx"):
        bot = Bot.load(bot_dir, prefer=backend)  # type: ignore[arg-type]
        if bot.backend != backend:
            results[backend] = None
            continue

        def act(i: int, b: Bot = bot) -> object:
            return b.act(obs[i % n][None], mask[i % n][None])

        def probs(i: int, b: Bot = bot) -> object:
            return b.probs(obs[i % n][None], mask[i % n][None])

        def act_state(i: int, b: Bot = bot) -> object:
            return b.act_state(singles[i % len(singles)])

        def act_batch(i: int, b: Bot = bot) -> object:
            return b.act(bo, bm)

        row: dict[str, Any] = {}
        row["act"] = time_calls(act, calls)
        row["probs"] = time_calls(probs, calls)
        row["act_state"] = time_calls(act_state, calls)
        t = time_calls(act_batch, max(3, calls // 200), warmup=3)
        row["batch"] = {"size": int(bo.shape[0]), **t, "decisions_per_s": bo.shape[0] / (t["median_us"] / 1e6)}
        results[backend] = row
    return {
        "bot": str(bot_dir),
        "variant": probe.variant,
        "architecture": probe.card.get("architecture"),
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bot", type=Path, help=f"export directory (default {SHIPPED.relative_to(ROOT)})")
    parser.add_argument("--synthetic", metavar="H1,H2,...", help="bench an untrained MlpPolicy of these sizes")
    parser.add_argument("--variant", default="classic", help="variant of --synthetic (default classic)")
    parser.add_argument("--calls", type=int, default=5000, help="timed single decisions per measure (5000)")
    parser.add_argument("--batch", type=int, default=1024, help="batch size of the throughput measure (1024)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    pinned = _pin_one_core()
    with tempfile.TemporaryDirectory() as tmp:
        if args.synthetic:
            hidden = [int(x) for x in args.synthetic.split(",") if x]
            bot_dir = synthetic_bot(hidden, args.variant, Path(tmp))
        else:
            bot_dir = args.bot or SHIPPED
            if not (bot_dir / "model_card.json").is_file():
                parser.error(f"{bot_dir} is not an export directory; pass --bot DIR or --synthetic 256,256")
        out = bench(bot_dir, args.calls, args.batch, args.seed)
    out.update(pinned=pinned, cpu=platform.processor() or platform.machine(), python=platform.python_version())
    arch = out["architecture"] or {}
    print(f"bot {out['bot']} ({out['variant']}, MLP {arch.get('input')}-{arch.get('hidden')}-{arch.get('output')})")
    print(f"one core ({pinned}), {args.calls} timed calls each; microseconds per single decision")
    print(f"{'backend':<8} {'call':<10} {'median':>8} {'p90':>8} {'p99':>8} {'mean':>8}")
    for backend, row in out["results"].items():
        if row is None:
            print(f"{backend:<8} (not available: onnxruntime not installed or no policy.onnx)")
            continue
        for call in ("act", "probs", "act_state"):
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
