"""The leaderboard: every shipped bot, pimc, ismcts, expert, greedy and random rated per variant, with their cost.

    .venv/bin/python bench/leaderboard.py                                # every variant, 500 deals each
    .venv/bin/python bench/leaderboard.py --variants classic scopone-scientifico --deals 1000 --workers 2

For each variant, one round robin on the same fixed, fresh duplicate deals (``--seed``; every deal played with the
seats rotated) through ``evaluate.py``'s tournament: ratings on the logistic Elo scale with ``random`` at 0 and 95%
intervals, and each agent's margin against ``pimc`` in points per hand. Each agent's cost per move is measured
apart (``bench/agents_speed.py``'s timing: milliseconds per decision on one core, ``--cost-games`` hands against
greedy). The shipped bot is the variant's default (``bot``); a variant with none says so.

Writes ``--out/<variant>/`` (the tournament's results.json and tables, and ``cost.json``), then ``--doc``
(default ``docs/leaderboard.md``) and ``--plot`` (default ``docs/img/leaderboard.png``: rating against cost per move,
a panel per variant). A variant whose results are already in ``--out`` is not played again, so a stopped run
resumes where it stopped (``--fresh`` plays everything again). Every wait shows a progress bar with an ETA.

Everything is checked before the first game: ``--doc`` and ``--plot`` must be files that can be written (the plot's
suffix an image format: .png, .svg, .pdf, ...), and the results and costs read back from ``--out`` must be whole
(a damaged ``results.json`` or ``cost.json`` is one error line naming the file; ``--fresh`` plays it again).
"""

from __future__ import annotations

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads: one BLAS / OpenMP thread

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agents.cli.atomic import atomic_open, atomic_write_text  # noqa: E402
from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    add_field_options,
    parse_options,
    path_parser,
    setting,
    short_repr,
)
from agents.cli.shell import shown_path  # noqa: E402
from scopa_env.errors import ScopaEnvError  # noqa: E402
from scopa_env.rules import get_rules, variant_names  # noqa: E402

__all__ = [
    "DEFAULT_AGENTS",
    "LeaderboardError",
    "board_rows",
    "check_outputs",
    "main",
    "read_board",
    "write_doc",
    "write_plot",
]

DEFAULT_AGENTS = ("bot", "pimc", "ismcts", "expert", "greedy", "random")
"""The entrants of every variant (``bot``: the variant's shipped bot, left out where there is none)."""
DEFAULT_SEED = 20_261_204
"""The leaderboard's deals: seeds no bot was tuned or measured on elsewhere."""
PROG = "bench/leaderboard.py"
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp")
"""The image formats ``--plot`` may be written in (its suffix): matplotlib's own and those of its Pillow."""
MAX_BOARD_BYTES = 20_000_000
"""The largest results.json or cost.json read back from ``--out`` (a variant's are a few tens of KB)."""


class LeaderboardError(ScopaEnvError, ValueError):
    """A bad output path, or a damaged results.json / cost.json in ``--out``; the message names the file and the fix."""


def _entrants(variant: str, agents: Sequence[str]) -> tuple[list[tuple[str, str]], str | None]:
    """(label, spec) of each entrant of ``variant`` (``bot``: its shipped bot, or left out) and the bot's spec."""
    from agents.nets.bot import shipped_bot_spec

    spec = shipped_bot_spec(variant)
    out = []
    for a in agents:
        if a == "bot":
            if spec is not None:
                out.append(("bot", spec))
        else:
            out.append((a, a))
    return out, spec


def _play_variant(
    variant: str, agents: Sequence[str], deals: int, seed: int, workers: int, out: Path, cost_games: int
) -> dict[str, Any]:
    """The tournament and the costs of one variant, written to ``out`` (results.json, cost.json); returns both."""
    from agents.evaluation.eval_config import EvalConfig
    from agents.evaluation.report import write_outputs
    from agents.evaluation.tournament import run_tournament
    from scopa_bench.agents_speed import bench_agent

    entrants, bot_spec = _entrants(variant, agents)
    config = EvalConfig(
        variant=variant,
        agents=[spec if label == spec else f"{label}={spec}" for label, spec in entrants],
        deals=deals,
        mode="hands",
        seed=seed,
        workers=workers,
        anchor="random" if ("random", "random") in entrants else None,
    )
    result = run_tournament(config, progress=True, out=out, plots=False, handle_signals=True)
    write_outputs(result, out, plots=False)
    costs: dict[str, Any] = {}
    from tqdm import tqdm

    for label, spec in tqdm(entrants, desc=f"{variant}: cost per move", unit="agent", file=sys.stderr):
        costs[label] = bench_agent(variant, spec, "greedy", cost_games, seed=seed)
    (out / "cost.json").write_text(json.dumps({"bot": bot_spec, "costs": costs}, indent=1) + "\n")
    return {"results": json.loads((out / "results.json").read_text()), "costs": costs, "bot": bot_spec}


