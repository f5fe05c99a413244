"""Export a trained MaskablePPO checkpoint as a bot that needs neither torch nor stable-baselines3.

    python -m agents.nets.export runs/classic__strong__0__.../best.zip --out agents/bots/classic \\
        --ratings runs/eval__classic__.../results.json

writes ``policy.onnx``, ``policy.npz`` and ``model_card.json`` into ``--out`` (layout: ``agents.nets.bot``), then checks
that torch (the sb3-contrib policy itself), onnxruntime and numpy give the same masked action probabilities, to
``--tolerance`` (1e-5), on random observations and masks (single-legal-action rows included) and on observations
from real games. A failed check removes the written files and exits with status 1.

The exported network is the policy half of the SB3 ``MlpPolicy``: ``pi_features_extractor`` (a flatten),
``mlp_extractor.policy_net`` (Linear + activation layers) and ``action_net``; masked probabilities are the softmax
of the logits with illegal actions set to ``MASKED_LOGIT``, exactly as sb3-contrib's ``MaskableCategorical``.

The checkpoint is read through ``agents.nets.weights``, the one module that opens network files: its
``scopa_meta.json`` member gives the variant, observation version and training steps, and is checked against this
code; ``agents.nets.checkpoint.load_checkpoint_policy`` builds the torch policy from the weights read there.

Every argument is checked before any work (``--tolerance`` a number >= 0, ``--check-rows`` 16..1048576, ``--out``
a new or empty directory whose place can be written, the checkpoint and ``--ratings`` files readable): a bad one
stops the command at once with ``python -m agents.nets.export: error: ...`` and exit status 2; a failed check exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import MODEL_CARD, path_kind
from agents.cli.settings import add_field_options, parse_options, setting
from agents.nets.bot import Bot, new_card, write_card, write_numpy_export
from agents.nets.bot_search import is_whole
from agents.nets.card import add_ratings, ratings_from_results, read_provenance
from agents.nets.export_onnx import DEFAULT_CHECK_ROWS, ExportCheckError, check_export, sample_inputs, write_onnx
from agents.nets.mlp import ExportArgumentError, ExportError, extract_mlp
from agents.nets.weights import ONNX, VALUE, WEIGHTS, file_sha256, read_checkpoint_meta
from scopa_env.engine import observation
from scopa_env.errors import whole_number
from scopa_env.rules import VARIANTS, get_rules

__all__ = ["export_bot", "export_checkpoint", "export_search_only", "main", "parse_search"]


DEFAULT_TOLERANCE = 1e-5
EXPORT_STAGES = ("loading the checkpoint", "writing the numpy weights", "writing the ONNX file", "checking the export")
"""The steps of ``export_checkpoint``, in order, as its ``progress`` callback names them."""
MIN_CHECK_ROWS = 16
MAX_CHECK_ROWS = 2**20
PROG = "python -m agents.nets.export"


# --------------------------------------------------------------------------------------------------- checkpoints


# --------------------------------------------------------------------------------------------------- checks


# --------------------------------------------------------------------------------------------------- export


def _versions() -> dict[str, str]:
    """The installed versions of the libraries an export involves (read from the package metadata: nothing is
    imported, so exporting a bot directory stays torch-free)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for mod, dist in (
        ("numpy", "numpy"),
        ("torch", "torch"),
        ("stable_baselines3", "stable-baselines3"),
        ("sb3_contrib", "sb3-contrib"),
        ("onnx", "onnx"),
        ("onnxruntime", "onnxruntime"),
    ):
        try:
            out[mod] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def _check_out_dir(out_dir: Path, force: bool) -> None:
    ours = {MODEL_CARD, WEIGHTS, ONNX}
    if not out_dir.exists():
        parent = out_dir.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise ExportArgumentError(f"--out {out_dir}: {parent} is a file, so the directory cannot be made there")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ExportArgumentError(f"--out {out_dir}: {parent} is not writable; choose a directory you can write")
        return
    if not out_dir.is_dir():
        raise ExportArgumentError(f"--out {out_dir} is a file; give a directory")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise ExportArgumentError(f"--out {out_dir} is not writable; choose a directory you can write")
    others = sorted(p.name for p in out_dir.iterdir() if p.name not in ours and p.name != "README.md")
    existing = sorted(p.name for p in out_dir.iterdir() if p.name in ours)
    if others:
        raise ExportArgumentError(f"--out {out_dir} holds other files ({', '.join(others)}); choose an empty directory")
    if existing and not force:
        raise ExportArgumentError(
            f"--out {out_dir} already holds an export ({', '.join(existing)}); pass --force to replace it"
        )


