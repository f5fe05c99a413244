"""Hostile and damaged labels files and run directories (issue 54, items 1 and 3).

A labels file (``labels/*.npz``) is committed and shared, so ``load_label_file``, ``read_header`` and ``distil`` must
refuse every damaged or crafted one with one ``ScopaEnvError`` line naming the file and what is wrong: never a
traceback, never an allocation the file's real size does not justify, never a long replay of a file whose declared
sizes cannot be right. ``python -m agents.training.label_store RUN --out F`` does the same for a run directory, and
checks ``--out`` before the replay starts.

The files are built here in a second: a random player's hands on fixed deals (``imitation.teacher_games``, the
driver the replay uses) with made-up teacher values, packed the way ``label_store.pack_runs`` packs them.
"""

from __future__ import annotations

import functools
import io
import json
import re
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from agents.cli.settings import ConfigError
from agents.training import distil, label_store
from scopa_env.errors import ScopaEnvError

VARIANT = "classic"
TASKS = ((5, 2), (100, 1))
"""(first deal, hands) of the tiny labels file's tasks."""
RUN_SEED, RUN_HANDS, RUN_CHUNK = 3, 3, 2


@functools.cache
def _rows(variant: str, tasks: tuple[tuple[int, int], ...]) -> tuple[dict[str, np.ndarray], list[int]]:
    """A random player's decisions on the tasks' deals, in the replay's order, with made-up finite values of the
    legal actions (-inf elsewhere), and each task's number of rows."""
    from agents import make_agent
    from agents.training.imitation import teacher_games
    from scopa_env.rules import get_rules

    rules = get_rules(variant)
    parts, rows = [], []
    for first, n in tasks:
        agent = make_agent("random", rules, seed=first)
        obs, mask, action, _ = teacher_games(rules, agent, np.arange(first, first + n, dtype=np.uint64), None)
        values = np.where(mask, np.random.default_rng(first).normal(size=mask.shape), -np.inf).astype(np.float32)
        parts.append({"obs": obs, "mask": mask, "action": action, "values": values})
        rows.append(int(action.size))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, rows


