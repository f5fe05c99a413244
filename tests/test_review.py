"""The game review (``agents.play.review``): pimc's games lose about nothing to the reviewer and random's clearly more;
honest values are blind to the hidden cards; open end games are valued exactly as the solver values them; the JSON's
keys and round trip; damaged and foreign records refused in one line; the command line and the terminal's ``review``.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.play import move_values
from agents.play import review as rv
from agents.play.terminal import PlayConfig, run
from agents.search.endgame import _solve_open_kernel, open_endgame_rows, optimal_open_actions
from scopa_env.engine import core
from scopa_env.records.state_io import state_from_record
from scopa_env.rules import get_rules
from scopa_env.rules.cards import format_card

CLASSIC = get_rules("classic")
DECISION_KEYS = {
    "game",
    "hand",
    "seat",
    "ply",
    "cards_left",
    "played",
    "best",
    "loss",
    "mark",
    "exact",
    "kind",
    "moves",
}
SUMMARY_KEYS = {"decisions", "loss_per_decision", "loss_per_hand", "costliest", "by_kind", "marks"}


@pytest.fixture(scope="module")
def pimc_games() -> list[dict[str, Any]]:
    return rv.self_play_records(CLASSIC, "pimc:worlds=32", 4, 11)


@pytest.fixture(scope="module")
def random_games() -> list[dict[str, Any]]:
    return rv.self_play_records(CLASSIC, "random", 4, 11)


def _losses(review: dict[str, Any]) -> np.ndarray:
    return np.array([d["loss"] for d in review["decisions"] if not d["forced"]])


def _compare(good: np.ndarray, bad: np.ndarray, z: float) -> None:
    """pimc's mean loss about 0, and random's above it by more than ``z`` standard errors of the difference."""
    se = math.sqrt(good.var(ddof=1) / good.size + bad.var(ddof=1) / bad.size)
    print(f"loss per decision: pimc {good.mean():.3f} ({good.size}), random {bad.mean():.3f} ({bad.size}), se {se:.3f}")
    assert good.mean() < 0.06, good.mean()
    assert bad.mean() - good.mean() > z * se, (good.mean(), bad.mean(), se)
    assert bad.mean() > 0.15, bad.mean()


def test_pimc_loses_about_nothing_and_random_clearly_more(
    pimc_games: list[dict[str, Any]], random_games: list[dict[str, Any]]
) -> None:
    good = rv.review_records(list(enumerate(pimc_games)), worlds=32)
    bad = rv.review_records(list(enumerate(random_games)), worlds=32)
    _compare(_losses(good), _losses(bad), z=3.0)
    assert sum(s["marks"]["blunder"] + s["marks"]["mistake"] for s in bad["summary"].values()) > sum(
        s["marks"]["blunder"] + s["marks"]["mistake"] for s in good["summary"].values()
    )


@pytest.mark.slow
def test_pimc_against_random_on_many_hands() -> None:
    good = rv.review_records(list(enumerate(rv.self_play_records(CLASSIC, "pimc", 20, 500))))
    bad = rv.review_records(list(enumerate(rv.self_play_records(CLASSIC, "random", 20, 500))))
    _compare(_losses(good), _losses(bad), z=5.0)


def _hidden_reshuffled(state: core.State, rng: np.random.Generator) -> core.State:
    """The same position for the seat to move with its unseen cards (the other hands and the stock) dealt again."""
    st = state.take([0])
    seat, n = int(st.current[0]), st.hands.shape[1]
    others = [s for s in range(n) if s != seat]
    hidden = np.concatenate([np.flatnonzero(st.hands[0, s]) for s in others] + [st.deck[0, st.stock_pos[0] :]])
    cards = rng.permutation(hidden)
    at = 0
    for s in others:
        k = int(st.hands[0, s].sum())
        st.hands[0, s] = False
        st.hands[0, s, cards[at : at + k]] = True
        at += k
    st.deck[0, st.stock_pos[0] :] = cards[at:]
    return st


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico"])
def test_honest_values_are_blind_to_the_hidden_cards(variant: str) -> None:
    rules = get_rules(variant)
    record = rv.self_play_records(rules, "greedy", 1, 7)[0]
    for ply in (1, 5, 14):
        state = state_from_record(record, ply)
        other = _hidden_reshuffled(state, np.random.default_rng(ply))
        assert not np.array_equal(other.hands, state.hands) or not np.array_equal(other.deck, state.deck)
        a = move_values.value_moves(rules, state, 32, np.random.default_rng(5))
        b = move_values.value_moves(rules, other, 32, np.random.default_rng(5))
        assert a.moves == b.moves
        np.testing.assert_array_equal(a.margins, b.margins)
        settled = [
            move_values.settled_values(rules, st, 0, 32, np.random.default_rng(6), False) for st in (state, other)
        ]
        np.testing.assert_array_equal(settled[0].margins, settled[1].margins)  # more deals where unsettled: the same
        hindsight = move_values.value_moves(rules, other, 32, np.random.default_rng(5), open_hands=True)
        assert hindsight.margins.shape[0] == 1  # the real deal, the one world of a hindsight review


def _open_end_games(count: int) -> list[tuple[core.State, dict[str, Any]]]:
    out = []
    for record in rv.self_play_records(CLASSIC, "greedy", 6, 40):
        for _hand, _move, state, _ in rv._positions(CLASSIC, record):
            if open_endgame_rows(CLASSIC, state, np.zeros(1, dtype=np.intp), move_values.ENDGAME_PLIES).size:
                out.append((state, record))
        if len(out) >= count:
            break
    return out[:count]


def test_open_end_games_are_valued_as_the_solver_values_them() -> None:
    positions = _open_end_games(12)
    assert len(positions) == 12
    for state, _ in positions:
        mv = move_values.value_moves(CLASSIC, state, 64, np.random.default_rng(0))
        assert mv.method == "exact" and mv.margins.shape[0] == 1
        assert not mv.se.any()
        games = np.zeros(1, dtype=np.intp)
        _, margins = _solve_open_kernel(CLASSIC, state, games, "test")
        assert mv.value.max() == pytest.approx(margins.max(), abs=1e-9)
        best_cards = {c for (c, _), v in zip(mv.moves, mv.value, strict=True) if v >= mv.value.max() - 1e-9}
        assert set(np.flatnonzero(optimal_open_actions(CLASSIC, state, games)[0]).tolist()) <= best_cards


def test_review_json_round_trip_and_keys(random_games: list[dict[str, Any]], tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    review = rv.review_record(random_games[0], seats=[1], worlds=32, seed=3, progress=lambda d, t: calls.append((d, t)))
    assert review["mode"] == "honest" and review["variant"] == "classic" and review["worlds"] == 32
    assert calls and calls[-1][0] == calls[-1][1] == len(review["decisions"]) == 18
    for d in review["decisions"]:
        assert DECISION_KEYS <= set(d) and d["seat"] == 1 and d["loss"] >= 0
        assert {m["move"] for m in d["moves"]} >= {d["played"], d["best"]}
        assert all({"move", "value", "se"} <= set(m) for m in d["moves"])
        best = max(m["value"] for m in d["moves"])
        played = next(m["value"] for m in d["moves"] if m["move"] == d["played"])
        assert d["loss"] == pytest.approx(max(0.0, best - played), abs=1e-9)
        assert d["mark"] == rv._mark(d["loss"])
        if d["kinds"]:  # the parts of a loss add up to it, within the noise of the deals they were measured on
            assert sum(d["kinds"].values()) == pytest.approx(d["loss"], abs=4 * d["loss_se"] + 0.3)
    assert set(review["summary"]) == {"1"} and SUMMARY_KEYS <= set(review["summary"]["1"])
    assert review == json.loads(json.dumps(review))
    assert rv.review_record(random_games[0], seats=[1], worlds=32, seed=3) == review  # a seed fixes a review
    opened = rv.review_record(random_games[0], seats=[1], open_hands=True)
    assert opened["mode"] == "open" and all(d["worlds"] == 1 for d in opened["decisions"])


def test_the_rest_of_a_record_does_not_change_a_decisions_values(random_games: list[dict[str, Any]]) -> None:
    whole = rv.review_record(random_games[0], seats=[0], worlds=16)["decisions"]
    cut = dict(random_games[0], hands=[dict(random_games[0]["hands"][0])])
    cut["hands"][0]["moves"] = cut["hands"][0]["moves"][:10]
    part = rv.review_record(cut, seats=[0], worlds=16)["decisions"]
    assert [d["moves"] for d in part] == [d["moves"] for d in whole[: len(part)]]


def test_damaged_and_foreign_records_get_one_clear_error(
    random_games: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = dict(random_games[0], hands=[dict(random_games[0]["hands"][0])])
    bad["hands"][0]["moves"] = [
        dict(bad["hands"][0]["moves"][0], card="Kd" if bad["hands"][0]["moves"][0]["card"] != "Kd" else "Ks")
    ]
    with pytest.raises(rv.ReviewError, match="not a game record this program can review"):
        rv.review_record(bad)
    with pytest.raises(rv.ReviewError, match="variant"):
        rv.review_record(dict(random_games[0], variant="chess"))
    with pytest.raises(rv.ReviewError, match="JSON object"):
        rv.review_record([1, 2])  # type: ignore[arg-type]
    for name, content in (("garbage.jsonl", b"{not json\n"), ("binary.jsonl", b"\x00\x01\x02"), ("empty.jsonl", b"")):
        path = tmp_path / name
        path.write_bytes(content)
        assert rv.main([str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("python -m agents.play.review: error: "), err
        assert "Traceback" not in err[0]
    assert rv.main([str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_command_line(random_games: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        rv.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for option in ("--games", "--seat", "--worlds", "--open", "--seed", "--json", "--plot", "--agent"):
        assert option in out
    records = tmp_path / "games.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in random_games))
    out_json, out_png = tmp_path / "review.json", tmp_path / "review.png"
    argv = [
        str(records),
        "--games",
        "1",
        "--seat",
        "0",
        "--worlds",
        "16",
        "--json",
        str(out_json),
        "--plot",
        str(out_png),
    ]
    assert rv.main(argv) == 0
    text = capsys.readouterr().out
    assert "seat 0:" in text and "game 1 hand 1 move" in text
    review = json.loads(out_json.read_text())
    assert {d["game"] for d in review["decisions"]} == {1} and out_png.stat().st_size > 1000
    assert rv.main([str(records), "--games", "7"]) == 2
    assert "holds 4 games" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rv.main([str(records), "--worlds", "0"])
    assert "--worlds" in capsys.readouterr().err


def test_agent_seats_follow_the_tournaments_rotations() -> None:
    from agents.evaluation.schedule import game_plan

    rules = get_rules("scopa-a-quattro")
    lineups, patterns = game_plan(rules, partner=True)
    for r, (lineup, pattern) in enumerate(zip(lineups, patterns, strict=True)):
        record = {"variant": rules.name, "agents": [["A", "B"][p] + " + P" for p in pattern], "eval": {"rotation": r}}
        assert rv.agent_seats(record, "A") == np.flatnonzero(lineup == 0).tolist()
        assert rv.agent_seats(record, "B") == np.flatnonzero(lineup == 1).tolist()
    record = {"variant": "classic", "agents": ["bot", "pimc"], "eval": {"rotation": 1}}
    assert rv.agent_seats(record, "pimc") == [1] and rv.agent_seats(record, "other") == []


def test_loss_report_by_phase_and_kind(random_games: list[dict[str, Any]]) -> None:
    review = rv.review_records(list(enumerate(random_games[:2])), seats=[0], worlds=16)
    report = rv.loss_report(review)
    assert report["hands"] == 2 and sum(p["decisions"] for p in report["by_phase"]) == report["decisions"]
    total = sum(d["loss"] for d in review["decisions"]) / 2
    assert report["loss_per_hand"] == pytest.approx(total)
    assert "by phase of the hand" in rv.format_loss_report(report, "random")


def test_terminal_review_after_a_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rv, "DEFAULT_WORLDS", 16)
    cards = [format_card(c, CLASSIC.deck) for c in range(CLASSIC.num_cards)]
    script = ["review", *([*cards, "review", "1"] * 14)]  # every card in turn (the held ones play), then 'review'
    out = io.StringIO()
    run(PlayConfig(variant="classic", opponent="greedy", seed=3), io.StringIO("\n".join(script) + "\n"), out)
    text = out.getvalue()
    assert "no finished hand to review yet" in text
    review = text[text.index("reviewing your moves of the last hand") :]
    lines = [line for line in review.splitlines() if line.startswith("hand 1 move")]
    assert len(set(lines)) == 18 and all(" you: " in line for line in lines), lines  # asked again: the same review
    assert "you: " in review and " decisions, lost " in review


def test_evaluate_reviews_the_candidates_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import evaluate

    monkeypatch.setattr(rv, "DEFAULT_WORLDS", 16)
    base = ["--variant", "classic", "--gauntlet", "greedy", "--agents", "random", "--hands", "1", "--quiet"]
    base += ["--no-plot", "--no-progress", "--out", str(tmp_path / "eval")]
    assert evaluate.main([*base, "--records", str(tmp_path / "games.jsonl"), "--review", "2"]) == 0
    out = capsys.readouterr().out
    assert "greedy (2 games reviewed): " in out and "by phase of the hand" in out and "by kind" in out
    with pytest.raises(SystemExit) as e:
        evaluate.main([*base, "--review", "2"])
    assert e.value.code == 2 and "give --records FILE.jsonl too" in capsys.readouterr().err
