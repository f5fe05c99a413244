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

from agents.cli.threads import pin_blas_threads

pin_blas_threads()  # before numpy loads: one BLAS thread per process (the workers do the parallelism)

import argparse  # noqa: E402
import functools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    StoreOnce,
    add_field_options,
    field_types,
    given_fields,
    path_parser,
)
from agents.cli.signals import exit_status, signal_name  # noqa: E402
from agents.errors import TournamentError  # noqa: E402
from agents.evaluation.eval_config import EvalConfig, SettingError, check_setting, setting_hint  # noqa: E402
from agents.evaluation.report import print_report  # noqa: E402
from agents.evaluation.tournament import TournamentInterrupted, run_tournament  # noqa: E402
from agents.search import compiled  # noqa: E402
from scopa_env.engine import kernel  # noqa: E402


def _option_value(name: str, text: str) -> Any:
    """An argparse type for the ``EvalConfig`` field ``name``: the text read as the field's type (a whole number, a
    number or text), then ``check_setting``, the same check as its YAML key and ``EvalConfig(...)`` (one item of a
    list)."""
    tp = field_types(EvalConfig)[name]
    parse: Callable[[str], Any]
    parse, kind = (
        (int, "a whole number") if tp in (int, int | None) else (float, "a number") if tp is float else (str, "")
    )
    try:
        value = parse(text)
    except ValueError:
        shown = repr(text) if len(text) <= 60 else repr(text[:57]) + "..."
        raise argparse.ArgumentTypeError(f"{shown} is not {kind}; {setting_hint(name)}") from None
    try:
        if tp == list[str]:  # one item of the list per argument
            return check_setting(name, [value])[0]
        return check_setting(name, value)
    except SettingError as e:
        raise argparse.ArgumentTypeError(e.detail.removeprefix("item 0: ")) from None


_path = path_parser("a file or folder path")


def build_parser() -> argparse.ArgumentParser:
    """The parser: one option per ``EvalConfig`` field (``agents.cli.settings.add_field_options``: its doc is the help),
    ``--hands N`` / ``--matches N`` for ``mode`` and ``deals``, and the options of the command itself."""
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
        "--trust-config-plugins",
        action="store_true",
        help="import the plugins a --config file names (they run code: by default a config file's plugins are "
        "refused, and --plugin on the command line is the way to give them)",
    )
    settings = p.add_argument_group(
        "settings (the EvalConfig fields, also --config keys with _ instead of -; --deals is deals_file, --plugin "
        "adds to plugins, --hands / --matches set mode and deals)"
    )
    n = settings.add_mutually_exclusive_group()
    deals = functools.partial(_option_value, "deals")
    n.add_argument("--hands", type=deals, metavar="N", help="play N deals of one hand each (default 1000 deals)")
    n.add_argument("--matches", type=deals, metavar="N", help="play N deals of whole matches to the variant's target")
    add_field_options(settings, EvalConfig, convert=_option_value)
    p.add_argument("--out", type=_path, metavar="DIR", help="output folder (default runs/eval__<variant>__<time>/)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNG plots")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None, help="always show the progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show the progress bar")
    p.add_argument("--quiet", action="store_true", help="do not print the tables")
    p.add_argument("--list-agents", action="store_true", help="list the registered agent names and exit")
    p.add_argument(
        "--review",
        type=int_arg(1, 10**6),
        metavar="N",
        help="after the games, review the first N games of the pairings' first agent (the --gauntlet candidate) "
        "move by move (agents.play.review, docs/review.md): where it loses points against the reviewer, by phase of "
        "the hand and kind of loss, with 95%% intervals; needs --records FILE",
    )
    return p


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    """An ``EvalConfig``: the YAML file's settings (if any) with every option given on the command line on top, all
    through ``EvalConfig``'s own checks (``check_setting``), so a YAML key and its option are refused alike."""
    overrides = given_fields(EvalConfig, args)
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
        if args.review is not None and cfg.records is None:
            parser.error("--review N reviews the games' records: give --records FILE.jsonl too")
        compiled.jit()  # compiled (the first run after an install, with its progress lines) or loaded before the bar
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
        return exit_status(e)
    except KeyboardInterrupt as e:  # Ctrl-C (or SIGTERM, SIGHUP) while reading the settings
        print(f"evaluate.py: stopped by {_signal(e)} before any game was played", file=sys.stderr)
        return exit_status(e)
    except (TournamentError, kernel.KernelUnavailableError) as e:
        print(f"evaluate.py: error: {e}", file=sys.stderr)
        return 2
    try:
        if not args.quiet:
            print_report(result)
    except KeyboardInterrupt as e:
        print(
            f"evaluate.py: stopped by {_signal(e)} while printing; the complete results are in {out}/", file=sys.stderr
        )
        return exit_status(e)
    print(f"wrote {', '.join(p.name for p in result.paths.values())} to {out}/")
    if result.config.records is not None:
        print(f"wrote {result.records_written} game records to {result.config.records}")
    if args.review is not None and result.config.records is not None:
        return _review(result.config.records, args.review, progress)
    return 0


def _review(path: str, count: int, progress: bool) -> int:
    """``--review N``: the first ``count`` games of the pairings' first agent in the records at ``path`` reviewed
    (``agents.play.review``), and where it loses points; 2 when the records cannot be reviewed."""
    from agents.play.review import (
        ReviewError,
        agent_seats,
        format_loss_report,
        loss_report,
        progress_bar,
        read_records,
        review_records,
    )

    update, close = progress_bar(progress)
    try:
        records = read_records(path)
        label = records[0]["eval"]["pairing"][0]
        games = [(i, r) for i, r in enumerate(records) if agent_seats(r, label)][:count]
        review = review_records(games, seats=lambda r: agent_seats(r, label), progress=update)
    except ReviewError as e:
        close()
        print(f"evaluate.py: error: --review: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # the games and their records are already written
        close()
        print(f"evaluate.py: review stopped by {_signal(e)}; the results and records are written", file=sys.stderr)
        return exit_status(e)
    close()
    print(format_loss_report(loss_report(review), f"{label} ({len(games)} games reviewed)"))
    return 0


def _signal(e: KeyboardInterrupt) -> str:
    return signal_name(exit_status(e) - 128)


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
