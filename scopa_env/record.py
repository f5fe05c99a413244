"""Game records (RULES.md section 8): write random matches from the batched core, check records with the reference.

python -m scopa_env.record --variant classic --games 100 --seed 7 --out games.jsonl
python -m scopa_env.record --check games.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env import core
from scopa_env.cards import format_card, format_cards
from scopa_env.rules import Rules, get_rules, variant_names
from scopa_env.scoring import POINT_FIELDS

__all__ = ["RecordWriter", "check_file", "deals_from_deck", "play_random_records"]


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
    autoreset, or with it: finished records are then emitted before the game restarts).
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
                ended.append(rec)
                self.finished.append(rec)
                self.records[g] = self._new_record(state, g) if info.reset[g] else None
            if info.new_hand[g] and self.records[g] is not None:
                self._new_hand(state, g)
        return ended


def play_random_records(
    rules: Rules | str, games: int, seed: int, batch: int = 256, progress: bool = False
) -> Iterator[dict[str, Any]]:
    """Play ``games`` complete matches (seeds ``seed, seed+1, ...``) with uniformly random legal decisions."""
    from agents.base import ActBatch
    from agents.random_agent import RandomAgent

    rules = get_rules(rules)
    agent = RandomAgent(rules, seed)
    bar = _progress(games, progress, "games")
    for lo in range(0, games, batch):
        seeds = np.arange(seed + lo, seed + min(games, lo + batch), dtype=np.uint64)
        state = core.reset(rules, seeds)
        writer = RecordWriter(rules)
        writer.start(state)
        while not state.done.all():
            g = np.flatnonzero(~state.done)
            mask = core.legal_action_mask(rules, state)
            actions = np.zeros(state.batch_size, dtype=np.int64)
            actions[g] = agent.act(ActBatch(rules, np.zeros((g.size, 0), np.float32), mask[g], state, g))
            info = core.step(rules, state, actions)
            ended = writer.observe(state, info)
            bar(len(ended))
        by_seed = sorted(writer.finished, key=lambda r: r["seed"])
        yield from by_seed


def _progress(total: int, enabled: bool, unit: str) -> Callable[[int], None]:
    if not enabled:
        return lambda n: None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda n: None
    bar = tqdm(total=total, unit=unit, file=sys.stderr)
    return lambda n: bar.update(n) if n else None


def check_file(path: str | Path) -> tuple[int, str | None]:
    """Replay every record of a ``.jsonl`` file with the reference engine.

    Returns ``(number of records checked, None)`` or ``(line number, reason)`` for the first wrong line.
    """
    from scopa_env.reference import RecordError, replay_record

    count = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                return lineno, f"not valid JSON ({e.msg} at column {e.colno})"
            if not isinstance(record, dict):
                return lineno, f"a record must be a JSON object, got {type(record).__name__}"
            try:
                replay_record(record)
            except RecordError as e:
                return lineno, str(e)
            except (KeyError, TypeError, ValueError, IndexError) as e:
                return lineno, f"malformed record ({type(e).__name__}: {e})"
            count += 1
    return count, None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scopa_env.record",
        description="Write game records of random matches (batched core), or check a records file (reference engine).",
    )
    p.add_argument("--variant", default="classic", help=f"variant ({', '.join(variant_names())})")
    p.add_argument("--games", type=int, default=10, help="number of complete matches to play")
    p.add_argument("--seed", type=int, default=0, help="seed of the first game; game i uses seed + i")
    p.add_argument("--out", type=Path, help="output .jsonl file (one record per line)")
    p.add_argument("--check", type=Path, metavar="FILE", help="replay FILE's records and report the first wrong line")
    p.add_argument("--batch", type=int, default=256, help="games played at once")
    args = p.parse_args(argv)
    if args.check:
        if not args.check.exists():
            p.error(f"--check: no such file {args.check}")
        n, reason = check_file(args.check)
        if reason is not None:
            print(f"{args.check}:{n}: {reason}", file=sys.stderr)
            return 1
        print(f"{args.check}: all {n} records replay correctly")
        return 0
    if args.out is None:
        p.error("give --out FILE.jsonl to write records, or --check FILE.jsonl to check them")
    try:
        rules = get_rules(args.variant)
    except ValueError as e:
        p.error(str(e))
    if args.games < 1 or args.seed < 0:
        p.error("--games must be >= 1 and --seed >= 0")
    tmp = args.out.with_name(args.out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for rec in play_random_records(rules, args.games, args.seed, args.batch, progress=sys.stderr.isatty()):
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.games} {rules.name} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
