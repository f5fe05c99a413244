"""Game records (RULES.md section 8): write random matches from the batched core, check records with the reference.

    python -m scopa_env.record --variant classic --games 100 --seed 7 --out games.jsonl
    python -m scopa_env.record --check games.jsonl
    python -m scopa_env.record --check partial.jsonl --allow-unfinished

Writing: game ``i`` is the match seeded ``--seed + i``, played with uniformly random legal decisions drawn from that
game's own random stream (a hash of its game seed and draw number). A record therefore depends only on the variant
and its game seed: the first 5 games of ``--games 20`` are the games of ``--games 5``, and ``--batch`` (games played
at once) only changes the speed. ``--out`` appears only once every game is written; an interrupted or failed run
leaves the previous file (if any) untouched and no temporary file behind.

Checking (``--check FILE``): every non-blank line must hold one record that replays on the reference engine
(``scopa_env.reference.replay_record``). Beyond that, a line is rejected, with its number and the reason, when it is
not UTF-8 text or not JSON (NaN, duplicate keys and nesting deeper than a record's are refused too), when a number
is written as ``true``/``false`` or with a fraction (JSON booleans are not integers: ``"seat": true`` is not seat 1),
when ``hands`` is empty, when it repeats an earlier line's record, and when its match is unfinished
(``"winner": null``, e.g. a record cut after a hand or in the middle of one) without saying so. A record marks
itself as deliberately unfinished with ``"unfinished": true`` (``RecordWriter`` writes it on every record of a
match stopped before its end, like evaluate.py's one-hand games, and drops it when the match ends);
``--allow-unfinished`` accepts unmarked unfinished records of a whole file (files from older versions or other
tools). An empty file is an error too.

Exit status: 0 when every record replays, 1 for the first wrong record (``FILE:LINE: reason`` on stderr), 2 for a
bad command line or a ``--check`` path that is not a records file (missing, a directory, a binary file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from scopa_env import core
from scopa_env.atomic import atomic_open
from scopa_env.cards import format_card, format_cards
from scopa_env.rules import Rules, get_rules, variant_names
from scopa_env.scoring import POINT_FIELDS
from scopa_env.shuffle import splitmix64

__all__ = [
    "MAX_BATCH",
    "MAX_GAMES",
    "MAX_SEED",
    "RecordFileError",
    "RecordWriter",
    "check_file",
    "deals_from_deck",
    "int_arg",
    "play_random_records",
]

MAX_SEED = 2**64 - 1
"""The largest game seed (seeds are 64-bit unsigned integers)."""
MAX_GAMES = 100_000_000
"""The most games one ``--out`` file gets (a record is about 11 KB: this is about a terabyte)."""
MAX_BATCH = 65_536
"""The most games ``play_random_records`` plays at once (more only costs memory)."""
MAX_DEPTH = 16
"""Deepest nesting of JSON arrays and objects a record line may have (a section-8 record needs 7)."""
BOOL_KEYS = frozenset({"scopa", "unfinished"})
"""The only record fields whose values are JSON booleans; a boolean anywhere else stands for a number."""
AGENT_STREAM = 0x5C0BA
"""Mixed with each game seed to key that game's random decisions (kept apart from the deal's shuffles)."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def int_arg(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number in ``lo..hi`` (``hi`` None: no upper bound); the error names the value
    and the range.

    ``int("1e30")`` and ``int("-3")`` never reach the program: argparse prints ``prog: error: argument --seed:
    expected a whole number from 0 to 2**64-1, got '1e30'`` and exits with status 2.
    """
    wanted = f"a whole number >= {lo}" if hi is None else f"a whole number from {lo} to {_show_int(hi)}"

    def parse(text: str) -> int:
        try:
            value: int | None = int(text.strip(), 10)
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {shown!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def _show_int(n: int) -> str:
    """``n`` as people read it: ``65536``, or ``2**64-1`` / ``2**64`` for the large powers of two."""
    for k, text in ((n + 1, "-1"), (n, "")):
        if k >= 2**32 and k & (k - 1) == 0:
            return f"2**{k.bit_length() - 1}{text}"
    return str(n)


def deals_from_deck(rules: Rules, deck: npt.NDArray[np.integer], dealer: int) -> list[dict[str, Any]]:
    """The ``deals`` list of a hand: what the dealing convention (``scopa_env.shuffle``) gives from ``deck``."""
    n = rules.num_players
    pos = rules.table_cards
    out: list[dict[str, Any]] = []
    for d, size in enumerate(rules.deal_sizes):
        hands: list[list[str]] = [[] for _ in range(n)]
        for j in range(n):
            seat = (dealer + 1 + j) % n
            hands[seat] = format_cards(deck[pos : pos + size].astype(np.int64), rules.deck)
            pos += size
        deal: dict[str, Any] = {"hands": hands}
        if d == 0:
            deal = {"table": format_cards(deck[: rules.table_cards].astype(np.int64), rules.deck), **deal}
        out.append(deal)
    return out


class RecordWriter:
    """Follows a batch of games step by step and builds one record per match.

    Call ``start(state)`` after ``core.reset``, then ``observe(state, info)`` after every ``core.step`` (without
    autoreset, or with it: finished records are then emitted before the game restarts). A record still in
    ``records`` (its match not over) carries ``"unfinished": true``, so a caller that stops games early writes
    records that ``--check`` accepts as deliberately unfinished; the key is dropped when the match ends.
    """

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.records: list[dict[str, Any] | None] = []
        self.finished: list[dict[str, Any]] = []

    def _new_record(self, state: core.State, g: int) -> dict[str, Any]:
        return {
            "variant": self.rules.name,
            "seed": int(state.seed[g]),
            "players": self.rules.num_players,
            "sides": [list(s) for s in self.rules.sides],
            "target": self.rules.target,
            "hands": [],
            "winner": None,
            "unfinished": True,
        }

    def _new_hand(self, state: core.State, g: int) -> None:
        rec = self.records[g]
        assert rec is not None
        dealer = int(state.dealer[g])
        rec["hands"].append(
            {"dealer": dealer, "deals": deals_from_deck(self.rules, state.deck[g], dealer), "knocks": [], "moves": []}
        )

    def start(self, state: core.State) -> None:
        self.records = [self._new_record(state, g) for g in range(state.batch_size)]
        for g in range(state.batch_size):
            self._new_hand(state, g)

    def observe(self, state: core.State, info: core.StepInfo) -> list[dict[str, Any]]:
        """Record one step; returns the records of matches that ended in it."""
        deck = self.rules.deck
        ended: list[dict[str, Any]] = []
        for g in np.flatnonzero(info.move_done | info.new_hand | info.hand_over).tolist():
            rec = self.records[g]
            assert rec is not None
            hand = rec["hands"][-1]
            if info.move_done[g]:
                hand["moves"].append(
                    {
                        "seat": int(info.seat[g]),
                        "card": format_card(int(info.card[g]), deck),
                        "capture": format_cards(info.capture[g], deck),
                        "scopa": bool(info.scopa[g]),
                    }
                )
            if info.hand_over[g]:
                side = int(info.leftover_side[g])
                hand["leftover"] = {"side": side if side >= 0 else None, "cards": format_cards(info.leftover[g], deck)}
                hand["points"] = [
                    {k: int(v) for k, v in zip(POINT_FIELDS, info.hand_points[g, s], strict=True)}
                    for s in range(self.rules.num_sides)
                ]
                hand["scores"] = [int(x) for x in info.final_scores[g]]
            if info.match_over[g]:
                rec["winner"] = int(info.winner[g])
                del rec["unfinished"]
                ended.append(rec)
                self.finished.append(rec)
                self.records[g] = self._new_record(state, g) if info.reset[g] else None
            if info.new_hand[g] and self.records[g] is not None:
                self._new_hand(state, g)
        return ended


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
            base = splitmix64(self.keys[self.games] + self.draws[self.games] * _GOLDEN)
            bits = splitmix64(base[:, None] + np.arange(1, width + 1, dtype=np.uint64)[None, :] * _GOLDEN)
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


def play_random_records(
    rules: Rules | str, games: int, seed: int, batch: int = 256, progress: bool = False
) -> Iterator[dict[str, Any]]:
    """Play ``games`` complete matches (seeds ``seed, seed+1, ...``) with uniformly random legal decisions.

    Game ``i`` depends only on the rules and its seed ``seed + i``: its decisions come from its own random stream,
    so neither ``games`` nor ``batch`` (games played at once) changes a record.
    """
    from scopa_env.policy import uniform_capture_picks, uniform_legal

    rules = get_rules(rules)
    _check_play_args(games, seed, batch)
    bar = _progress(games, progress, "games")
    for lo in range(0, games, batch):
        seeds = np.array([seed + i for i in range(lo, min(games, lo + batch))], dtype=np.uint64)
        streams = _GameStreams(seeds)
        state = core.reset(rules, seeds)
        writer = RecordWriter(rules)
        writer.start(state)
        while not state.done.all():
            g = np.flatnonzero(~state.done)
            mask = core.legal_action_mask(rules, state)[g]
            actions = np.zeros(state.batch_size, dtype=np.int64)
            # RandomAgent's draws (uniform card, then a uniform capture), from each game's own stream
            chosen = uniform_legal(mask, streams.rows(g))
            rows = np.flatnonzero(state.phase[g] == core.Phase.CHOOSE)
            if rows.size:
                chosen[rows] = uniform_capture_picks(rules, state, g[rows], mask[rows], streams.rows(g[rows]))
            actions[g] = chosen
            info = core.step(rules, state, actions)
            ended = writer.observe(state, info)
            bar(len(ended))
        yield from sorted(writer.finished, key=lambda r: r["seed"])


def _progress(total: int, enabled: bool, unit: str) -> Callable[[int], None]:
    if not enabled:
        return lambda n: None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda n: None
    bar = tqdm(total=total, unit=unit, file=sys.stderr)
    return lambda n: bar.update(n) if n else None


# --------------------------------------------------------------------------------------------------- checking


class RecordFileError(ValueError):
    """A ``--check`` path that is not a records file at all: missing, a directory, unreadable or binary."""


_SNIFF = 8192
"""Bytes read from the start of a file to tell a binary file from a text one (a NUL byte means binary)."""
_MAGIC = {b"\x1f\x8b": "gzip-compressed (decompress it first)", b"PK\x03\x04": "a zip archive (a checkpoint?)"}


def _open_records(path: Path) -> BinaryIO:
    """``path`` opened for reading in binary mode, or ``RecordFileError`` saying why it is not a records file."""
    if "\0" in str(path):
        raise RecordFileError(f"{str(path)!r} holds a NUL character, which no file name can hold")
    if not path.exists():
        raise RecordFileError(f"no such file {str(path)!r}; give the path of a .jsonl file of records")
    if path.is_dir():
        raise RecordFileError(f"{str(path)!r} is a directory; give the path of a .jsonl file of records inside it")
    try:
        f = open(path, "rb")  # the caller closes it
        head = f.read(_SNIFF)
        f.seek(0)
    except OSError as e:
        raise RecordFileError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            f.close()
            raise RecordFileError(f"{str(path)!r} is {what}, not a .jsonl file of records")
    if b"\0" in head:
        f.close()
        raise RecordFileError(f"{str(path)!r} is a binary file (it holds NUL bytes), not a .jsonl file of records")
    return f


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _parse_line(raw: bytes) -> tuple[Any, str | None]:
    """The JSON value of one line, or ``(None, reason)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); a record line is JSON text"
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant), None
    except json.JSONDecodeError as e:
        return None, f"not valid JSON ({e.msg} at column {e.colno})"
    except RecursionError:
        return None, f"not a record: JSON nested too deeply to read (a record is at most {MAX_DEPTH} levels deep)"
    except ValueError as e:  # duplicate keys, NaN / Infinity, integers of thousands of digits
        return None, f"not valid JSON ({e})"


