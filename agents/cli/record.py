"""Game records (RULES.md section 8): write random matches from the batched core, check records with the reference.

    python -m agents.cli.record --variant classic --games 100 --seed 7 --out games.jsonl
    python -m agents.cli.record --check games.jsonl
    python -m agents.cli.record --check partial.jsonl --allow-unfinished
    python -m agents.cli.record --variant cirulla --games 10 --out cirulla.jsonl   # also cirulla-3, cirulla-4

Writing: game ``i`` is the match seeded ``--seed + i``, played with uniformly random legal decisions drawn from that
game's own random stream (a hash of its game seed and draw number). A record therefore depends only on the variant
and its game seed: the first 5 games of ``--games 20`` are the games of ``--games 5``, and ``--batch`` (games played
at once) only changes the speed. ``--out`` appears only once every game is written; an interrupted or failed run
leaves the previous file (if any) untouched and no temporary file behind.

Checking (``--check FILE``, done by ``scopa_env.oracle.record_check``): every non-blank line must hold one record that
replays on the reference engine (``record_check.replay_record``). Beyond that, a line is rejected, with its number
and the reason, when it is not UTF-8 text or not JSON (NaN, duplicate keys and nesting deeper than a record's are
refused too), when a number is written as ``true``/``false`` or with a fraction (JSON booleans are not integers:
``"seat": true`` is not seat 1), when ``hands`` is empty, when it repeats an earlier line's record, and when its
match is unfinished (``"winner": null``, e.g. a record cut after a hand or in the middle of one) without saying so.
A record marks itself as deliberately unfinished with ``"unfinished": true`` (``RecordWriter`` writes it on every
record of a match stopped before its end, like evaluate.py's one-hand games, and drops it when the match ends);
``--allow-unfinished`` accepts unmarked unfinished records of a whole file (files from older versions or other
tools). An empty file is an error too.

Exit status: 0 when every record replays, 1 for the first wrong record (``FILE:LINE: reason`` on stderr), 2 for a
bad command line or a ``--check`` path that is not a records file (missing, a directory, a binary file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from agents.cli.atomic import atomic_open
from agents.cli.numbers import int_arg
from agents.cli.settings import MAX_SEED, add_field_options, parse_options, setting
from scopa_env.engine import core
from scopa_env.games.driver import play
from scopa_env.games.policy import ActBatch, Policy, uniform_capture_picks, uniform_legal
from scopa_env.oracle.record_check import RecordFileError, check_file
from scopa_env.rules import Rules, get_rules, variant_names
from scopa_env.rules.shuffle import GOLDEN, splitmix64

__all__ = [
    "MAX_BATCH",
    "MAX_GAMES",
    "Options",
    "PerGameRandomAgent",
    "play_random_records",
]

MAX_GAMES = 100_000_000
"""The most games one ``--out`` file gets (a record is about 11 KB: this is about a terabyte)."""
MAX_BATCH = 65_536
"""The most games ``play_random_records`` plays at once (more only costs memory)."""
AGENT_STREAM = 0x5C0BA
"""Mixed with each game seed to key that game's random decisions (kept apart from the deal's shuffles)."""


class _GameStreams:
    """Per-game random streams behind ``Generator.random``: a counter-based SplitMix64 hash, like the deal's shuffles.

    ``uniform_legal`` and ``uniform_capture_picks`` draw ``random((n, width))`` for their ``n`` rows; here row ``i``
    is a pure function of game ``games[i]``'s seed and how many draws that game made before, so a game's decisions
    do not depend on which games share its batch.
    """

    def __init__(self, seeds: npt.NDArray[np.uint64]) -> None:
        self.keys = splitmix64(seeds.astype(np.uint64) ^ np.uint64(AGENT_STREAM))
        self.draws = np.zeros(seeds.size, dtype=np.uint64)
        self.games: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)

    def rows(self, games: npt.NDArray[np.intp]) -> np.random.Generator:
        """A stand-in for a Generator whose ``random((n, width))`` draws row ``i`` from game ``games[i]``."""
        self.games = games
        return cast(np.random.Generator, self)

    def random(self, shape: tuple[int, int]) -> npt.NDArray[np.float64]:
        n, width = shape
        assert n == self.games.size, (n, self.games.size)
        with np.errstate(over="ignore"):
            base = splitmix64(self.keys[self.games] + self.draws[self.games] * GOLDEN)
            bits = splitmix64(base[:, None] + np.arange(1, width + 1, dtype=np.uint64)[None, :] * GOLDEN)
        self.draws[self.games] += np.uint64(1)
        return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _check_play_args(games: int, seed: int, batch: int) -> None:
    for name, value in (("games", games), ("seed", seed), ("batch", batch)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    if not 0 <= seed <= MAX_SEED - (games - 1):
        raise ValueError(
            f"seed must be in 0..2**64-1 with seed + games - 1 <= 2**64-1 (game i uses seed + i), got seed {seed} "
            f"for {games} games"
        )
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be in 1..{MAX_BATCH}, got {batch}")


class PerGameRandomAgent(Policy):
    """``RandomAgent``'s draws (a uniform card, then a uniform capture) from each game's own random stream.

    Cirulla (``rules.fifteens``): as ``RandomAgent`` there, every decision (knocks, and each CHOOSE pick among
    the legal table cards and ``stop``) is uniform over the legal mask.

    Built for the games of one batch (``seeds``, in the order of the state's games): row ``i`` of a batch draws
    from the stream of game ``batch.games[i]``, so a game's decisions do not depend on which games share its
    batch. ``seed`` does nothing: the streams are keyed by the game seeds.
    """

    name = "random"
    needs_state = True
    needs_obs = False

    def __init__(self, rules: Rules, seeds: npt.NDArray[np.uint64]) -> None:
        super().__init__(rules)
        self.streams = _GameStreams(np.asarray(seeds, dtype=np.uint64))

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        if batch.state is None or batch.games is None:
            raise ValueError("PerGameRandomAgent needs batch.state and batch.games (the per-game streams)")
        g, mask = batch.games, batch.mask
        chosen = uniform_legal(mask, self.streams.rows(g))
        rows = np.flatnonzero(batch.state.phase[g] == core.Phase.CHOOSE)
        if rows.size and not batch.rules.fifteens:
            chosen[rows] = uniform_capture_picks(
                batch.rules, batch.state, g[rows], mask[rows], self.streams.rows(g[rows])
            )
        return chosen


def play_random_records(
    rules: Rules | str, games: int, seed: int, batch: int = 256, progress: bool = False
) -> Iterator[dict[str, Any]]:
    """Play ``games`` complete matches (seeds ``seed, seed+1, ...``) with uniformly random legal decisions.

    Game ``i`` depends only on the rules and its seed ``seed + i``: its decisions come from its own random stream
    (``PerGameRandomAgent``), so neither ``games`` nor ``batch`` (games played at once) changes a record.
    """
    rules = get_rules(rules)
    _check_play_args(games, seed, batch)
    bar = _progress(games, progress, "games")
    for lo in range(0, games, batch):
        seeds = np.array([seed + i for i in range(lo, min(games, lo + batch))], dtype=np.uint64)
        lineups = np.zeros((seeds.size, rules.num_players), dtype=np.int64)
        agent = PerGameRandomAgent(rules, seeds)
        res = play(rules, [agent], lineups, seeds, mode="matches", record=True, on_step=bar, max_hands=None)
        assert res.records is not None
        yield from res.records


def _progress(total: int, enabled: bool, unit: str) -> Callable[[int], None]:
    if not enabled:
        return lambda n: None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda n: None
    bar = tqdm(total=total, unit=unit, file=sys.stderr)
    return lambda n: bar.update(n) if n else None


# --------------------------------------------------------------------------------------------------- command line


def _check_out(out: Path) -> str | None:
    """Why records cannot be written to ``out``, or None."""
    parent = out.parent
    if "\0" in str(out):
        return f"{str(out)!r} holds a NUL character, which no file name can hold"
    if out.is_dir():
        return f"{str(out)!r} is a directory; give a file path such as {str(out / 'games.jsonl')!r}"
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        return f"the directory {str(parent)!r} {what}; create it first or give another path"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the directory {str(parent)!r} is not writable"
    if out.exists() and not os.access(out, os.W_OK):
        return f"{str(out)!r} exists and is not writable"
    return None


def _write_records(rules: Rules, out: Path, games: int, seed: int, batch: int) -> None:
    """Write the records to ``out`` whole or not at all (``atomic_open``: never a temporary file left behind)."""
    with atomic_open(out) as f:
        for rec in play_random_records(rules, games, seed, batch, progress=sys.stderr.isatty()):
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")


WRITE_ARGS = ("variant", "games", "seed", "batch")
"""Arguments of writing, which ``--check`` does not take."""


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help). A writing option left out
    is None, so that ``--check`` can refuse the ones given; ``main`` fills in the defaults the docs name."""

    variant: str | None = setting(None, f"variant to write (default classic; one of {', '.join(variant_names())})")
    games: int | None = setting(
        None, "number of complete matches to write, 1..10**8 (default 10)", parse=int_arg(1, MAX_GAMES)
    )
    seed: int | None = setting(
        None, "seed of the first game, 0..2**64-1; game i uses seed + i (default 0)", parse=int_arg(0, MAX_SEED)
    )
    batch: int | None = setting(
        None, "games played at once, 1..65536: speed only (default 256)", parse=int_arg(1, MAX_BATCH)
    )
    out: Path | None = setting(None, "output .jsonl file (one record per line), written when complete")
    check: Path | None = setting(None, "replay FILE's records and report the first wrong line", metavar="FILE")
    allow_unfinished: bool = setting(
        False,
        'with --check: accept unfinished matches ("winner": null) not marked "unfinished": true',
        negatable=False,
        show_default=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m agents.cli.record",
        description="Write game records of random matches (batched core), or check a records file (reference engine).",
        epilog="Exit status: 0 all records fine, 1 a wrong record (FILE:LINE: reason), 2 a bad command line or a "
        'path that is not a records file. Unfinished matches ("winner": null) are errors unless the record says '
        '"unfinished": true or --allow-unfinished is given.',
    )
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    given = [f"--{k}" for k in WRITE_ARGS if getattr(args, k) is not None]
    if args.check is not None:
        if args.out is not None or given:
            extra = given + (["--out"] if args.out is not None else [])
            verb, it = ("applies", "it") if len(extra) == 1 else ("apply", "them")
            p.error(
                f"--check reads FILE only; {', '.join(extra)} {verb} to writing records: drop {it}, or drop --check"
            )
        try:
            n, reason = check_file(args.check, allow_unfinished=args.allow_unfinished)
        except RecordFileError as e:
            p.error(f"--check: {e}")
        if reason is not None:
            where = f"{args.check}:{n}" if n else str(args.check)
            print(f"{where}: {reason}", file=sys.stderr)
            return 1
        print(f"{args.check}: all {n} records replay correctly")
        return 0
    if args.allow_unfinished:
        p.error("--allow-unfinished applies to --check FILE only; records written with --out are always complete")
    if args.out is None:
        p.error("give --out FILE.jsonl to write records, or --check FILE.jsonl to check them")
    try:
        rules = get_rules("classic" if args.variant is None else args.variant)
    except ValueError as e:
        p.error(f"--variant: {e}")
    games = 10 if args.games is None else int(args.games)
    seed = 0 if args.seed is None else int(args.seed)
    batch = 256 if args.batch is None else int(args.batch)
    if seed + games - 1 > MAX_SEED:
        p.error(
            f"--seed {seed} with --games {games}: game i uses seed + i, and the last seed {seed + games - 1} is "
            f"beyond 2**64-1; use --seed {MAX_SEED - games + 1} or less"
        )
    problem = _check_out(args.out)
    if problem is not None:
        p.error(f"--out: {problem}")
    try:
        _write_records(rules, args.out, games, seed, batch)
    except KeyboardInterrupt:
        print(f"{p.prog}: interrupted; nothing written to {args.out}", file=sys.stderr)
        return 130
    except OSError as e:
        print(f"{p.prog}: error: --out: cannot write {str(args.out)!r}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {games} {rules.name} record{'' if games == 1 else 's'} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
