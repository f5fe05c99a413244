"""What a tournament produced and how it is reported: the results (``TournamentResult``, one ``PairingResult`` per
pairing), their JSON form (``results.json``, read back by ``load_results``), the terminal and Markdown tables, the
CSV tables and the rating plots, every file replaced atomically."""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from agents.cli.atomic import atomic_open, atomic_write_text
from agents.cli.git_info import short_commit
from agents.evaluation.deals import Deals
from agents.evaluation.entries import AgentEntry
from agents.evaluation.ratings import PairingStats, RatingTable, SPRTResult, pairing_stats

__all__ = [
    "RESULTS_FORMAT",
    "PairingResult",
    "ResultSettings",
    "TournamentResult",
    "load_results",
    "plot_ratings",
    "plot_steps",
    "print_report",
    "render_markdown",
    "write_outputs",
    "write_static",
    "write_tables",
]

RESULTS_FORMAT = "scopa-eval"
"""``format`` field of ``results.json``."""


class ResultSettings(Protocol):
    """The settings that results and reports read (``agents.evaluation.eval_config.EvalConfig`` has them all)."""

    @property
    def variant(self) -> str: ...
    @property
    def mode(self) -> str | None: ...
    @property
    def batch(self) -> int | None: ...
    @property
    def level(self) -> float: ...
    @property
    def anchor_rating(self) -> float: ...
    @property
    def deals_file(self) -> str | None: ...
    @property
    def records(self) -> str | None: ...
    @property
    def partner(self) -> str | None: ...
    def to_dict(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------------------------------- results


@dataclass
class PairingResult:
    """All the deals of one pairing (A is the row agent) and their statistics."""

    a: int
    """Entry index of the row agent."""
    b: int
    """Entry index of the column agent."""
    margins: npt.NDArray[np.float64]
    """(deals,) A's points per hand minus B's, per deal group."""
    half_points: npt.NDArray[np.int64]
    """(deals,) A's half points per deal group."""
    wins: int
    draws: int
    losses: int
    hands: int
    stats: PairingStats


@dataclass
class TournamentResult:
    """Everything an evaluation produced."""

    config: ResultSettings
    """The settings, resolved (deals count filled in): the ``agents.evaluation.eval_config.EvalConfig`` played."""
    entries: list[AgentEntry]
    """The agents, in table order."""
    deals: Deals
    """The deal set (for SPRT, the budget; ``pairings[i].stats.deals`` says how many were played)."""
    rotations: list[tuple[int, ...]]
    """Side patterns played for every deal (``side_patterns``); with a ``partner``, seat lineups instead (the agent slot
    of every seat, 2 for the partner: ``game_plan``)."""
    pairings: list[PairingResult]
    """One per pairing, in schedule order."""
    ratings: RatingTable
    """Bradley-Terry ratings with bootstrap intervals."""
    anchor: int
    """Entry index of the anchored agent."""
    sprt: SPRTResult | None
    """The SPRT's outcome, in SPRT mode."""
    hands_played: int
    """Hands played, all pairings (including SPRT tasks cut short)."""
    seconds: float
    """Wall-clock time spent playing."""
    workers: int
    """Worker processes used (1: in this process)."""
    records_written: int = 0
    """Game records written to ``config.records``."""
    created: str = ""
    """Start time, ISO 8601."""
    status: str = "complete"
    """``complete``; while playing ``running``; stopped early ``interrupted`` (a signal) or ``failed`` (an error)."""
    games_planned: int = 0
    """Games of the schedule (for SPRT, of the whole budget)."""
    paths: dict[str, Path] = field(default_factory=dict)
    """The files written for it by ``run_tournament(..., out=DIR)``, by kind (as ``write_outputs`` returns them)."""

    @property
    def partial(self) -> bool:
        """True unless every planned game was played (or the SPRT decided): results so far only."""
        return self.status != "complete"

    @property
    def games_played(self) -> int:
        """Games whose results are counted (all pairings)."""
        return sum(p.stats.games for p in self.pairings)

    @property
    def hands_per_second(self) -> float:
        return self.hands_played / self.seconds if self.seconds > 0 else math.nan

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.entries]

    def pairing(self, a: str | int, b: str | int) -> PairingStats:
        """Statistics of the pairing between two agents (labels or indices), from ``a``'s point of view."""
        ia = a if isinstance(a, int) else self.labels.index(a)
        ib = b if isinstance(b, int) else self.labels.index(b)
        for p in self.pairings:
            if (p.a, p.b) == (ia, ib):
                return p.stats
            if (p.a, p.b) == (ib, ia):
                return _flip(p, self.config.level).stats
        raise KeyError(f"no pairing between {a!r} and {b!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``results.json``)."""
        labels = self.labels
        order = self.ratings.order()
        ratings = []
        for rank, i in enumerate(order):
            nxt = order[rank + 1] if rank + 1 < len(order) else None
            games, score = _agent_totals(self, i)
            ratings.append(
                {
                    "rank": rank + 1,
                    "agent": labels[i],
                    "spec": self.entries[i].spec,
                    "steps": self.entries[i].steps,
                    "rating": float(self.ratings.ratings[i]),
                    "low": float(self.ratings.low[i]),
                    "high": float(self.ratings.high[i]),
                    "games": games,
                    "score": score,
                    "los_next": self.ratings.los(i, nxt) if nxt is not None else None,
                }
            )
        return _jsonable(
            {
                "format": RESULTS_FORMAT,
                "version": 1,
                "created": self.created,
                "code_version": short_commit(),
                "partial": self.partial,
                "status": self.status,
                "games": {"planned": self.games_planned, "played": self.games_played},
                "variant": self.config.variant,
                "mode": self.config.mode,
                "config": self.config.to_dict(),
                "deals": {"count": len(self.deals), "source": self.deals.source},
                "rotations": [list(r) for r in self.rotations],
                "agents": [{"label": e.label, "spec": e.spec, "steps": e.steps} for e in self.entries],
                "anchor": {"agent": labels[self.anchor], "rating": self.ratings.anchor_rating},
                "ratings": ratings,
                "pairings": [
                    {"agent": labels[p.a], "opponent": labels[p.b], **p.stats.to_dict()} for p in self.pairings
                ],
                "sprt": self.sprt.to_dict() if self.sprt is not None else None,
                "speed": {
                    "hands": self.hands_played,
                    "seconds": self.seconds,
                    "hands_per_second": self.hands_per_second,
                    "workers": self.workers,
                    "batch": self.config.batch,
                },
                "records": {"path": self.config.records, "count": self.records_written},
            }
        )


def _flip(p: PairingResult, level: float) -> PairingResult:
    """The same pairing from the other agent's point of view."""
    lineups = (p.stats.games // p.stats.deals) if p.stats.deals else 2
    half = 2 * lineups - p.half_points
    stats = pairing_stats(-p.margins, half, lineups, p.losses, p.draws, p.wins, p.hands, level)
    return PairingResult(p.b, p.a, -p.margins, half, p.losses, p.draws, p.wins, p.hands, stats)


def _agent_totals(result: TournamentResult, i: int) -> tuple[int, float | None]:
    games = points = 0.0
    for p in result.pairings:
        if i in (p.a, p.b):
            games += p.stats.games
            mine = p.wins + p.draws / 2.0
            points += mine if i == p.a else p.stats.games - mine
    return int(games), (points / games if games else None)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a ``results.json`` (or the directory holding it) and check its format."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise ValueError(f"{path} is not an evaluate.py results file (format {RESULTS_FORMAT!r})")
    return data


# --------------------------------------------------------------------------------------------------- outputs


def _fmt(x: float | None, digits: int = 2, sign: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "inf" if x is not None and x > 0 else ("-inf" if x is not None and x < 0 else "n/a")
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _pm(value: float, low: float, high: float, digits: int = 2, sign: bool = True) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return _fmt(value, digits, sign)
    return f"{_fmt(value, digits, sign)} ± {(high - low) / 2:.{digits}f}"


def _crosstable(result: TournamentResult) -> list[list[str]]:
    labels = result.labels
    k = len(labels)
    cells = [["" for _ in range(k)] for _ in range(k)]
    for i in range(k):
        cells[i][i] = "—"
    for p in result.pairings:
        s = p.stats
        for i, j, sgn, sc in ((p.a, p.b, 1.0, s.score.value), (p.b, p.a, -1.0, 1.0 - s.score.value)):
            m = s.margin
            lo, hi = sorted((sgn * m.low, sgn * m.high))
            cells[i][j] = f"{_pm(sgn * m.value, lo, hi)} ({100 * sc:.0f}%)"
    return cells


def _table_rows(result: TournamentResult) -> dict[str, tuple[list[str], list[list[str]]]]:
    d = result.to_dict()
    rating_rows = [
        [
            str(r["rank"]),
            r["agent"],
            _fmt(r["rating"], 0),
            f"[{_fmt(r['low'], 0)}, {_fmt(r['high'], 0)}]",
            str(r["games"]),
            f"{100 * r['score']:.1f}%" if r["score"] is not None else "n/a",
            f"{100 * r['los_next']:.0f}%" if r["los_next"] is not None else "",
        ]
        for r in d["ratings"]
    ]
    pairing_rows = []
    for p in result.pairings:
        s = p.stats
        pairing_rows.append(
            [
                result.labels[p.a],
                result.labels[p.b],
                str(s.deals),
                _pm(s.margin.value, s.margin.low, s.margin.high),
                f"{100 * s.score.value:.1f}%",
                f"{s.wins}/{s.draws}/{s.losses}",
                f"{100 * s.win_rate.value:.1f}% [{100 * s.win_rate.low:.1f}, {100 * s.win_rate.high:.1f}]",
                f"{_fmt(s.elo.value, 0, True)} [{_fmt(s.elo.low, 0, True)}, {_fmt(s.elo.high, 0, True)}]",
                f"{100 * s.los:.1f}%" if math.isfinite(s.los) else "n/a",
            ]
        )
    lv = f"{100 * result.config.level:g}%"
    unit = "hand" if result.config.mode == "hands" else "game"
    return {
        "ratings": (
            ["#", "agent", "rating", f"{lv} CI", "games", "score", "LOS next"],
            rating_rows,
        ),
        "pairings": (
            [
                "agent",
                "opponent",
                "deals",
                f"margin ± {lv}",
                "score",
                f"{unit}s W/D/L",
                f"win rate [Wilson {lv}]",
                f"Elo [{lv}]",
                "LOS",
            ],
            pairing_rows,
        ),
        "crosstable": (
            ["", *result.labels],
            [[lab, *row] for lab, row in zip(result.labels, _crosstable(result), strict=True)],
        ),
    }


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _summary_lines(result: TournamentResult) -> list[str]:
    cfg = result.config
    anchor = result.labels[result.anchor]
    deals = f"{len(result.deals)} deals"
    if result.sprt is not None:
        deals = f"{result.sprt.deals} deals of a budget of {len(result.deals)}"
    lines = []
    if result.partial:
        why = {"running": "still playing", "interrupted": "stopped by a signal", "failed": "stopped by an error"}
        lines.append(
            f"PARTIAL RESULTS ({why.get(result.status, result.status)}): {result.games_played} of "
            f"{result.games_planned} planned games played"
        )
    return [
        *lines,
        f"variant {cfg.variant}, {cfg.mode} mode, {deals} ({result.deals.source}) x "
        f"{len(result.rotations)} rotations per pairing, {len(result.pairings)} pairing(s)"
        + (f", every agent partnered by {cfg.partner} (seats rotated)" if cfg.partner is not None else ""),
        f"ratings: Bradley-Terry on the logistic Elo scale, {anchor} fixed at {cfg.anchor_rating:g}, "
        f"{result.ratings.samples.shape[0]} bootstrap replicates over deals",
        f"speed: {result.hands_played} hands in {result.seconds:.1f} s = {result.hands_per_second:,.0f} hands/s "
        f"({result.workers} worker(s), {cfg.batch} deals per task)",
    ]


def render_markdown(result: TournamentResult) -> str:
    """The report as Markdown (``report.md``)."""
    tables = _table_rows(result)
    unit = "hand" if result.config.mode == "hands" else "game"
    out = [f"# Evaluation: {result.config.variant}", ""]
    out += [f"- {line}" for line in _summary_lines(result)]
    if result.sprt is not None:
        out += [f"- {result.sprt.describe()}"]
    out += ["", "## Ratings", "", _md_table(*tables["ratings"]), ""]
    out += [
        "## Crosstable",
        "",
        f"Row agent's points per hand minus the column agent's, ± the {100 * result.config.level:g}% interval over "
        f"deals, and the row agent's score per {unit} (win 1, draw 1/2).",
        "",
        _md_table(*tables["crosstable"]),
        "",
    ]
    out += ["## Pairings", "", _md_table(*tables["pairings"]), ""]
    return "\n".join(out)


def print_report(result: TournamentResult, file: Any = None) -> None:
    """Print the ratings, crosstable and pairings as terminal tables (rich)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file)
    if not console.is_terminal:  # a log file or a pipe: do not wrap the tables at 80 columns
        console = Console(file=file, width=160)
    tables = _table_rows(result)
    for line in _summary_lines(result):
        console.print(line, highlight=False)
    if result.sprt is not None:
        console.print(result.sprt.describe(), style="bold", highlight=False)
    titles = {"ratings": "Ratings", "crosstable": "Crosstable (points per hand, score)", "pairings": "Pairings"}
    for key, title in titles.items():
        if key == "crosstable" and len(result.entries) > 10:
            continue  # too wide for a terminal; it is in report.md and crosstable.csv
        header, rows = tables[key]
        t = Table(title=title, title_justify="left")
        for h in header:
            t.add_column(h, overflow="fold")
        for row in rows:
            t.add_row(*row)
        console.print(t)


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with atomic_open(path) as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([["" if v is None else v for v in row] for row in rows])


def plot_ratings(result: TournamentResult, path: str | Path) -> Path:
    """PNG of every agent's rating with its interval, best at the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = result.ratings.order()[::-1]
    r = result.ratings
    y = np.arange(len(order))
    vals = r.ratings[order]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(order) + 1.5), layout="constrained")
    if np.isfinite(r.low).all():
        err = np.vstack([vals - r.low[order], r.high[order] - vals])
        ax.errorbar(vals, y, xerr=err, fmt="o", capsize=4)
    else:
        ax.plot(vals, y, "o")
    ax.set_yticks(y, [result.labels[i] for i in order])
    ax.axvline(r.anchor_rating, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(
        f"rating (Elo, {result.labels[result.anchor]} = {r.anchor_rating:g}), {100 * result.config.level:g}% CI"
    )
    # The title spans the figure, not the axes: long agent labels shrink the axes and pushed an axes title off the
    # right edge. "tight" grows the saved picture to whatever is drawn, so no text is cut.
    fig.suptitle(f"{result.config.variant}: {result.config.mode} mode, {len(result.deals)} deals per pairing")
    with atomic_open(Path(path), "wb") as f:
        fig.savefig(f, dpi=120, format="png", bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    return Path(path)


def plot_steps(result: TournamentResult, path: str | Path) -> Path | None:
    """PNG of checkpoint ratings against training steps (None unless two or more agents carry a step count)."""
    ck = sorted((e.steps, i) for i, e in enumerate(result.entries) if e.steps is not None)
    if len(ck) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = result.ratings
    steps = np.array([s for s, _ in ck], dtype=np.float64)
    idx = [i for _, i in ck]
    vals = r.ratings[idx]
    fig, ax = plt.subplots(figsize=(7, 4))
    if np.isfinite(r.low).all():
        ax.errorbar(steps, vals, yerr=np.vstack([vals - r.low[idx], r.high[idx] - vals]), fmt="o-", capsize=3)
    else:
        ax.plot(steps, vals, "o-")
    for i, e in enumerate(result.entries):
        if e.steps is None:
            ax.axhline(r.ratings[i], ls="--", lw=0.8, color="grey")
            ax.annotate(e.label, (steps[0], r.ratings[i]), textcoords="offset points", xytext=(2, 2), fontsize=8)
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"rating (Elo, {result.labels[result.anchor]} = {r.anchor_rating:g})")
    ax.set_title(f"{result.config.variant}: rating against training steps")
    fig.tight_layout()
    with atomic_open(Path(path), "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return Path(path)


def write_outputs(result: TournamentResult, out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write ``results.json``, ``report.md``, ``ratings.csv``, ``pairings.csv``, ``crosstable.csv``, ``deals.json``,
    ``config.yaml`` and the PNG plots into ``out_dir``; returns the paths by kind. Each file is replaced atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = write_static(result.config, result.deals, out)
    paths.update(write_tables(result, out))
    if plots:
        paths["ratings_png"] = plot_ratings(result, out / "ratings.png")
        steps_png = plot_steps(result, out / "ratings_vs_steps.png")
        if steps_png is not None:
            paths["steps_png"] = steps_png
    return paths


def write_static(config: ResultSettings, deals: Deals, out: Path) -> dict[str, Path]:
    """``config.yaml`` and ``deals.json``: known before the first game."""
    import yaml

    paths = {"config": out / "config.yaml", "deals": out / "deals.json"}
    atomic_write_text(paths["config"], yaml.safe_dump(config.to_dict(), sort_keys=False))
    if not (config.deals_file is not None and _same_file(paths["deals"], Path(config.deals_file))):
        deals.save(paths["deals"])  # (never over the deal file being played, which may hold more deals)
    return paths


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_tables(result: TournamentResult, out: Path) -> dict[str, Path]:
    """``results.json``, ``report.md`` and the CSV tables (the files that change while a tournament plays)."""
    paths: dict[str, Path] = {}
    data = result.to_dict()
    paths["json"] = out / "results.json"
    atomic_write_text(paths["json"], json.dumps(data, indent=1) + "\n")
    paths["markdown"] = out / "report.md"
    atomic_write_text(paths["markdown"], render_markdown(result))

    rating_keys = ["rank", "agent", "spec", "steps", "rating", "low", "high", "games", "score", "los_next"]
    paths["ratings_csv"] = out / "ratings.csv"
    _write_csv(paths["ratings_csv"], rating_keys, [[r[k] for k in rating_keys] for r in data["ratings"]])

    pair_header = ["agent", "opponent", "deals", "games", "hands"]
    intervals = ("margin", "score", "elo", "win_rate")
    for key in intervals:
        pair_header += [key, f"{key}_low", f"{key}_high"]
    pair_header += ["wins", "draws", "losses", "los"]
    rows = []
    for p in data["pairings"]:
        row = [p["agent"], p["opponent"], p["deals"], p["games"], p["hands"]]
        for key in intervals:
            row += [p[key]["value"], p[key]["low"], p[key]["high"]]
        rows.append([*row, p["wins"], p["draws"], p["losses"], p["los"]])
    paths["pairings_csv"] = out / "pairings.csv"
    _write_csv(paths["pairings_csv"], pair_header, rows)

    num = len(result.entries)
    margin: list[list[Any]] = [[None] * num for _ in range(num)]
    for p in result.pairings:
        if math.isfinite(p.stats.margin.value):  # a pairing not played yet (partial results) has no margin
            margin[p.a][p.b] = p.stats.margin.value
            margin[p.b][p.a] = -p.stats.margin.value
    paths["crosstable_csv"] = out / "crosstable.csv"
    _write_csv(
        paths["crosstable_csv"],
        ["agent", *result.labels],
        [[lab, *row] for lab, row in zip(result.labels, margin, strict=True)],
    )
    return paths
