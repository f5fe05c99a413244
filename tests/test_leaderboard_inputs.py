"""bench/leaderboard.py's hostile inputs (the reliability issue's item 6): a bad ``--doc`` or ``--plot`` is refused
before any game is played, and a damaged ``results.json`` or ``cost.json`` in a resumed ``--out`` is one error line
naming the file, never a traceback. The games are never played here: ``_play_variant`` is a tripwire.

The hypothesis fuzzing of the resume files runs a few dozen examples here and the long version under ``-m slow``
(``SCOPA_FUZZ_EXAMPLES``, default 500)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopa_bench import leaderboard
from tests.helpers import json_scalars, leaderboard_outputs

FAST = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(
    max_examples=int(os.environ.get("SCOPA_FUZZ_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


class _Played(Exception):
    """Raised by the tripwire: the leaderboard was about to play a variant's games."""


def _no_games(*args: object, **kwargs: object) -> Any:
    raise _Played


@pytest.fixture
def no_games(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leaderboard, "_play_variant", _no_games)


def _results(variant: str = "simple-2") -> dict[str, Any]:
    """A variant's results.json as evaluate.py's tournament writes it (the fields the leaderboard reads)."""
    margin = {"value": 0.4, "low": 0.1, "high": 0.7}
    return {
        "format": "scopa-eval",
        "version": 1,
        "partial": False,
        "variant": variant,
        "games": {"planned": 12, "played": 12},
        "deals": {"count": 3, "source": "seed 5"},
        "config": {"seed": 5},
        "ratings": [
            {"rank": 1, "agent": "pimc", "rating": 120.0, "low": 40.0, "high": 200.0},
            {"rank": 2, "agent": "greedy", "rating": 60.0, "low": -20.0, "high": 140.0},
            {"rank": 3, "agent": "random", "rating": 0.0, "low": 0.0, "high": 0.0},
        ],
        "pairings": [
            {"agent": "pimc", "opponent": "greedy", "margin": margin},
            {"agent": "greedy", "opponent": "random", "margin": margin},
            {"agent": "random", "opponent": "pimc", "margin": {"value": -0.4, "low": None, "high": None}},
        ],
    }


def _costs() -> dict[str, Any]:
    return {"bot": None, "costs": {a: {"ms_per_decision": 0.5} for a in ("pimc", "greedy", "random")}}


def _write_board(out: Path, variant: str, results: Any, costs: Any) -> Path:
    folder = out / variant
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("results.json", results), ("cost.json", costs)):
        if isinstance(data, bytes):
            (folder / name).write_bytes(data)
        else:
            (folder / name).write_text(json.dumps(data))
    return folder


def _args(tmp_path: Path, *extra: str, variants: tuple[str, ...] = ("simple-2",)) -> list[str]:
    return [
        "--variants",
        *variants,
        "--agents",
        "pimc",
        "greedy",
        "random",
        "--deals",
        "3",
        *leaderboard_outputs(tmp_path),
        *extra,
    ]


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert "Traceback" not in err and lines, err
    assert lines[-1].startswith("bench/leaderboard.py: error:") or "error:" in lines[-1], err
    assert len([line for line in lines if "error:" in line]) == 1, err
    return lines[-1]


# --------------------------------------------------------------------------------------------------- outputs


@pytest.mark.usefixtures("no_games")
@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        (["--plot", ""], "argument --plot: got an empty path"),
        (["--doc", ""], "argument --doc: got an empty path"),
        (["--plot", "{tmp}"], "is a folder; give a file path inside it, e.g. {tmp}/leaderboard.png"),
        (["--doc", "{tmp}"], "is a folder; give a file path inside it, e.g. {tmp}/leaderboard.md"),
        (["--plot", "{tmp}/a_file/leaderboard.png"], "a_file is a file, not a folder"),
        (["--doc", "{tmp}/a_file/deeper/leaderboard.md"], "a_file is a file, not a folder"),
        (["--plot", "{tmp}/plot.xyz"], "has the suffix '.xyz', not an image format; give a file name ending in .png"),
        (["--plot", "{tmp}/plot"], "has no suffix, not an image format"),
        (["--doc", "{tmp}/same.png", "--plot", "{tmp}/same.png"], "--doc and --plot are the same file"),
    ],
)
def test_bad_outputs_are_refused_before_any_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: list[str], phrase: str
) -> None:
    """The games would have been played first, and the page or plot then failed with a traceback (``--plot ''``
    wrote a file named '.png' in the working directory)."""
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    argv = [*_args(tmp_path), *(x.format(tmp=tmp_path) for x in extra)]  # the last --doc / --plot wins
    try:
        code = leaderboard.main(argv)
    except SystemExit as e:  # argparse's own check of the option's text
        code = e.code
    assert code == 2
    message = _one_error_line(capsys.readouterr().err)
    assert phrase.format(tmp=tmp_path) in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing written: no '.png', no docs/, no runs/


