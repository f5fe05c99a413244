"""Benchmark the batched core (random legal play, observation and mask included) against the reference engine.

    python bench/env_speed.py --variant classic --batch 4096 --seconds 10     # make bench; also scopa-bench
    python bench/env_speed.py --env vec --batch 1024                          # the SB3 vector env

Prints a table, then one JSON line ``{"variant", "batch", "decisions_per_s", "games_per_s",
"reference_decisions_per_s", ...}``. BLAS threads are pinned to one, so the core runs on one core.

The reference engine is timed twice: doing the same work as the core's loop (the acting seat's observation, the
legal moves, the move: ``reference_decisions_per_s``, ``speedup``), and rules only, with no observation
(``reference_rules_only_decisions_per_s``, ``speedup_rules_only``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from agents.cli.numbers import float_arg, int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    add_field_options,
    parse_options,
    setting,
)
from scopa_env.engine import core, observation  # noqa: E402
from scopa_env.rules import Rules, get_rules, variant_names  # noqa: E402

__all__ = ["MAX_BATCH", "MAX_SEED", "bench_core", "bench_reference", "bench_vec_env", "command", "main"]


def _random_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """(B,) one uniformly random legal action per game: the largest of independent uniform keys drawn for the legal
    actions only (in [1, 2); the illegal ones keep 0). Drawing only the few legal keys halves the cost."""
    keys = np.zeros(mask.shape, dtype=np.float32)
    keys[mask] = rng.random(int(np.count_nonzero(mask)), dtype=np.float32) + np.float32(1.0)
    return keys.argmax(axis=1)


def bench_core(rules: Rules, batch: int, seconds: float, seed: int = 0, repeats: int = 5) -> dict[str, float]:
    """Random legal play with autoreset; returns median decisions/s and games/s over ``repeats`` windows."""
    rng = np.random.default_rng(seed)
    state = core.reset(rules, np.arange(batch, dtype=np.uint64) + np.uint64(seed))
    mask = core.legal_action_mask(rules, state)
    for _ in range(20):  # warm-up (tables, caches)
        core.step(rules, state, _random_legal(rng, mask), autoreset=True)
        mask = core.legal_action_mask(rules, state)
    dps, gps = [], []
    for _ in range(repeats):
        steps = games = 0
        t0 = time.perf_counter()
        while (el := time.perf_counter() - t0) < seconds / repeats:
            info = core.step(rules, state, _random_legal(rng, mask), autoreset=True)
            observation.observe(rules, state)
            mask = core.legal_action_mask(rules, state)
            steps += 1
            games += int(info.match_over.sum())
        dps.append(steps * batch / el)
        gps.append(games / el)
    return {
        "decisions_per_s": statistics.median(dps),
        "games_per_s": statistics.median(gps),
        "bytes_per_game": state.nbytes / batch,
    }


def bench_reference(rules: Rules, seconds: float, seed: int = 0, with_observation: bool = False) -> float:
    """Decisions per second of the plain reference engine playing random legal moves.

    ``with_observation``: also compute, before each decision, the acting seat's observation
    (``reference.observe``), the work the core's benchmark loop does; otherwise rules only (legal moves and play).
    """
    from scopa_env.oracle.reference import ReferenceGame, observe

    rng = np.random.default_rng(seed)
    n = 0
    t0 = time.perf_counter()
    game_seed = seed
    while time.perf_counter() - t0 < seconds:
        game = ReferenceGame(rules, game_seed)
        game_seed += 1
        while not game.done and time.perf_counter() - t0 < seconds:
            if with_observation:
                observe(game)
            moves = game.legal_moves()
            card, cap = moves[int(rng.integers(len(moves)))]
            game.play(card, cap)
            n += 1
    return n / (time.perf_counter() - t0)


MAX_BATCH = 2**20
"""The largest ``--batch`` (about a million games; memory grows with it)."""
MAX_SEED = 2**63 - 1
"""The largest ``--seed``: games are seeded ``seed``, ``seed + 1``, ..., kept well away from 2**64."""


def _uniform_legal_policy() -> type:
    """``bench_core``'s random player as a policy (uniform over the legal actions of every decision)."""
    from scopa_env.games.policy import ActBatch, Policy, uniform_legal

    class UniformLegal(Policy):
        name = "uniform-legal"
        needs_obs = False

        def act(self, batch: ActBatch) -> np.ndarray:
            return uniform_legal(batch.mask, self.rng)

    return UniformLegal


