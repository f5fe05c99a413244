"""Tests of the search labels (agents/training/search_labels.py) and of expert iteration with soft targets.

The labeller must play exactly the teacher's moves (the same actions as the teacher alone, seed for seed), value the
move it plays highest, value every legal card of the PLAY phase, play the student's moves when ``explore=1``, and
its soft targets must be distributions over the legal actions. A smoke run of expert iteration with a pimc teacher,
soft targets and exploration writes the action values and a checkpoint the exported bot loads.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.base import make_agent
from agents.search.pimc import PIMCAgent
from agents.training.imitation import collect_teacher_data
from agents.training.search_labels import SearchLabeller, action_values, labelled_hands, soft_targets
from scopa_env.engine import core
from scopa_env.engine.core import Phase
from scopa_env.rules import get_rules
from tests.test_netsearch import assert_checkpoint_and_export_agree
from tests.test_search import random_positions


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "cirulla"])
def test_labeller_plays_the_teachers_moves_and_values_them_highest(variant: str) -> None:
    teacher = "pimc:worlds=3"
    obs, mask, action, ret, values = labelled_hands(variant, teacher, None, 0.0, 11, 0, 4)
    alone = collect_teacher_data(variant, teacher, 4, seed=11, batch=4)
    assert np.array_equal(action, alone.action) and np.array_equal(obs, alone.obs) and np.array_equal(ret, alone.ret)
    assert values.shape == mask.shape and not (np.isfinite(values) & ~mask).any()  # no value for an illegal action
    valued = np.isfinite(values).any(axis=1)
    assert valued.mean() > 0.9  # cirulla's knocks follow a fixed rule, unsearched
    rows = np.flatnonzero(valued)
    assert np.all(values[rows, action[rows]] >= values[rows].max(axis=1) - 1e-6)


def test_every_legal_card_of_the_play_phase_gets_a_value() -> None:
    """(In the CHOOSE phase a pick that only starts a capture equal to a searched one, a card of the same rank, may
    get none: the candidate moves keep one of such captures.)"""
    rules = get_rules("scopone-scientifico")
    st = random_positions(rules, 48, 7, seed=5)
    rows = np.flatnonzero(st.phase == Phase.PLAY)
    assert rows.size > 20
    values = action_values(rules, st, rows, PIMCAgent(rules, seed=1, worlds=2).search(st, rows))
    mask = core.legal_action_mask(rules, st)[rows]
    assert np.array_equal(np.isfinite(values), mask)


def test_explore_one_plays_the_students_moves() -> None:
    *_, action, _ret, values = labelled_hands("classic", "pimc:worlds=2", "greedy", 1.0, 3, 0, 4)
    greedy = collect_teacher_data("classic", "greedy", 4, seed=3, batch=4)
    assert np.array_equal(action, greedy.action)
    assert np.isfinite(values).any(axis=1).all()  # still labelled by the teacher


def test_soft_targets_are_distributions_over_the_legal_valued_actions() -> None:
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=bool)
    values = np.array([[1.0, 0.0, -np.inf, 5.0], [-np.inf, -np.inf, -np.inf, -np.inf], [0, 2.0, 2.0, 1.0]])
    action = np.array([0, 1, 3])
    t = soft_targets(values.astype(np.float32), mask, action, temperature=0.5)
    assert np.allclose(t.sum(axis=1), 1.0) and not (t[~mask] > 0).any()
    assert t[0, 2] == 0 and np.isclose(t[0, 0] / t[0, 1], np.exp(2.0))  # illegal 5.0 ignored
    assert np.array_equal(t[1], [0, 1, 0, 0])  # no values: the action played
    assert np.isclose(t[2, 1], t[2, 2]) and t[2, 1] > t[2, 3]
    cold = soft_targets(values.astype(np.float32), mask, action, temperature=1e-3)
    assert cold[0, 0] > 0.999
    with pytest.raises(ValueError, match="temperature"):
        soft_targets(values.astype(np.float32), mask, action, temperature=0.0)


def test_labeller_refuses_a_teacher_without_search_and_explore_without_student() -> None:
    rules = get_rules("classic")
    with pytest.raises(ValueError, match="no search"):
        SearchLabeller(rules, make_agent("greedy", rules))
    with pytest.raises(ValueError, match="student"):
        SearchLabeller(rules, make_agent("pimc:worlds=2", rules), None, explore=0.5)


def test_expert_iteration_with_soft_pimc_targets_smoke_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.training.expert_iteration import main

    argv = [
        "--hands", "4", "--chunk", "2", "--workers", "1", "--iterations", "1", "--eval-deals", "2",
        "--eval-opponents", "greedy", "--teacher", "pimc:worlds=2", "--soft-temperature", "0.3", "--explore", "0.5",
        "--run-root", str(tmp_path), "--name", "soft", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    run = tmp_path / "classic__soft__0"
    with np.load(run / "data" / "iter_0.npz") as z:
        assert z["values"].shape == z["mask"].shape and np.isfinite(z["values"]).any(axis=1).all()
    assert json.loads((run / "state.json").read_text())["iteration"] == 1
    # A resumed leg fits on its window through the guarded reader: a damaged data file (here cut short) is one
    # error line naming it, not a zipfile traceback; the run is left as it was.
    data = run / "data" / "iter_0.npz"
    whole = data.read_bytes()
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("iterations: 1", "iterations: 2"))
    data.write_bytes(whole[: len(whole) // 2])
    capsys.readouterr()
    assert main(["--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "iter_0.npz: cannot be read as this run's data file" in err and "Traceback" not in err
    data.write_bytes(whole)
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("iterations: 2", "iterations: 1"))
    # A fresh network fitted to the run's labels (agents.training.distil) is a bot that plays legal moves.
    from agents.training import distil

    out = tmp_path / "distilled"
    assert distil.main([str(run), "--arch", "8,8", "--epochs", "1", "--threads", "1", "--out", str(out)]) == 0
    card = json.loads((out / "model_card.json").read_text())
    assert card["architecture"]["hidden"] == [8, 8] and card["distilled"]["rows"] == sum(
        len(np.load(p)["action"]) for p in (run / "data").glob("iter_*.npz")
    )  # iter_0, and iter_1 if the refused resume above had saved its self-play before the fit
    rules = get_rules("classic")
    bot = make_agent(f"bot:path={out}", rules, seed=0)
    st = random_positions(rules, 8, 3, seed=4)
    rows = np.flatnonzero(st.phase != Phase.DONE)
    from scopa_env.engine import observation
    from scopa_env.games.policy import ActBatch

    mask = core.legal_action_mask(rules, st)[rows]
    acts = bot.act(ActBatch(rules, observation.observe(rules, st)[rows], mask, st, rows))
    assert mask[np.arange(rows.size), acts].all()
    assert_checkpoint_and_export_agree(
        rules, random_positions(rules, 8, 3, seed=2), run / "last.zip", run / "nets" / "iter_1"
    )
    # With the sweep inputs the bot is still a plain MLP over the observation: the hand-set layers come first, and
    # its checkpoint (what agents.nets.export reads) and its numpy export agree.
    swept = tmp_path / "swept"
    argv = [str(run), "--arch", "8", "--epochs", "1", "--threads", "1", "--inputs", "sweep", "--augment"]
    argv += ["--out", str(swept)]
    assert distil.main(argv) == 0
    card = json.loads((swept / "model_card.json").read_text())
    assert card["architecture"]["input"] == observation.observation_size(rules)
    assert card["architecture"]["hidden"][-1] == 8
    assert card["distilled"]["inputs"] == "sweep"
    assert_checkpoint_and_export_agree(rules, random_positions(rules, 8, 3, seed=2), swept / "checkpoint.zip", swept)
    # --init starts the fit from a network (here the sweep fit, unfolded): with a vanishing learning rate the
    # network written is the one it started from; one fitted without sweep inputs is refused with --inputs sweep.
    again = tmp_path / "again"
    argv = [str(run), "--init", str(swept), "--epochs", "1", "--threads", "1", "--inputs", "sweep"]
    assert distil.main([*argv, "--learning-rate", "1e-12", "--out", str(again)]) == 0
    with np.load(swept / "policy.npz") as a, np.load(again / "policy.npz") as b:
        assert a.files == b.files
        for k in a.files:
            if a[k].dtype.kind == "f":
                np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6)
            else:
                assert (a[k] == b[k]).all()
    assert json.loads((again / "model_card.json").read_text())["distilled"]["init"] == str(swept)
    assert distil.main([*argv[:2], str(out), *argv[3:], "--out", str(tmp_path / "refused")]) == 2
    assert "hand-set sweep layers" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


def test_expert_iteration_collect_only_keeps_the_network_and_every_iterations_data(tmp_path: Path) -> None:
    """``epochs: 0``: pure DAgger labelling. The student stays as it started (one export, no fit), no iteration's data
    is dropped from the window, ``eval_deals: 0`` evaluates nothing, and a resumed leg goes on the same way."""
    from agents.training.expert_iteration import main

    argv = [
        "--hands", "2", "--chunk", "2", "--workers", "1", "--iterations", "2", "--window", "1", "--epochs", "0",
        "--eval-deals", "0", "--teacher", "pimc:worlds=2", "--soft-temperature", "0.3", "--explore", "1",
        "--run-root", str(tmp_path), "--name", "collect", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    run = tmp_path / "classic__collect__0"
    assert sorted(p.name for p in (run / "data").iterdir()) == ["iter_0.npz", "iter_1.npz"]
    assert [p.name for p in (run / "nets").iterdir()] == ["iter_0"]
    records = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert [r["margins"] for r in records] == [{}, {}, {}] and not (run / "eval.png").exists()
    config = (run / "config.yaml").read_text().replace("iterations: 2", "iterations: 3")
    (run / "config.yaml").write_text(config)
    assert main(["--resume", str(run)]) == 0
    assert len(list((run / "data").iterdir())) == 3
    # the student's weights are the start's: the checkpoint's actor equals the first export's
    assert_checkpoint_and_export_agree(
        get_rules("classic"),
        random_positions(get_rules("classic"), 8, 3, seed=2),
        run / "last.zip",
        run / "nets" / "iter_0",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--teacher", "greedy"], "az or a pimc spec"),
        (["--teacher", "pimc", "--epochs", "0"], "collects the teacher's action values"),
        (["--teacher", "pimc", "--epochs", "-1"], "epochs must be >= 0"),
        (["--teacher", "pimc", "--soft-temperature", "-1"], "soft_temperature"),
        (["--teacher", "pimc", "--explore", "1.5"], "explore"),
    ],
)
def test_expert_iteration_refuses_bad_label_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    from agents.training.expert_iteration import main

    assert main([*args, "--run-root", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_distil_refuses_runs_without_action_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.training import distil

    assert distil.main([str(tmp_path)]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    (tmp_path / "config.yaml").write_text("variant: classic\n")
    (tmp_path / "data").mkdir()
    np.savez(tmp_path / "data" / "iter_0.npz", obs=np.zeros((1, 3)), mask=np.ones((1, 2), bool), action=[0], ret=[0.0])
    assert distil.main([str(tmp_path)]) == 2
    assert "no action values" in capsys.readouterr().err