def check_arguments(
    checkpoint: Any,
    out: Any,
    ratings: Any = None,
    name: Any = None,
    check_rows: Any = DEFAULT_CHECK_ROWS,
    tolerance: Any = DEFAULT_TOLERANCE,
    force: bool = False,
    seed: Any = 0,
    endgame: Any = None,
    search: Any = None,
    commands: Any = None,
    cost: Any = None,
) -> list[Path]:
    """Raise ``ExportArgumentError`` naming the first bad argument of ``export_checkpoint``; return the ratings files.

    Only cheap checks (types, ranges, that files exist and ``--out`` can be written): nothing is imported or loaded.
    ``checkpoint`` may also be a bot export directory (``export_bot``).
    """
    if not isinstance(checkpoint, (str, Path)) or not str(checkpoint):
        raise ExportArgumentError(f"the checkpoint must be the path of a train.py .zip, got {checkpoint!r}")
    ckpt = Path(checkpoint)
    if not ckpt.exists():
        raise ExportArgumentError(f"checkpoint {ckpt} does not exist; give a .zip written by train.py")
    if path_kind(ckpt) == "dir":
        raise ExportArgumentError(
            f"{ckpt} is a directory without a {MODEL_CARD}: give a .zip written by train.py (e.g. best.zip) or a bot "
            "export directory"
        )
    if not ckpt.is_file() and not ckpt.is_dir():
        raise ExportArgumentError(f"checkpoint {ckpt} is not a file; give a .zip written by train.py (e.g. best.zip)")
    if not isinstance(out, (str, Path)) or not str(out):
        raise ExportArgumentError(f"--out must be the export directory to write, got {out!r}")
    if ckpt.is_dir() and Path(out).absolute() == ckpt.absolute():
        raise ExportArgumentError(f"--out {out} is the source bot directory; give a new directory")
    if search is not None:
        parse_search(search)
    if not whole_number(check_rows, MIN_CHECK_ROWS, MAX_CHECK_ROWS):
        raise ExportArgumentError(
            f"--check-rows must be an integer in {MIN_CHECK_ROWS}..{MAX_CHECK_ROWS} (rows compared between torch, "
            f"ONNX and numpy; default {DEFAULT_CHECK_ROWS}), got {check_rows!r}"
        )
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float, np.integer, np.floating))
        or not math.isfinite(tolerance)
        or not 0 <= tolerance <= 1
    ):
        raise ExportArgumentError(
            f"--tolerance must be a number in [0, 1] (the largest probability difference accepted; default "
            f"{DEFAULT_TOLERANCE:g}), got {tolerance!r}"
        )
    if endgame is not None and (not is_whole(endgame) or endgame < 0):
        raise ExportArgumentError(f"--endgame must be >= 0 plies (0: the network alone), got {endgame!r}")
    if not is_whole(seed) or seed < 0:
        raise ExportArgumentError(f"seed must be an integer >= 0 (of the check's sample games), got {seed!r}")
    files = _check_name_and_ratings(name, ratings)
    read_provenance(commands, cost)
    _check_out_dir(Path(out), bool(force))
    return files


