"""The strength ladder: agents paired on duplicate deals, points-per-hand margin with a 95% CI, match win rates.

    python bench/agents_ladder.py --variant classic --deals 1000 --matches 100 \\
        --pairs 'random vs greedy; greedy vs expert; expert vs pimc; greedy vs pimc; greedy vs ismcts'

Each pairing ``A vs B`` plays every deal twice, the second time with the seats swapped (duplicate deals: the same
shuffles, so the luck of the cards cancels out). The margin is the mean over deal pairs of B's points minus A's
points per hand (positive: B is stronger), with a 95% confidence interval from the spread of the per-pair values.
``--matches`` paired matches to the variant's target give B's win rate (with a 95% normal-approximation CI).
Also reported: each agent's milliseconds per decision (time in ``act`` / decisions, at the arena's batch size).
Two-sided variants only (two players, or two teams). Every argument is checked (every pairing parsed, every agent
spec loaded) before any game is played; a bad one exits with status 2 and one
``python bench/agents_ladder.py: error: ...`` line.
"""

from __future__ import annotations

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads: one BLAS / OpenMP thread

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agents_speed import TimedPolicy, check_spec, shown  # noqa: E402

from agents.base import make_agent  # noqa: E402
from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    add_field_options,
    parse_options,
    setting,
)
from scopa_bench import variant_rules  # noqa: E402
from scopa_bench.env_speed import MAX_BATCH, MAX_SEED  # noqa: E402
from scopa_env.games.driver import play  # noqa: E402
from scopa_env.rules import Rules, variant_names  # noqa: E402

__all__ = ["MAX_DEALS", "MAX_MATCHES", "duel", "main", "parse_pairs"]

MAX_DEALS = 10**8
"""The most ``--deals`` (deal pairs per pairing; more would take weeks even for the fastest agents)."""
MAX_MATCHES = 10**7
"""The most ``--matches`` (match pairs per pairing; matches use seeds from 10**6 + seed)."""


def _lineups(rules: Rules, games: int, swapped: bool) -> np.ndarray:
    """Agent index per seat: agent 0 holds side 0's seats (agent 1 when ``swapped``)."""
    side = np.array(rules.seat_side)
    row = side if not swapped else 1 - side
    return np.repeat(row[None, :], games, axis=0)


