"""Scope (sweeps) made and conceded per hand by each agent, read from an evaluation's game records.

    .venv/bin/python evaluate.py --variant scopone-scientifico --gauntlet bot --agents pimc --hands 1000 \
        --records runs/x/games.jsonl --out runs/x
    .venv/bin/python bench/scope_stats.py runs/x/games.jsonl

Each record names the agent of each side (``agents``); for every agent this prints the scope its side made per
hand and the scope the other sides made against it per hand (with a 95% normal interval over hands), and the
same for the points of each hand.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from agents.cli.settings import add_field_options, parse_options, path_arguments


def _mean_ci(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / max(n - 1, 1)
    return m, 1.96 * math.sqrt(var / n)


def scope_stats(paths: list[Path]) -> dict[str, dict[str, tuple[float, float]]]:
    """{agent: {"made": (mean, ci), "conceded": (mean, ci), "hands": n}} over every hand of the records."""
    made: dict[str, list[float]] = defaultdict(list)
    conceded: dict[str, list[float]] = defaultdict(list)
    for path in paths:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                record = json.loads(line)
                agents = record.get("agents")
                if not agents:
                    raise SystemExit(
                        f"{path}: a record without 'agents' (write the records with evaluate.py --records)"
                    )
                for hand in record["hands"]:
                    scope = [int(p["scope"]) for p in hand["points"]]
                    for side, agent in enumerate(agents):
                        made[agent].append(scope[side])
                        others = [scope[o] for o in range(len(scope)) if o != side]
                        conceded[agent].append(sum(others) / len(others))
    return {a: {"made": _mean_ci(made[a]), "conceded": _mean_ci(conceded[a]), "hands": len(made[a])} for a in made}


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    records: list[Path] = path_arguments("records", "game records (.jsonl) written by evaluate.py --records")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_field_options(parser, Options, typed=True, once=False)
    args = parse_options(parser, Options, argv)
    stats = scope_stats(args.records)
    print("| agent | hands | scope made per hand [95%] | scope conceded per hand [95%] |")
    print("|---|---|---|---|")
    for agent, s in sorted(stats.items()):
        (m, mc), (c, cc) = s["made"], s["conceded"]
        print(f"| {agent} | {s['hands']} | {m:.2f} ± {mc:.2f} | {c:.2f} ± {cc:.2f} |")


if __name__ == "__main__":
    main()
