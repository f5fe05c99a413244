"""Property-based fuzzing (hypothesis) of labels files and expert-iteration run directories (issue 54).

Random byte damage to a valid labels file, random arrays in place of its members and random JSON in its header;
random settings in a run's ``config.yaml`` and random damage to its data file. Each must give a correct load (the
rows a labels file replays to have the shapes of its variant) or a ``ScopaEnvError`` naming the file (through
``python -m agents.training.label_store``: exit status 2 and one ``error:`` line), never another exception.

The default suite runs a dozen examples per property; ``-m slow`` runs the long version (``SCOPA_FUZZ_EXAMPLES``,
default 500).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agents.training import label_store
from scopa_env.engine.observation import observation_size
from scopa_env.errors import ScopaEnvError
from scopa_env.rules import get_rules
from tests.test_hostile_labels import label_arrays, label_bytes, make_run
from tests.test_property_fuzz import FAST, LONG, _mutate

DAMAGE = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 1 << 20), st.integers(0, 255)),  # a byte changed
        st.tuples(st.just("cut"), st.integers(0, 1 << 20), st.just(0)),  # the file cut there
        st.tuples(st.just("zero"), st.integers(0, 1 << 20), st.integers(1, 600)),  # a block zeroed
        st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.integers(0, 255)),  # a byte inserted
    ),
    min_size=1,
    max_size=6,
)
"""Damage to a file's bytes: (what, where (modulo its length), a byte or a length)."""

EXTREMES = [float("nan"), float("inf"), float("-inf"), 1e30]
DTYPES = ["<u1", "<i4", "<i8", "<u8", "<f2", "<f4", "<f8", "|b1", "<U8"]
ARRAY = st.builds(
    lambda dtype, shape, seed, special: _random_array(dtype, shape, seed, special),
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 300), max_size=2).map(tuple),
    st.integers(0, 2**32),
    st.sampled_from([None, 0, -1, 2**31, 2**63 - 1, 10**12, *EXTREMES]),
)
"""A small random array of any of the kinds a member could hold, sometimes filled with an extreme value."""


def _random_array(dtype: str, shape: tuple[int, ...], seed: int, special: Any) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2**40), 2**40, size=shape)
    if special is not None:
        a = np.full(shape, special)
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(dtype)


def _damage(data: bytes, damage: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(data)
    for what, where, value in damage:
        at = where % max(1, len(out))
        if what == "set" and out:
            out[at] = value
        elif what == "cut":
            del out[at:]
        elif what == "zero":
            out[at : at + value] = bytes(len(out[at : at + value]))
        elif what == "insert":
            out.insert(at, value)
    return bytes(out)


def _load_or_refuse(path: Path) -> None:
    """A correct load or a ``ScopaEnvError`` naming the file; the header read alike."""
    try:
        variant, rows = label_store.load_label_file(path)
    except ScopaEnvError as e:
        assert path.name in str(e) and "\n" not in str(e), str(e)
    else:
        rules = get_rules(variant)
        n = rows["action"].size
        assert rows["obs"].shape == (n, observation_size(rules)) and rows["mask"].shape == (n, rules.num_actions)
        assert rows["values"].shape == rows["mask"].shape and not np.isnan(rows["values"]).any()
        assert rows["mask"][np.arange(n), rows["action"]].all()  # every action was legal where it was played
    try:
        label_store.read_header(path)
    except ScopaEnvError as e:
        assert path.name in str(e)


def _labels_bytes_damaged(damage: list[tuple[str, int, int]]) -> bytes:
    arrays, header = label_arrays()
    return _damage(label_bytes(arrays, header), damage)


def _labels_members_changed(data: st.DataObject) -> bytes:
    arrays, header = label_arrays()
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from([*sorted(arrays), "header"]))
        how = data.draw(st.sampled_from(["poke", "poke", "replace", "drop"]))
        if name == "header":
            header = _mutate(header, data)
        elif how == "poke" and arrays[name].size:  # one entry changed: same kind and length, deeper checks reached
            a = arrays[name].copy()
            value = data.draw(st.sampled_from([0, 1, -1, 39, 40, 255, 2**31, 10**12, *EXTREMES]) | st.integers(-50, 50))
            with np.errstate(all="ignore"):
                a.flat[data.draw(st.integers(0, a.size - 1))] = np.asarray(value).astype(a.dtype)
            arrays[name] = a
        elif how == "replace":
            arrays[name] = data.draw(ARRAY)
        else:
            del arrays[name]
    try:
        return label_bytes(arrays, header)
    except ValueError:  # a header json cannot write (NaN is written; nothing else fails)
        return label_bytes(arrays, None)