def board_rows(results: dict[str, Any], costs: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per agent of a variant's results.json and cost.json: rating and interval, margin against pimc (from
    the agent's side), ms per decision; best rating first."""
    rows = []
    for r in results["ratings"]:
        vs_pimc = None
        for p in results["pairings"]:
            m = p["margin"]  # a null (non-finite) value: no margin; null bounds: the value alone
            if {p["agent"], p["opponent"]} == {r["agent"], "pimc"} and r["agent"] != "pimc" and m["value"] is not None:
                sign = 1.0 if p["agent"] == r["agent"] else -1.0
                bounds = (None, None) if None in (m["low"], m["high"]) else sorted((sign * m["low"], sign * m["high"]))
                vs_pimc = {"value": sign * m["value"], "low": bounds[0], "high": bounds[1]}
        cost = costs.get(r["agent"], {})
        rows.append(
            {
                "agent": r["agent"],
                "rating": r["rating"],
                "low": r["low"],
                "high": r["high"],
                "vs_pimc": vs_pimc,
                "ms": cost.get("ms_per_decision"),
            }
        )
    return sorted(rows, key=lambda row: -math.inf if row["rating"] is None else -row["rating"])


def _shown_spec(spec: str) -> str:
    """A bot spec with its path relative to the working directory (the repository root when run from there)."""
    if "=" not in spec:
        return shown_path(spec)
    return re.sub(r"path=([^,]+)", lambda m: "path=" + shown_path(m.group(1)), spec)


def _interval(value: float | None, low: float | None, high: float | None, digits: int = 0) -> str:
    if value is None:  # not finite (results.json writes null)
        return "—"
    if low is None or high is None:
        return f"{value:+.{digits}f}"
    return f"{value:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def write_doc(boards: dict[str, dict[str, Any]], path: Path, plot: Path | None, command: str) -> None:
    """``docs/leaderboard.md``: a table per variant and the plot."""
    lines = [
        "# Leaderboard",
        "",
        "Every shipped bot, `pimc`, `ismcts`, `expert`, `greedy` and `random`, rated per variant in one round robin on",
        "the same fresh duplicate deals (each played with the seats rotated). Rating: logistic Elo with `random` at 0,",
        "95% bootstrap interval over deals. *vs pimc*: the agent's points per hand minus pimc's, 95% interval.",
        "*ms/move*: milliseconds per decision on one core (hands against greedy), on the machine and load of the run.",
        "",
        f"Made with `{command}` (`bench/leaderboard.py`; its `--help` says how to resume a stopped run).",
        "",
    ]
    missing = [v for v in variant_names() if v not in boards]
    if missing:
        lines += [
            f"Not rated on this page yet: {', '.join(missing)}. Add them to `--variants` to rate them (variants"
            " already in `--out` are read back, not played again).",
            "",
        ]
    lines += [
        "Hands mode: each deal is one hand, so variants that differ only in the match's target (`classic-15`,",
        "`classic-21` and `classic`) play the same games here.",
        "",
    ]
    if plot is not None:
        rel = Path("img") / plot.name if plot.parent.name == "img" else plot
        lines += [f"![rating against cost per move, a panel per variant]({rel.as_posix()})", ""]
    for variant, board in boards.items():
        res = board["results"]
        deals = res.get("deals", {})
        n = deals.get("count") if isinstance(deals, dict) else None
        seed = res.get("config", {}).get("seed")
        lines += [f"## {variant}", ""]
        games = res.get("games", {})
        facts = [f"{games['played']:,} hands" if isinstance(games, dict) and "played" in games else ""]
        if n:
            facts.append(f"{n:,} deals")
        if seed is not None:
            facts.append(f"seed {seed}")
        bot = board.get("bot")
        facts.append(f"shipped bot `{_shown_spec(bot)}`" if bot else "no shipped bot for this variant")
        lines += ["; ".join(f for f in facts if f) + ".", ""]
        lines += ["| # | agent | rating [95%] | vs pimc, points per hand [95%] | ms/move |", "|---|---|---|---|---|"]
        for k, row in enumerate(board_rows(res, board["costs"]), 1):
            vs = row["vs_pimc"]
            vs_text = "—" if vs is None else _interval(vs["value"], vs["low"], vs["high"], 2)
            ms = "—" if row["ms"] is None else f"{row['ms']:.3g}"
            rating = _interval(row["rating"], row["low"], row["high"])
            lines.append(f"| {k} | {row['agent']} | {rating} | {vs_text} | {ms} |")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(lines))


