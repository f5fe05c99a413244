"""A bot's model card evidence: its ratings, its margins against expert, and how it was made and what it costs.

``ratings_from_results`` reads an ``evaluate.py`` ``results.json`` into the card's ``ratings``; ``against_expert``
finds the bot's margins against ``expert`` there and whether one of them beats it on at least ``VERDICT_DEALS`` deals;
``read_provenance`` reads ``--commands`` and ``--cost`` (text and JSON only, 1 MiB at most); ``add_ratings`` writes
them into a card. Every exporter in ``agents.nets.export`` uses them; a bad file raises ``ExportArgumentError``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.nets.mlp import ExportArgumentError

__all__ = [
    "MAX_PROVENANCE_BYTES",
    "VERDICT_DEALS",
    "add_ratings",
    "against_expert",
    "ratings_from_results",
    "read_provenance",
]


def ratings_from_results(path: str | Path, variant: str) -> dict[str, Any]:
    """The model card's ``ratings``: the ratings and pairings of an ``evaluate.py`` ``results.json`` (or its folder),
    with the deals' count and seed (what, with the agents' specs, reproduces them)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        what = "it nests too deeply" if isinstance(e, RecursionError) else str(e)
        raise ExportArgumentError(f"cannot read the ratings file {p}: {what}") from None
    if not isinstance(data, dict) or "ratings" not in data:
        raise ExportArgumentError(
            f"{p} is not an evaluate.py results.json (no 'ratings'); run evaluate.py with --out DIR"
        )
    if not isinstance(data["ratings"], list) or not all(isinstance(r, dict) for r in data["ratings"]):
        raise ExportArgumentError(f"{p}: 'ratings' must be a list of rows, as evaluate.py writes it")
    if data.get("variant") not in (None, variant):
        raise ExportArgumentError(f"{p} rates agents in {data['variant']!r}, but the checkpoint plays {variant!r}")
    keep = ("rank", "agent", "spec", "steps", "rating", "low", "high", "games", "score")
    deals: dict[str, Any] = data["deals"] if isinstance(data.get("deals"), dict) else {}
    config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
    return {
        "source": str(p),
        "created": data.get("created"),
        "mode": data.get("mode"),
        "deals": deals.get("count"),
        "seed": config.get("seed"),  # the deals' seed: with the specs, what reproduces these ratings
        "deals_from": deals.get("source"),  # "seed N", or the deals file they were read from
        "anchor": data.get("anchor"),
        "ratings": [{k: r.get(k) for k in keep if k in r} for r in data["ratings"]],
        "pairings": data.get("pairings", []),
    }


VERDICT_DEALS = 1000  # issue 19: a bot beats expert when its 95% interval is above 0 on >= 1,000 fresh deals


def _bot_in(pairings: list[Any], name: str) -> str | None:
    """The bot's name in one evaluation: ``name`` if it played there, else the one agent of every pairing (a
    gauntlet's candidate, under whatever name it was given), else None."""
    sides = [{p.get("agent"), p.get("opponent")} for p in pairings if isinstance(p, dict)]
    if any(name in s for s in sides):
        return name
    everywhere = set.intersection(*sides) - {"expert"} if sides else set()
    return everywhere.pop() if len(everywhere) == 1 else None