def _run_changed(root: Path, data: st.DataObject) -> Path:
    run = make_run(root)
    if data.draw(st.booleans()):
        config = yaml.safe_load((run / "config.yaml").read_text())
        if data.draw(st.booleans()):  # one setting a whole number of any size: the bounds and deal seeds checked
            key = data.draw(st.sampled_from(["seed", "hands", "chunk"]))
            changed = {**config, key: data.draw(st.integers(-3, 5) | st.integers(-(2**66), 2**66))}
        else:
            changed = _mutate(config, data)
        try:
            text = yaml.safe_dump(changed)
        except yaml.YAMLError:
            text = json.dumps(changed)
        (run / "config.yaml").write_text(text)
    if data.draw(st.booleans()):
        path = run / "data" / "iter_0.npz"
        path.write_bytes(_damage(path.read_bytes(), data.draw(DAMAGE)))
    return run


def _pack_or_refuse(run: Path, out: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = label_store.main([str(run), "--out", str(out), "--no-progress"])
    lines = err.getvalue().strip().splitlines()
    if code == 0:
        _load_or_refuse(out)
        assert label_store.load_label_file(out)[0] == "classic"
    else:
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and str(run) in lines[0], lines
        assert not out.exists()


def _check_labels_bytes(tmp_path_factory: Any, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("labels") / "fuzzed.npz"
    path.write_bytes(raw)
    _load_or_refuse(path)


# --------------------------------------------------------------------------------------------------- the default suite


@FAST
@given(damage=DAMAGE)
def test_labels_files_with_random_byte_damage_load_or_are_refused(tmp_path_factory: Any, damage: list) -> None:
    _check_labels_bytes(tmp_path_factory, _labels_bytes_damaged(damage))


@FAST
@given(data=st.data())
def test_labels_files_with_random_members_load_or_are_refused(tmp_path_factory: Any, data: st.DataObject) -> None:
    _check_labels_bytes(tmp_path_factory, _labels_members_changed(data))


@FAST
@given(data=st.data())
def test_random_run_directories_pack_or_give_one_error_line(tmp_path_factory: Any, data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("run")
    _pack_or_refuse(_run_changed(root, data), root / "labels.npz")


def test_the_properties_see_a_load_and_a_refusal(tmp_path: Path) -> None:
    """What the properties tell apart: an undamaged file loads; random JSON as its header is refused."""
    valid = tmp_path / "valid.npz"
    valid.write_bytes(label_bytes(*label_arrays()))
    _load_or_refuse(valid)
    assert label_store.load_label_file(valid)[0] == "classic"
    crafted = tmp_path / "crafted.npz"
    crafted.write_bytes(label_bytes(label_arrays()[0], [1, {"a": None}]))
    with pytest.raises(ScopaEnvError, match=r"crafted\.npz"):
        label_store.load_label_file(crafted)


# --------------------------------------------------------------------------------------------------- the long versions


@pytest.mark.slow
@LONG
@given(damage=DAMAGE)
def test_labels_byte_damage_long(tmp_path_factory: Any, damage: list) -> None:
    _check_labels_bytes(tmp_path_factory, _labels_bytes_damaged(damage))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_labels_members_long(tmp_path_factory: Any, data: st.DataObject) -> None:
    _check_labels_bytes(tmp_path_factory, _labels_members_changed(data))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_run_directories_long(tmp_path_factory: Any, data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("run")
    _pack_or_refuse(_run_changed(root, data), root / "labels.npz")
