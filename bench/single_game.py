"""Speed of one game: the PettingZoo AEC env and the Gymnasium env against PettingZoo's ``leduc_holdem_v4``.

    pip install -e '.[bench]'                       # rlcard and pygame, which leduc_holdem_v4 needs
    python bench/single_game.py                     # classic and scopa-a-quattro, 3 rounds (about 1 minute)
    python bench/single_game.py --variants classic --rounds 5 --gym-seconds 5

Each round runs ``pettingzoo.test.performance_benchmark`` (5 s of random legal play, ``env.last()`` /
``env.step()``, wrappers included) on ``leduc_holdem_v4.env()`` and on ``scopa_v0.env(variant=...)`` in turn, in this
process, then times the single-agent Gymnasium env (``scopa_env.envs.gym.ScopaEnv``, ``opponents="random"``) with the
same kind of loop (random legal action, ``step``, ``reset`` at the end of an episode), built directly and through
``gymnasium.make("scopa/<Variant>-v0")`` (which adds Gymnasium's checker wrappers). It prints the median
turns/s of each env over the rounds, its ratio to leduc's median and the median over the rounds of its ratio to
that round's leduc run, the machine's load average before and after (``os.getloadavg``), then one JSON line. Rounds
alternate the envs, so a busy machine slows them alike; compare the ratios, not the absolute numbers. A Gymnasium
step is one learner decision, the opponents' moves up to its next decision included.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import re
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.cli.numbers import float_arg, int_arg
from agents.cli.settings import add_field_options, parse_options, setting, variants_option

__all__ = ["gym_steps_per_s", "leduc_env", "main", "performance_turns_per_s"]


def leduc_env() -> Any:
    """PettingZoo's ``leduc_holdem_v4.env()``; ``RuntimeError`` saying how to install rlcard and pygame if missing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pettingzoo.classic import leduc_holdem_v4
    except ImportError as e:  # pettingzoo.classic imports pygame; leduc_holdem_v4 imports rlcard
        raise RuntimeError(
            f"PettingZoo's leduc_holdem_v4 needs rlcard and pygame ({e}); install them with "
            "pip install -e '.[bench]' (or pip install rlcard pygame)"
        ) from None
    return leduc_holdem_v4.env()


def performance_turns_per_s(env: Any) -> float:
    """Turns/s of ``pettingzoo.test.performance_benchmark(env)`` (5 s), read from what it prints."""
    from pettingzoo.test import performance_benchmark

    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        performance_benchmark(env)
    found = re.search(r"([0-9.eE+-]+) turns per second", out.getvalue())
    if found is None:
        raise RuntimeError(f"performance_benchmark printed no 'turns per second' line: {out.getvalue()!r}")
    return float(found.group(1))


def gym_steps_per_s(variant: str, seconds: float, seed: int = 0, make: bool = False) -> float:
    """Learner steps/s of ``ScopaEnv(variant, opponents="random")`` under random legal actions for ``seconds``.

    With ``make``, of ``gymnasium.make(env_id(variant))`` instead (the same env inside Gymnasium's
    ``PassiveEnvChecker`` and ``OrderEnforcing`` wrappers); masks come from ``env.unwrapped.action_masks()``.
    """
    from scopa_env.envs.gym import ScopaEnv

    if make:
        import gymnasium

        from scopa_env.envs.registration import env_id

        env: Any = gymnasium.make(env_id(variant), opponents="random")
        masks = env.unwrapped.action_masks
    else:
        env = ScopaEnv(variant, opponents="random")
        masks = env.action_masks
    rnd = random.Random(seed)
    env.reset(seed=seed)
    steps = 0
    t0 = time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        action = rnd.choice(np.flatnonzero(masks()).tolist())
        _, _, terminated, truncated, _ = env.step(action)
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / elapsed


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variants: str = setting(
        "classic,scopa-a-quattro",
        "comma-separated variants to time with performance_benchmark (default: classic,scopa-a-quattro)",
        show_default=False,
    )
    rounds: int = setting(
        3,
        "rounds of 5 s per env, alternating the envs; medians are reported (default 3)",
        parse=int_arg(1),
        show_default=False,
    )
    gym_seconds: float = setting(
        3.0,
        "seconds of the Gymnasium env's loop per round (default 3)",
        parse=float_arg(0, above=True, unit="seconds"),
        show_default=False,
    )
    no_gym: bool = setting(False, "skip the Gymnasium env", negatable=False, show_default=False)