def _check_values(record: dict[str, Any]) -> str | None:
    """Nesting depth, and numbers that are whole numbers: no booleans (but for ``scopa``), no fractions."""
    stack: list[tuple[Any, str, str, int]] = [(record, "record", "", 1)]
    while stack:
        value, where, key, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                return f"{where}: nested deeper than {MAX_DEPTH} levels; not a section-8 record"
            children: list[tuple[Any, str, str, int]]
            if isinstance(value, dict):
                children = [(v, f"{where}.{k}", k, depth + 1) for k, v in value.items()]
            else:
                children = [(v, f"{where}[{i}]", key, depth + 1) for i, v in enumerate(value)]
            stack.extend(reversed(children))  # the first problem in reading order is reported
        elif isinstance(value, bool) and key not in BOOL_KEYS:
            text = "true" if value else "false"
            return f"{where}: {text} is a boolean where a number is expected (JSON true is not 1); write {int(value)}"
        elif isinstance(value, float):
            return f"{where}: {value!r} is not a whole number; records hold integers only"
    return None


def _check_record(record: Any, allow_unfinished: bool) -> str | None:
    """Why ``record`` (one parsed line) is wrong, or None when it replays and is finished or marked unfinished."""
    from scopa_env.reference import RecordError, replay_record

    if not isinstance(record, dict):
        return f"a record must be a JSON object, got {type(record).__name__}"
    reason = _check_values(record)
    if reason is not None:
        return reason
    hands = record.get("hands")
    if isinstance(hands, list) and not hands:
        return "record hands: empty; a record holds at least its first hand (the deals, and the moves played)"
    mark = record.get("unfinished", False)
    if mark is not True and mark is not False:
        return f"record unfinished: true or left out, got {mark!r}"
    if "unfinished" in record and mark is False:
        return "record unfinished: false is not a mark; leave the key out for a finished match"
    try:
        replay_record(record)
    except RecordError as e:
        return str(e)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as e:
        return f"malformed record ({type(e).__name__}: {e})"
    winner = record["winner"]
    if mark and winner is not None:
        return f"record unfinished: marked true but the match is over (side {winner} won); drop the key"
    if winner is None and not mark and not allow_unfinished:
        played = cast(list[dict[str, Any]], hands)  # replay_record checked the hands
        cut = "mid-hand" if played[-1].get("scores") is None else "after a complete hand"
        return (
            f"record winner: null, the match is unfinished ({len(played)} hand(s), cut {cut}); a truncated record? "
            'A file of deliberately unfinished games marks them with "unfinished": true, or check it with '
            "--allow-unfinished"
        )
    return None