def against_expert(name: str, rating_cards: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The model card's ``against_expert``: the margins of the bot ``name`` against ``expert`` in its ratings
    (``ratings`` then ``more_ratings``, as ``ratings_from_results`` writes them), and whether one of them, on at least
    ``VERDICT_DEALS`` deals, has its 95% interval above 0 (``beats_expert``)."""
    rows: list[dict[str, Any]] = []
    for rc in rating_cards:
        pairings = rc.get("pairings", []) if isinstance(rc, dict) else []
        bot = _bot_in(pairings, name) if isinstance(pairings, list) else None
        for p in pairings if bot is not None else []:
            if not isinstance(p, dict) or not isinstance(p.get("margin"), dict):
                continue
            sign = {(bot, "expert"): 1.0, ("expert", bot): -1.0}.get((p.get("agent"), p.get("opponent")))
            if sign is None:
                continue
            m = p["margin"]
            low, high = sorted((sign * float(m["low"]), sign * float(m["high"])))
            rows.append(
                {
                    "source": rc.get("source"),
                    "seed": rc.get("seed"),
                    "deals": p.get("deals"),
                    "margin": sign * float(m["value"]),
                    "low": low,
                    "high": high,
                }
            )
    beats = any(r["low"] > 0 and (r["deals"] or 0) >= VERDICT_DEALS for r in rows)
    return {"beats_expert": beats, "min_deals": VERDICT_DEALS, "margins": rows}


MAX_PROVENANCE_BYTES = 1 << 20
"""The largest ``--commands`` or ``--cost`` file read (1 MiB): they are a few lines of text or JSON."""


def _read_small_text(path: Any, flag: str, what: str) -> str:
    if not isinstance(path, (str, Path)) or not str(path):
        raise ExportArgumentError(f"{flag} must be the path of {what}, got {path!r}")
    f = Path(path)
    if not f.is_file():
        if f.exists():
            kind = "a folder" if f.is_dir() else "not a regular file (a device, pipe or socket)"
            raise ExportArgumentError(f"{flag} {f}: {kind}; give {what}")
        raise ExportArgumentError(f"{flag} {f}: no such file; give {what}")
    if f.stat().st_size > MAX_PROVENANCE_BYTES:
        raise ExportArgumentError(f"{flag} {f}: over {MAX_PROVENANCE_BYTES} bytes; give {what}")
    try:
        return f.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ExportArgumentError(f"{flag} {f}: cannot read it as UTF-8 text ({e}); give {what}") from None


def read_provenance(commands: Any = None, cost: Any = None) -> dict[str, Any]:
    """The card fields ``"commands"`` and ``"cost_per_move"`` from ``--commands FILE`` and ``--cost FILE.json``.

    ``commands``: a text file, one shell command per line (blank lines and ``#`` comments skipped), or a list of
    the commands themselves: the commands that produced the bot and its ratings. ``cost``: a JSON file holding one
    object (e.g. the last line ``bench/bot_latency.py`` prints), or the object itself. Only text and JSON are read.
    Raises ``ExportArgumentError`` naming the flag and what to give instead.
    """
    fields: dict[str, Any] = {}
    if commands is not None:
        what = "a text file of the commands that produced the bot, one per line"
        if isinstance(commands, (list, tuple)):
            if not all(isinstance(c, str) for c in commands):
                raise ExportArgumentError(f"commands must be a list of command lines (str), got {commands!r}")
            lines = list(commands)
        else:
            lines = _read_small_text(commands, "--commands", what).splitlines()
        cmds = [c.strip() for c in lines if c.strip() and not c.strip().startswith("#")]
        if not cmds:
            raise ExportArgumentError(f"--commands {commands}: no command in it; give {what}")
        fields["commands"] = cmds
    if cost is not None:
        what = "a JSON file holding one object (e.g. the last line bench/bot_latency.py prints)"
        if isinstance(cost, dict):
            value: Any = cost
        else:
            text = _read_small_text(cost, "--cost", what)
            try:  # the whole file, else its last line (bench/bot_latency.py's output saved whole)
                value = json.loads(text)
            except (ValueError, RecursionError):
                try:
                    value = json.loads(text.strip().splitlines()[-1] if text.strip() else text)
                except (ValueError, RecursionError) as e:
                    what_went_wrong = "it nests too deeply" if isinstance(e, RecursionError) else str(e)
                    raise ExportArgumentError(f"--cost {cost}: not JSON ({what_went_wrong}); give {what}") from None
        if not isinstance(value, dict) or not value:
            raise ExportArgumentError(f"--cost {cost}: holds {type(value).__name__}, not an object; give {what}")
        try:  # NaN and infinity are not JSON: a card holding them could not be read by strict JSON readers
            json.dumps(value, allow_nan=False)
        except ValueError:
            raise ExportArgumentError(
                f"--cost {cost}: holds NaN or an infinite number, not a measured cost; give {what}"
            ) from None
        except (TypeError, RecursionError) as e:
            raise ExportArgumentError(f"--cost: holds values that are not JSON ({e}); give {what}") from None
        fields["cost_per_move"] = value
    return fields


def add_ratings(
    card: dict[str, Any], rating_cards: list[dict[str, Any]], note: str | None, provenance: dict[str, Any]
) -> None:
    """Write the evidence into ``card``: ``ratings`` (the first of ``rating_cards``), ``more_ratings`` (the others),
    ``against_expert``, ``note`` and the ``provenance`` fields (``read_provenance``)."""
    card["ratings"] = rating_cards[0] if rating_cards else {}
    if len(rating_cards) > 1:  # e.g. a second evaluation against the (slower) search baselines
        card["more_ratings"] = rating_cards[1:]
    if rating_cards:
        card["against_expert"] = against_expert(card["name"], rating_cards)
    if note:
        card["note"] = note
    card.update(provenance)