def label_arrays(variant: str = VARIANT) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and header of a valid labels file of ``TASKS`` (fresh copies)."""
    from scopa_env.engine.observation import observation_version
    from scopa_env.rules import get_rules

    data, rows = _rows(variant, TASKS)
    top, gaps = label_store._pack_values(data["values"], data["mask"])
    arrays: dict[str, np.ndarray] = {
        "first": np.array([t[0] for t in TASKS], dtype=np.uint64),
        "hands": np.array([t[1] for t in TASKS], dtype=np.int32),
        "rows": np.array(rows, dtype=np.int64),
        "action": data["action"].astype(np.uint8),
        "top": top,
        "gaps": gaps,
    }
    header: dict[str, Any] = {
        "format": label_store.FORMAT,
        "version": label_store.VERSION,
        "variant": variant,
        "obs_version": observation_version(get_rules(variant)),
        "rows": int(sum(rows)),
        "hands": sum(t[1] for t in TASKS),
        "sources": [],
    }
    return arrays, header


def label_bytes(arrays: dict[str, Any], header: Any) -> bytes:
    buf = io.BytesIO()
    members = dict(arrays) if header is None else {"header": np.array(json.dumps(header)), **arrays}
    np.savez_compressed(buf, **members)
    return buf.getvalue()


def make_run(root: Path, name: str = "run") -> Path:
    """A run directory as a collect-only expert-iteration leg leaves it: ``config.yaml`` and ``data/iter_0.npz``
    (hands ``RUN_HANDS`` in tasks of ``RUN_CHUNK``)."""
    from agents.training.expert_iteration import iteration_first_deal

    run = root / name
    (run / "data").mkdir(parents=True)
    config = {"variant": VARIANT, "seed": RUN_SEED, "hands": RUN_HANDS, "chunk": RUN_CHUNK, "epochs": 0}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    base = iteration_first_deal(RUN_SEED, 0)
    tasks = tuple((base + lo, min(RUN_CHUNK, RUN_HANDS - lo)) for lo in range(0, RUN_HANDS, RUN_CHUNK))
    data, _ = _rows(VARIANT, tasks)
    np.savez_compressed(run / "data" / "iter_0.npz", **data)  # type: ignore[arg-type]
    return run


# --------------------------------------------------------------------------------------------------- labels files


def _zip_member(name: str, header: dict[str, Any], payload: bytes = bytes(64)) -> bytes:
    """An .npz of the valid file's members plus (or in place of) ``name``, whose ``.npy`` header is ``header``."""
    arrays, head = label_arrays()
    arrays.pop(name, None)
    buf = io.BytesIO(label_bytes(arrays, head))
    with zipfile.ZipFile(buf, "a") as archive, archive.open(f"{name}.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, {"fortran_order": False, **header})
        member.write(payload)
    return buf.getvalue()


def _zip_bomb(declared: int) -> bytes:
    """The valid file with its ``gaps`` replaced by ``declared`` bytes of zeros (float16), deflated: about a
    thousandth of that on disk. Written in 1 MiB pieces: nothing of that size is ever held here."""
    arrays, head = label_arrays()
    arrays.pop("gaps")
    buf = io.BytesIO(label_bytes(arrays, head))
    with (
        zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("gaps.npy", "w", force_zip64=True) as member,
    ):
        np.lib.format.write_array_header_1_0(
            member, {"descr": "<f2", "fortran_order": False, "shape": (declared // 2,)}
        )
        piece = bytes(1 << 20)
        for _ in range(declared >> 20):
            member.write(piece)
    return buf.getvalue()


def _with(header_changes: dict[str, Any] | None = None, drop: str = "", **changes: Any) -> bytes:
    arrays, header = label_arrays()
    arrays.update(changes)
    arrays.pop(drop, None)
    for key, value in (header_changes or {}).items():
        if value is None:
            header.pop(key, None)
        else:
            header[key] = value
    return label_bytes(arrays, header)


def _valid() -> bytes:
    arrays, header = label_arrays()
    return label_bytes(arrays, header)


def _zeroed(data: bytes) -> bytes:
    out = bytearray(data)
    mid = len(out) // 2
    out[mid - 256 : mid + 256] = bytes(512)
    return bytes(out)


def _npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, label_arrays()[0]["action"])
    return buf.getvalue()


def _object_member() -> bytes:
    arrays, header = label_arrays()
    arrays["hands"] = np.array([2, None], dtype=object)
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps(header)), **arrays)  # type: ignore[arg-type]  # pickles the objects
    return buf.getvalue()


def _gaps_size() -> int:
    return int(label_arrays()[0]["gaps"].size)


def _rows_size() -> int:
    return int(label_arrays()[0]["action"].size)


def _three_million_hands() -> bytes:
    arrays, header = label_arrays()
    arrays["hands"] = np.array([3_000_000, 1], dtype=np.int32)
    return label_bytes(arrays, {**header, "hands": 3_000_001})