def write_plot(boards: dict[str, dict[str, Any]], path: Path) -> None:
    """Rating (with its interval) against ms per move (log scale), a panel per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(boards))
    cols = min(3, n)
    rows_n = math.ceil(n / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.4 * rows_n), squeeze=False)
    colours: dict[str, str] = {}  # one colour per agent in every panel, in order of first appearance
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (variant, board) in zip(axes.flat, boards.items(), strict=False):
        for row in board_rows(board["results"], board["costs"]):
            if row["ms"] is None or None in (row["rating"], row["low"], row["high"]):
                continue
            ms = max(row["ms"], 1e-4)
            ax.errorbar(
                ms,
                row["rating"],
                yerr=[[max(0.0, row["rating"] - row["low"])], [max(0.0, row["high"] - row["rating"])]],  # never < 0
                fmt="o",
                capsize=3,
                color=colours.setdefault(row["agent"], palette[len(colours) % len(palette)]),
            )
            ax.annotate(row["agent"], (ms, row["rating"]), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_title(variant, fontsize=10)
        ax.set_xlabel("ms per move (one core)")
        ax.set_ylabel("rating (Elo, random = 0)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "wb") as f:  # the format of the suffix (check_outputs), never a guessed name ".png"
        fig.savefig(f, dpi=110, format=path.suffix[1:].lower())
    plt.close(fig)


# --------------------------------------------------------------------------------------------------- checks


def check_outputs(doc: Path, plot: Path) -> None:
    """Refuse, before any game, a ``--doc`` or ``--plot`` that could not be written once the games are played: a
    folder, a path under a file or an unwritable folder, a plot whose suffix is no image format matplotlib writes,
    or both the same file. Raises ``LeaderboardError``."""
    from agents.errors import TournamentError
    from agents.evaluation.tournament import check_output_file

    if not plot.is_dir() and plot.suffix[1:].lower() not in PLOT_FORMATS:
        given = f"the suffix {short_repr(plot.suffix)}" if plot.suffix else "no suffix"
        raise LeaderboardError(
            f"--plot {plot} has {given}, not an image format; give a file name ending in "
            f"{', '.join('.' + x for x in PLOT_FORMATS)}"
        )
    if os.path.realpath(doc) == os.path.realpath(plot):
        raise LeaderboardError(f"--doc and --plot are the same file {doc}; give two different files")
    for path, option, example in ((doc, "--doc", "leaderboard.md"), (plot, "--plot", "leaderboard.png")):
        try:
            check_output_file(path, option, example)
        except TournamentError as e:
            raise LeaderboardError(str(e)) from None


def _board_problem(path: Path, problem: str) -> LeaderboardError:
    variant_dir = path.parent
    return LeaderboardError(
        f"{path}: {problem}; the file is damaged: run with --fresh to play the variant again, or remove {variant_dir}"
    )


def _read_json(path: Path) -> Any:
    """The JSON in ``path``, read with its size bounded first; ``LeaderboardError`` naming the file otherwise."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BOARD_BYTES + 1)
    except OSError as e:
        raise _board_problem(path, f"cannot be read ({e.strerror or type(e).__name__})") from None
    if len(raw) > MAX_BOARD_BYTES:
        raise _board_problem(path, f"is over {MAX_BOARD_BYTES:,} bytes, not a leaderboard file")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _board_problem(path, "is not text (not UTF-8)") from None
    except ValueError as e:  # json.JSONDecodeError
        raise _board_problem(
            path, f"is not valid JSON ({getattr(e, 'msg', e)}, line {getattr(e, 'lineno', '?')})"
        ) from None
    except RecursionError:
        raise _board_problem(path, "is not valid JSON (nested too deeply)") from None