def _check_name_and_ratings(name: Any, ratings: Any) -> list[Path]:
    """Raise ``ExportArgumentError`` for a bad ``--name`` or a ``--ratings`` file that is not there; return the
    ratings files (every exporter's check of these two)."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ExportArgumentError(f"--name must be a non-empty name for the model card, got {name!r}")
    files = [] if ratings is None else [ratings] if isinstance(ratings, (str, Path)) else list(ratings)
    for f in files:
        if not isinstance(f, (str, Path)) or not Path(f).exists():
            raise ExportArgumentError(f"--ratings {f}: no such file; give an evaluate.py results.json (or its folder)")
        if Path(f).is_dir() and not (Path(f) / "results.json").is_file():
            raise ExportArgumentError(f"--ratings {f}: the folder holds no results.json (evaluate.py --out writes it)")
    return [Path(f) for f in files]


@contextlib.contextmanager
def _removed_on_failure(paths: Sequence[Path]) -> Iterator[None]:
    """Remove ``paths`` (the files an export writes) if the block fails or is interrupted, then re-raise; their
    folders too when the block made them and nothing else is in them (no empty export directory is left behind)."""
    made = [d for d in dict.fromkeys(p.parent for p in paths) if not d.exists()]
    try:
        yield
    except BaseException:
        for p in paths:
            p.unlink(missing_ok=True)
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()  # only if empty
        raise


def parse_search(search: str | dict[str, Any]) -> dict[str, Any]:
    """A search bot's card field ``"search"`` from ``--search``: ``az`` options (``'worlds=16,prior=0.5'`` or
    ``'az:worlds=16'``), ``pimc`` options (``'pimc:worlds=256,endgame=10,prior=2'``), or a dict with ``"agent"``;
    raises ``ExportArgumentError`` for an unknown search or option or a value out of range."""
    from agents.base import AgentSpecError, parse_spec
    from agents.nets.bot_search import SEARCH_AGENT, SEARCH_AGENTS, BotError, check_search

    if isinstance(search, str):
        head = search.split(":", 1)[0] if ":" in search else ""
        agent = head if head in SEARCH_AGENTS else SEARCH_AGENT
        text = search.split(":", 1)[1] if head in SEARCH_AGENTS else search
        try:
            _, opts = parse_spec(f"{agent}:{text}") if text else (agent, {})
        except AgentSpecError as e:
            raise ExportArgumentError(f"--search {search!r}: {e}") from None
    elif isinstance(search, dict):
        agent = str(search.get("agent", SEARCH_AGENT))
        opts = {k: v for k, v in search.items() if k != "agent"}
    else:
        raise ExportArgumentError(
            f"--search must be az options like 'worlds=16,prior=0.5' or 'pimc:worlds=256', got {search!r}"
        )
    try:
        check_search({"agent": agent, **opts}, "--search")
    except BotError as e:
        raise ExportArgumentError(str(e)) from None
    return {"agent": agent, **opts}


SOURCE_ONLY = (
    "name",
    "created",
    "ratings",
    "more_ratings",
    "against_expert",
    "note",
    "serves",
    "serves_note",
    "commands",
    "cost_per_move",
    "search",
    "files",
    "checks",
)
"""Model card fields of a source bot that ``export_bot`` does not copy (they describe that bot, not the new one)."""


def export_bot(
    source: str | Path,
    out: str | Path,
    search: str | dict[str, Any] | None = None,
    ratings: str | Path | Sequence[str | Path] | None = None,
    name: str | None = None,
    force: bool = False,
    note: str | None = None,
    check_rows: int = DEFAULT_CHECK_ROWS,
    commands: str | Path | Sequence[str] | None = None,
    cost: str | Path | dict[str, Any] | None = None,
    value: str | Path | None = None,
) -> dict[str, Any]:
    """Write the export directory ``out`` with the network of the bot directory ``source``: a search bot with
    ``search`` (its ``az`` options, or ``pimc:`` / ``vpimc:`` and theirs), or a copy under a new name with new ratings.
    A ``vpimc`` search needs ``value``, a value network written by ``bench/value_pimc.py fit`` (or a ``vpimc`` source's
    own): it is checked for the variant and copied in as ``value.npz``.

    The weight files are copied byte for byte (their sha256 checked against the source's card) and the new bot is
    checked to give the source bot's probabilities on ``sample_inputs``; training facts (steps, architecture,
    source checkpoint, training config) are kept, the source's ratings and notes are not (``SOURCE_ONLY``). A search
    bot made from a network-only bot keeps that bot's ratings under ``network_from``: they rate its network alone
    (``bot:path=OUT,search=false``).
    """
    import shutil

    rating_files = check_arguments(
        source, out, ratings, name, check_rows, DEFAULT_TOLERANCE, force, 0, None, search, commands, cost
    )
    src_dir, out_dir = Path(source), Path(out)
    src = Bot.load(src_dir, prefer="numpy")
    rules = src.rules
    value_src = _value_source(src_dir, src.card, search, value, rules)
    rating_cards = [ratings_from_results(r, rules.name) for r in rating_files]
    card = {k: v for k, v in src.card.items() if k not in SOURCE_ONLY}
    card["name"] = name or f"{src.card.get('name', src_dir.name)}{'-search' if search is not None else ''}"
    card["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    card["network_from"] = {
        "path": str(src_dir),
        "name": src.card.get("name"),
        "model_card_sha256": file_sha256(src_dir / MODEL_CARD),
    }
    if search is not None:
        card["search"] = parse_search(search)
        # The ratings of the network alone (what `bot:path=OUT,search=false` plays): a network-only source's own, or
        # those a search source keeps under its own network_from (its ratings rate its search, not its network).
        rated = src.card if src.search is None else src.card.get("network_from", {})
        for key in ("ratings", "more_ratings", "against_expert"):
            if rated.get(key):
                card["network_from"][key] = rated[key]
    card["exported_with"] = _versions()
    add_ratings(card, rating_cards, note, read_provenance(commands, cost))
    names = [n for n in (WEIGHTS, ONNX) if (src_dir / n).is_file()]
    written = [out_dir / n for n in names] + [out_dir / MODEL_CARD] + ([out_dir / VALUE] if value_src else [])
    with _removed_on_failure(written):
        out_dir.mkdir(parents=True, exist_ok=True)
        card["files"] = {}
        for n in names:
            shutil.copyfile(src_dir / n, out_dir / n)
            card["files"][n] = {"sha256": file_sha256(out_dir / n), "size": (out_dir / n).stat().st_size}
            expected = src.card.get("files", {}).get(n, {}).get("sha256")
            if expected is not None and card["files"][n]["sha256"] != expected:
                raise ExportCheckError(f"{out_dir / n} does not match {src_dir / n}'s card after the copy")
        if value_src is not None:
            shutil.copyfile(value_src, out_dir / VALUE)
            card["files"][VALUE] = {"sha256": file_sha256(out_dir / VALUE), "size": (out_dir / VALUE).stat().st_size}
        write_card(out_dir, card)
        obs, mask = sample_inputs(rules, check_rows, 0)
        p_src = src.probs_numpy(obs, mask)
        checks: dict[str, Any] = {"rows": int(obs.shape[0]), "seed": 0, "source_checks": src.card.get("checks")}
        for backend in ("numpy", "onnx"):
            new = Bot.load(out_dir, prefer=backend)  # type: ignore[arg-type]
            if new.backend == backend:
                checks[f"max_abs_diff_{backend}_vs_source"] = float(np.abs(new.probs(obs, mask) - p_src).max())
        bad = {k: v for k, v in checks.items() if k.startswith("max_abs") and v > DEFAULT_TOLERANCE}
        if bad:
            raise ExportCheckError(f"the new bot does not give {src_dir}'s probabilities: {bad}")
        card["checks"] = checks
        write_card(out_dir, card)
    return card


def _value_source(
    src_dir: Path, src_card: dict[str, Any], search: Any, value: str | Path | None, rules: Any
) -> Path | None:
    """The value network a ``vpimc`` search bot is exported with (``value``, else the source bot's own), checked for
    ``rules``; None for another search. Raises ``ExportArgumentError`` saying what is missing or wrong."""
    agent = parse_search(search)["agent"] if search is not None else None
    if agent != "vpimc":
        if value is not None:
            raise ExportArgumentError("--value is the value network of a vpimc search: give --search vpimc:OPTIONS")
        return None
    path = Path(value) if value is not None else src_dir / VALUE
    if value is None and not (src_card.get("files", {}).get(VALUE) and path.is_file()):
        raise ExportArgumentError(
            "--search vpimc:... needs --value FILE, a value network written by 'python bench/value_pimc.py fit'"
        )
    from agents.nets.vpimc import read_value_net

    try:
        read_value_net(path, rules)
    except (OSError, ValueError) as e:
        raise ExportArgumentError(f"--value {path}: {e}") from None
    return path


def export_search_only(
    variant: str,
    out: str | Path,
    search: str | dict[str, Any],
    ratings: str | Path | Sequence[str | Path] | None = None,
    name: str | None = None,
    force: bool = False,
    note: str | None = None,
    commands: str | Path | Sequence[str] | None = None,
    cost: str | Path | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the export directory ``out`` of a *search-only* bot of ``variant``: a model card whose ``"search"`` is
    ``pimc`` options and no network (for a variant no network was trained for). ``bot:path=OUT`` then plays that
    pimc search; the bot has no ``act`` / ``probs`` from an observation and no ``search=false``."""
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ExportArgumentError(f"{variant!r} is not a variant; choose one of {', '.join(VARIANTS)}")
    if search is None:
        raise ExportArgumentError("a search-only bot needs --search pimc:OPTIONS (e.g. 'pimc:worlds=128,prior=2')")
    parsed = parse_search(search)
    if parsed["agent"] != "pimc":
        raise ExportArgumentError(
            f"a bot without a network plays pimc: --search pimc:OPTIONS, got the {parsed['agent']} search "
            "(az needs a network: export a checkpoint or a bot directory)"
        )
    if not isinstance(out, (str, Path)) or not str(out):
        raise ExportArgumentError(f"--out must be the export directory to write, got {out!r}")
    files = _check_name_and_ratings(name, ratings)
    provenance = read_provenance(commands, cost)
    out_dir = Path(out)
    _check_out_dir(out_dir, bool(force))
    rules = get_rules(variant)
    rating_cards = [ratings_from_results(r, rules.name) for r in files]
    card = new_card(rules, None, "", name=name or f"{rules.name}-pimc", search=parsed, exported_with=_versions())
    card["files"] = {}
    add_ratings(card, rating_cards, note, provenance)
    with _removed_on_failure([out_dir / MODEL_CARD]):
        out_dir.mkdir(parents=True, exist_ok=True)
        write_card(out_dir, card)
        Bot.load(out_dir, prefer="numpy")  # it loads as written
    return card


def _check_export_extra() -> None:
    """``ExportError`` before any work when the ONNX exporter's packages are missing (looked up, not imported)."""
    import importlib.util

    def absent(name: str) -> bool:
        if name in sys.modules:
            return sys.modules[name] is None  # None: an import that is blocked
        try:
            return importlib.util.find_spec(name) is None
        except (ImportError, ValueError):
            return True

    missing = [m for m in ("onnx", "onnxscript") if absent(m)]
    if missing:
        raise ExportError(
            f"the ONNX export needs {' and '.join(missing)}, not installed here; pip install -e '.[export]' "
            "(or pip install 'scopa[export]'), then export again"
        )


def export_checkpoint(
    checkpoint: str | Path,
    out: str | Path,
    ratings: str | Path | Sequence[str | Path] | None = None,
    name: str | None = None,
    check_rows: int = DEFAULT_CHECK_ROWS,
    tolerance: float = DEFAULT_TOLERANCE,
    force: bool = False,
    seed: int = 0,
    endgame: int | None = None,
    note: str | None = None,
    search: str | dict[str, Any] | None = None,
    commands: str | Path | Sequence[str] | None = None,
    cost: str | Path | dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write the export directory ``out`` for a ``train.py`` checkpoint and return its model card.

    ``progress(stage)`` is called as each of ``EXPORT_STAGES`` begins (the command line shows them as a bar).

    ``search``: ``az`` options (``'worlds=16,prior=0.5'``): the bot is a search bot, its network inside that search
    (the card's ``"search"``; ``bot:path=DIR`` then plays the search).

    ``note``: free text for the card's ``"note"`` (e.g. why the bot does not beat expert); with ``ratings`` the card
    also gets ``"against_expert"`` (``against_expert``). ``commands`` and ``cost``: the card's ``"commands"`` (how the
    bot and its ratings were made) and ``"cost_per_move"`` (its measured speed), from files (``read_provenance``).

    ``endgame``: the plies of open end game that the bot solves exactly unless its spec says otherwise (the card's
    ``"endgame"``; default: the checkpoint's, i.e. its run's ``endgame``, 0 for older checkpoints).
    Arguments are checked first (``check_arguments``: ``ExportArgumentError``, a ``ValueError``), before any work.

    The checkpoint is read through ``agents.nets.weights`` (its ``scopa_meta.json`` gives the variant, observation
    version and steps, and is checked against this code; ``agents.nets.checkpoint.load_checkpoint_policy`` builds
    the torch policy from its weights). Raises ``ExportError`` (or ``agents.base.AgentSpecError`` for
    an unusable checkpoint) without leaving partial files in ``out``.
    """
    rating_files = check_arguments(
        checkpoint, out, ratings, name, check_rows, tolerance, force, seed, endgame, search, commands, cost
    )
    if Path(checkpoint).is_dir():
        raise ExportArgumentError(f"{checkpoint} is a bot directory: export_bot copies a bot's network")
    _check_export_extra()
    from agents.nets.checkpoint import load_checkpoint_policy

    stage = progress if progress is not None else (lambda name: None)
    stage(EXPORT_STAGES[0])
    ckpt = Path(checkpoint)
    out_dir = Path(out)
    meta = read_checkpoint_meta(ckpt)
    rules = get_rules(meta["variant"])
    rating_cards = [ratings_from_results(r, rules.name) for r in rating_files]  # before the slow work
    actor, meta = load_checkpoint_policy(ckpt, rules)
    layers, activation = extract_mlp(actor)
    obs_size, num_cards = observation.observation_size(rules), rules.num_actions
    if layers[0][0].shape[1] != obs_size or layers[-1][0].shape[0] != num_cards:
        raise ExportError(
            f"{ckpt}: the network maps {layers[0][0].shape[1]} inputs to {layers[-1][0].shape[0]} actions; "
            f"{rules.name!r} needs {obs_size} and {num_cards}"
        )
    steps = meta.get("steps")
    endgame = int(meta.get("endgame", 0)) if endgame is None else int(endgame)
    card = new_card(
        rules,
        layers,
        activation,
        name=name or f"{rules.name}-{ckpt.stem}",
        training_steps=int(steps) if steps is not None else None,
        endgame=endgame,
        source_checkpoint={"path": str(ckpt), "sha256": file_sha256(ckpt), "size": ckpt.stat().st_size},
        checkpoint_meta={k: v for k, v in meta.items() if k not in ("config", "eval")},
        training_config=meta.get("config"),
        training_eval=meta.get("eval"),
        files={},
        checks={},
        exported_with=_versions(),
    )
    add_ratings(card, rating_cards, note, read_provenance(commands, cost))
    written = [out_dir / WEIGHTS, out_dir / ONNX, out_dir / MODEL_CARD]
    with _removed_on_failure(written):
        stage(EXPORT_STAGES[1])
        write_numpy_export(out_dir, card, layers, activation)
        stage(EXPORT_STAGES[2])
        write_onnx(actor, out_dir / ONNX, obs_size, num_cards)
        stage(EXPORT_STAGES[3])
        checks = check_export(actor, out_dir, rules, rows=check_rows, seed=seed)
        checks["tolerance"] = tolerance
        bad = [k for k in ("max_abs_diff_numpy", "max_abs_diff_onnx") if (checks.get(k) or 0.0) > tolerance]
        if bad or checks["masked_prob_max"] > 0.0:
            raise ExportCheckError(f"the exported bot does not match the torch policy to {tolerance:g}: {checks}")
        card["checks"] = checks
        card["files"] = {p.name: {"sha256": file_sha256(p), "size": p.stat().st_size} for p in written[:2]}
        if search is not None:  # after the checks: they compare the network's moves (a search bot's need a state)
            card["search"] = parse_search(search)
        write_card(out_dir, card)
    return card


@contextlib.contextmanager
def _stage_bar(desc: str) -> Iterator[Callable[[str], None]]:
    """A bar over ``EXPORT_STAGES`` with the time left on stderr (on a terminal; elsewhere one line per stage)."""
    if not sys.stderr.isatty():
        yield lambda name: print(f"{desc}: {name} ...", file=sys.stderr, flush=True)
        return
    from tqdm import tqdm

    with tqdm(total=len(EXPORT_STAGES), desc=desc, unit="step", leave=False) as bar:
        seen: list[str] = []

        def stage(name: str) -> None:
            if seen:
                bar.update(1)
            seen.append(name)
            bar.set_postfix_str(name)

        yield stage
        bar.update(len(EXPORT_STAGES) - bar.n)


def _main_search_only(parser: argparse.ArgumentParser, args: Any) -> int:
    """``python -m agents.nets.export VARIANT --search pimc:OPTIONS --out DIR``: a search-only bot."""
    if args.endgame is not None:
        parser.error("--endgame applies to a network; a search-only bot has none (set endgame in --search)")
    try:
        card = export_search_only(
            str(args.checkpoint),
            args.out,
            args.search,
            args.ratings,
            args.name,
            args.force,
            args.note,
            args.commands,
            args.cost,
        )
    except ExportArgumentError as e:
        parser.error(str(e))
    opts = ",".join(f"{k}={v}" for k, v in card["search"].items() if k != "agent")
    print(f"exported {card['name']} (a search-only bot of {card['variant']}: pimc:{opts}, no network) to {args.out}")
    return 0


@dataclass
class ExportOptions:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    checkpoint: Path = setting(
        doc="a MaskablePPO .zip written by train.py, or a bot export directory (its network, e.g. with --search), "
        "or a variant name with --search pimc:OPTIONS: a search-only bot (no network)",
        option="checkpoint",
    )
    out: Path = setting(doc="export directory to write", metavar="DIR")
    ratings: list[Path] | None = setting(
        None,
        "evaluate.py results.json for the card (several: the first is 'ratings', the others 'more_ratings')",
        metavar="FILE.json",
    )
    name: str | None = setting(None, "the bot's name in the model card (default: <variant>-<checkpoint name>)")
    check_rows: int = setting(
        DEFAULT_CHECK_ROWS,
        f"rows compared, {MIN_CHECK_ROWS}..{MAX_CHECK_ROWS} (default {DEFAULT_CHECK_ROWS})",
        show_default=False,
    )
    tolerance: float = setting(DEFAULT_TOLERANCE, "max probability difference, in [0, 1] (1e-5)", show_default=False)
    force: bool = setting(False, "overwrite an existing export in --out", negatable=False, show_default=False)
    endgame: int | None = setting(
        None,
        "open end-game plies the bot solves exactly by default (default: the checkpoint's endgame; 0: off)",
        metavar="PLIES",
    )
    note: str | None = setting(
        None, "a note for the model card, e.g. why the bot does not beat expert (its 'note')", metavar="TEXT"
    )
    search: str | None = setting(
        None,
        "az options, e.g. 'worlds=16,prior=0.5': a search bot, its network inside that search (bot:path=DIR "
        "plays the search; agents.nets.netsearch); or 'pimc:worlds=256,endgame=10,prior=2': a search bot that plays "
        "pimc (agents.search.pimc), its network what bot:path=DIR,search=false plays; or 'vpimc:...' with --value "
        "(agents.nets.vpimc: pimc with a learned leaf value)",
        metavar="OPTIONS",
    )
    value: Path | None = setting(
        None,
        "with --search vpimc:OPTIONS and a bot directory: the value network (bench/value_pimc.py fit) the search "
        "values its leaves with, copied in as value.npz",
        metavar="FILE.npz",
    )
    commands: Path | None = setting(
        None,
        "a text file of the commands that produced the bot and its ratings, one per line (the card's 'commands')",
        metavar="FILE",
    )
    cost: Path | None = setting(
        None,
        "its measured cost per move: a JSON object, e.g. bench/bot_latency.py's last line (the card's 'cost_per_move')",
        metavar="FILE.json",
    )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``python -m agents.nets.export``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Export a MaskablePPO checkpoint as ONNX + numpy weights + model card (see agents.nets.bot).",
    )
    add_field_options(parser, ExportOptions, typed=True, once=False)
    args = parse_options(parser, ExportOptions, argv)
    if not args.checkpoint.exists() and str(args.checkpoint) in VARIANTS:
        return _main_search_only(parser, args)
    from_bot = args.checkpoint.is_dir()
    try:
        check_arguments(
            args.checkpoint,
            args.out,
            args.ratings,
            args.name,
            args.check_rows,
            args.tolerance,
            args.force,
            0,
            args.endgame,
            args.search,
            args.commands,
            args.cost,
        )
        if from_bot and args.endgame is not None:
            raise ExportArgumentError("--endgame applies to a checkpoint; a bot directory keeps its card's endgame")
        if not from_bot and args.value is not None:
            raise ExportArgumentError("--value goes with a bot directory and --search vpimc:OPTIONS, not a checkpoint")
    except ExportArgumentError as e:
        parser.error(str(e))
    start = time.perf_counter()
    try:
        quiet: contextlib.AbstractContextManager[Callable[[str], None]] = contextlib.nullcontext(lambda name: None)
        with quiet if from_bot else _stage_bar("export") as stage:
            common: dict[str, Any] = {
                "search": args.search,
                "ratings": args.ratings,
                "name": args.name,
                "force": args.force,
                "note": args.note,
                "check_rows": args.check_rows,
                "commands": args.commands,
                "cost": args.cost,
            }
            if from_bot:
                card = export_bot(args.checkpoint, args.out, value=args.value, **common)
            else:
                card = export_checkpoint(
                    args.checkpoint, args.out, tolerance=args.tolerance, endgame=args.endgame, progress=stage, **common
                )
    except ExportCheckError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except (ExportError, ValueError) as e:  # AgentSpecError (a bad checkpoint) is a ValueError
        parser.error(str(e))
    except OSError as e:
        print(f"{PROG}: error: cannot write the export to {args.out}: {e}; nothing was kept", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the partial export in {args.out} was removed", file=sys.stderr)
        return 130
    c = card["checks"]
    arch = card["architecture"]
    if from_bot:
        found = card.get("search")
        opts = "" if found is None else ",".join(f"{k}={v}" for k, v in found.items() if k != "agent")
        search = (
            ""
            if found is None
            else (f" inside az:{opts}" if found.get("agent") == "az" else f", playing {found['agent']}:{opts}")
        )
        print(f"exported {card['name']} (the network of {args.checkpoint}{search}) to {args.out}")
        diffs = ", ".join(f"{k} {v:.2e}" for k, v in c.items() if k.startswith("max_abs"))
        print(f"check on {c['rows']} rows: {diffs}")
        return 0
    print(
        f"exported {card['name']} ({card['variant']}, {card['training_steps']} steps, MLP {arch['input']}-"
        f"{'-'.join(map(str, arch['hidden']))}-{arch['output']} {arch['activation']}) to {args.out} "
        f"in {time.perf_counter() - start:.1f}s"
    )
    onnx_diff = c.get("max_abs_diff_onnx")
    print(
        f"check on {c['rows']} rows: max |p - p_torch| numpy {c['max_abs_diff_numpy']:.2e}, onnx "
        + (f"{onnx_diff:.2e}" if onnx_diff is not None else "n/a (onnxruntime not installed)")
    )
    for fname, info in card["files"].items():
        print(f"  {fname}: {info['size'] / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
