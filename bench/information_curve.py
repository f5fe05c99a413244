"""How much of the opponent's hand a margin against pimc needs: the oracle's margin by the share of the hand it sees.

Reads ``evaluate.py`` results of ``oracle-pimc:see=p`` (``bench/oracle_pimc.py``) against ``pimc``, fits the line
through the origin (``see=0`` is pimc itself: margin 0), and draws it with the targets and the bots' measured
margins as horizontal lines and opponent inference's measured share as a vertical one::

    python bench/information_curve.py runs/oracle_see*/results.json \\
        --mark "fast bot=runs/fast_vs_pimc/results.json" \\
        --mark "search bot=agents/bots/classic-search/model_card.json" \\
        --targets 0.25 0.4 --inference 0.281 --uniform 0.253 --out docs/img/information_curve.png

``--inference S --uniform U``: the share of the opponent's true cards that inferred and uniform worlds hold
(``bench/inference_accuracy.py``); the oracle seeing each card with probability p holds ``p + (1 - p) U`` of them, so
inference is worth the oracle at ``p = (S - U) / (1 - U)``. Prints one JSON line: the points, the fitted slope
(points per hand per share of the hand seen) and the share each target needs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.cli.settings import add_field_options, parse_options, path_arguments, setting

__all__ = ["fit_slope", "main", "read_margin"]


def read_margin(path: Path, opponent: str = "pimc") -> tuple[str, str, float, float, float, int]:
    """(agent label, agent spec, margin, low, high, deals) of the pairing against ``opponent`` (its spec exactly
    that: pimc at its defaults) in an ``evaluate.py`` results.json, or in a bot's model_card.json (its "ratings" and
    "more_ratings"; the largest sample if several). The margin is the agent's, whichever side the file lists it on."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read evaluate.py results or a model card ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not evaluate.py results or a model card")
    if "pairings" in data:
        sets = [data]
    else:  # a model card: every evaluation it carries
        sets = [r for r in [data.get("ratings"), *data.get("more_ratings", [])] if isinstance(r, dict)]
    found: list[tuple[str, str, float, float, float, int]] = []
    for r in sets:
        specs = {a["agent"]: a.get("spec", "") for a in r.get("ratings", []) if isinstance(a, dict) and "agent" in a}
        specs.update({a["label"]: a["spec"] for a in r.get("agents", [])})
        if specs.get(opponent, opponent) != opponent:  # e.g. a pimc with options, labelled pimc
            continue
        for p in r.get("pairings", []):
            m = p["margin"]
            if p["opponent"] == opponent:
                found.append((p["agent"], specs.get(p["agent"], ""), m["value"], m["low"], m["high"], p["deals"]))
            elif p["agent"] == opponent:
                a = p["opponent"]
                found.append((a, specs.get(a, ""), -m["value"], -m["high"], -m["low"], p["deals"]))
    if not found:
        raise ValueError(f"{path}: no pairing against {opponent!r}")
    return max(found, key=lambda f: f[5])


