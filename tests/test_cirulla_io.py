"""Cirulla (issue 18) in the I/O layers: records written by the driver, the record command, saved states, the text
picture and the terminal game."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from scopa_env import core
from scopa_env.cards import parse_card
from scopa_env.driver import play
from scopa_env.record import main as record_main
from scopa_env.record import play_random_records
from scopa_env.record_check import check_file, replay_record
from scopa_env.reference import ReferenceGame
from scopa_env.rules import CIRULLA_VARIANTS, Rules

CIRULLA = list(CIRULLA_VARIANTS)
POINT_KEYS = ["carte", "denari", "settebello", "primiera", "scope", "napoli", "grande", "knocks", "total"]


def _reference_replay(rules: Rules, rec: dict[str, Any]) -> dict[str, Any]:
    """The reference engine's own record of the match made with ``rec``'s knocks and moves."""
    game = ReferenceGame(rules, rec["seed"])
    for hand in rec["hands"]:
        knocks, moves = list(hand["knocks"]), list(hand["moves"])
        start = game.hand_no
        while not game.done and game.hand_no == start:
            if game.phase == "knock":
                mine = knocks and knocks[0]["seat"] == game.current and knocks[0]["deal"] == game.deal_no
                game.knock(knocks.pop(0)["kind"] if mine else None)
            elif moves:
                m = moves.pop(0)
                game.play(parse_card(m["card"], rules.deck), [parse_card(c, rules.deck) for c in m["capture"]])
            else:
                break
        assert not knocks and not moves
    return game.to_record()


def _agents(spec: str, rules: Rules) -> list[Any]:
    from agents.base import make_agent

    return [make_agent(spec, rules, 0)]


@pytest.mark.parametrize("variant", CIRULLA)
@pytest.mark.parametrize("spec", ["greedy", "expert", "random"])
def test_driver_records_replay_and_equal_the_reference_records(variant: str, spec: str, tmp_path) -> None:
    rules = CIRULLA_VARIANTS[variant]
    seeds = [3] if spec == "expert" else [3, 4]
    lineups = np.zeros((len(seeds), rules.num_players), dtype=np.int64)
    res = play(rules, _agents(spec, rules), lineups, seeds, mode="matches", record=True)
    assert res.records is not None
    for rec in res.records:
        replay_record(rec)
        assert rec == _reference_replay(rules, rec)
        # exactly the section-8 keys, in the reference engine's order
        assert json.dumps(rec) == json.dumps(_reference_replay(rules, rec))
        for hand in rec["hands"]:
            assert list(hand) == ["dealer", "deals", "table_take", "knocks", "moves", "leftover", "points", "scores"]
            assert all(list(p) == POINT_KEYS for p in hand["points"])
            for k in hand["knocks"]:
                assert list(k) == ["seat", "deal", "kind", "cards", "points"]
    path = tmp_path / "games.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in res.records))
    assert check_file(path) == (len(res.records), None)


def test_records_show_knocks_table_takes_and_the_table_as_dealt() -> None:
    rules = CIRULLA_VARIANTS["cirulla"]
    records = list(play_random_records(rules, games=8, seed=0))
    hands = [h for r in records for h in r["hands"]]
    knocks = [k for h in hands for k in h["knocks"]]
    assert {k["kind"] for k in knocks} == {"sum", "tris"}
    assert all(k["points"] == {"sum": 3, "tris": 10}[k["kind"]] for k in knocks)
    assert any(k["deal"] > 0 for k in knocks)
    takes = [h for h in hands if h["table_take"] is not None]
    assert takes and all(h["table_take"]["cards"] == h["deals"][0]["table"] for h in takes)
    assert all(len(h["deals"][0]["table"]) == 4 for h in hands)
    for rec in records:
        replay_record(rec)


def test_unfinished_cirulla_records_are_marked_and_check() -> None:
    rules = CIRULLA_VARIANTS["cirulla-4"]
    res = play(rules, _agents("greedy", rules), np.zeros((2, 4), dtype=np.int64), [5, 6], mode="hands", record=True)
    assert res.records is not None
    for rec in res.records:
        assert rec["unfinished"] is True and len(rec["hands"]) == 1
        replay_record(rec)


@pytest.mark.parametrize("variant", CIRULLA)
def test_record_command_writes_and_checks_cirulla(variant: str, tmp_path, capsys) -> None:
    out = tmp_path / "c.jsonl"
    assert record_main(["--variant", variant, "--games", "2", "--seed", "9", "--out", str(out)]) == 0
    assert f"wrote 2 {variant} records" in capsys.readouterr().out
    assert record_main(["--check", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert [json.loads(x) for x in lines] == list(play_random_records(CIRULLA_VARIANTS[variant], 2, 9, batch=1))


def test_record_check_reports_a_wrong_knock_and_a_wrong_fifteen(tmp_path, capsys) -> None:
    records = list(play_random_records(CIRULLA_VARIANTS["cirulla"], games=6, seed=0))
    line = 3
    rec = copy.deepcopy(records[line - 1])
    hand = next(h for h in rec["hands"] if h["knocks"])
    hand["knocks"][0]["points"] = 7
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*records[: line - 1], rec]))
    assert record_main(["--check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"bad.jsonl:{line}: " in err and "knocks entry 0" in err and "points" in err and "got 7" in err

    # a fifteen that does not add up any more: one of its cards left out (values: rank index + 1)
    rules = CIRULLA_VARIANTS["cirulla"]
    rec = copy.deepcopy(records[0])
    bad = None
    for hand in rec["hands"]:
        for m in hand["moves"]:
            card = parse_card(m["card"], rules.deck)
            total = card % 10 + 1 + sum(parse_card(c, rules.deck) % 10 + 1 for c in m["capture"])
            if len(m["capture"]) >= 2 and total == 15:
                bad = m
                break
        if bad is not None:
            break
    assert bad is not None
    bad["capture"] = bad["capture"][:-1]
    path.write_text(json.dumps(rec) + "\n")
    assert record_main(["--check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl:1: " in err and "is not legal" in err and "not 15" in err