LABEL_CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "cut off": (lambda: _valid()[: len(_valid()) // 2], r"cut short|damaged|not a readable"),
    "empty": (lambda: b"", r"empty"),
    "zeroed block": (lambda: _zeroed(_valid()), r"damaged|not a readable"),
    "a plain .npy": (_npy, r"single \.npy array"),
    "text": (lambda: b"hello", r"not a readable|not a labels file"),
    "no header": (lambda: label_bytes(label_arrays()[0], None), r"not a labels file"),
    "header not JSON": (lambda: _with(header="{nope"), r"header"),
    "header a list": (lambda: _with(header=np.array("[1, 2]")), r"not a labels file"),
    "unknown variant": (lambda: _with({"variant": "nope"}), r"variant 'nope'"),
    "variant missing": (lambda: _with({"variant": None}), r"variant"),
    "variant a number": (lambda: _with({"variant": 7}), r"variant"),
    "rows in the header wrong": (lambda: _with({"rows": 5}), r"rows"),
    "hands in the header a string": (lambda: _with({"hands": "3"}), r"hands"),
    "missing member": (lambda: _with(drop="gaps"), r"gaps"),
    "object array": (_object_member, r"Python objects"),
    "negative first": (lambda: _with(first=np.array([-5, 100], dtype=np.int64)), r"first"),
    "first a float": (lambda: _with(first=np.array([5.0, 100.0])), r"first"),
    "first past 2**64": (lambda: _with(first=np.array([2**64 - 1, 100], dtype=np.uint64)), r"first|deal"),
    "hands[0] = 10**12": (lambda: _with(hands=np.array([10**12, 1], dtype=np.int64)), r"hands"),
    "hands zero": (lambda: _with(hands=np.array([0, 1], dtype=np.int32)), r"hands"),
    "3,000,000 hands in a small file": (_three_million_hands, r"hands"),
    "more hands than its decisions take": (lambda: _with({"hands": 21}, hands=np.array([20, 1])), r"at least 36"),
    "rows that do not add up": (lambda: _with(rows=np.array([1, 2], dtype=np.int64)), r"rows"),
    "one task short": (lambda: _with(rows=np.array([80], dtype=np.int64)), r"tasks|rows|first"),
    "an action out of range": (lambda: _with(action=np.full(_rows_size(), 200, dtype=np.uint8)), r"action"),
    "a negative action": (lambda: _with(action=np.full(_rows_size(), -1, dtype=np.int64)), r"action -1 is not"),
    "action a float": (lambda: _with(action=np.zeros(_rows_size())), r"action"),
    "2-d action": (lambda: _with(action=np.zeros((_rows_size(), 1), dtype=np.uint8)), r"action"),
    "fewer gaps than rows": (lambda: _with(gaps=np.zeros(3, dtype=np.float16)), r"gaps|values"),
    "top of another length": (lambda: _with(top=np.zeros(3, dtype=np.float32)), r"top"),
    "a NaN teacher value": (lambda: _with(top=np.full(_rows_size(), np.nan, dtype=np.float32)), r"NaN|infinite"),
    "a +inf gap": (lambda: _with(gaps=np.full(_gaps_size(), np.inf, dtype=np.float16)), r"NaN|infinite"),
    "a positive gap": (lambda: _with(gaps=np.full(_gaps_size(), 1.0, dtype=np.float16)), r"gaps"),
    "a member of shape (10**11,)": (lambda: _zip_member("gaps", {"descr": "<f2", "shape": (10**11,)}), r"claims"),
    "a member of negative shape": (lambda: _zip_member("gaps", {"descr": "<f2", "shape": (-4,)}), r"shape"),
    "a zip bomb": (lambda: _zip_bomb(96 << 20), r"expand"),
}
"""Each damaged or crafted labels file and a word its one error line must hold."""


def test_the_tiny_labels_file_is_valid(tmp_path: Path) -> None:
    """The files below are this one damaged: it loads, and replays to the rows it was built from."""
    path = tmp_path / "ok.npz"
    path.write_bytes(_valid())
    variant, rows = label_store.load_label_file(path)
    data, _ = _rows(VARIANT, TASKS)
    assert variant == VARIANT and label_store.read_header(path)["rows"] == data["action"].size
    for k in ("obs", "mask", "action"):
        assert np.array_equal(rows[k], data[k]), k


@pytest.mark.parametrize("case", list(LABEL_CASES))
def test_a_damaged_or_crafted_labels_file_is_one_error_line(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before any replay (a replay here fails the test), with little memory (a zip bomb is never read)."""
    make, words = LABEL_CASES[case]
    path = tmp_path / "crafted.npz"
    path.write_bytes(make())

    def no_replay(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{case}: replayed before its sizes were checked")

    monkeypatch.setattr(label_store, "replay_tasks", no_replay)
    tracemalloc.start()
    try:
        with pytest.raises(ScopaEnvError) as info:
            label_store.load_label_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert isinstance(info.value, ConfigError) and "crafted.npz" in message and "\n" not in message
    assert re.search(words, message), message
    assert peak < 64 << 20, f"{case}: {peak:,} bytes allocated to refuse it"
    try:
        header = label_store.read_header(path)
    except ConfigError as e:
        assert "crafted.npz" in str(e)
    else:
        assert isinstance(header, dict)
    # distil, the file's reader: exit status 2 and one error line
    assert distil.main([str(path), "--out", str(tmp_path / "fit")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "crafted.npz" in err[0], err
    assert not (tmp_path / "fit").exists()


def test_values_with_nan_in_a_run_are_refused_by_pack_and_distil(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path)
    data_file = run / "data" / "iter_0.npz"
    with np.load(data_file) as z:
        data = {k: z[k] for k in z.files}
    data["values"][0, np.flatnonzero(data["mask"][0])[0]] = np.nan
    np.savez_compressed(data_file, **data)
    assert label_store.main([str(run), "--out", str(tmp_path / "l.npz"), "--no-progress"]) == 2
    assert "NaN" in capsys.readouterr().err
    assert distil.main([str(run), "--out", str(tmp_path / "fit")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NaN" in err[0] and "iter_0.npz" in err[0]


# --------------------------------------------------------------------------------------------------- run directories


def _config(**changes: Any) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        config = yaml.safe_load((run / "config.yaml").read_text())
        for key, value in changes.items():
            if value is None:
                config.pop(key)
            else:
                config[key] = value
        (run / "config.yaml").write_text(yaml.safe_dump(config))

    return edit


def _write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        (run / name).unlink()
        if isinstance(text, bytes):
            (run / name).write_bytes(text)
        else:
            (run / name).write_text(text)

    return edit


def _data(change: Callable[[dict[str, np.ndarray]], Any]) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        path = run / "data" / "iter_0.npz"
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        change(data)
        np.savez_compressed(path, **data)

    return edit


def _cut_data(run: Path) -> None:
    path = run / "data" / "iter_0.npz"
    path.write_bytes(path.read_bytes()[:500])


def _pickled_data(run: Path) -> None:
    path = run / "data" / "iter_0.npz"
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["action"] = np.array([*data["action"].tolist(), None], dtype=object)
    np.savez(path, **data)


def _folder_data(run: Path) -> None:
    (run / "data" / "iter_0.npz").unlink()
    (run / "data" / "iter_0.npz").mkdir()


def _damaged_second_iteration(run: Path) -> None:
    data = (run / "data" / "iter_0.npz").read_bytes()
    (run / "data" / "iter_1.npz").write_bytes(data[: len(data) - 100])


def _no_data(run: Path) -> None:
    (run / "data" / "iter_0.npz").unlink()


def _huge_iteration(run: Path) -> None:
    (run / "data" / "iter_0.npz").rename(run / "data" / f"iter_{10**20}.npz")


def _config_folder(run: Path) -> None:
    (run / "config.yaml").unlink()
    (run / "config.yaml").mkdir()


def _drop_values(data: dict[str, np.ndarray]) -> None:
    del data["values"]


def _short_obs(data: dict[str, np.ndarray]) -> None:
    data["obs"] = data["obs"][:-1]


RUN_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "config without chunk": (_config(chunk=None), r"chunk"),
    "config without variant": (_config(variant=None), r"variant"),
    "empty config": (_write("config.yaml", ""), r"variant|empty"),
    "list config": (_write("config.yaml", "- 1\n- 2\n"), r"mapping"),
    "config not YAML": (_write("config.yaml", "variant: [classic\n"), r"YAML"),
    "config not text": (_write("config.yaml", b"\xff\xfe\x00bad"), r"UTF-8|text"),
    "config a folder": (_config_folder, r"config\.yaml"),
    "chunk: 0": (_config(chunk=0), r"chunk"),
    "chunk: two": (_config(chunk="two"), r"chunk"),
    "hands: 10**12": (_config(hands=10**12), r"hands"),
    "hands: true": (_config(hands=True), r"hands"),
    "hands more than the data holds": (_config(hands=1000), r"hands|rows"),
    "seed: 2**70": (_config(seed=2**70), r"seed"),
    "seed: -1": (_config(seed=-1), r"seed"),
    "seed: 2**62": (_config(seed=2**62), r"seed"),
    "unknown variant": (_config(variant="nope"), r"variant 'nope'"),
    "damaged iter_K.npz": (_cut_data, r"iter_0\.npz"),
    "pickled iter_K.npz": (_pickled_data, r"Python objects"),
    "a folder as iter_K.npz": (_folder_data, r"folder"),
    "a damaged second iteration": (_damaged_second_iteration, r"iter_1\.npz.*cut short"),
    "no iter_K.npz": (_no_data, r"no data/iter_K\.npz"),
    "iteration 10**20": (_huge_iteration, r"iteration|seed"),
    "iter_K.npz without values": (_data(_drop_values), r"no action values"),
    "iter_K.npz whose members disagree": (_data(_short_obs), r"obs"),
}
"""Each damaged run directory and a word of its one error line."""
DISTIL_NEEDS_NOT = {
    "config without chunk",
    "chunk: 0",
    "chunk: two",
    "hands: 10**12",
    "hands: true",
    "hands more than the data holds",
    "seed: -1",
    "seed: 2**62",
    "iteration 10**20",
}
"""The cases of settings that only a replay uses: distil reads the rows as they are (its variant and data checked)."""


@pytest.mark.parametrize("case", list(RUN_CASES))
def test_a_bad_run_directory_is_one_error_line(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    change, words = RUN_CASES[case]
    run = make_run(tmp_path)
    change(run)

    def no_replay(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{case}: replayed before the run was checked")

    monkeypatch.setattr(label_store, "replay_tasks", no_replay)
    out = tmp_path / "labels.npz"
    assert label_store.main([str(run), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(run) in err[0], err
    assert re.search(words, err[0]), err[0]
    assert not out.exists()
    if case not in DISTIL_NEEDS_NOT:
        assert distil.main([str(run), "--out", str(tmp_path / "fit")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and str(run) in err[0], err


def test_a_valid_run_packs_into_a_file_that_replays(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    out = tmp_path / "new" / "folder" / "labels.npz"  # made when missing
    assert label_store.main([str(run), "--out", str(out), "--no-progress"]) == 0
    variant, rows = label_store.load_label_file(out)
    _, want = distil.load_labels([run])
    assert variant == VARIANT and all(np.array_equal(rows[k], want[k]) for k in ("obs", "mask", "action"))


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("labels.txt", r"\.npz"),
        ("afile/labels.npz", r"afile.* is a file"),
        ("afolder", r"is a folder"),
        ("", r"--out"),
    ],
)
def test_a_bad_out_is_refused_before_the_replay(
    tmp_path: Path, out: str, words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "afolder.npz").mkdir()
    target = str(tmp_path / out) + (".npz" if out == "afolder" else "") if out else ""

    def no_replay(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("replayed before --out was checked")

    monkeypatch.setattr(label_store, "replay_tasks", no_replay)
    assert label_store.main([str(run), "--out", target, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and re.search(words, err[-1]), err


def test_an_unwritable_out_folder_is_refused_before_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    run = make_run(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    monkeypatch.setattr(label_store, "replay_tasks", lambda *a, **k: pytest.fail("replayed"))
    assert label_store.main([str(run), "--out", str(locked / "sub" / "l.npz"), "--no-progress"]) == 2
    assert "not writable" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["afile", "afile/fit"])
def test_distil_checks_its_out_folder_before_reading_the_labels(
    tmp_path: Path, out: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fit is long: an --out that cannot become the bot's folder is refused before the labels are read."""
    (tmp_path / "afile").write_text("x")
    labels = tmp_path / "l.npz"
    labels.write_bytes(_valid())
    monkeypatch.setattr(distil, "load_labels", lambda runs: pytest.fail("read the labels first"))
    assert distil.main([str(labels), "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --out") and "is a file" in err[0], err


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile warns while the crafted archive is written
def test_the_npz_reader_reads_only_the_members_asked_and_refuses_two_of_one_name(tmp_path: Path) -> None:
    from agents.nets.weights import read_npz

    raw = _valid()
    assert list(read_npz(raw, members={"header"})) == ["header"]  # every member's size checked, one read
    assert sorted(read_npz(raw)) == sorted(["header", *label_arrays()[0]])
    buf = io.BytesIO(raw)
    with zipfile.ZipFile(buf, "a") as archive, archive.open("top.npy", "w") as member:
        np.lib.format.write_array(member, np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="two members of one name"):
        read_npz(buf.getvalue())


def test_a_pipe_in_place_of_a_labels_file_or_a_data_file_is_refused(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.npz")
    with pytest.raises(ConfigError, match="not a regular file"):
        label_store.load_label_file(tmp_path / "fifo.npz")  # opening it would wait for a writer for ever
    # refused by the one guarded reader itself, so bot weights and resume states are covered too
    from agents.nets.weights import read_npz

    with pytest.raises(ValueError, match="not a regular file"):
        read_npz(tmp_path / "fifo.npz")
    run = make_run(tmp_path)
    os.mkfifo(run / "data" / "iter_1.npz")
    with pytest.raises(ConfigError, match=r"iter_1\.npz is not a regular file"):
        label_store.read_run(run)