def _number(d: dict[str, Any], key: str) -> bool:
    """``d[key]`` is there and a finite number (not a bool) or None (results.json writes a non-finite value as
    null)."""
    x = d.get(key, math.nan)
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))


def _whole(d: Any, key: str, null: bool = True) -> bool:
    """``d`` is an object whose ``key``, if there, is a whole number (or null where ``null``)."""
    if not isinstance(d, dict):
        return False
    x = d.get(key)
    return key not in d or (x is None and null) or (isinstance(x, int) and not isinstance(x, bool))


def _check_results(path: Path, res: Any, variant: str) -> None:
    from agents.evaluation.report import RESULTS_FORMAT

    if not isinstance(res, dict):
        raise _board_problem(path, f"must hold a JSON object, got {type(res).__name__}")
    if res.get("format") != RESULTS_FORMAT:
        raise _board_problem(path, f"is not an evaluate.py results file (format {short_repr(res.get('format'))})")
    if res.get("variant") != variant:
        raise _board_problem(path, f"holds the results of variant {short_repr(res.get('variant'))}, not {variant!r}")
    ratings, pairings = res.get("ratings"), res.get("pairings")
    if not isinstance(ratings, list) or not ratings:
        raise _board_problem(path, "'ratings' must be a non-empty list")
    for i, r in enumerate(ratings):
        ok = (
            isinstance(r, dict)
            and isinstance(r.get("agent"), str)
            and all(_number(r, k) for k in ("rating", "low", "high"))
        )
        if not ok:
            raise _board_problem(
                path, f"ratings[{i}] must be an object with a text 'agent' and numbers 'rating', 'low', 'high'"
            )
    if not isinstance(pairings, list):
        raise _board_problem(path, "'pairings' must be a list")
    for i, p in enumerate(pairings):
        m = p.get("margin") if isinstance(p, dict) else None
        ok = (
            isinstance(p, dict)
            and isinstance(p.get("agent"), str)
            and isinstance(p.get("opponent"), str)
            and isinstance(m, dict)
            and all(_number(m, k) for k in ("value", "low", "high"))
        )
        if not ok:
            raise _board_problem(
                path, f"pairings[{i}] must be an object with text 'agent', 'opponent' and a 'margin' of numbers"
            )
    games, deals, config = res.get("games", {}), res.get("deals", {}), res.get("config", {})
    if not _whole(games, "played", null=False):
        raise _board_problem(path, "'games' must be an object with a whole number 'played'")
    if not _whole(deals, "count"):
        raise _board_problem(path, "'deals' must be an object with a whole number 'count'")
    if not _whole(config, "seed"):
        raise _board_problem(path, "'config' must be an object with a whole number 'seed'")


def _check_costs(path: Path, cost: Any) -> None:
    costs = cost.get("costs") if isinstance(cost, dict) else None
    if not isinstance(costs, dict):
        raise _board_problem(path, "must hold a JSON object with an object 'costs' (agent: its cost)")
    if not (cost.get("bot") is None or isinstance(cost.get("bot"), str)):
        raise _board_problem(path, "'bot' must be the shipped bot's spec (text) or null")
    for label, c in costs.items():
        if not isinstance(c, dict) or not _number(c, "ms_per_decision") or (c["ms_per_decision"] or 0) < 0:
            raise _board_problem(
                path, f"costs[{short_repr(label)}] must be an object with a number 'ms_per_decision' >= 0"
            )