def test_a_plot_is_written_in_the_format_of_its_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished board read back from --out; the page and an SVG plot written, nothing played."""
    _write_board(tmp_path / "runs", "simple-2", _results(), _costs())
    plot = tmp_path / "docs" / "img" / "board.svg"
    assert leaderboard.main([*_args(tmp_path), "--plot", str(plot)]) == 0
    assert "already played" in capsys.readouterr().out
    assert plot.read_text().lstrip().startswith("<?xml") and "<svg" in plot.read_text()
    page = (tmp_path / "docs" / "leaderboard.md").read_text()
    assert "(img/board.svg)" in page and "| greedy | +60 [-20, +140] | -0.40 [-0.70, -0.10] | 0.5 |" in page
    assert "| random | +0 [+0, +0] | -0.40 | 0.5 |" in page  # its margin's interval is null (not finite)


# --------------------------------------------------------------------------------------------------- resume files


def _damaged() -> dict[str, tuple[Any, Any, str, str]]:
    """name: (results.json, cost.json, the file the message names, a phrase of it)."""
    res, cost = _results(), _costs()

    def changed(data: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
        data = copy.deepcopy(data)
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return data

    return {
        "empty results": (b"", cost, "results.json", "is not valid JSON"),
        "cut-off results": (json.dumps(res).encode()[:100], cost, "results.json", "is not valid JSON"),
        "binary results": (b"\xff\xfe\x00\x01", cost, "results.json", "is not text"),
        "results a list": ([1, 2], cost, "results.json", "must hold a JSON object, got list"),
        "foreign results": ({"format": "other"}, cost, "results.json", "is not an evaluate.py results file"),
        "another variant": (_results("classic"), cost, "results.json", "holds the results of variant 'classic'"),
        "no ratings": (changed(res, ["ratings"], None), cost, "results.json", "'ratings' must be a non-empty list"),
        "text rating": (changed(res, ["ratings", 0, "rating"], "high"), cost, "results.json", "ratings[0] must be"),
        "NaN rating": (changed(res, ["ratings", 1, "low"], float("nan")), cost, "results.json", "ratings[1] must be"),
        "margin a list": (changed(res, ["pairings", 0, "margin"], [1]), cost, "results.json", "pairings[0] must be"),
        "games text": (changed(res, ["games", "played"], "12"), cost, "results.json", "'games' must be an object"),
        "deals a list": (changed(res, ["deals"], []), cost, "results.json", "'deals' must be an object"),
        "config a list": (changed(res, ["config"], [5]), cost, "results.json", "'config' must be an object"),
        "empty costs": (res, b"", "cost.json", "is not valid JSON"),
        "costs missing": (res, {"bot": None}, "cost.json", "with an object 'costs'"),
        "cost text": (res, changed(cost, ["costs", "pimc"], "fast"), "cost.json", "costs['pimc'] must be"),
        "negative cost": (
            res,
            changed(cost, ["costs", "pimc", "ms_per_decision"], -1),
            "cost.json",
            "costs['pimc'] must be",
        ),
        "bot a number": (res, changed(cost, ["bot"], 5), "cost.json", "'bot' must be"),
    }


@pytest.mark.usefixtures("no_games")
@pytest.mark.parametrize("case", list(_damaged()))
def test_damaged_resume_files_are_one_line_naming_the_file_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """classic is not played yet and simple-2's files are damaged: the error comes before classic's games."""
    results, costs, name, phrase = _damaged()[case]
    folder = _write_board(tmp_path / "runs", "simple-2", results, costs)
    assert leaderboard.main(_args(tmp_path, variants=("classic", "simple-2"))) == 2
    message = _one_error_line(capsys.readouterr().err)
    assert f"{folder / name}: " in message and phrase in message, message
    assert "--fresh" in message and len(message) < 600
    assert not (tmp_path / "docs").exists()


@pytest.mark.usefixtures("no_games")
def test_a_resume_file_that_is_a_folder_or_too_big_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "runs" / "simple-2"
    (folder / "results.json").mkdir(parents=True)
    assert leaderboard.main(_args(tmp_path)) == 2
    assert f"{folder / 'results.json'} is not a file" in _one_error_line(capsys.readouterr().err)
    (folder / "results.json").rmdir()
    _write_board(tmp_path / "runs", "simple-2", _results(), _costs())
    monkeypatch.setattr(leaderboard, "MAX_BOARD_BYTES", 100)
    assert leaderboard.main(_args(tmp_path)) == 2
    assert "is over 100 bytes" in _one_error_line(capsys.readouterr().err)


def test_a_partial_or_fresh_board_is_played_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    played: list[str] = []

    def play(variant: str, *args: Any) -> dict[str, Any]:
        played.append(variant)
        return {"results": _results(variant), "costs": _costs()["costs"], "bot": None}

    monkeypatch.setattr(leaderboard, "_play_variant", play)
    _write_board(tmp_path / "runs", "simple-2", {**_results(), "partial": True}, _costs())
    assert leaderboard.main(_args(tmp_path)) == 0 and played == ["simple-2"]
    _write_board(tmp_path / "runs", "simple-2", b"{damaged", b"")
    assert leaderboard.main([*_args(tmp_path), "--fresh"]) == 0 and played == ["simple-2"] * 2


# --------------------------------------------------------------------------------------------------- fuzzing


def _mutate(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """``value`` with one part replaced by another JSON value, deleted or kept (recursively)."""
    junk = st.one_of(
        json_scalars(8),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    )
    if isinstance(value, dict) and value and depth < 4:
        key = data.draw(st.sampled_from(sorted(value)))
        action = data.draw(st.sampled_from(["recurse", "recurse", "replace", "delete"]))
        out = dict(value)
        if action == "delete":
            del out[key]
        elif action == "replace":
            out[key] = data.draw(junk)
        else:
            out[key] = _mutate(value[key], data, depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4:
        i = data.draw(st.integers(0, len(value) - 1))
        out_list = list(value)
        out_list[i] = _mutate(value[i], data, depth + 1) if data.draw(st.booleans()) else data.draw(junk)
        return out_list
    return data.draw(junk)


def _fuzz_board(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], data: st.DataObject, plot: bool
) -> None:
    work = tmp_path_factory.mktemp("board")
    which = data.draw(st.sampled_from(["results", "cost", "both", "bytes"]))
    results: Any = _mutate(_results(), data) if which in ("results", "both") else _results()
    costs: Any = _mutate(_costs(), data) if which in ("cost", "both") else _costs()
    if which == "bytes":
        raw = json.dumps(_results()).encode()
        cut = data.draw(st.integers(0, len(raw)))
        results = raw[:cut] + data.draw(st.binary(max_size=8))
    _write_board(work / "runs", "simple-2", results, costs)

    def rows_only(boards: dict[str, Any], path: Path) -> None:  # the plot's rows, without drawing (seconds each)
        for board in boards.values():
            leaderboard.board_rows(board["results"], board["costs"])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(leaderboard, "_play_variant", _no_games)
        if not plot:
            mp.setattr(leaderboard, "write_plot", rows_only)
        try:
            code: Any = leaderboard.main(_args(work))
        except _Played:  # read as partly played: it would be played again
            code = 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out, err
    if code != 0:
        assert code == 2, f"exit status {code}\n{err}"
        message = _one_error_line(err)
        assert "results.json" in message or "cost.json" in message, message
        assert len(message) < 600, message


@pytest.mark.parametrize(
    ("budget", "plot"),
    [pytest.param(FAST, False, id="fast"), pytest.param(LONG, True, id="long", marks=pytest.mark.slow)],
)
def test_damaged_resume_files_give_a_page_or_one_error_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], budget: settings, plot: bool
) -> None:
    """``FAST``'s examples without the plot; ``-m slow``: ``LONG``'s, the plot written too."""

    @budget
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        _fuzz_board(tmp_path_factory, capsys, data, plot=plot)

    fuzz()
