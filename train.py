"""Train a Scopa bot by self-play: MaskablePPO on the batched vector env against a PFSP league.

    .venv/bin/python train.py                               # configs/default.yaml: classic, ~20 min on 2 CPU cores
    .venv/bin/python train.py --config configs/strong.yaml --total-steps 2e7
    .venv/bin/python train.py --variant scopa-a-quattro --config configs/quattro.yaml
    .venv/bin/python train.py --resume runs/classic__default__0__20260101-120000
    .venv/bin/python train.py --help                        # every option, its meaning and default

(``make train ARGS="..."`` runs the same; ``scopa-train`` once installed.) The run directory is announced first;
the warm start shows progress bars with their ETA; a run stopped before its first checkpoint removes its directory.

The learner (sb3-contrib ``MaskablePPO``, ``MlpPolicy``) plays ``num_envs`` games at once in one
``scopa_env.envs.gym.ScopaVecEnv``. Its opponents come from a league (``agents.training.league``): the baselines plus
frozen snapshots of the learner taken every ``snapshot_every`` steps, sampled with priority to those it does not beat
yet (prioritized fictitious self-play). In team variants the learner plays every seat of its side.

Each run writes ``runs/<variant>__<name>__<seed>__<time>/``:

======================  ============================================================================================
``config.yaml``         the resolved config (every field)
``version.json``        code version (git commit, dirty flag and diff hash), library versions, command line
``history.jsonl``       one line per start, resume, interrupt and finish
``events.out.tfevents``  TensorBoard: ``charts/`` (steps/s, episode results), ``losses/``, ``league/``, ``eval/``
``eval.jsonl``          one line per evaluation: step, wall-clock seconds, margins against each eval opponent
``eval.png``            ``eval.jsonl`` drawn: margins with 95% bands against steps and wall-clock time
``last.zip``            the latest checkpoint, with the state needed to resume the run exactly
``best.zip``            the checkpoint with the best evaluation margin against the last of ``eval_opponents``
``checkpoints/``        ``step_<steps>.zip`` every ``checkpoint_every`` steps (the newest ``keep_checkpoints``)
======================  ============================================================================================

Checkpoints are ``model.save`` zips plus ``scopa_meta.json`` (variant, observation version, steps, config, code
version), written atomically; ``make_agent("runs/<run>/best.zip", rules)`` plays them. Ctrl-C stops at the next
step and saves ``last.zip`` (as of the start of the current rollout) before exiting with status 130 and the command
that continues it (``agents.cli.shell.train_command``); ``--resume`` continues the run with the same results
as an uninterrupted one for the same seed, up to floating-point noise.

This file is the command line only; the parts live in ``agents.training``: ``train_config`` (``TrainConfig``, config
files; the machinery is in ``agents.cli.settings``, shared with evaluate.py), ``trainer`` (``Trainer``,
``duplicate_eval``) and ``run_dir`` (run directories, checkpoint files, ``code_version``). Import them from there.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.cli.settings import ConfigError, StoreOnce, add_field_options, cli_overrides
from agents.cli.shell import train_command
from agents.cli.signals import StopSignals, exit_status
from agents.training.run_dir import RunDirError
from agents.training.train_config import (
    CONFIG_DIR,
    TrainConfig,
    config_yaml,
    load_config,
)
from scopa_env.engine import kernel

if TYPE_CHECKING:
    from agents.training.trainer import Trainer

__all__ = ["build_parser", "main", "parse_cli"]

ROOT = Path(__file__).resolve().parent
EXAMPLES = (
    (),
    ("--config", "strong", "--total-steps", "2e7"),
    ("--resume", "runs/classic__default__0__20260101-120000"),
)
"""The arguments of --help's example commands (written as this interpreter runs train.py from here)."""


# --------------------------------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser: --config, --resume, --print-config and one option per config field."""
    p = argparse.ArgumentParser(
        prog="train.py",
        description="Train a Scopa bot by self-play (MaskablePPO against a PFSP league). Options override the "
        "config file (default configs/default.yaml); integers accept scientific notation (--total-steps 2e7).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  " + "\n  ".join(train_command(*args) for args in EXAMPLES),
    )
    shipped = ", ".join(sorted(x.stem for x in CONFIG_DIR.glob("*.yaml")))
    p.add_argument(
        "--config",
        action=StoreOnce,
        metavar="FILE.yaml",
        help=f"YAML config file, or the name of a shipped one ({shipped}); default: default",
    )
    p.add_argument(
        "--resume", action=StoreOnce, metavar="RUN_DIR", help="continue the run in RUN_DIR from its last.zip"
    )
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    group = p.add_argument_group("config fields (also valid as YAML keys, with _ instead of -)")
    add_field_options(group, TrainConfig)
    return p


def parse_cli(argv: Sequence[str] | None) -> tuple[argparse.Namespace, dict[str, Any]]:
    """(namespace, explicit config overrides): only the fields given on the command line, converted."""
    ns = build_parser().parse_args(argv)
    return ns, cli_overrides(TrainConfig, ns)


# --------------------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    # Ctrl-C, SIGTERM and SIGHUP interrupt the set-up and the warm start (the trainer has its own handlers after).
    trainer: Trainer | None = None
    try:
        with StopSignals() as stop:
            ns, overrides = parse_cli(argv)
            if ns.resume and ns.print_config:
                raise ConfigError("--print-config and --resume do not go together; read RUN_DIR/config.yaml")
            cfg = None if ns.resume else load_config(ns.config, overrides)
            if cfg is not None and ns.print_config:
                print(config_yaml(cfg), end="")
                return 0
            kernel.jit()  # compiled (first run after an install: its own progress lines) or loaded before any bar
            from agents.training.trainer import Trainer  # torch and SB3 (2 s) only for a run: not for --help

            trainer = Trainer.create(cfg) if cfg is not None else Trainer.resume(ns.resume, ns.config, overrides)
            stop.check()  # a signal came during the set-up and its exception was lost: stop now, as it asked
    except (ConfigError, RunDirError, kernel.KernelUnavailableError) as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # during the warm start or the set-up: no training state to save yet
        if trainer is not None:
            from agents.training.trainer import Trainer  # imported already: a trainer was set up

            if isinstance(trainer, Trainer) and not trainer.resumed:  # set up, then stopped: no checkpoint yet
                shutil.rmtree(trainer.run_dir, ignore_errors=True)
                print(f"removed {trainer.run_dir}: the run stopped before its first checkpoint", file=sys.stderr)
        print(
            "train.py: interrupted before training started (set-up or warm start); nothing was saved, start the run "
            f"again: {train_command(*(argv if argv is not None else sys.argv[1:]))}",
            file=sys.stderr,
        )
        return exit_status(e)
    return trainer.run()


if __name__ == "__main__":
    sys.exit(main())
