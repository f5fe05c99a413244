"""Tournament speed on Ray against the local process pool: hands per second by worker count, and Ray's cost per task.

    python bench/ray_scaling.py                                   # greedy vs greedy, 1 and 2 workers, 3 repeats
    python bench/ray_scaling.py --workers 1 2 4 --hands 4000 --agents expert greedy

For each worker count it plays the same tournament (``--hands`` deals, ``--batch`` deals per task) with the process
pool (``--workers N``) and on a local Ray instance started once with the largest count of CPUs (``--ray``, N tasks in
flight), ``--repeats`` times after one warm-up run, and prints the median hands per second. The per-task overhead is
measured with tasks of one deal of random against random: (Ray's seconds - one process's seconds) / tasks, both
with one worker. Ray's start (a few seconds) is not counted: a cluster is started once and reused. Needs
``pip install 'scopa[ray]'``. Numbers for this machine are in docs/ray.md.
"""

from __future__ import annotations

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import add_field_options, parse_options, setting  # noqa: E402


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    workers: list[int] = setting(
        doc="worker counts to measure (1 2)",
        default_factory=lambda: [1, 2],
        parse=int_arg(1, 64),
        nargs="+",
        show_default=False,
    )
    hands: int = setting(2000, "deals per pairing (2000)", parse=int_arg(1, 1_000_000), show_default=False)
    batch: int = setting(100, "deals per task (100)", parse=int_arg(1, 1_000_000), show_default=False)
    agents: list[str] = setting(
        doc="the two agents (greedy)",
        default_factory=lambda: ["greedy", "greedy"],
        metavar="SPEC",
        nargs=2,
        show_default=False,
    )
    repeats: int = setting(3, "timed runs per setting, after a warm-up (3)", parse=int_arg(1, 64), show_default=False)
    overhead_tasks: int = setting(
        200, "one-deal tasks for the overhead (200)", parse=int_arg(1, 1_000_000), show_default=False
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ray_scaling.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_field_options(p, Options, typed=True, once=False)
    return p


def _timed(config: Any, repeats: int) -> tuple[float, int]:
    """Median seconds of ``repeats`` runs after one warm-up, and the hands of one run."""
    from agents.evaluation.tournament import run_tournament

    run_tournament(config)
    seconds, hands = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        hands = run_tournament(config).hands_played
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds), hands


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status (2: bad input or no Ray)."""
    args = parse_options(build_parser(), Options, argv)
    try:
        import ray
    except ImportError:
        print("ray_scaling.py: error: needs Ray: pip install 'scopa[ray]'", file=sys.stderr)
        return 2
    from agents.errors import TournamentError
    from agents.evaluation.eval_config import EvalConfig

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores; {args.agents[0]} vs {args.agents[1]}, {args.hands} deals, batch {args.batch}, median of "
          f"{args.repeats} runs after a warm-up")  # fmt: skip
    base: dict[str, Any] = {"agents": args.agents, "deals": args.hands, "batch": args.batch, "bootstrap": 0}
    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    try:
        print(f"{'workers':>7} {'pool hands/s':>13} {'ray hands/s':>12} {'ray/pool':>9}")
        for w in args.workers:
            pool_s, hands = _timed(EvalConfig(**base, workers=w), args.repeats)
            ray_s, _ = _timed(EvalConfig(**base, workers=w, ray="local"), args.repeats)
            print(f"{w:>7} {hands / pool_s:>13,.0f} {hands / ray_s:>12,.0f} {pool_s / ray_s:>9.2f}", flush=True)
        tiny: dict[str, Any] = {
            "agents": ["random", "random"],
            "deals": args.overhead_tasks,
            "batch": 1,
            "bootstrap": 0,
        }
        here_s, _ = _timed(EvalConfig(**tiny, workers=1), args.repeats)
        ray_s, _ = _timed(EvalConfig(**tiny, workers=1, ray="local"), args.repeats)
        per_task = (ray_s - here_s) / args.overhead_tasks
        print(f"per-task overhead (one worker, {args.overhead_tasks} one-deal tasks): {per_task * 1e3:.2f} ms "
              f"(ray {ray_s:.2f} s, one process {here_s:.2f} s)")  # fmt: skip
    except TournamentError as e:
        print(f"ray_scaling.py: error: {e}", file=sys.stderr)
        return 2
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
