"""evaluate.py and agents.evaluation.tournament: duplicate deals, rotations, statistics on real games, SPRT, outputs,
errors."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import evaluate
from agents.base import register_agent
from agents.errors import TournamentError
from agents.evaluation import eval_config, tournament
from agents.evaluation.deals import MAX_DEAL_SEED, Deals
from agents.evaluation.entries import checkpoint_steps, make_entries, parse_agent_arg
from agents.evaluation.eval_config import EvalConfig
from agents.evaluation.report import load_results, write_outputs
from agents.evaluation.schedule import game_plan, seat_lineups, side_patterns
from agents.evaluation.tournament import TournamentInterrupted, run_tournament
from scopa_env.engine import core, state_moves
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import Rules, get_rules

# --------------------------------------------------------------------------------------------------- test agents


class LowestCard(Policy):
    """Deterministic and weak: always the legal card (or capture pick) with the lowest id."""

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        return batch.mask.argmax(axis=1).astype(np.int64)


class CaptureMost(Policy):
    """Deterministic and much stronger than random: the legal move that captures the most cards."""

    needs_state = True
    sign = 1

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        st, games = batch.state, batch.games
        assert st is not None and games is not None
        out = np.empty(len(batch), dtype=np.int64)
        for i, g in enumerate(int(x) for x in games):
            card, cap = max(state_moves.legal_moves(batch.rules, st, g), key=lambda m: (self.sign * len(m[1]), -m[0]))
            out[i] = min(c for c in cap if not st.picked[g, c]) if st.phase[g] == core.Phase.CHOOSE else card
        return out


class CaptureFewest(CaptureMost):
    """Deterministic and weaker than random: the legal move that captures the fewest cards."""

    sign = -1


class Illegal(Policy):
    """Plays a card it does not hold."""

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        return (~batch.mask).argmax(axis=1).astype(np.int64)


class OldObservations(LowestCard):
    obs_version = -1


@register_agent("_t_lowest", "test only: lowest legal card")
def _make_lowest(rules: Rules, seed: int | None = None) -> Policy:
    return LowestCard(rules, seed)


@register_agent("_t_capture", "test only: capture the most cards")
def _make_capture(rules: Rules, seed: int | None = None) -> Policy:
    return CaptureMost(rules, seed)


@register_agent("_t_fewest", "test only: capture the fewest cards")
def _make_fewest(rules: Rules, seed: int | None = None) -> Policy:
    return CaptureFewest(rules, seed)


@register_agent("_t_illegal", "test only: illegal moves")
def _make_illegal(rules: Rules, seed: int | None = None) -> Policy:
    return Illegal(rules, seed)


class SwallowsASignal(LowestCard):
    """Sends its own process SIGTERM on its 50th decision and discards the exception the handler raises, as numpy
    does for any exception raised while it looks up an attribute (the handler ran inside ``EnumType.__getattr__``)."""

    calls = 0

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        SwallowsASignal.calls += 1
        if SwallowsASignal.calls == 50:
            import os
            import signal
            import time

            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1.0)  # the handler runs (and raises) here
            except BaseException:  # the point: the exception is lost here
                pass
        return super().act(batch)


@register_agent("_t_swallows_a_signal", "test only: its decision loses a signal's exception")
def _make_swallows(rules: Rules, seed: int | None = None) -> Policy:
    return SwallowsASignal(rules, seed)


@register_agent("_t_other_variant", "test only: made for scopa-d-assi")
def _make_other_variant(rules: Rules, seed: int | None = None) -> Policy:
    return LowestCard(get_rules("scopa-d-assi"), seed)


@register_agent("_t_old_obs", "test only: wrong observation version")
def _make_old_obs(rules: Rules, seed: int | None = None) -> Policy:
    return OldObservations(rules, seed)


SEATS: Counter[tuple[str, int]] = Counter()
"""(tag, seat) of every decision of the ``_t_seats`` agents (in this process: its tests use one worker)."""


class SeatRecorder(LowestCard):
    """The lowest legal card, recording the seat of every decision it makes under its ``tag``."""

    needs_state = True

    def __init__(self, rules: Rules, seed: int | None = None, tag: str = "") -> None:
        super().__init__(rules, seed)
        self.tag = tag

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        assert batch.state is not None and batch.games is not None
        SEATS.update((self.tag, int(s)) for s in batch.state.current[batch.games])
        return super().act(batch)


@register_agent("_t_seats", "test only: lowest legal card, records its seats")
def _make_seats(rules: Rules, seed: int | None = None, tag: str = "") -> Policy:
    return SeatRecorder(rules, seed, tag)


def cfg(**kw: object) -> EvalConfig:
    """A tiny, single-process evaluation."""
    base: dict[str, object] = dict(variant="classic", deals=40, batch=16, workers=1, bootstrap=50)
    base.update(kw)
    return EvalConfig(**base)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------- rotations


@pytest.mark.parametrize("num_sides", [2, 3, 4, 5, 6, 8])
def test_side_patterns_are_balanced(num_sides: int) -> None:
    pats = np.array(side_patterns(num_sides))
    assert len({tuple(p) for p in pats}) == len(pats)
    assert len(pats) == (2 if num_sides % 2 == 0 else 2 * num_sides)
    # Every side position holds A and B equally often, and both agents hold the same number of sides in all.
    assert (pats.sum(axis=0) * 2 == len(pats)).all()
    assert (pats == 0).sum() == (pats == 1).sum()
    assert set(pats[0]) == {0, 1}


def test_seat_lineups_fill_teams() -> None:
    rules = get_rules("scopa-a-quattro")  # teams {0, 2} and {1, 3}
    assert seat_lineups(rules).tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]
    assert seat_lineups(get_rules("classic")).tolist() == [[0, 1], [1, 0]]
    six = seat_lineups(get_rules("simple-6-teams"))  # teams {0,3} {1,4} {2,5}
    assert six.shape == (6, 6) and (six[:, :3] == six[:, 3:]).all()


@pytest.mark.parametrize("variant", ["scopa-a-quattro", "scopone-scientifico", "simple-4-teams", "simple-6-teams"])
def test_game_plan_with_a_partner_seats_each_agent_once_per_side(variant: str) -> None:
    rules = get_rules(variant)
    lineups, sides = game_plan(rules, partner=True)
    size = len(rules.sides[0])
    assert lineups.shape == (len(side_patterns(rules.num_sides)) * size, rules.num_players)
    for lineup, pattern in zip(lineups, sides, strict=True):
        for side, seats in enumerate(rules.sides):
            # One seat of each side holds the side's agent (A or B, as the side pattern says); the others the partner.
            assert sorted(int(lineup[s]) for s in seats) == sorted([int(pattern[side])] + [2] * (size - 1))
    for slot in (0, 1):  # each agent sits in every seat equally often, so no seat's order of play favours one
        counts = (lineups == slot).sum(axis=0)
        assert (counts == counts[0]).all() and counts[0] > 0
    assert game_plan(rules)[0].tolist() == seat_lineups(rules).tolist()  # no partner: as before
    with pytest.raises(ValueError, match="no teams"):
        game_plan(get_rules("simple-4"), partner=True)


def test_a_partner_plays_the_teammates_of_both_agents(tmp_path: Path) -> None:
    SEATS.clear()
    records = tmp_path / "games.jsonl"
    res = run_tournament(
        cfg(
            variant="scopa-a-quattro",
            gauntlet="a=_t_seats:tag=a",
            agents=["b=_t_seats:tag=b"],
            partner="_t_seats:tag=p",
            deals=3,
            records=str(records),
        )
    )
    assert res.labels == ["a", "b"]  # the partner plays but is not rated
    assert len(res.rotations) == 4 and res.pairings[0].stats.games == 12
    assert res.rotations == [(0, 1, 2, 2), (2, 2, 0, 1), (1, 0, 2, 2), (2, 2, 1, 0)]
    # The agents are deterministic and the deals duplicate, so A's games in rotations 0 and 1 are B's in 2 and 3:
    # A and B made as many decisions, the partner (two seats of every game) as many as both, each in every seat.
    per_tag = Counter({t: 0 for t in "abp"})
    for (tag, _), n in SEATS.items():
        per_tag[tag] += n
    assert per_tag["a"] == per_tag["b"] >= 3 * 4 * 9 and per_tag["p"] == 2 * per_tag["a"]
    assert all(SEATS[(tag, seat)] > 0 for tag in "abp" for seat in range(4))
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    assert {tuple(r["agents"]) for r in recs} == {("a + _t_seats:tag=p", "b + _t_seats:tag=p"),
                                                  ("b + _t_seats:tag=p", "a + _t_seats:tag=p")}  # fmt: skip
    assert {r["eval"]["partner"] for r in recs} == {"_t_seats:tag=p"}
    assert res.config.partner == "_t_seats:tag=p"


def test_a_partner_needs_a_team_variant() -> None:
    with pytest.raises(TournamentError, match=r"classic has no teams.*drop --partner"):
        run_tournament(cfg(variant="classic", agents=["random", "_t_lowest"], partner="expert", deals=2))
    with pytest.raises(TournamentError, match="agent 'nosuch'"):
        run_tournament(cfg(variant="scopa-a-quattro", agents=["random", "_t_lowest"], partner="nosuch", deals=2))


def test_every_deal_is_played_in_every_rotation(tmp_path: Path) -> None:
    records = tmp_path / "games.jsonl"
    res = run_tournament(cfg(agents=["random", "_t_lowest"], deals=12, batch=5, records=str(records)))
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(recs) == 24 and res.records_written == 24
    by_deal: dict[int, list[dict]] = {}
    for r in recs:
        by_deal.setdefault(r["eval"]["deal"], []).append(r)
    assert sorted(by_deal) == list(range(12))
    for deal, group in by_deal.items():
        assert {r["seed"] for r in group} == {int(res.deals.seeds[deal])}
        assert sorted(tuple(r["agents"]) for r in group) == [("_t_lowest", "random"), ("random", "_t_lowest")]
        assert sorted(r["eval"]["rotation"] for r in group) == [0, 1]
        # Duplicate deal: the same cards to the same seats, whoever sits there.
        first = [r["hands"][0]["deals"][0] for r in group]
        assert first[0] == first[1]
    from scopa_env.oracle.record_check import check_file

    assert check_file(records) == (24, None)


def test_rotations_in_a_three_sided_variant(tmp_path: Path) -> None:
    records = tmp_path / "games.jsonl"
    res = run_tournament(cfg(variant="simple-3", agents=["random", "_t_lowest"], deals=4, records=str(records)))
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(res.rotations) == 6 and len(recs) == 24
    seen = Counter((r["eval"]["deal"], tuple(r["agents"])) for r in recs)
    expected = {tuple("random" if x == 0 else "_t_lowest" for x in p) for p in side_patterns(3)}
    for deal in range(4):
        assert {agents for (d, agents) in seen if d == deal} == expected
    assert set(seen.values()) == {1}
    st = res.pairing("random", "_t_lowest")
    assert st.games == 24 and st.wins + st.draws + st.losses == 24


# --------------------------------------------------------------------------------------------------- statistics


def test_deterministic_agent_against_itself_scores_exactly_zero() -> None:
    res = run_tournament(cfg(agents=["_t_lowest", "_t_lowest"], deals=60))
    p = res.pairings[0]
    assert res.labels == ["_t_lowest", "_t_lowest#2"]
    assert (p.margins == 0).all() and (p.half_points == 2).all()  # each deal: one win each, or two draws
    st = p.stats
    assert (st.margin.value, st.margin.low, st.margin.high) == (0.0, 0.0, 0.0)
    assert st.score.value == 0.5 and st.los == 0.5
    assert st.wins == st.losses


@pytest.mark.parametrize("mode", ["hands", "matches"])
def test_random_against_itself_scores_zero_within_its_interval(mode: str) -> None:
    res = run_tournament(cfg(agents=["random", "random"], deals=150 if mode == "hands" else 60, mode=mode))
    st = res.pairings[0].stats
    assert st.margin.contains(0.0) and st.score.contains(0.5)
    assert st.win_rate.contains(0.5)
    assert st.margin.half_width > 0
    if mode == "matches":
        assert st.hands > st.games  # whole matches last several hands
        assert st.draws == 0
    assert res.ratings.low[1] <= 0.0 <= res.ratings.high[1]


def test_stronger_agent_wins_and_is_rated_higher() -> None:
    res = run_tournament(cfg(agents=["random", "_t_capture", "_t_lowest"], deals=40, bootstrap=200))
    assert [len(res.pairings), res.anchor, res.ratings.ratings[0]] == [3, 0, 0.0]
    st = res.pairing("_t_capture", "random")
    assert st.margin.low > 0 and st.score.value > 0.6 and st.los > 0.99
    assert res.pairing("random", "_t_capture").margin.value == pytest.approx(-st.margin.value)
    assert res.ratings.order()[0] == 1
    assert res.ratings.low[1] > 0 and res.ratings.los(1, 0) > 0.99


def test_gauntlet_plays_the_candidate_against_every_other_agent() -> None:
    res = run_tournament(cfg(gauntlet="cand=_t_lowest", agents=["random", "r2=random"], deals=10))
    assert res.labels == ["cand", "random", "r2"]
    assert [(p.a, p.b) for p in res.pairings] == [(0, 1), (0, 2)]
    assert res.anchor == 1


def test_same_seed_same_results_and_workers_do_not_matter() -> None:
    c = cfg(agents=["random", "_t_lowest"], deals=30, batch=8)
    a, b = run_tournament(c), run_tournament(c)
    np.testing.assert_array_equal(a.pairings[0].margins, b.pairings[0].margins)
    np.testing.assert_array_equal(a.ratings.samples, b.ratings.samples)
    other = run_tournament(cfg(agents=["random", "_t_lowest"], deals=30, batch=8, seed=1))
    assert not np.array_equal(other.deals.seeds, a.deals.seeds)


def test_two_worker_processes_give_the_same_results() -> None:
    # The test agents reach the spawned workers through the plugin mechanism (this module registers them).
    c = cfg(agents=["random", "_t_lowest"], deals=24, batch=6, plugins=[__name__])
    one = run_tournament(c)
    two = run_tournament(cfg(agents=["random", "_t_lowest"], deals=24, batch=6, plugins=[__name__], workers=2))
    assert two.workers == 2 and one.workers == 1
    np.testing.assert_array_equal(one.pairings[0].margins, two.pairings[0].margins)
    np.testing.assert_array_equal(one.pairings[0].half_points, two.pairings[0].half_points)


def test_sprt_accepts_a_stronger_candidate_early() -> None:
    res = run_tournament(cfg(gauntlet="_t_capture", agents=["random"], deals=400, batch=20, sprt=(0.0, 50.0)))
    assert res.sprt is not None and res.sprt.decision == "H1"
    used = res.pairings[0].stats.deals
    assert used == res.sprt.deals < 400
    assert res.sprt.llr >= res.sprt.upper


def test_sprt_rejects_a_weaker_candidate() -> None:
    res = run_tournament(cfg(gauntlet="_t_fewest", agents=["random"], deals=1000, batch=50, sprt=(0.0, 30.0)))
    assert res.sprt is not None and res.sprt.decision == "H0"
    assert res.sprt.llr <= res.sprt.lower and res.pairings[0].stats.deals < 1000


# --------------------------------------------------------------------------------------------------- deals, outputs


def test_deal_files_round_trip_and_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "deals.json"
    first = run_tournament(cfg(agents=["random", "_t_lowest"], deals=20, seed=5, save_deals=str(path)))
    loaded = Deals.load(path)
    assert loaded.variant == "classic" and loaded.mode == "hands"
    np.testing.assert_array_equal(loaded.seeds, first.deals.seeds)
    again = run_tournament(cfg(agents=["random", "_t_lowest"], deals=None, seed=5, deals_file=str(path)))
    np.testing.assert_array_equal(again.pairings[0].margins, first.pairings[0].margins)
    fewer = run_tournament(cfg(agents=["random", "_t_lowest"], deals=7, seed=5, deals_file=str(path)))
    np.testing.assert_array_equal(fewer.deals.seeds, first.deals.seeds[:7])
    with pytest.raises(TournamentError, match=r"variant 'classic'.*--variant classic"):
        run_tournament(cfg(variant="scopa-d-assi", agents=["random", "random"], deals=None, deals_file=str(path)))
    with pytest.raises(TournamentError, match="--hands, not --matches"):
        run_tournament(cfg(agents=["random", "random"], mode="matches", deals=None, deals_file=str(path)))
    with pytest.raises(TournamentError, match="at most 20"):
        run_tournament(cfg(agents=["random", "random"], deals=21, deals_file=str(path)))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TournamentError, match="not readable JSON"):
        Deals.load(bad)
    bad.write_text(json.dumps({"variant": "classic", "mode": "hands", "seeds": [1, 1]}))
    with pytest.raises(TournamentError, match="repeats"):
        Deals.load(bad)
    with pytest.raises(TournamentError, match="does not exist"):
        Deals.load(tmp_path / "missing.json")
    # Played from the output folder's own deals.json, a subset does not overwrite the deal file.
    run_tournament(cfg(agents=["random", "_t_lowest"], deals=3, deals_file=str(path)), out=tmp_path)
    assert len(Deals.load(path)) == 20 and load_results(tmp_path)["deals"]["count"] == 3


def test_outputs_are_written_and_parse_back(tmp_path: Path) -> None:
    res = run_tournament(cfg(agents=["random", "_t_capture", "low=_t_lowest"], deals=20))
    paths = write_outputs(res, tmp_path / "out")
    assert {p.name for p in paths.values()} >= {
        "results.json",
        "report.md",
        "ratings.csv",
        "pairings.csv",
        "crosstable.csv",
        "deals.json",
        "config.yaml",
        "ratings.png",
    }
    data = load_results(tmp_path / "out")
    assert data["variant"] == "classic" and data["mode"] == "hands"
    assert [a["label"] for a in data["agents"]] == ["random", "_t_capture", "low"]
    assert len(data["pairings"]) == 3 and data["anchor"]["agent"] == "random"
    top = data["ratings"][0]
    assert top["agent"] == "_t_capture" and top["rank"] == 1 and top["low"] <= top["rating"] <= top["high"]
    first = data["pairings"][0]
    assert first["margin"]["value"] == pytest.approx(res.pairings[0].stats.margin.value)
    assert first["wins"] + first["draws"] + first["losses"] == first["games"] == 40
    with open(paths["pairings_csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[1]["margin"]) == pytest.approx(res.pairings[1].stats.margin.value)
    with open(paths["ratings_csv"], newline="") as f:
        assert [r["agent"] for r in csv.DictReader(f)] == [r["agent"] for r in data["ratings"]]
    with open(paths["crosstable_csv"], newline="") as f:
        cross = list(csv.reader(f))
    assert cross[0] == ["agent", "random", "_t_capture", "low"] and cross[1][1] == ""
    assert float(cross[2][1]) == pytest.approx(-float(cross[1][2]))
    report = paths["markdown"].read_text()
    assert "## Ratings" in report and "## Crosstable" in report and "_t_capture" in report
    assert paths["ratings_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(Deals.load(paths["deals"])) == 20
    assert EvalConfig.from_yaml(paths["config"]).agents == ["random", "_t_capture", "low=_t_lowest"]


def test_steps_plot_for_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Checkpoint files are built by agents.nets.checkpoint; stand in for it with a 'file' factory playing lowest-card.
    from agents import base

    base._load_builtin()  # import agents.nets.checkpoint first, or it would register its own 'file' factory over ours
    monkeypatch.setitem(base._REGISTRY, "file", (lambda rules, seed, path: LowestCard(rules, seed), "test"))
    ck = [str(tmp_path / "run" / "checkpoints" / f"step_{s:09d}.zip") for s in (1000, 5000)]
    res = run_tournament(cfg(agents=["random", *ck], deals=6))
    assert [e.steps for e in res.entries] == [None, 1000, 5000]
    assert res.labels[1] == "run/step_000001000"
    paths = write_outputs(res, tmp_path / "out")
    assert paths["steps_png"].name == "ratings_vs_steps.png" and paths["steps_png"].stat().st_size > 0


# --------------------------------------------------------------------------------------------------- bad input


@pytest.fixture
def no_games(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played before the bad input was reported")

    monkeypatch.setattr(tournament, "play", fail)


@pytest.mark.usefixtures("no_games")
@pytest.mark.parametrize(
    ("agents", "message"),
    [
        (["random", "nosuchbot"], r"agent 'nosuchbot': unknown agent 'nosuchbot'.*known agents"),
        (["random", "random:speed=3"], r"agent 'random:speed=3'.*bad option"),
        (["random", "cand=missing/step_000000100.zip"], r"agent 'cand' \(spec 'missing/step_000000100.zip'\)"),
        (["random", "_t_other_variant"], r"trained for 'scopa-d-assi', not 'classic'.*--variant scopa-d-assi"),
        (["random", "_t_old_obs"], r"observation version -1.*retrain"),
    ],
)
def test_bad_agents_fail_before_any_game(agents: list[str], message: str) -> None:
    with pytest.raises(TournamentError, match=message):
        run_tournament(cfg(agents=agents))


@pytest.mark.usefixtures("no_games")
def test_bad_settings_fail_before_any_game(tmp_path: Path) -> None:
    with pytest.raises(TournamentError, match="at least two agents"):
        run_tournament(cfg(agents=["random"]))
    with pytest.raises(TournamentError, match="--gauntlet CANDIDATE --agents BASELINE"):
        run_tournament(cfg(agents=["random", "random"], sprt=(0.0, 10.0)))
    with pytest.raises(TournamentError, match="elo0 < elo1"):
        run_tournament(cfg(gauntlet="random", agents=["random"], sprt=(10.0, 0.0)))
    with pytest.raises(TournamentError, match="anchor 'greedy' is not one of"):
        run_tournament(cfg(agents=["random", "_t_lowest"], anchor="greedy"))
    with pytest.raises(TournamentError, match="unknown variant"):
        run_tournament(cfg(variant="scopa-lunga", agents=["random", "random"]))
    with pytest.raises(TournamentError, match="plugin module 'no_such_plugin_mod'"):
        run_tournament(cfg(agents=["random", "random"], plugins=["no_such_plugin_mod"]))
    with pytest.raises(TournamentError, match="unknown evaluation setting"):
        EvalConfig.from_dict({"agents": ["random"], "hands": 10})


def test_an_illegal_move_names_the_agent() -> None:
    with pytest.raises(TournamentError, match="agent '_t_illegal' made an illegal move"):
        run_tournament(cfg(agents=["random", "_t_illegal"], deals=2))


def test_agent_arguments_and_labels() -> None:
    assert parse_agent_arg("cand=runs/x/best.zip") == ("cand", "runs/x/best.zip")
    assert parse_agent_arg("pimc:worlds=12,depth=5") == (None, "pimc:worlds=12,depth=5")
    assert parse_agent_arg("runs/lr=0.1/best.zip") == (None, "runs/lr=0.1/best.zip")
    assert checkpoint_steps("runs/a/checkpoints/step_000123456.zip") == 123456
    assert checkpoint_steps("greedy") is None and checkpoint_steps("runs/a/best.zip") is None
    labels = [e.label for e in make_entries(["random", "random", "x=greedy", "runs/r1/checkpoints/step_5.zip"])]
    assert labels == ["random", "random#2", "x", "r1/step_5"]


# --------------------------------------------------------------------------------------------------- the script


def test_cli_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "eval"
    code = evaluate.main(
        [
            *("--variant", "classic", "--agents", "random", "_t_lowest", "--hands", "20", "--workers", "1"),
            *("--batch", "10", "--bootstrap", "20", "--out", str(out), "--no-progress", "--no-plot"),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "Ratings" in text and "_t_lowest" in text and f"to {out}/" in text
    assert load_results(out)["config"]["deals"] == 20
    assert not (out / "ratings.png").exists()


def test_an_option_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        (["--seed", "1", "--seed", "2"], "argument --seed: got --seed twice"),
        (["--agents", "random", "--agents", "greedy"], "argument --agents: got --agents twice"),
        (["--hands", "5", "--hands", "6"], "argument --hands: got --hands twice"),
    ):
        with pytest.raises(SystemExit) as e:
            evaluate.main(argv)
        assert e.value.code == 2
        assert f"evaluate.py: error: {message}; give it once" in capsys.readouterr().err
    args = evaluate.build_parser().parse_args(["--plugin", "a", "--plugin", "b"])  # --plugin adds up, by design
    assert args.plugins == ["a", "b"]


def test_config_file_and_options_build_the_config_in_one_checked_step(tmp_path: Path) -> None:
    conf = tmp_path / "eval.yaml"
    conf.write_text("agents: [random, greedy]\nsprt: '0,20'\nseed: 3\n")
    args = evaluate.build_parser().parse_args(["--config", str(conf), "--seed", "4", "--gauntlet", "expert"])
    c = evaluate.config_from_args(args)
    assert (c.agents, c.sprt, c.seed, c.gauntlet) == (["random", "greedy"], (0.0, 20.0), 4, "expert")
    assert c == EvalConfig.from_dict({"agents": ["random", "greedy"], "sprt": [0, 20], "seed": 4, "gauntlet": "expert"})
    conf.write_text("agents: [random, greedy]\nseed: -1\n")  # the file's own error, even with --seed given
    with pytest.raises(TournamentError, match=rf"^config file {re.escape(str(conf))}: seed: got -1"):
        evaluate.config_from_args(evaluate.build_parser().parse_args(["--config", str(conf), "--seed", "4"]))


def test_cli_config_file_and_overrides(tmp_path: Path) -> None:
    conf = tmp_path / "eval.yaml"
    conf.write_text("variant: classic\nagents: [random, _t_lowest]\nbootstrap: 10\nbatch: 5\nworkers: 1\n")
    args = evaluate.build_parser().parse_args(["--config", str(conf), "--matches", "3", "--seed", "4"])
    c = evaluate.config_from_args(args)
    assert (c.agents, c.mode, c.deals, c.seed, c.bootstrap, c.batch) == (
        ["random", "_t_lowest"],
        "matches",
        3,
        4,
        10,
        5,
    )


def test_cli_bad_spec_exits_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = evaluate.main(["--agents", "random", "nosuchbot", "--hands", "5", "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err
    assert "evaluate.py: error: agent 'nosuchbot'" in err
    assert not (tmp_path / "x").exists()


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        evaluate.main(["--help"])
    assert e.value.code == 0
    assert "--gauntlet" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------- nothing lost


def _snapshotting_play(monkeypatch: pytest.MonkeyPatch, out: Path, fail_at: int | None = None) -> list[dict]:
    """Wrap ``arena.play``: before each call, read ``out/results.json`` (if any); at call ``fail_at``, Ctrl-C."""
    seen: list[dict] = []
    real = tournament.play

    def play(*args: object, **kwargs: object) -> object:
        if (out / "results.json").exists():
            seen.append(json.loads((out / "results.json").read_text()))
        if fail_at is not None and len(seen) + 1 >= fail_at and (out / "results.json").exists():
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tournament, "play", play)
    monkeypatch.setattr(tournament, "PARTIAL_EVERY", 0.0)
    return seen


def test_results_are_written_while_the_tournament_plays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "made" / "on" / "demand"  # missing folders are made
    seen = _snapshotting_play(monkeypatch, out)
    res = run_tournament(cfg(agents=["random", "_t_lowest"], deals=40, batch=16), out=out, plots=False)
    # 3 tasks (16 + 16 + 8 deals) x 2 rotations = 6 arena calls; after each finished task the results so far.
    played = [(d["status"], d["partial"], d["games"]["played"], d["games"]["planned"]) for d in seen]
    assert played == [("running", True, 32, 80)] * 2 + [("running", True, 64, 80)] * 2
    final = load_results(out)
    assert (final["status"], final["partial"], final["games"]) == ("complete", False, {"planned": 80, "played": 80})
    assert set(res.paths) >= {"json", "markdown", "deals", "config"} and not (out / "ratings.png").exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    # Same games as without an output folder (the writing does not touch the play).
    again = run_tournament(cfg(agents=["random", "_t_lowest"], deals=40, batch=16))
    np.testing.assert_array_equal(again.pairings[0].margins, res.pairings[0].margins)
    np.testing.assert_array_equal(again.ratings.samples, res.ratings.samples)


def test_ctrl_c_keeps_the_results_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, records = tmp_path / "out", tmp_path / "games.jsonl"
    _snapshotting_play(monkeypatch, out, fail_at=5)  # the 5th arena call: task 3's first rotation
    with pytest.raises(tournament.TournamentInterrupted) as e:
        run_tournament(cfg(agents=["random", "_t_lowest"], deals=40, batch=16, records=str(records)), out=out)
    assert e.value.signal_name == "SIGINT" and e.value.result is not None
    assert (e.value.result.games_played, e.value.result.games_planned, e.value.result.status) == (64, 80, "interrupted")
    data = load_results(out)
    assert (data["partial"], data["status"], data["games"]["played"]) == (True, "interrupted", 64)
    assert data["pairings"][0]["deals"] == 32 and data["ratings"][0]["low"] is not None  # with intervals
    assert "PARTIAL RESULTS" in (out / "report.md").read_text()
    assert len(records.read_text().splitlines()) == 64  # the games of the finished tasks, whole
    assert e.value.paths["json"] == out / "results.json"


def test_cli_ctrl_c_exits_130_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _snapshotting_play(monkeypatch, out, fail_at=3)
    argv = ["--agents", "random", "_t_lowest", "--hands", "40", "--batch", "16", "--workers", "1", "--out", str(out)]
    assert evaluate.main([*argv, "--no-progress", "--bootstrap", "10"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"evaluate.py: stopped by SIGINT after 32 of 80 planned games; the results so far are in {out}/" in err
    assert load_results(out)["games"] == {"planned": 80, "played": 32}


def test_a_failing_game_keeps_the_games_before_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(TournamentError, match=r"illegal move.*The 80 games finished before it are saved in"):
        run_tournament(cfg(agents=["random", "_t_lowest", "_t_illegal"], deals=40), out=out)
    data = load_results(out)
    assert (data["status"], data["games"]) == ("failed", {"planned": 240, "played": 80})
    assert [p["deals"] for p in data["pairings"]] == [40, 0, 0]
    assert all(r["rating"] is None for r in data["ratings"])  # _t_illegal never finished a game: no ratings yet


@pytest.mark.usefixtures("no_games")
def test_out_is_checked_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me")
    for out, message in ((a_file, "is a file, not a folder"), (a_file / "sub", "is a file, so no folder")):
        with pytest.raises(TournamentError, match=message):
            run_tournament(cfg(agents=["random", "_t_lowest"]), out=out)
        code = evaluate.main(["--agents", "random", "greedy", "--hands", "5", "--out", str(out), "--no-progress"])
        assert code == 2
        err = capsys.readouterr().err
        assert f"evaluate.py: error: --out {out}" in err and "Traceback" not in err
    with pytest.raises(TournamentError, match=r"--records .*a_file is a file"):
        run_tournament(cfg(agents=["random", "_t_lowest"], records=str(a_file / "games.jsonl")))
    with pytest.raises(TournamentError, match=r"--records .* is a folder"):
        run_tournament(cfg(agents=["random", "_t_lowest"], records=str(tmp_path)))
    with pytest.raises(TournamentError, match=r"--save-deals .* is a folder"):
        run_tournament(cfg(agents=["random", "_t_lowest"], save_deals=str(tmp_path)))
    with pytest.raises(TournamentError, match="--deals and --save-deals are the same file"):
        run_tournament(cfg(agents=["random", "_t_lowest"], deals_file=str(a_file), save_deals=str(a_file)))
    assert a_file.read_text() == "keep me"


def _workers(pid: int) -> list[int]:
    """Process ids of the multiprocessing workers of process ``pid`` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmdline:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc")
