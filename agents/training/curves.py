"""Training curves as pictures: a run's ``eval.jsonl`` drawn as ``eval.png``.

The trainer writes ``eval.png`` into the run directory after every evaluation (``agents.training.trainer``): the margin
per hand against each evaluation opponent with its 95% interval as a band, against training steps (left) and against
wall-clock time of training (right). The file is replaced atomically, so a viewer never sees half a picture. Redraw it
for any run, older ones included::

    python -m agents.training.curves runs/classic__default__0__20260101-120000
    python -m agents.training.curves runs/<run>/eval.jsonl --out /tmp/curves.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.cli.atomic import atomic_open
from agents.cli.settings import add_field_options, parse_options, setting

__all__ = ["EVAL_LOG", "EVAL_PLOT", "main", "plot_eval_curves", "read_eval_log"]

EVAL_LOG = "eval.jsonl"
"""The trainer's evaluation log in a run directory."""
EVAL_PLOT = "eval.png"
"""The picture of it, beside it."""
_TIME_UNITS = (("hours", 3600.0, 7200.0), ("minutes", 60.0, 120.0), ("seconds", 1.0, -float("inf")))
"""The wall-clock axis's unit: the first whose threshold the run's last evaluation reached."""


def read_eval_log(path: str | Path) -> list[dict[str, Any]]:
    """The evaluation records of ``eval.jsonl`` in order (blank lines skipped).

    Raises ``ValueError`` naming the line for a line that is not a JSON object with ``step``, ``elapsed_s`` and
    ``margins`` (opponent -> ``margin``, ``low``, ``high``), ``FileNotFoundError`` for a missing file.
    """
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                int(record["step"]), float(record["elapsed_s"])
                for values in record["margins"].values():
                    float(values["margin"]), float(values["low"]), float(values["high"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(
                    f"{path}: line {number} is not an evaluation record of train.py ({exc}); expected "
                    '{"step": ..., "elapsed_s": ..., "margins": {opponent: {"margin", "low", "high"}}}'
                ) from None
            records.append(record)
    return records


def plot_eval_curves(records: Sequence[dict[str, Any]], path: str | Path, title: str | None = None) -> Path:
    """Draw evaluation ``records`` (``read_eval_log``'s) as a PNG at ``path``, replaced atomically.

    Two panels share the margin axis: against training steps and against wall-clock time; one line per
    opponent with its 95% band, in the order the opponents first appear. Raises ``ValueError`` without records.
    """
    if not records:
        raise ValueError("no evaluation records to draw: the run has not evaluated yet")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    opponents: list[str] = []
    for record in records:
        opponents += [name for name in record["margins"] if name not in opponents]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True, layout="constrained")
    seconds = [float(r["elapsed_s"]) for r in records]
    unit, per = next((u, p) for u, p, least in _TIME_UNITS if seconds[-1] >= least)
    xs: dict[str, list[float]] = {
        "training steps": [float(r["step"]) for r in records],
        f"wall-clock {unit} of training": [s / per for s in seconds],
    }
    for ax, (label, x_all) in zip(axes, xs.items(), strict=True):
        for k, name in enumerate(opponents):
            rows = [(x, r["margins"][name]) for x, r in zip(x_all, records, strict=True) if name in r["margins"]]
            x = [row[0] for row in rows]
            color = f"C{k % 10}"
            ax.plot(x, [float(m["margin"]) for _, m in rows], "o-", ms=3, color=color, label=f"vs {name}")
            ax.fill_between(
                x, [float(m["low"]) for _, m in rows], [float(m["high"]) for _, m in rows], color=color, alpha=0.2
            )
        ax.axhline(0.0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("margin per hand (points), 95% band")
    axes[0].legend(loc="best", fontsize=8)
    last = records[-1]
    fig.suptitle(
        title or f"evaluation margins: {len(records)} evaluations, last at step {int(last['step']):,}", fontsize=11
    )
    with atomic_open(Path(path), "wb") as f:
        fig.savefig(f, dpi=110, format="png", bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    return Path(path)


@dataclass
class CurvesOptions:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    run: str = setting(
        doc="a run directory of train.py (runs/<run>) or its eval.jsonl", option="run", show_default=False
    )
    out: str | None = setting(None, "the PNG to write (default: eval.png beside eval.jsonl)", show_default=False)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.training.curves RUN`` (a run directory or its ``eval.jsonl``): write the run's
    ``eval.png``."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.training.curves",
        description="Draw a training run's evaluation margins (eval.jsonl) as a PNG: margin per hand against each "
        "evaluation opponent with 95% bands, against training steps and against wall-clock time.",
    )
    add_field_options(parser, CurvesOptions, typed=True, once=False)
    args = parse_options(parser, CurvesOptions, argv)
    source = Path(args.run)
    log = source / EVAL_LOG if source.is_dir() else source
    out = Path(args.out) if args.out else log.with_name(EVAL_PLOT)
    try:
        records = read_eval_log(log)
        plot_eval_curves(records, out, title=f"{log.parent.name}: evaluation margins ({len(records)} evaluations)")
    except FileNotFoundError:
        print(f"error: {log} does not exist: give a run directory of train.py or its eval.jsonl", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