def fit_slope(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Weighted least squares of margin = slope x p through the origin; points are (p, margin, half-width of the
    95% interval). Returns the slope and the half-width of its 95% interval."""
    num = den = 0.0
    for p, m, h in points:
        w = 1.0 / max(h / 1.96, 1e-9) ** 2
        num += w * p * m
        den += w * p * p
    if den == 0:
        raise ValueError("no oracle point with see > 0 to fit")
    return num / den, 1.96 / math.sqrt(den)


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    results: list[Path] = path_arguments("results", "evaluate.py results.json of oracle-pimc:see=p vs pimc")
    mark: list[str] = setting(
        doc="a bot's margin vs pimc: evaluate.py results.json or a bot's model_card.json",
        default_factory=list,
        metavar="LABEL=FILE.json",
        repeat=True,
        show_default=False,
    )
    targets: list[float] = setting(
        doc="target margins (0.25 0.4)", default_factory=lambda: [0.25, 0.4], parse=float, nargs="*", show_default=False
    )
    inference: float | None = setting(
        None, "share of the true cards inferred worlds hold", parse=float, show_default=False
    )
    uniform: float | None = setting(
        None, "share of the true cards uniform worlds hold (with --inference)", parse=float, show_default=False
    )
    out: Path = setting(Path("information_curve.png"), "PNG to write", parse=Path, show_default=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python bench/information_curve.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_field_options(ap, Options, typed=True, once=False)
    args = parse_options(ap, Options, argv)
    if (args.inference is None) != (args.uniform is None):
        ap.error("--inference and --uniform go together")
    if args.uniform is not None and not 0 <= args.uniform < 1:
        ap.error(f"--uniform must be in [0, 1), got {args.uniform}")
    points: list[dict[str, Any]] = []
    marks: list[dict[str, Any]] = []
    try:
        for path in args.results:
            label, spec, m, lo, hi, deals = read_margin(path)
            found = re.search(r"see=([0-9.]+)", spec)
            see = float(found.group(1)) if found else (1.0 if spec.startswith("oracle-pimc") else None)
            if see is None:
                ap.error(f"{path}: {label} ({spec!r}) is not oracle-pimc")
            points.append({"see": see, "margin": m, "low": lo, "high": hi, "deals": deals, "file": str(path)})
        for item in args.mark:
            name, sep, file = item.partition("=")
            if not sep or not name or not file:
                ap.error(f"--mark {item!r}: write LABEL=FILE.json (results.json or model_card.json)")
            label, spec, m, lo, hi, deals = read_margin(Path(file))
            marks.append({"label": name, "margin": m, "low": lo, "high": hi, "deals": deals})
        slope, slope_hw = fit_slope([(q["see"], q["margin"], (q["high"] - q["low"]) / 2) for q in points])
    except ValueError as e:
        ap.error(str(e))
    points.sort(key=lambda q: q["see"])
    summary: dict[str, Any] = {"points": points, "slope": slope, "slope_95": slope_hw, "marks": marks}
    summary["share_needed"] = {str(t): t / slope for t in args.targets}
    if args.inference is not None and args.uniform is not None:  # given together (checked above)
        summary["inference_see"] = (args.inference - args.uniform) / (1 - args.uniform)
        summary["inference_worth"] = slope * summary["inference_see"]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [0.0] + [q["see"] for q in points]
    ax.errorbar(
        xs,
        [0.0] + [q["margin"] for q in points],
        yerr=[[0.0] + [q["margin"] - q["low"] for q in points], [0.0] + [q["high"] - q["margin"] for q in points]],
        fmt="o",
        color="black",
        capsize=4,
        label="pimc seeing a share p of the opponent's hand (95%)",
    )
    ax.plot([0, 1], [0, slope], color="black", lw=1, label=f"fit: {slope:+.2f} x p")
    styles = [":", "-.", (0, (1, 4)), (0, (5, 5))]
    for i, t in enumerate(args.targets):
        need = f"target {t:+.2f} (needs p = {t / slope:.2f})"
        ax.axhline(t, color="dimgray", ls=styles[i % len(styles)], lw=1.8, label=need)
    for i, mk in enumerate(marks):
        text = f"{mk['label']}: {mk['margin']:+.2f} ± {(mk['high'] - mk['low']) / 2:.2f}"
        ax.axhline(mk["margin"], color=f"C{i}", ls="--", lw=1.5, label=text)
    if args.inference is not None:
        p_inf = summary["inference_see"]
        ax.axvline(p_inf, color="tab:brown", lw=1.5, label=f"opponent inference (pimc:infer): p = {p_inf:.2f}")
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("share p of the opponent's hand seen (each card with probability p; the stock stays hidden)")
    ax.set_ylabel("margin against pimc, points per hand")
    ax.set_title("classic: what seeing the opponent's hand is worth against pimc")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    plt.close(fig)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
