"""Cirulla (issue 18) in the I/O layers: records written by the driver, the record command, saved states, the text
picture and the terminal game."""

from __future__ import annotations

import copy
import io
import json
import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agents.cli.record import main as record_main
from agents.cli.record import play_random_records
from agents.nets.bot import SHIPPED_BOTS
from scopa_env.engine import core, render
from scopa_env.engine.render import render_text
from scopa_env.games.driver import play
from scopa_env.oracle.record_check import check_file, replay_record
from scopa_env.oracle.reference import ReferenceGame
from scopa_env.records.state_io import (
    _KEYS,
    StateFormatError,
    state_from_dict,
    state_from_json,
    state_from_record,
    state_to_dict,
    state_to_json,
)
from scopa_env.rules import CIRULLA_VARIANTS, Rules
from scopa_env.rules.cards import format_card, format_cards, parse_card
from tests.helpers import play_on_alike, random_steps, same_state

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
    seeds = [3] if spec == "expert" else [3, 4][: 1 + (variant == "cirulla")]
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
    assert record_main(["--variant", variant, "--games", "1", "--seed", "9", "--out", str(out)]) == 0
    assert f"wrote 1 {variant} record to" in capsys.readouterr().out
    assert record_main(["--check", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert [json.loads(x) for x in lines] == list(play_random_records(CIRULLA_VARIANTS[variant], 1, 9))


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


# --------------------------------------------------------------------------------------------------- saved states


def _stop_pending(rules: Rules, state: core.State) -> npt.NDArray[np.bool_]:
    return (state.phase == core.Phase.CHOOSE) & core.legal_action_mask(rules, state)[:, core.stop_action(rules)]


@pytest.mark.parametrize("variant", CIRULLA)
def test_saved_states_round_trip_in_every_phase_and_continue_identically(variant: str) -> None:
    rules = CIRULLA_VARIANTS[variant]
    rng = np.random.default_rng(0)
    state = core.reset(rules, np.arange(12, dtype=np.uint64) + 50)
    seen: set[str] = set()
    stop_seen = False
    for step in range(160):
        stop = _stop_pending(rules, state)
        for g in range(state.batch_size):
            phase = core.Phase(int(state.phase[g])).name
            if phase in ("CHOOSE", "KNOCK") or step % 25 == 0:
                d = state_to_dict(rules, state, g)
                assert list(d)[-3:] == ["revealed", "knock_points", "table_take"]
                same_state(state_from_json(json.dumps(d)), state.take([g]))
                seen.add(phase)
                stop_seen |= bool(stop[g])
        if state.done.all():
            break
        random_steps(rules, state, 1, rng)
    assert {"PLAY", "CHOOSE", "KNOCK"} <= seen and stop_seen
    # a mid-game batch restored from its saves plays on exactly like the original
    state = core.reset(rules, np.arange(8, dtype=np.uint64) + 7)
    random_steps(rules, state, int(rng.integers(5, 40)), rng)
    restored = state_from_json([state_to_json(rules, state, g) for g in range(8)], rules)
    same_state(restored, state)
    play_on_alike(rules, state, restored, rng, 60)


def test_saves_with_knocks_and_takes_and_old_saves_without_the_keys() -> None:
    rules = CIRULLA_VARIANTS["cirulla"]
    state = core.reset(rules, np.arange(200, dtype=np.uint64))
    g = int(np.flatnonzero(state.table_take > 0)[0])
    d = state_to_dict(rules, state, g)
    assert d["table_take"] >= 1 and d["table"] == []
    assert state_from_dict(d).table_take[0] == d["table_take"]
    # a knock: revealed cards and knock points saved
    k = int(np.flatnonzero(state.phase == core.Phase.KNOCK)[0])
    one = state.take([k])
    mask = core.legal_action_mask(rules, one)[0]
    core.step(rules, one, np.array([core.stop_action(rules) + 1 + int(mask[core.knock_tris_action(rules)])]))
    d = state_to_dict(rules, one)
    assert sum(d["knock_points"]) in (3, 10) and any(d["revealed"])
    same_state(state_from_dict(d), one)
    # a save without the cirulla keys loads with them empty
    bare = {key: v for key, v in d.items() if key not in ("revealed", "knock_points", "table_take")}
    loaded = state_from_dict(bare)
    assert not loaded.revealed.any() and not loaded.knock_points.any() and loaded.table_take[0] == 0
    # wrong values are named
    for key, value, message in [
        ("revealed", [["Kb"], []], "revealed[0]"),
        ("table_take", 3, "table_take"),
        ("knock_points", [1], "knock_points"),
    ]:
        with pytest.raises(StateFormatError, match=re.escape(message)):
            state_from_dict({**d, key: value})


def test_other_variants_saves_are_unchanged_and_refuse_cirulla_fields() -> None:
    state = core.reset("classic", np.array([3], dtype=np.uint64))
    d = state_to_dict("classic", state)
    assert list(d) == list(_KEYS)
    for key, value in [("revealed", [["7d"], []]), ("knock_points", [3, 0]), ("table_take", 1), ("phase", "KNOCK")]:
        with pytest.raises(StateFormatError):
            state_from_dict({**d, key: value})
    same_state(state_from_dict({**d, "revealed": [[], []], "knock_points": [0, 0], "table_take": 0}), state)


@pytest.mark.parametrize("variant", CIRULLA)
def test_state_from_record_replays_knocks_to_every_move_prefix(variant: str) -> None:
    rules = CIRULLA_VARIANTS[variant]
    snapshots: list[core.State] = []

    def after_step(state: core.State, info: core.StepInfo, finished: npt.NDArray[np.bool_]) -> None:
        if info.move_done[0]:
            snapshots.append(state.copy())

    for seed in range(11, 61):  # the first match whose two hands hold a knock to replay (seed 11 with most streams)
        snapshots.clear()
        res = play(rules, _agents("random", rules), np.zeros((1, rules.num_players), dtype=np.int64), [seed],
                   mode="matches", record=True, after_step=after_step, max_hands=2)  # fmt: skip
        assert res.records is not None
        rec = res.records[0]
        if sum(len(h["knocks"]) for h in rec["hands"]) > 0:
            break
    assert sum(len(h["knocks"]) for h in rec["hands"]) > 0, "no match of seeds 11..60 has a knock"
    start = state_from_record(rec, moves=0)
    same_state(start, core.reset(rules, np.array([seed], dtype=np.uint64)))
    for k in sorted({1, 2, 5, len(snapshots) // 2, len(snapshots) - 1, len(snapshots)}):
        got = state_from_record(json.dumps(rec), moves=k)
        want = snapshots[k - 1]
        if k == len(snapshots):  # the driver stopped the game after max_hands: the core dealt the next hand
            want.phase[:] = got.phase
        same_state(got, want)
    # a knock the hand does not allow, and a knock left out of order, are refused with the hand at fault
    bad = copy.deepcopy(rec)
    h = next(i for i, hand in enumerate(bad["hands"]) if hand["knocks"])
    entry = bad["hands"][h]["knocks"][0]
    entry["kind"] = "tris" if entry["kind"] == "sum" else "sum"
    if entry["kind"] in _kinds(rules, entry["cards"]):
        entry["seat"] = (entry["seat"] + 1) % rules.num_players
    with pytest.raises(StateFormatError, match=f"record hand {h}"):
        state_from_record(bad)


def _kinds(rules: Rules, cards: list[str]) -> list[str]:
    from scopa_env.oracle.reference import knock_kinds

    return knock_kinds(rules, {parse_card(c, rules.deck) for c in cards})


# --------------------------------------------------------------------------------------------------- pictures


def _knock_game(rules: Rules, seeds: int = 200) -> core.State:
    """A cirulla game whose initial table was taken and that is in the KNOCK phase (the first such seed)."""
    state = core.reset(rules, np.arange(seeds, dtype=np.uint64))
    g = int(np.flatnonzero((state.table_take > 0) & (state.phase == core.Phase.KNOCK))[0])
    return state.take([g])


def test_render_shows_knocks_revealed_hands_knock_points_and_the_table_take() -> None:
    rules = CIRULLA_VARIANTS["cirulla"]
    one = _knock_game(rules)
    knocker = int(one.current[0])
    other = 1 - knocker
    text = render_text(rules, one, seat=other)
    assert "initial table" in text and f"taken by player {int(one.dealer[0])}" in text
    assert f"KNOCK: player {knocker} decides: no knock" in text and "knock for" in text
    mask = core.legal_action_mask(rules, one)[0]
    kind = 2 if mask[core.knock_tris_action(rules)] else 1
    core.step(rules, one, np.array([rules.num_cards + kind]))
    text = render_text(rules, one, seat=other)
    knocked = render.pretty_cards(one.hands[0, knocker], rules.deck)
    assert f"player {knocker}: {knocked} (knocked)" in text
    assert f"(+{3 if kind == 1 else 10} knocks)" in text
    assert "KNOCK:" not in text
    assert "(knocked: everyone sees them)" in render_text(rules, one, seat=knocker)


def test_render_says_when_a_capture_may_stop() -> None:
    rules = CIRULLA_VARIANTS["cirulla"]
    rng = np.random.default_rng(3)
    state = core.reset(rules, np.arange(64, dtype=np.uint64))
    for _ in range(300):
        stop = _stop_pending(rules, state)
        if stop.any():
            g = int(np.flatnonzero(stop)[0])
            assert "may stop here and take just the picked cards" in render_text(rules, state, g)
            break
        random_steps(rules, state, 1, rng)
    else:
        pytest.fail("no CHOOSE position with stop in 300 random steps")


def test_render_of_other_variants_has_no_cirulla_lines() -> None:
    state = core.reset("classic", np.arange(4, dtype=np.uint64))
    for g in range(4):
        text = render_text("classic", state, g)
        assert not any(w in text for w in ("knock", "KNOCK", "initial table", "may stop"))


# --------------------------------------------------------------------------------------------------- terminal play


def _cirulla_position(hands: list[str], table: str, phase: core.Phase) -> tuple[Rules, core.State]:
    from tests.helpers import position

    rules, st = position(CIRULLA_VARIANTS["cirulla"], hands, table=table)
    st.phase[0], st.current[0], st.table_take[0] = phase, 0, 0
    st.revealed[:], st.knock_points[:] = False, 0
    return rules, st


def _match(rules: Rules, st: core.State, script: str) -> tuple[Any, io.StringIO]:
    from agents.baselines.greedy import GreedyAgent
    from agents.play import terminal as play

    out = io.StringIO()
    hint = _agents("expert", rules)[0]
    match = play.Match(rules, play.Terminal(io.StringIO(script), out), 0, {1: GreedyAgent(rules, 0)}, hint, 0)
    match.state = st
    return match, out


@pytest.mark.parametrize(("choice", "taken", "left"), [("1", "5d", "2s 3b"), ("2", "2s 3b 5d", "")])
def test_every_capture_is_selectable_the_one_inside_a_fifteen_too(choice: str, taken: str, left: str) -> None:
    # 5c on 5d 2s 3b: {5d} (equal rank) lies inside {5d 2s 3b} (fifteen: 5+5+2+3), so taking 5d alone needs stop
    rules, st = _cirulla_position(["5c Kd 2d", "Ab Ac 4s"], "5d 2s 3b", core.Phase.PLAY)
    match, out = _match(rules, st, f"5c\n{choice}\n")
    match._human_turn()
    st = match.state  # the game now (the match plays on a copy of the position set up)
    text = out.getvalue()
    assert "can capture in 2 ways:" in text
    assert "1) 5♦  (5d)\n" in text and "2) 2♠ 3♣ 5♦  (2s 3b 5d) -- fifteen\n" in text
    assert "you: 5♥ (5c) taking" in text and f"({taken})" in text
    assert sorted(format_cards(st.table[0], rules.deck)) == sorted(left.split())
    assert set(format_cards(st.piles[0, 0], rules.deck)) == {"5c", *taken.split()}
    assert st.phase[0] == core.Phase.PLAY and int(st.current[0]) == 1


@pytest.mark.parametrize(
    ("hand", "legal", "typed", "points"),
    [("Ad 2d 3d", "01", "2\nhint\n1\n", 3), ("7s 7d 7c", "02", "1\n2\n", 10), ("Ad Ac 7c", "012", "n\n", 0)],
)
def test_the_knock_prompt_offers_only_the_legal_knocks(hand: str, legal: str, typed: str, points: int) -> None:
    rules, st = _cirulla_position([hand, "Kb Qb Jb"], "5d 2s", core.Phase.KNOCK)
    match, out = _match(rules, st, typed)
    match._human_knock()
    st = match.state  # the game now (the match plays on a copy of the position set up)
    text = out.getvalue()
    assert f"knock> [{'/'.join(legal)}]" in text
    assert ("0) no knock" in text) and ("1) knock for 3" in text) == ("1" in legal)
    assert ("2) knock for 10" in text) == ("2" in legal)
    assert ("not a choice" in text) == (typed[0] not in "n" + legal)
    assert int(st.knock_points[0, 0]) == points and st.revealed[0, 0].any() == (points > 0)
    assert st.phase[0] == core.Phase.PLAY
    if points:
        assert f"you knock for {points}" in text
    if "hint" in typed:
        assert "hint: expert would choose: knock for 3" in text


@pytest.mark.parametrize(("variant", "opponent"), [("cirulla", None), ("cirulla-4", "greedy")])
def test_whole_cirulla_matches_from_the_command_line(variant: str, opponent: str | None) -> None:
    from agents.play import terminal as play

    rules = CIRULLA_VARIANTS[variant]
    cards = [format_card(i, rules.deck) for i in range(rules.num_cards)]
    script = "\n".join(["help", *(["1", "2", "0", *cards, "1"] * 500), "n"]) + "\n"  # blind: held cards are taken
    out = io.StringIO()
    argv = ["--variant", variant, "--seed", "5", "--color", "never"] + (["--opponent", opponent] if opponent else [])
    assert play.main(argv, io.StringIO(script), out) == 0
    text = out.getvalue()
    default = play.default_opponent(rules)[0]  # the variant's shipped bot (agents/bots/<variant>)
    assert default == str(SHIPPED_BOTS / variant)
    assert f"against {opponent or f'Bot (the shipped {variant} bot)'}" in text
    assert "Cirulla:" in text and "knock>" in text and "knocks for" in text
    assert "napoli" in text and "knocks" in text and text.count("match over: ") == 1
    assert "-- fifteen" in text


class _Answers(io.StringIO):
    """Input that reads the transcript: the last knock offered, the second capture, the first card held, no rematch."""

    def __init__(self, out: io.StringIO) -> None:
        super().__init__()
        self.out = out

    def readline(self, size: int | None = -1) -> str:
        text = self.out.getvalue()
        last = text.rsplit("\n", 1)[-1]
        if last.startswith("knock>"):
            return last.split("[")[1].split("]")[0].split("/")[-1] + "\n"
        if last.startswith("which capture"):
            return "2\n"
        if last.startswith("play again"):
            return "n\n"
        return [line for line in text.splitlines() if line.startswith("your cards:")][-1].split()[2] + "\n"


def test_the_docs_cirulla_excerpt_is_what_the_game_prints() -> None:
    from pathlib import Path

    from agents.play import terminal as play

    doc = (Path(__file__).resolve().parent.parent / "docs" / "export_play.md").read_text(encoding="utf-8")
    section = doc.split("### Cirulla", 1)[1]
    excerpt = section.split("```\n", 2)[1]
    out = io.StringIO()
    play.run(play.PlayConfig(variant="cirulla", opponent="greedy", seed=0), _Answers(out), out)
    text = out.getvalue()
    pos = 0
    for part in excerpt.split("...\n"):
        pos = text.index(part.strip("\n"), pos)  # each piece verbatim, in order
    assert pos > 0