def check_file(path: str | Path, allow_unfinished: bool = False) -> tuple[int, str | None]:
    """Replay every record of a ``.jsonl`` file with the reference engine.

    Returns ``(number of records checked, None)`` or ``(line number, reason)`` for the first wrong line (line 0: the
    file as a whole, e.g. it holds no record). ``allow_unfinished`` accepts unfinished matches (``"winner": null``)
    that are not marked ``"unfinished": true``. Raises ``RecordFileError`` when ``path`` is not a records file.
    """
    count = 0
    seen: dict[bytes, int] = {}
    with _open_records(Path(path)) as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            record, reason = _parse_line(raw)
            if reason is None:
                reason = _check_record(record, allow_unfinished)
            if reason is None:
                digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).digest()
                if digest in seen:
                    reason = f"the same record as line {seen[digest]} (a duplicated line)"
                seen.setdefault(digest, lineno)
            if reason is not None:
                return lineno, reason
            count += 1
    if count == 0:
        return 0, "no records: the file is empty (or blank); a records file holds one JSON record per line"
    return count, None


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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scopa_env.record",
        description="Write game records of random matches (batched core), or check a records file (reference engine).",
        epilog="Exit status: 0 all records fine, 1 a wrong record (FILE:LINE: reason), 2 a bad command line or a "
        'path that is not a records file. Unfinished matches ("winner": null) are errors unless the record says '
        '"unfinished": true or --allow-unfinished is given.',
    )
    p.add_argument("--variant", help=f"variant to write (default classic; one of {', '.join(variant_names())})")
    p.add_argument(
        "--games", type=int_arg(1, MAX_GAMES), help="number of complete matches to write, 1..10**8 (default 10)"
    )
    p.add_argument(
        "--seed", type=int_arg(0, MAX_SEED), help="seed of the first game, 0..2**64-1; game i uses seed + i (default 0)"
    )
    p.add_argument(
        "--batch", type=int_arg(1, MAX_BATCH), help="games played at once, 1..65536: speed only (default 256)"
    )
    p.add_argument("--out", type=Path, help="output .jsonl file (one record per line), written when complete")
    p.add_argument("--check", type=Path, metavar="FILE", help="replay FILE's records and report the first wrong line")
    p.add_argument(
        "--allow-unfinished",
        action="store_true",
        help='with --check: accept unfinished matches ("winner": null) not marked "unfinished": true',
    )
    args = p.parse_args(argv)
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
