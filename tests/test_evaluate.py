"""evaluate.py and agents.tournament: duplicate deals, rotations, statistics on real games, SPRT, outputs, errors."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import evaluate
from agents import tournament
from agents.base import ActBatch, Policy, register_agent
from agents.tournament import (
    Deals,
    EvalConfig,
    TournamentError,
    checkpoint_steps,
    load_results,
    make_entries,
    parse_agent_arg,
    run_tournament,
    seat_lineups,
    side_patterns,
    write_outputs,
)
from scopa_env import core
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
            card, cap = max(core.legal_moves(batch.rules, st, g), key=lambda m: (self.sign * len(m[1]), -m[0]))
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


@register_agent("_t_other_variant", "test only: made for scopa-d-assi")
def _make_other_variant(rules: Rules, seed: int | None = None) -> Policy:
    return LowestCard(get_rules("scopa-d-assi"), seed)


@register_agent("_t_old_obs", "test only: wrong observation version")
def _make_old_obs(rules: Rules, seed: int | None = None) -> Policy:
    return OldObservations(rules, seed)


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
    from scopa_env.record import check_file

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
    # Checkpoint files are built by agents.neural; stand in for it with a 'file' factory that plays lowest-card.
    from agents import base

    base._load_builtin()  # import agents.neural first, or it would register its own 'file' factory over ours
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
        (["random", "_t_other_variant"], r"made for variant 'scopa-d-assi', not 'classic'.*--variant scopa-d-assi"),
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
