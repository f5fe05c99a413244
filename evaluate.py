"""Head-to-head evaluation of Scopa agents on duplicate deals, with ratings, confidence intervals and SPRT.

    python evaluate.py --variant classic --agents random greedy expert --hands 2000
    python evaluate.py --variant classic --gauntlet runs/x/best.zip --agents greedy expert --matches 500
    python evaluate.py --variant classic --gauntlet cand=runs/x/best.zip --agents greedy --sprt 0,20 --hands 100000
    python evaluate.py --variant classic --agents random greedy expert --hands 100000 --ray auto   # on a Ray cluster
    python evaluate.py --variant scopa-a-quattro --gauntlet bot --agents expert --partner expert  # with a partner

Every deal is played once per seat rotation (both ways round with two sides), so the luck of the cards cancels.
The crosstable, ratings and pairings are printed and saved under ``--out`` as Markdown, CSV and JSON, with PNG plots.
See docs/evaluate.md (README section "Evaluating agents") for the statistics.

Every option and ``--config`` key is checked before any game is played, ``--out`` included (made if missing). While
the games play, the results so far are rewritten under ``--out`` (``results.json`` marked ``"partial": true``).
Exit status: 0 done; 2 bad input, with a message saying how to fix it; 128 + N when signal N stopped it (130 Ctrl-C,
143 SIGTERM, 129 SIGHUP): the workers are stopped and the results of the games finished so far are saved.
"""

from __future__ import annotations

from agents.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads: one BLAS thread per process (the workers do the parallelism)

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agents.config import StoreOnce  # noqa: E402
from agents.errors import TournamentError  # noqa: E402
from agents.evaluation.report import print_report  # noqa: E402
from agents.evaluation.tournament import (  # noqa: E402
    START_METHODS,
    EvalConfig,
    SettingError,
    TournamentInterrupted,
    check_setting,
    run_tournament,
    setting_hint,
)

OPTION_SETTINGS = (
    "variant",
    "agents",
    "gauntlet",
    "partner",
    "seed",
    "deals_file",
    "save_deals",
    "workers",
    "batch",
    "anchor",
    "anchor_rating",
    "bootstrap",
    "level",
    "sprt",
    "sprt_alpha",
    "sprt_beta",
    "records",
    "plugins",
    "start_method",
    "ray",
)
"""``EvalConfig`` fields with an option of their own (``--hands N`` / ``--matches N`` set ``mode`` and ``deals``)."""


