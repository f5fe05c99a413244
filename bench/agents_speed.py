"""Milliseconds per decision of each agent, on one core, in the batched setting the tournament uses.

    python bench/agents_speed.py --variant classic --games 512 --agents random,greedy,expert,pimc,ismcts

Each agent plays ``--games`` hands at once against ``--opponent`` (seats alternating) through
``scopa_env.games.driver.play``, so it acts on about ``games / players`` rows per call, as in ``evaluate.py``. The time
inside the agent's ``act`` is divided by the decisions it made (a CHOOSE-phase pick counts as a decision). Prints a
table, then one JSON line per agent. BLAS threads are pinned to one. Every argument is checked (and every agent spec
loaded) before any game is played; a bad one exits with status 2 and one ``python bench/agents_speed.py: error: ...``
line.
"""

from __future__ import annotations

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads: one BLAS / OpenMP thread

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

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
from scopa_env.games.policy import ActBatch, Policy  # noqa: E402
from scopa_env.rules import Rules, get_rules, variant_names  # noqa: E402

__all__ = ["TimedPolicy", "bench_agent", "check_spec", "main", "shown"]


class TimedPolicy(Policy):
    """Wraps a policy and accumulates the time spent in its ``act`` and the rows it decided."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.rules = inner.rules
        self.name = inner.name
        self.needs_state = inner.needs_state
        self.seconds = 0.0
        self.decisions = 0
        self.calls = 0

    def seed(self, seed: int | None = None) -> None:
        self.inner.seed(seed)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        t0 = time.perf_counter()
        out = self.inner.act(batch)
        self.seconds += time.perf_counter() - t0
        self.decisions += len(batch)
        self.calls += 1
        return out


def bench_agent(variant: str, spec: str, opponent: str, games: int, seed: int = 0) -> dict[str, float | int | str]:
    """Play ``games`` hands of ``spec`` against ``opponent``; the agent's ms per decision and mean rows per call."""
    rules = get_rules(variant)
    agent = TimedPolicy(make_agent(spec, rules, seed=seed))
    other = make_agent(opponent, rules, seed=seed + 1)
    n = rules.num_players
    lineups = (np.arange(games)[:, None] + np.arange(n)[None, :]) % 2  # agent 0 and 1 alternate around the table
    t0 = time.perf_counter()
    res = play(rules, [agent, other], lineups, np.arange(seed, seed + games, dtype=np.uint64), mode="hands")
    wall = time.perf_counter() - t0
    return {
        "variant": rules.name,
        "agent": spec,
        "opponent": opponent,
        "games": games,
        "decisions": agent.decisions,
        "rows_per_call": round(agent.decisions / max(agent.calls, 1), 1),
        "ms_per_decision": round(1000 * agent.seconds / max(agent.decisions, 1), 4),
        "wall_s": round(wall, 2),
        "all_decisions": int(res.decisions),
    }


def shown(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to about ``limit`` characters: a value quoted in a one-line error message."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def check_spec(p: argparse.ArgumentParser, flag: str, spec: str, rules: Rules) -> None:
    """Exit through ``p.error`` unless ``spec`` builds an agent for ``rules`` (built once, then dropped)."""
    if not spec.strip():
        p.error(f"{flag}: an empty agent spec; give a name (random, greedy, pimc:worlds=32), a checkpoint or a bot")
    try:
        make_agent(spec, rules, seed=0)
    except (ValueError, ImportError, OSError) as e:  # AgentSpecError is a ValueError; an optional package missing
        text = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)  # e.g. "File name too long"
        p.error(f"{flag}: agent {shown(spec)} cannot be used: {' '.join(text.split())}")


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variant: str = setting("classic", f"variant ({', '.join(variant_names())})", show_default=False)
    agents: str = setting(
        "random,greedy,expert,pimc,ismcts", "agent specs, separated by ';' or ','", show_default=False
    )
    opponent: str = setting("greedy", "spec of the agent in the other seats", show_default=False)
    games: int = setting(
        512, "hands played at once (the arena's batch; 1..2**20)", parse=int_arg(1, MAX_BATCH), show_default=False
    )
    seed: int = setting(0, "seed of the first hand (0..2**63-1)", parse=int_arg(0, MAX_SEED), show_default=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/agents_speed.py", description=__doc__.split("\n\n")[0])
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    rules = variant_rules(p, args.variant)
    sep = ";" if ";" in args.agents else ","
    specs = [s.strip() for s in args.agents.split(sep) if s.strip()]
    if not specs:
        p.error(f"--agents {shown(args.agents)}: no agent spec; give specs separated by ';' or ',', e.g. 'greedy;pimc'")
    if sep == "," and any(":" in s for s in specs):
        p.error(
            f"--agents {shown(args.agents)}: separate agent specs that have options with ';', "
            "e.g. --agents 'greedy;pimc:worlds=32'"
        )
    for spec in dict.fromkeys(specs):
        check_spec(p, "--agents", spec, rules)
    check_spec(p, "--opponent", args.opponent, rules)
    rows = [bench_agent(args.variant, s, args.opponent, args.games, args.seed) for s in specs]
    print(f"{'agent':<28} {'ms/decision':>12} {'rows/call':>10} {'decisions':>10} {'wall s':>8}")
    for r in rows:
        print(
            f"{r['agent']!s:<28} {r['ms_per_decision']:>12.4f} {r['rows_per_call']:>10} {r['decisions']:>10} "
            f"{r['wall_s']:>8}"
        )
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
