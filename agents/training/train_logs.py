"""What the trainer writes down as it goes, besides checkpoints: the league's TensorBoard scalars and composition
(``log_league``), and each evaluation's scalars, its line in ``eval.jsonl`` and the redrawn ``eval.png``
(``log_eval``). ``agents.training.trainer.Trainer`` calls them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.training.duplicate_eval import EvalResult
from agents.training.run_dir import append_jsonl, now

__all__ = ["log_eval", "log_league"]


def log_league(writer: Any, info: dict[str, Any], steps: int, state: dict[str, Any], snapshot_every: int) -> None:
    """The league's size, each baseline's and the snapshots' win rates and sampling probabilities (``info``: the
    league's ``summary``); its composition as text once per ``snapshot_every`` steps (``state["next_composition"]``)."""
    w = writer
    w.add_scalar("league/size", info["size"], steps)
    w.add_scalar("league/snapshots", info["snapshots"], steps)
    snaps = [m for m in info["members"] if m["kind"] == "snapshot"]
    for m in info["members"]:
        if m["kind"] == "baseline":
            w.add_scalar(f"league/win_rate/{m['name']}", m["win_rate"], steps)
            w.add_scalar(f"league/prob/{m['name']}", m["prob"], steps)
    if snaps:
        w.add_scalar("league/win_rate/snapshots_mean", float(np.mean([m["win_rate"] for m in snaps])), steps)
        w.add_scalar("league/win_rate/newest_snapshot", snaps[-1]["win_rate"], steps)
        w.add_scalar("league/prob/snapshots", float(sum(m["prob"] for m in snaps)), steps)
    if steps == 0 or steps >= state.get("next_composition", 0):  # the text only every snapshot_every
        text = " | ".join(f"{m['name']} p={m['prob']:.2f} win={m['win_rate']:.2f}" for m in info["members"])
        w.add_text("league/composition", text, steps)
        state["next_composition"] = (steps // snapshot_every + 1) * snapshot_every


def log_eval(
    writer: Any, run_dir: Path, results: Sequence[EvalResult], steps: int, elapsed: float, say: Callable[[str], None]
) -> dict[str, Any]:
    """One evaluation's margins, their lower bounds and win rates as scalars, its record appended to ``eval.jsonl``
    (returned) and ``eval.png`` redrawn (a side output: a failure to draw is said with ``say`` and training goes on)."""
    for r in results:
        writer.add_scalar(f"eval/margin/{r.opponent}", r.margin, steps)
        writer.add_scalar(f"eval/margin_low/{r.opponent}", r.low, steps)
        writer.add_scalar(f"eval/win_rate/{r.opponent}", r.win_rate, steps)
    record = {
        "step": steps,
        "elapsed_s": round(elapsed, 1),
        "time": now(),
        "margins": {r.opponent: dataclasses.asdict(r) for r in results},
    }
    append_jsonl(run_dir / "eval.jsonl", record)
    try:
        from agents.training.curves import plot_eval_curves, read_eval_log

        records = read_eval_log(run_dir / "eval.jsonl")
        plot_eval_curves(records, run_dir / "eval.png", title=f"{run_dir.name}: evaluation margins")
    except Exception as exc:
        say(f"warning: eval.png not updated ({type(exc).__name__}: {exc})")
    return record