def bench_vec_env(rules: Rules | str, batch: int, seconds: float, seed: int = 0, repeats: int = 5) -> dict[str, Any]:
    """Learner steps/s of ``ScopaVecEnv`` against random opponents, and the raw core's decisions/s, in one run.

    The learner plays uniformly random legal actions, with masks fetched as MaskablePPO does. Two opponents are
    timed: ``random`` (``scopa_env.games.policy.RandomAgent``, uniform over cards and then over whole captures, which
    costs it a Python loop per capture choice) and ``uniform-legal`` (uniform over the legal actions of every
    decision, the random player of ``bench_core``). ``seconds`` is split evenly between the two
    envs and the core, in ``repeats`` interleaved windows each (so that a busy machine slows all three alike);
    rates are medians over the windows, and ``ratio_*`` = core decisions/s / learner steps/s (of the medians).
    """
    from scopa_env.envs.gym import ScopaVecEnv
    from scopa_env.games.policy import RandomAgent, uniform_legal

    uniform_legal_policy = _uniform_legal_policy()

    rules = get_rules(rules)
    rng = np.random.default_rng(seed)
    envs = {
        "random": ScopaVecEnv(rules, batch, RandomAgent(rules, seed), seed=seed),
        "uniform_legal": ScopaVecEnv(rules, batch, uniform_legal_policy(rules, seed), seed=seed),
    }

    def play(venv: Any, window: float) -> tuple[float, int]:
        steps = episodes = 0
        t0 = time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < window or steps == 0:
            mask = np.stack(venv.env_method("action_masks")).reshape(batch, -1)
            _, _, dones, _ = venv.step(uniform_legal(mask, rng))
            steps += 1
            episodes += int(dones.sum())
        return steps * batch / elapsed, episodes

    for venv in envs.values():
        venv.reset()
        play(venv, 0.0)  # warm-up
    window = seconds / 3 / repeats
    rates: dict[str, list[float]] = {"core": [], **{k: [] for k in envs}}
    episodes = dict.fromkeys(envs, 0)
    for _ in range(repeats):
        for name, venv in envs.items():
            rate, n = play(venv, window)
            rates[name].append(rate)
            episodes[name] += n
        rates["core"].append(bench_core(rules, batch, window, seed, repeats=1)["decisions_per_s"])
    medians = {name: float(np.median(r)) for name, r in rates.items()}
    out: dict[str, Any] = {"env": "vec", "variant": rules.name, "batch": batch}
    for name in envs:
        out[f"learner_steps_per_s_{name}"] = round(medians[name])
    out["core_decisions_per_s"] = round(medians["core"])
    for name in envs:
        out[f"ratio_{name}"] = round(medians["core"] / medians[name], 2)
    out["episodes"] = episodes
    return out


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variant: str = setting("classic", f"variant ({', '.join(variant_names())})", show_default=False)
    batch: int = setting(4096, "games advanced per call (1..2**20)", parse=int_arg(1, MAX_BATCH), show_default=False)
    seconds: float = setting(
        10.0,
        "time spent on the core (split in 5 windows)",
        parse=float_arg(0, above=True, unit="seconds"),
        show_default=False,
    )
    reference_seconds: float | None = setting(
        None,
        "time spent on the reference engine (default 3; 0 skips it; --env core only)",
        parse=float_arg(0, unit="seconds", note="0 skips it"),
        show_default=False,
    )
    seed: int = setting(0, "seed of the first game (0..2**63-1)", parse=int_arg(0, MAX_SEED), show_default=False)
    env: str = setting("core", "'vec': the SB3 vector env (see gym.py)", choices=["core", "vec"], show_default=False)


def main(argv: Sequence[str] | None = None, prog: str = "python bench/env_speed.py") -> int:
    """Run the benchmark command line (``prog`` names it in messages); returns the exit status (2: bad input)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    try:
        rules = get_rules(args.variant)
    except ValueError as e:
        p.error(f"--variant: {e}")
    if args.env == "vec" and args.reference_seconds is not None:
        p.error("--reference-seconds applies to --env core only (the vec benchmark times no reference engine)")
    try:
        return _run(rules, args)
    except MemoryError:
        print(
            f"{p.prog}: error: --batch {args.batch}: not enough memory for {args.batch} {rules.name} games at once; "
            "use a smaller --batch",
            file=sys.stderr,
        )
        return 2
    except ImportError as e:
        print(
            f"{p.prog}: error: --env {args.env} needs a missing package ({e}); install the project with its "
            "dependencies: pip install -e .",
            file=sys.stderr,
        )
        return 2


def command() -> int:
    """The installed ``scopa-bench`` command."""
    return main(prog="scopa-bench")


def _run(rules: Rules, args: Options) -> int:
    if args.env == "vec":
        result = bench_vec_env(rules, args.batch, args.seconds, args.seed)
        print(json.dumps(result))
        return 0
    res = bench_core(rules, args.batch, args.seconds, args.seed)
    nan = float("nan")
    ref_seconds = 3.0 if args.reference_seconds is None else args.reference_seconds
    ref_obs = bench_reference(rules, ref_seconds, args.seed, True) if ref_seconds > 0 else nan
    ref = bench_reference(rules, ref_seconds, args.seed) if ref_seconds > 0 else nan
    ratio = res["decisions_per_s"] / ref_obs if ref_obs == ref_obs and ref_obs > 0 else nan
    ratio_rules = res["decisions_per_s"] / ref if ref == ref and ref > 0 else nan
    rows = [
        ("variant", rules.name),
        ("batch", f"{args.batch}"),
        ("core decisions/s (median)", f"{res['decisions_per_s']:,.0f}"),
        ("core games/s (median)", f"{res['games_per_s']:,.1f}"),
        ("reference decisions/s, same work", f"{ref_obs:,.0f}"),
        ("speed-up over reference", f"{ratio:,.1f}x"),
        ("reference decisions/s, rules only", f"{ref:,.0f}"),
        ("speed-up over rules-only reference", f"{ratio_rules:,.1f}x"),
        ("state bytes per game", f"{res['bytes_per_game']:.0f}"),
        ("machine", f"{platform.processor() or platform.machine()}, numpy {np.__version__}"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    out = {
        "variant": rules.name,
        "batch": args.batch,
        "decisions_per_s": round(res["decisions_per_s"]),
        "games_per_s": round(res["games_per_s"], 2),
        "reference_decisions_per_s": round(ref_obs) if ref_obs == ref_obs else None,
        "speedup": round(ratio, 1) if ratio == ratio else None,
        "reference_rules_only_decisions_per_s": round(ref) if ref == ref else None,
        "speedup_rules_only": round(ratio_rules, 1) if ratio_rules == ratio_rules else None,
        "bytes_per_game": res["bytes_per_game"],
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
