"""Training curves as pictures (agents/training/curves.py): the trainer's eval.png, its command, and plots that cut no
text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agents.evaluation.eval_config import EvalConfig
from agents.evaluation.report import plot_ratings
from agents.evaluation.tournament import run_tournament
from agents.training import curves
from tests.helpers import same_weights, train_smoke

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _margins(run: Path) -> list[dict[str, Any]]:
    """Each evaluation's step and results, less the time it took."""
    out = []
    for record in curves.read_eval_log(run / "eval.jsonl"):
        timeless = {name: {k: v for k, v in m.items() if k != "seconds"} for name, m in record["margins"].items()}
        out.append({"step": record["step"], **timeless})
    return out


def _blank_border(path: Path, width: int = 2) -> bool:
    """Whether the picture's outer ``width`` pixels are all background: nothing drawn runs off an edge."""
    pixels = np.asarray(Image.open(path).convert("L"))
    frame = np.concatenate(
        [pixels[:width].ravel(), pixels[-width:].ravel(), pixels[:, :width].ravel(), pixels[:, -width:].ravel()]
    )
    return bool((frame > 245).all())


def test_smoke_run_draws_eval_png_and_a_failing_plot_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = train_smoke(tmp_path, "drawn", "--total-steps", "2048")
    png = run / "eval.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(png) as image:
        assert image.format == "PNG" and image.width > 600 and image.height > 200
    assert _blank_border(png)
    assert len(_margins(run)) == 2  # evaluations at steps 0 and 2048

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(curves, "plot_eval_curves", boom)
    capsys.readouterr()
    # the plot fails at every evaluation: reported, training goes on
    plain = train_smoke(tmp_path, "undrawn", "--total-steps", "2048")
    assert "warning: eval.png not updated (OSError: disk full)" in capsys.readouterr().out
    assert not (plain / "eval.png").exists()
    assert _margins(plain) == _margins(run)  # the picture is a side output: same evaluations, same weights
    assert same_weights(plain / "last.zip", run / "last.zip")


def _records() -> list[dict[str, Any]]:
    def margins(m: float) -> dict[str, Any]:
        return {"random": {"margin": m, "low": m - 0.3, "high": m + 0.3}, "greedy": {"margin": m - 1, "low": m - 1.4}}

    out = []
    for k, m in enumerate([0.1, 0.4, 0.9]):
        rec = {"step": 2048 * k, "elapsed_s": 1800.0 * k, "time": "2026-01-01T00:00:00", "margins": margins(m)}
        rec["margins"]["greedy"]["high"] = m - 0.6
        out.append(rec)
    out[0]["margins"].pop("greedy")  # an opponent added later in the run starts where it first appears
    return out


def test_plot_command_redraws_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "classic__x__0__20260101-000000"
    run.mkdir()
    (run / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records()) + "\n")
    assert curves.main([str(run)]) == 0
    assert (run / "eval.png").read_bytes()[:8] == PNG_SIGNATURE and _blank_border(run / "eval.png")
    out = tmp_path / "other.png"
    assert curves.main([str(run / "eval.jsonl"), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "does not exist"),
        ("", "no evaluation records"),
        ('{"step": 1, "margins": {}}\n', "line 1 is not an evaluation record of train.py"),
        ('{"step": 0, "elapsed_s": 1, "margins": {}}\n[1, 2]\n', "line 2 is not an evaluation record"),
        ('{"step": 0, "elapsed_s": 1, "margins": {"random": {"margin": "x", "low": 0, "high": 0}}}\n', "line 1"),
    ],
)
def test_plot_command_refuses_bad_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, message: str
) -> None:
    log = tmp_path / "eval.jsonl"
    if text is not None:
        log.write_text(text)
    assert curves.main([str(log)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "eval.png").exists()


def test_ratings_plot_keeps_its_title_inside_the_picture(tmp_path: Path) -> None:
    """A long agent label shrinks the axes; the title used to be centred over them and ran off the right edge."""
    label = "scopone-scientifico-strong-run-20261202-step-12000000"
    result = run_tournament(
        EvalConfig(variant="classic", agents=["random", f"{label}=random"], deals=4, batch=4, workers=1, bootstrap=20)
    )
    path = plot_ratings(result, tmp_path / "ratings.png")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert _blank_border(path)