def _setting(name: str, parse: Callable[[str], Any] = str, kind: str = "") -> Callable[[str], Any]:
    """An argparse type: parse the text, then the same check as the YAML key ``name`` (``check_setting``)."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            shown = repr(text) if len(text) <= 60 else repr(text[:57]) + "..."
            raise argparse.ArgumentTypeError(f"{shown} is not {kind}; {setting_hint(name)}") from None
        try:
            if name in ("agents", "plugins"):  # one item of the list per argument
                return check_setting(name, [value])[0]
            return check_setting(name, value)
        except SettingError as e:
            raise argparse.ArgumentTypeError(e.detail.removeprefix("item 0: ")) from None

    return convert


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("got an empty path; give a file or folder path")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text!r} holds a NUL character; give a file or folder path")
    return Path(text)


def _whole(name: str) -> Callable[[str], Any]:
    return _setting(name, int, "a whole number")


def _number(name: str) -> Callable[[str], Any]:
    return _setting(name, float, "a number")


def build_parser() -> argparse.ArgumentParser:
    from scopa_env.rules import variant_names

    p = argparse.ArgumentParser(
        prog="evaluate.py",
        description=__doc__.split("\n\n")[0],
        epilog="Agent specs: a registered name with options (random, greedy, pimc:worlds=12,depth=5), a checkpoint "
        "or exported file, optionally labelled as LABEL=SPEC. --list-agents shows the registered names.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.register("action", None, StoreOnce)  # an option given twice is refused, not silently overridden by the last
    p.add_argument("--config", type=_path, metavar="FILE.yaml", help="read settings (EvalConfig fields) from YAML")
    p.add_argument(
        "--variant", type=_setting("variant"), help=f"variant to play ({', '.join(variant_names())}); default classic"
    )
    p.add_argument(
        "--agents",
        nargs="+",
        type=_setting("agents"),
        metavar="SPEC",
        help="agents of the round robin (or the gauntlet's opponents)",
    )
    p.add_argument(
        "--gauntlet",
        type=_setting("gauntlet"),
        metavar="SPEC",
        help="play this candidate against every agent of --agents",
    )
    p.add_argument(
        "--partner",
        type=_setting("partner"),
        metavar="SPEC",
        help="team variants: this agent plays the teammates of both agents of every pairing, each agent sitting in "
        "every seat of its side in turn (default: an agent plays all the seats of its side)",
    )
    n = p.add_mutually_exclusive_group()
    n.add_argument(
        "--hands", type=_whole("deals"), metavar="N", help="play N deals of one hand each (default 1000 deals)"
    )
    n.add_argument(
        "--matches", type=_whole("deals"), metavar="N", help="play N deals of whole matches to the variant's target"
    )
    p.add_argument("--seed", type=_whole("seed"), help="seed of the deals and of the agents (default 0)")
    p.add_argument(
        "--deals",
        dest="deals_file",
        type=_setting("deals_file"),
        metavar="FILE",
        help="play the deals of this deal file",
    )
    p.add_argument(
        "--save-deals", type=_setting("save_deals"), metavar="FILE", help="save the deals to FILE before playing"
    )
    p.add_argument(
        "--workers", type=_whole("workers"), help="worker processes (default 0 = all cores; 1 = this process)"
    )
    p.add_argument("--batch", type=_whole("batch"), metavar="N", help="deals per task (default 500; 100 with --sprt)")
    p.add_argument(
        "--anchor",
        type=_setting("anchor"),
        metavar="AGENT",
        help="agent whose rating is fixed (default random, else the first)",
    )
    p.add_argument(
        "--anchor-rating", type=_number("anchor_rating"), metavar="R", help="the anchor's rating (default 0)"
    )
    p.add_argument(
        "--bootstrap", type=_whole("bootstrap"), metavar="N", help="bootstrap replicates for rating intervals (1000)"
    )
    p.add_argument("--level", type=_number("level"), help="confidence level of the intervals (default 0.95)")
    p.add_argument(
        "--sprt", type=_setting("sprt"), metavar="ELO0,ELO1", help="sequential test of --gauntlet vs one agent"
    )
    p.add_argument(
        "--sprt-alpha", type=_number("sprt_alpha"), metavar="A", help="SPRT false-positive rate (default 0.05)"
    )
    p.add_argument(
        "--sprt-beta", type=_number("sprt_beta"), metavar="B", help="SPRT false-negative rate (default 0.05)"
    )
    p.add_argument(
        "--records",
        type=_setting("records"),
        metavar="FILE.jsonl",
        help="write the record of every game (RULES.md section 8)",
    )
    p.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        type=_setting("plugins"),
        metavar="MODULE",
        help="import MODULE to register agents",
    )
    p.add_argument(
        "--trust-config-plugins",
        action="store_true",
        help="import the plugins a --config file names (they run code: by default a config file's plugins are "
        "refused, and --plugin on the command line is the way to give them)",
    )
    p.add_argument("--start-method", choices=START_METHODS, help="worker start method (spawn)")
    p.add_argument(
        "--ray",
        type=_setting("ray"),
        metavar="ADDRESS",
        help="play the tasks on Ray: local (start Ray here), auto (this machine's cluster) or HOST:PORT; --workers is "
        "then the most tasks in flight (0 = the cluster's CPUs). Needs pip install 'scopa[ray]' (docs/ray.md)",
    )
    p.add_argument("--out", type=_path, metavar="DIR", help="output folder (default runs/eval__<variant>__<time>/)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNG plots")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None, help="always show the progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show the progress bar")
    p.add_argument("--quiet", action="store_true", help="do not print the tables")
    p.add_argument("--list-agents", action="store_true", help="list the registered agent names and exit")
    return p


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    """An ``EvalConfig``: the YAML file's settings (if any) with every option given on the command line on top, all
    through ``EvalConfig``'s own checks (``check_setting``), so a YAML key and its option are refused alike."""
    overrides: dict[str, Any] = {
        name: getattr(args, name) for name in OPTION_SETTINGS if getattr(args, name) is not None
    }
    if args.hands is not None:
        overrides.update(mode="hands", deals=args.hands)
    if args.matches is not None:
        overrides.update(mode="matches", deals=args.matches)
    if args.config is not None:
        return EvalConfig.from_yaml(args.config, overrides, trust_plugins=args.trust_config_plugins)
    return EvalConfig.from_dict(overrides)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (2: bad input; 128 + N: stopped by signal N, results saved)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_agents:
        from agents.base import registered_agents

        for name, help_text in registered_agents().items():
            print(f"{name:<12} {help_text}")
        return 0
    try:
        cfg = config_from_args(args)
        if not cfg.agents and cfg.gauntlet is None:
            parser.error("give the agents to compare: --agents SPEC SPEC [...] (or --gauntlet SPEC --agents SPEC ...)")
        cfg.validate()
        out = args.out or Path("runs") / f"eval__{cfg.variant}__{time.strftime('%Y%m%d-%H%M%S')}"
        progress = sys.stderr.isatty() if args.progress is None else args.progress
        result = run_tournament(
            cfg,
            progress=progress,
            out=out,
            plots=not args.no_plot,
            handle_signals=True,
            notes=lambda text: print(f"evaluate.py: note: {text}", file=sys.stderr),
        )
    except TournamentInterrupted as e:
        print(f"evaluate.py: {_interrupted_message(e, cfg)}", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:  # Ctrl-C while reading the settings
        print("evaluate.py: stopped by SIGINT before any game was played", file=sys.stderr)
        return 128 + 2
    except TournamentError as e:
        print(f"evaluate.py: error: {e}", file=sys.stderr)
        return 2
    try:
        if not args.quiet:
            print_report(result)
    except KeyboardInterrupt:
        print(f"evaluate.py: stopped by SIGINT while printing; the complete results are in {out}/", file=sys.stderr)
        return 128 + 2
    print(f"wrote {', '.join(p.name for p in result.paths.values())} to {out}/")
    if result.config.records is not None:
        print(f"wrote {result.records_written} game records to {result.config.records}")
    return 0


def _interrupted_message(e: TournamentInterrupted, cfg: EvalConfig) -> str:
    r = e.result
    if r is None or not e.paths:
        return f"stopped by {e.signal_name} before any game was played"
    where = f"the results so far are in {e.paths['json'].parent}/ (results.json marked partial, report.md, CSVs)"
    text = f"stopped by {e.signal_name} after {r.games_played} of {r.games_planned} planned games; {where}"
    if cfg.records is not None:
        text += f"; the records of the {r.records_written} finished games are in {cfg.records}"
    return text


if __name__ == "__main__":
    sys.exit(main())
