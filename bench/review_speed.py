"""Game review speed: seconds to review a whole hand (every seat's moves) on one core, classic and scopone.

    python bench/review_speed.py                        # 10 hands of each variant played by expert (~1 min)
    python bench/review_speed.py --hands 20 --agent random --variants classic

The hands are one-hand games played by ``--agent`` in every seat (``review.self_play_records``); each is reviewed
whole (``review.review_record``, honest, the default sampled deals unless ``--worlds``) with the process pinned to one
core and one BLAS thread, after one warm-up hand (the kernel's compile or disk load is not timed). It prints the
median, mean and slowest seconds per hand (wall clock, and the process's CPU time, which a busy machine does not
inflate as much), the moves per hand, the mean deals sampled per move and the machine's load, then one JSON line.
The targets of issue 55: a hand in at most 2 s for classic, 5 s for scopone. docs/review.md has the measured numbers.
"""

from __future__ import annotations

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import MAX_SEED, add_field_options, parse_options, setting, variants_option  # noqa: E402
from agents.play.review import DEFAULT_WORLDS, MAX_WORLDS, review_record, self_play_records  # noqa: E402
from scopa_env.rules import get_rules  # noqa: E402

__all__ = ["Options", "main"]


@dataclass
class Options:
    """The command line's options."""

    variants: str = setting("classic,scopone-scientifico", "comma-separated variants to time")
    hands: int = setting(10, "hands reviewed per variant, 1..1000", parse=int_arg(1, 1000))
    agent: str = setting("expert", "the agent spec that plays the hands (every seat)")
    worlds: int = setting(DEFAULT_WORLDS, f"sampled deals per decision, 1..{MAX_WORLDS}", parse=int_arg(1, MAX_WORLDS))
    seed: int = setting(20261200, "seed of the first hand, 0..2**64-1001", parse=int_arg(0, MAX_SEED - 1000))
    pin: bool = setting(True, "pin the process to one core (the first it may run on)")


def main(argv: Sequence[str] | None = None, prog: str = "python bench/review_speed.py") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_field_options(parser, Options, typed=True, once=False)
    args = parse_options(parser, Options, argv)
    variants = variants_option(parser, args.variants)
    if args.pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    result: dict[str, object] = {"load_before": [round(x, 2) for x in os.getloadavg()], "worlds": args.worlds}
    print(
        f"{'variant':<22} {'hands':>5} {'moves/hand':>10} {'deals/move':>10} {'median s':>9} {'mean s':>8} "
        f"{'max s':>7} {'median cpu s':>12} {'max cpu s':>9}"
    )
    for v in variants:
        rules = get_rules(v)
        records = self_play_records(rules, args.agent, args.hands + 1, args.seed)
        review_record(records[0], worlds=args.worlds)  # warm up: the kernel's compile or load
        times: list[float] = []
        cpu: list[float] = []
        moves: list[int] = []
        deals: list[int] = []
        for rec in records[1:]:
            t, c = time.perf_counter(), time.process_time()
            review = review_record(rec, worlds=args.worlds, seed=args.seed)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            moves.append(len(review["decisions"]))
            deals.extend(d["worlds"] for d in review["decisions"])
        row = {
            "hands": len(times),
            "moves_per_hand": statistics.mean(moves),
            "median_s": statistics.median(times),
            "mean_s": statistics.mean(times),
            "max_s": max(times),
            "median_cpu_s": statistics.median(cpu),
            "max_cpu_s": max(cpu),
            "mean_deals": statistics.mean(deals),
        }
        result[v] = row
        print(
            f"{v:<22} {row['hands']:>5} {row['moves_per_hand']:>10.1f} {row['mean_deals']:>10.0f} "
            f"{row['median_s']:>9.3f} {row['mean_s']:>8.3f} {row['max_s']:>7.3f} {row['median_cpu_s']:>12.3f} "
            f"{row['max_cpu_s']:>9.3f}"
        )
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