def duel(
    rules: Rules, spec_a: str, spec_b: str, deals: int, matches: int, seed: int = 0, chunk: int = 500
) -> dict[str, object]:
    """Play ``spec_a`` against ``spec_b``: ``deals`` duplicate deal pairs of one hand, ``matches`` match pairs."""
    a = TimedPolicy(make_agent(spec_a, rules, seed=seed))
    b = TimedPolicy(make_agent(spec_b, rules, seed=seed + 1))
    t0 = time.perf_counter()
    pair_values = []
    for start in range(0, deals, chunk):
        seeds = np.arange(seed + start, seed + min(deals, start + chunk), dtype=np.uint64)
        straight = play(rules, [a, b], _lineups(rules, seeds.size, False), seeds, mode="hands")
        swapped = play(rules, [a, b], _lineups(rules, seeds.size, True), seeds, mode="hands")
        b_margin_1 = straight.hand_points[:, 1] - straight.hand_points[:, 0]
        b_margin_2 = swapped.hand_points[:, 0] - swapped.hand_points[:, 1]
        pair_values.append((b_margin_1 + b_margin_2) / 2)
    pv = np.concatenate(pair_values)
    hands_s = time.perf_counter() - t0
    out: dict[str, object] = {
        "variant": rules.name,
        "a": spec_a,
        "b": spec_b,
        "deal_pairs": int(pv.size),
        "hands": int(2 * pv.size),
        "margin_b_per_hand": round(float(pv.mean()), 3),
        "ci95": round(float(1.96 * pv.std(ddof=1) / np.sqrt(pv.size)), 3),
        "hands_wall_s": round(hands_s, 1),
    }
    if matches > 0:
        t1 = time.perf_counter()
        mseeds = np.arange(10**6 + seed, 10**6 + seed + matches, dtype=np.uint64)
        m1 = play(rules, [a, b], _lineups(rules, matches, False), mseeds, mode="matches")
        m2 = play(rules, [a, b], _lineups(rules, matches, True), mseeds, mode="matches")
        wins = np.concatenate([m1.winner == 1, m2.winner == 0]).astype(np.float64)
        out["matches"] = int(wins.size)
        out["win_rate_b"] = round(float(wins.mean()), 3)
        out["win_ci95"] = round(float(1.96 * wins.std(ddof=1) / np.sqrt(wins.size)), 3)
        out["matches_wall_s"] = round(time.perf_counter() - t1, 1)
    out["ms_per_decision_a"] = round(1000 * a.seconds / max(a.decisions, 1), 3)
    out["ms_per_decision_b"] = round(1000 * b.seconds / max(b.decisions, 1), 3)
    out["rows_per_call_b"] = round(b.decisions / max(b.calls, 1), 1)
    return out


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """``'A vs B; C vs D'`` -> ``[('A', 'B'), ('C', 'D')]``; raises ``ValueError`` saying what to write instead."""
    pairs = []
    for item in filter(None, (x.strip() for x in text.split(";"))):
        a, sep, b = item.partition(" vs ")
        if not sep or not a.strip() or not b.strip() or " vs " in b:
            raise ValueError(f"bad pairing {shown(item)}: write 'A vs B', e.g. 'greedy vs expert'")
        pairs.append((a.strip(), b.strip()))
    if not pairs:
        raise ValueError(f"no pairing in {shown(text)}: write 'A vs B' pairings separated by ';'")
    return pairs


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variant: str = setting("classic", f"variant ({', '.join(variant_names())})", show_default=False)
    pairs: str = setting(
        "random vs greedy; greedy vs expert; expert vs pimc; greedy vs pimc; greedy vs ismcts",
        "pairings 'A vs B' separated by ';' (e.g. 'greedy vs pimc:worlds=32,prior=0.5')",
        show_default=False,
    )
    deals: int = setting(
        1000,
        "deal pairs per pairing (2 hands each; 2..10**8: the confidence interval needs 2)",
        parse=int_arg(2, MAX_DEALS),
        show_default=False,
    )
    matches: int = setting(
        100,
        "match pairs per pairing (0: skip matches; at most 10**7)",
        parse=int_arg(0, MAX_MATCHES),
        show_default=False,
    )
    seed: int = setting(
        0,
        "first deal seed, 0..2**63-1 (matches use seeds from 10**6 + seed)",
        parse=int_arg(0, MAX_SEED),
        show_default=False,
    )
    chunk: int = setting(
        500, "deals played at once (the arena's batch; 1..2**20)", parse=int_arg(1, MAX_BATCH), show_default=False
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/agents_ladder.py", description=__doc__.split("\n\n")[0])
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    rules = variant_rules(p, args.variant)
    if rules.num_sides != 2:
        p.error(
            f"--variant: variant {rules.name!r} has {rules.num_sides} sides; the ladder compares two sides "
            "(two players, or two teams)"
        )
    try:
        pairs = parse_pairs(args.pairs)
    except ValueError as e:
        p.error(f"--pairs: {e}")
    for spec in dict.fromkeys(s for pair in pairs for s in pair):
        check_spec(p, "--pairs", spec, rules)
    rows = []
    for a, b in pairs:
        r = duel(rules, a, b, args.deals, args.matches, args.seed, args.chunk)
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
    print(f"variant {rules.name}, seed {args.seed}")
    print("| A | B | hands | B's margin per hand (95% CI) | B's match win rate (matches) | B's ms/decision |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        win = f"{r['win_rate_b']:.1%} ± {r['win_ci95']:.1%} ({r['matches']})" if "matches" in r else "-"
        print(
            f"| {r['a']} | {r['b']} | {r['hands']} | {r['margin_b_per_hand']:+.3f} ± {r['ci95']:.3f} | {win} | "
            f"{r['ms_per_decision_b']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