@pytest.mark.parametrize(("sig", "workers", "code"), [("SIGTERM", 1, 143), ("SIGINT", 2, 130)])
def test_a_signal_stops_a_real_run_and_keeps_its_results(tmp_path: Path, sig: str, workers: int, code: int) -> None:
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    argv = [sys.executable, str(Path(evaluate.__file__)), "--agents", "random", "random", "--hands", "100000"]
    argv += ["--batch", "100", "--workers", str(workers), "--bootstrap", "10", "--no-plot", "--no-progress"]
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err_file:
        proc = subprocess.Popen([*argv, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=err_file)
    workers_seen: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not (out / "results.json").exists():  # the first task has finished
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        workers_seen = _workers(proc.pid)
        assert len(workers_seen) == (workers if workers > 1 else 0)
        proc.send_signal(getattr(signal, sig))
        proc.wait(timeout=60)
    finally:
        for pid in [proc.pid, *workers_seen] if proc.poll() is None else []:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
    err = log.read_text()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert f"evaluate.py: stopped by {sig} after" in err and f"the results so far are in {out}/" in err
    data = load_results(out)
    assert data["partial"] and data["status"] == "interrupted"
    assert 0 < data["games"]["played"] < data["games"]["planned"] == 200000
    assert data["games"]["played"] % 200 == 0  # whole tasks only
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{c}").exists() for c in workers_seen):  # the workers were stopped, not orphaned
        assert time.monotonic() < deadline, "worker processes outlived the run"
        time.sleep(0.05)


# --------------------------------------------------------------------------------------------------- settings


@pytest.mark.usefixtures("no_games")
@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ('deals: "five"', r"deals: got 'five' \(str\), not a whole number; give a whole number of deals"),
        ("deals: 5.7", r"deals: got 5.7 \(float\), not a whole number"),
        ("deals: true", r"deals: got True \(bool\), not a whole number"),
        ('workers: "two"', r"workers: got 'two' \(str\), not a whole number; give a whole number of worker"),
        ("variant: [classic]", r"variant: got \['classic'\] \(list\), not a variant name; give a variant name"),
        ("seed: 18446744073709551616", r"seed: got 18446744073709551616, out of range; .*2\^64 - 1"),
        ("level: 1.5", r"level: got 1.5, out of range; give a confidence level"),
        ("sprt: [20, 0]", r"sprt: got 20,0, but elo0 < elo1 is needed"),
        ("agents: [random, 5]", r"agents: item 1: got 5 \(int\), not an agent spec"),
        ("plugins: [../x]", r"plugins: item 0: got '../x', not a module name"),
        ("hands: 5", r"unknown evaluation setting 'hands'; write mode: hands and deals: N"),
        ("agnts: [random]", r"unknown evaluation setting 'agnts'; did you mean 'agents'\?"),
        ("!!python/object/apply:os.system [echo hi]", r"is not valid YAML"),
        ("[random, greedy]", r"must hold a mapping of settings, got \['random', 'greedy'\]"),
    ],
)
def test_config_files_are_checked_like_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_text: str, message: str
) -> None:
    conf = tmp_path / "eval.yaml"
    conf.write_text(yaml_text + "\n")
    assert evaluate.main(["--config", str(conf), "--agents", "random", "greedy", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evaluate.py: error: config file {conf}") and "Traceback" not in err
    assert re.search(message, err), err
    assert not (tmp_path / "o").exists()


@pytest.mark.usefixtures("no_games")
def test_config_that_is_not_a_yaml_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    cases = [(tmp_path, "is a folder, not a file"), (binary, "is not text"), (tmp_path / "nope.yaml", "does not exist")]
    for path, message in cases:
        assert evaluate.main(["--config", str(path), "--agents", "random", "greedy"]) == 2
        assert f"evaluate.py: error: config file {path} {message}" in capsys.readouterr().err


def test_settings_are_checked_from_python_too() -> None:
    with pytest.raises(eval_config.SettingError, match=r"^deals: got True \(bool\)"):
        EvalConfig(agents=["random", "greedy"], deals=True)  # type: ignore[arg-type]
    with pytest.raises(eval_config.SettingError, match=r"^anchor_rating: got nan, out of range"):
        EvalConfig(anchor_rating=float("nan"))
    c = EvalConfig(agents=["random", "greedy"])
    c.batch = 0
    with pytest.raises(eval_config.SettingError, match=r"^batch: got 0, out of range"):
        run_tournament(c)
    assert EvalConfig(records=Path("x.jsonl"), sprt="0,20").to_dict()["records"] == "x.jsonl"  # type: ignore[arg-type]


def test_seeds_cover_the_whole_uint64_range_and_keep_their_deals() -> None:
    big = Deals.generate("classic", "hands", 3, 2**64 - 1)
    assert len(big) == 3 and (big.seeds < MAX_DEAL_SEED).all()
    # Seeds below 2^63 give the deals they always gave (the values of the code that took seeds through int64).
    assert Deals.generate("classic", "hands", 4, 7).seeds.tolist() == [
        5843455455252037,
        2441473752316809,
        6268667488732907,
        7364126923126720,
    ]
    assert Deals.generate("classic", "hands", 2, 2**63 - 1).seeds.tolist() == [2772463780220190, 5155945364226941]
    res = run_tournament(cfg(agents=["random", "_t_lowest"], deals=4, seed=2**64 - 1))
    assert res.pairings[0].stats.games == 8


def test_a_signal_whose_exception_is_lost_still_stops_the_run(tmp_path: Path) -> None:
    """The CI flake of SIGTERM-1-143: the signal's exception was discarded inside numpy and the handler ignored every
    later signal, so the run played on to the end. The stop is now raised at the next step of the games."""
    SwallowsASignal.calls = 0
    cfg = EvalConfig(variant="classic", agents=["_t_swallows_a_signal", "random"], deals=2000, batch=20, workers=1)
    with pytest.raises(TournamentInterrupted) as info:
        run_tournament(cfg, out=tmp_path / "out", handle_signals=True)
    assert info.value.signum == 15 and SwallowsASignal.calls < 200  # stopped within a step or two of the signal
    partial = info.value.result
    assert partial is not None and partial.status == "interrupted" and partial.games_played < 4000
    assert load_results(tmp_path / "out")["status"] == "interrupted"


def test_more_workers_than_tasks_gets_a_note_with_the_batch_that_uses_them() -> None:
    """10 deals in tasks of 16 make one task: with 2 workers one would idle, and the note says which --batch (5: two
    tasks) feeds both; with one worker, or the default (all cores), there is no note. The note changes nothing in the
    results."""
    from agents.evaluation.tournament import idle_workers_note, run_tournament

    said: list[str] = []
    noted = run_tournament(cfg(agents=["random", "greedy"], deals=10, workers=2), notes=said.append)
    assert len(said) == 1 and "1 task(s) of up to 16 deals for 2 workers" in said[0] and "--batch 5 " in said[0]
    said.clear()
    alone = run_tournament(cfg(agents=["random", "greedy"], deals=10, workers=1), notes=said.append)
    assert said == [] and np.array_equal(noted.pairings[0].margins, alone.pairings[0].margins)
    run_tournament(cfg(agents=["random", "greedy"], deals=10, workers=0), notes=said.append)
    assert said == []  # workers=0 (all cores) is not a number asked for: no advice
    assert "--batch 5 " in idle_workers_note(3, 6, 10, 3, 500)  # 3 pairings need 2 tasks each: 5 deals a task
    assert "--batch 1 " in idle_workers_note(1, 16, 3, 1, 500)  # fewer deals than workers: one deal a task