def main(argv: Sequence[str] | None = None, prog: str = "python bench/single_game.py") -> int:
    """Run the benchmark (see the module docstring); 0 on success, 2 with one ``error:`` line on bad input."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    variants = variants_option(p, args.variants)
    try:
        leduc = leduc_env()
    except RuntimeError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    from scopa_env import scopa_v0

    envs: dict[str, Any] = {"leduc_holdem_v4": leduc}
    envs.update({f"scopa_v0 {v}": scopa_v0.env(variant=v) for v in variants})
    load_before = os.getloadavg()
    turns: dict[str, list[float]] = {name: [] for name in envs}
    gym: dict[str, list[float]] = {v: [] for v in variants}
    gym_make: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for name, env in envs.items():
            turns[name].append(performance_turns_per_s(env))
            print(f"round {r + 1}/{args.rounds}: {name}: {turns[name][-1]:,.0f} turns/s", file=sys.stderr, flush=True)
        if not args.no_gym:
            for v in variants:
                gym[v].append(gym_steps_per_s(v, args.gym_seconds, seed=r))
                print(f"round {r + 1}/{args.rounds}: ScopaEnv {v}: {gym[v][-1]:,.0f} steps/s", file=sys.stderr)
                gym_make[v].append(gym_steps_per_s(v, args.gym_seconds, seed=r, make=True))
                print(
                    f"round {r + 1}/{args.rounds}: gymnasium.make {v}: {gym_make[v][-1]:,.0f} steps/s", file=sys.stderr
                )
    load_after = os.getloadavg()
    med = {name: statistics.median(x) for name, x in turns.items()}
    base = med["leduc_holdem_v4"]
    # each round's ratio to the leduc run just before it: the two ran under the same load
    round_ratio = {
        name: statistics.median(a / b for a, b in zip(x, turns["leduc_holdem_v4"], strict=True))
        for name, x in turns.items()
    }
    print(f"{'env':<40} {'median turns/s':>15} {'x leduc':>8} {'median of rounds':>17}   ({args.rounds} rounds of 5 s)")
    for name, value in med.items():
        print(f"{name:<40} {value:>15,.0f} {value / base:>8.2f} {round_ratio[name]:>17.2f}")
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "leduc_turns_per_s": round(base, 1),
        "aec": {v: {"turns_per_s": round(med[f"scopa_v0 {v}"], 1)} for v in variants},
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    for v in variants:
        result["aec"][v]["ratio_to_leduc"] = round(med[f"scopa_v0 {v}"] / base, 3)
        result["aec"][v]["median_round_ratio"] = round(round_ratio[f"scopa_v0 {v}"], 3)
        result["aec"][v]["rounds_turns_per_s"] = [round(x, 1) for x in turns[f"scopa_v0 {v}"]]
    result["leduc_rounds_turns_per_s"] = [round(x, 1) for x in turns["leduc_holdem_v4"]]
    if not args.no_gym:
        result["gym"] = {}
        leduc_rounds = turns["leduc_holdem_v4"]
        for v in variants:
            entries = []
            for label, runs in (("ScopaEnv", gym[v]), ("gymnasium.make", gym_make[v])):
                value = statistics.median(runs)
                per_round = statistics.median(a / b for a, b in zip(runs, leduc_rounds, strict=True))
                print(f"{label + ' ' + v + ' (steps/s)':<40} {value:>15,.0f} {value / base:>8.2f} {per_round:>17.2f}")
                entries.append(
                    {
                        "steps_per_s": round(value, 1),
                        "ratio_to_leduc": round(value / base, 3),
                        "median_round_ratio": round(per_round, 3),
                        "rounds_steps_per_s": [round(x, 1) for x in runs],
                    }
                )
            result["gym"][v] = {**entries[0], "make": entries[1]}  # ScopaEnv(...) itself, then gymnasium.make's
    print(f"load average (1, 5, 15 min) before {result['load_before']}, after {result['load_after']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
