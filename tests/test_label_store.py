"""Tests of the compact labels files (agents/training/label_store.py).

A collect-only expert-iteration run is packed into a labels file; loading it replays the same observations, masks and
actions, row for row and in the same order as ``distil.load_labels`` reads the run, with the teacher's values within
float16 rounding of their gaps (the soft targets within 1e-3). ``distil`` fits from a labels file as from the run. A
run whose stored rows do not replay, a labels file whose actions were changed, a file that is not one, and labels of
two variants are refused with one ``error:`` line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.cli.settings import ConfigError
from agents.training import distil, label_store
from agents.training.search_labels import soft_targets


def _collect(root: Path, variant: str, hands: int = 3, iterations: int = 2) -> Path:
    from agents.training.expert_iteration import main

    argv = [
        "--variant", variant, "--hands", str(hands), "--chunk", "2", "--workers", "1", "--iterations", str(iterations),
        "--epochs", "0", "--eval-deals", "0", "--teacher", "pimc:worlds=2", "--soft-temperature", "0.3",
        "--explore", "0.5", "--seed", "3", "--run-root", str(root), "--name", "collect", "--no-progress",
        "--init", "agents/bots/classic" if variant == "classic" else f"agents/bots/{variant}",
    ]  # fmt: skip
    assert main(argv) == 0
    return root / f"{variant}__collect__3"


@pytest.mark.parametrize("variant", ["classic", "cirulla"])
def test_a_labels_file_replays_the_runs_rows(tmp_path: Path, variant: str) -> None:
    """Cirulla's knock decisions are rows without values: they stay without values."""
    run = _collect(tmp_path, variant)
    out = tmp_path / "labels.npz"
    assert label_store.main([str(run), "--out", str(out), "--no-progress"]) == 0
    header = label_store.read_header(out)
    v, want = distil.load_labels([run])
    got_variant, got = label_store.load_label_file(out)
    assert got_variant == v == variant == header["variant"]
    assert header["rows"] == want["action"].size and header["hands"] == 6
    assert [s["iteration"] for s in header["sources"]] == [0, 1]
    # each source says what made its labels (the run's teacher and labelling settings)
    made = {k: header["sources"][0][k] for k in label_store.LABELLING_KEYS}
    assert made == {
        "teacher": "pimc:worlds=2", "soft_temperature": 0.3, "explore": 0.5, "seed": 3,
        "init": "agents/bots/classic" if variant == "classic" else f"agents/bots/{variant}",
    }  # fmt: skip
    for k in ("obs", "mask", "action"):
        assert np.array_equal(got[k], want[k]), k
    assert np.array_equal(np.isfinite(got["values"]), np.isfinite(want["values"]))
    finite = np.isfinite(want["values"])
    np.testing.assert_allclose(got["values"][finite], want["values"][finite], rtol=0, atol=0.02)
    a = soft_targets(want["values"], want["mask"], want["action"], 0.3)
    b = soft_targets(got["values"], got["mask"], got["action"], 0.3)
    assert np.abs(a - b).max() < 1e-3
    # distil reads a labels file wherever it reads a run, in any mix, in the order given
    _, both = distil.load_labels([out, run])
    assert both["action"].size == 2 * want["action"].size
    assert np.array_equal(both["obs"][: want["action"].size], want["obs"])


def test_distil_fits_from_a_labels_file(tmp_path: Path) -> None:
    run = _collect(tmp_path, "classic", hands=2, iterations=1)
    labels = tmp_path / "labels.npz"
    assert label_store.main([str(run), "--out", str(labels), "--no-progress"]) == 0
    out = tmp_path / "fit"
    assert distil.main([str(labels), "--arch", "8", "--epochs", "1", "--threads", "1", "--out", str(out)]) == 0
    card = json.loads((out / "model_card.json").read_text())
    assert card["distilled"]["runs"] == [str(labels)]
    assert card["distilled"]["rows"] == label_store.read_header(labels)["rows"]


def test_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _collect(tmp_path, "classic", hands=2, iterations=1)
    labels = tmp_path / "labels.npz"
    assert label_store.main([str(run), "--out", str(labels), "--no-progress"]) == 0
    # a labels file whose actions were changed does not replay
    with np.load(labels, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    legal = arrays["action"].copy()
    arrays["action"] = (arrays["action"] + 1) % 40
    np.savez_compressed(tmp_path / "changed.npz", **arrays)
    with pytest.raises(ConfigError, match=r"changed\.npz"):
        label_store.load_label_file(tmp_path / "changed.npz")
    # nor a run whose stored rows were changed: nothing is written
    data = run / "data" / "iter_0.npz"
    with np.load(data, allow_pickle=False) as z:
        stored = {k: z[k] for k in z.files}
    stored["obs"] = stored["obs"].copy()
    stored["obs"][0, 0] += 1.0
    np.savez_compressed(data, **stored)
    assert label_store.main([str(run), "--out", str(tmp_path / "refused.npz"), "--no-progress"]) == 2
    assert "does not give back its observations" in capsys.readouterr().err
    assert not (tmp_path / "refused.npz").exists()
    # a file that is not a labels file, through distil: one error line
    np.savez(tmp_path / "other.npz", action=legal)
    assert distil.main([str(tmp_path / "other.npz"), "--out", str(tmp_path / "x")]) == 2
    assert "not a labels file" in capsys.readouterr().err
    (tmp_path / "text.npz").write_text("hello")
    assert distil.main([str(tmp_path / "text.npz"), "--out", str(tmp_path / "x")]) == 2
    assert "not a labels file" in capsys.readouterr().err
    # labels of another variant beside these
    header = json.loads(str(arrays["header"]))
    arrays["action"] = legal
    arrays["header"] = np.array(json.dumps({**header, "variant": "scopa-d-assi"}))
    np.savez_compressed(tmp_path / "assi.npz", **arrays)
    assert distil.main([str(labels), str(tmp_path / "assi.npz"), "--out", str(tmp_path / "x")]) == 2
    assert "fit one variant at a time" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_committed_labels_files_pass_every_check_before_the_replay() -> None:
    """The limits that refuse damaged or crafted files (``label_store._check_label_arrays``, the reader's size and
    expansion bounds) let the committed legs through (checked here without the replay, about 15 s a file)."""
    from scopa_env.rules import get_rules

    files = sorted((Path(__file__).resolve().parents[1] / "labels").rglob("*.npz"))
    assert files
    for path in files:
        arrays = label_store._read_label_arrays(path)
        header = label_store._header_of(path, arrays.get("header"))
        rules = get_rules(header["variant"])
        label_store._check_label_arrays(path, arrays, header, rules)
        total = sum(a.nbytes for a in arrays.values())
        assert total < label_store.LABEL_EXPANSION * path.stat().st_size / 10  # far from the bound
        assert header["rows"] >= header["hands"] * label_store.min_decisions(rules)