def read_board(out: Path, variant: str, fresh: bool = False) -> dict[str, Any] | None:
    """The board of ``variant`` already in ``out`` (its ``results.json`` and ``cost.json``), checked whole: None
    when it is not there, only partly played or ``fresh`` (it is played again); ``LeaderboardError`` naming the
    damaged file."""
    done, cost_path = out / "results.json", out / "cost.json"
    for path in (done, cost_path):
        if path.exists() and not path.is_file():
            raise LeaderboardError(
                f"{path} is not a file (a folder?); the leaderboard writes it there: move it away or give another --out"
            )
    if fresh or not (done.is_file() and cost_path.is_file()):
        return None
    res = _read_json(done)
    if isinstance(res, dict) and res.get("partial") is True:
        return None  # a tournament that was stopped: played again
    _check_results(done, res, variant)
    cost = _read_json(cost_path)
    _check_costs(cost_path, cost)
    return {"results": res, "costs": cost["costs"], "bot": cost.get("bot")}


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    variants: list[str] | None = setting(
        None,
        f"variants to rate (default: all: {', '.join(variant_names())})",
        metavar="VARIANT",
        nargs="+",
        show_default=False,
    )
    agents: list[str] | None = setting(
        None, f"entrants (default: {' '.join(DEFAULT_AGENTS)})", metavar="SPEC", nargs="+", show_default=False
    )
    deals: int = setting(500, "deals per variant (default 500)", parse=int_arg(1, 10**6), show_default=False)
    seed: int = setting(DEFAULT_SEED, "first deal's seed", parse=int_arg(0, 2**63 - 1), show_default=False)
    workers: int = setting(0, "worker processes (default 0: all cores)", parse=int_arg(0, 1024), show_default=False)
    cost_games: int = setting(
        64, "hands timed per agent for its cost (default 64)", parse=int_arg(1, 10**5), show_default=False
    )
    out: Path = setting(
        Path("runs/leaderboard"), "results folder (default runs/leaderboard)", parse=Path, show_default=False
    )
    doc: Path = setting(
        Path("docs/leaderboard.md"), "page to write", parse=path_parser("the file to write"), show_default=False
    )
    plot: Path = setting(
        Path("docs/img/leaderboard.png"),
        "plot to write (.png, .svg, .pdf, ...)",
        parse=path_parser("the file to write"),
        show_default=False,
    )
    fresh: bool = setting(
        False, "play every variant again, even those already in --out", negatable=False, show_default=False
    )


def build_parser() -> argparse.ArgumentParser:

    p = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_field_options(p, Options, typed=True, once=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the leaderboard; 0 when written, 2 for a bad argument, 130 when stopped (what was finished is kept)."""
    args = parse_options(build_parser(), Options, argv)
    variants = args.variants or list(variant_names())
    try:
        variants = [get_rules(v).name for v in variants]
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    agents = list(args.agents or DEFAULT_AGENTS)
    boards: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    try:
        check_outputs(args.doc, args.plot)  # everything that can be checked is checked before the first game
        saved = {v: read_board(args.out / v, v, fresh=args.fresh) for v in variants}
        for k, variant in enumerate(variants, 1):
            out = args.out / variant
            board = saved[variant]
            if board is not None:
                boards[variant] = board
                print(
                    f"[{k}/{len(variants)}] {variant}: already played ({out / 'results.json'}); --fresh plays it again"
                )
                continue
            print(f"[{k}/{len(variants)}] {variant}: {args.deals:,} deals, agents {' '.join(agents)}", flush=True)
            boards[variant] = _play_variant(variant, agents, args.deals, args.seed, args.workers, out, args.cost_games)
    except KeyboardInterrupt:
        print(f"{PROG}: stopped; the finished variants are kept in {args.out} (run again to resume)", file=sys.stderr)
        return 130
    except ValueError as e:  # LeaderboardError; TournamentError, AgentSpecError: a bad agent spec
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    command = " ".join([".venv/bin/python", PROG, *(argv if argv is not None else sys.argv[1:])])
    try:
        write_plot(boards, args.plot)
        write_doc(boards, args.doc, args.plot, command)
    except (OSError, ValueError, RuntimeError) as e:  # the disk changed during the games: the results are kept
        reason = e.strerror if isinstance(e, OSError) and e.strerror else short_repr(str(e), 120)
        print(
            f"{PROG}: error: cannot write the page or plot ({reason}); the results are kept in "
            f"{args.out}: run the same command again to write the page (nothing is played again)",
            file=sys.stderr,
        )
        return 1
    print(f"wrote {args.doc} and {args.plot} ({len(boards)} variants, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
