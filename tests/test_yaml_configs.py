"""Hostile YAML configs (the reliability issue's item 2 and 7): the one reader,
``agents.cli.settings.read_yaml_mapping`` (``ConfigLoader``), refuses alias bombs, repeated keys, huge integers and
tags, with a short one-line message naming the file and the line; and each of the four commands that read a config
(train.py, train.py --resume, evaluate.py, expert iteration, its --resume too) prints that one line and exits 2, never a
traceback or a bare error kind.

The hypothesis fuzzing of configs runs a few dozen examples here and the long version under ``-m slow``
(``SCOPA_FUZZ_EXAMPLES``, default 500)."""

from __future__ import annotations

import itertools
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evaluate
import train
from agents.cli.settings import (
    MAX_YAML_INT,
    ConfigError,
    YamlFileError,
    read_yaml_mapping,
    short_repr,
    to_int,
)
from agents.training import expert_iteration
from tests.helpers import json_scalars

FAST = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(
    max_examples=int(os.environ.get("SCOPA_FUZZ_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
MAX_MESSAGE = 1_200
"""The longest error line a hostile config may produce: a message quotes a short prefix of a value at most (the
longest line, about 850 characters, is train.py's unknown key, which lists its valid keys)."""


def alias_bomb(levels: int = 9) -> str:
    """The "billion laughs": each level a list of nine aliases of the one before (9 levels: 9^9 strings, 334 bytes
    with one-letter names; this spelling is 351 bytes)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghij"
    for prev, name in itertools.pairwise(names[:levels]):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append(f"seed: *{names[levels - 1]}")
    return "\n".join(lines) + "\n"


BAD_CONFIGS = {
    "alias bomb": (alias_bomb(), 1, "anchor"),
    "huge integer": ("seed: " + "1" * 4400 + "\n", 1, "too big"),
    "repeated key": ("seed: 1\nseed: 2\n", 2, "given twice"),
    "set tag": ("seed: 1\nname: !!set {a, b}\n", 2, "!!set"),
}
"""name: (file text, the line the message names, a phrase of it)."""


def _read(tmp_path: Path, text: str | bytes) -> dict[str, Any]:
    path = tmp_path / "c.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return read_yaml_mapping(path)


# --------------------------------------------------------------------------------------------------- the reader


def test_an_alias_bomb_is_refused_at_its_first_anchor_in_little_memory(tmp_path: Path) -> None:
    """9 levels of 9 aliases would be 387 million strings (gigabytes): refused before any alias is expanded."""
    text = alias_bomb()
    assert len(text.encode()) < 400
    tracemalloc.start()
    try:
        with pytest.raises(YamlFileError) as info:
            _read(tmp_path, text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, f"{peak:,} bytes allocated reading a 351-byte file"
    assert info.value.kind == "refused" and info.value.line == 1
    assert "anchor &a is refused" in str(info.value) and "write each value out" in str(info.value)


def test_a_small_alias_bomb_or_a_single_alias_is_refused_too(tmp_path: Path) -> None:
    """A bomb small enough to expand (9^3 strings) is refused all the same: anchors and aliases are never read."""
    with pytest.raises(YamlFileError, match=r"line 1, column 4: the anchor &a is refused"):
        _read(tmp_path, alias_bomb(3))
    with pytest.raises(YamlFileError, match=r"line 2, column 4: the alias \*x is refused"):
        _read(tmp_path, "a: [1]\nb: *x\n")


def test_huge_integers_are_refused_before_they_are_converted(tmp_path: Path) -> None:
    with pytest.raises(YamlFileError) as info:
        _read(tmp_path, "variant: classic\nseed: " + "9" * 4400 + "\n")
    message = str(info.value)
    assert info.value.line == 2 and "seed: the integer 999" in message and "below 10^20" in message
    assert len(message) < MAX_MESSAGE
    for text in ("seed: 100000000000000000000", "seed: -100000000000000000000", "seed: 0x" + "f" * 17):
        with pytest.raises(YamlFileError, match="too big"):
            _read(tmp_path, text)
    with pytest.raises(YamlFileError, match=r"sprt: the integer 1{26}\.\.\. is too big"):
        _read(tmp_path, "sprt: [0, " + "1" * 60 + "]")  # inside a list: the setting is still named
    assert _read(tmp_path, "seed: 18446744073709551615\nlow: -99999999999999999999\n") == {
        "seed": 2**64 - 1,
        "low": -(10**20 - 1),
    }
    assert MAX_YAML_INT == 10**20


def test_integers_from_text_and_the_command_line_are_bounded_alike() -> None:
    assert to_int("seed", "2e7") == 20_000_000 and to_int("seed", str(2**64 - 1)) == 2**64 - 1
    for raw in ("1" * 5000, "1" * 30, 1e300, 10**30):
        with pytest.raises(ConfigError) as info:
            to_int("seed", raw)
        assert len(str(info.value)) < 200, str(info.value)


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    with pytest.raises(YamlFileError) as info:
        _read(tmp_path, "# a config\nseed: 1\nvariant: classic\nseed: 2\n")
    assert info.value.line == 4
    assert "line 4, column 1: key 'seed' is given twice in one mapping (first on line 2)" in str(info.value)
    with pytest.raises(
        YamlFileError, match=r"line 1, column 11: key 'b' is given twice in one mapping \(first on line 1\)"
    ):
        _read(tmp_path, "a: {b: 1, b: 2}\n")
    with pytest.raises(YamlFileError, match="given twice"):
        _read(tmp_path, "'seed': 1\nseed: 2\n")  # quoted or not, the same key
    with pytest.raises(YamlFileError, match=r"merge key \(<<\) is refused"):
        _read(tmp_path, "<<: {seed: 1}\nseed: 2\n")


@pytest.mark.parametrize(
    "text",
    [
        "a: !!set {x, y}\n",
        "a: !!binary aGk=\n",
        "a: !!omap [x: 1]\n",
        "a: !!timestamp 2026-01-01\n",
        "a: !custom 1\n",
        "a: !!python/object/apply:os.system [echo hi]\n",
    ],
)
def test_tags_other_than_the_plain_ones_are_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(YamlFileError, match=r"line 1, column 4: the tag '!.*' is not accepted") as info:
        _read(tmp_path, text)
    assert "remove the tag" in str(info.value)


def test_plain_values_still_read_as_before(tmp_path: Path) -> None:
    text = "a: 1\nb: 2.5\nc: text\nd: [1, two]\ne: {f: null}\ng: !!str 5\nh: yes\ni: 2026-01-01\nj: 2e7\n"
    assert _read(tmp_path, text) == {
        "a": 1,
        "b": 2.5,
        "c": "text",
        "d": [1, "two"],
        "e": {"f": None},
        "g": "5",
        "h": True,
        "i": "2026-01-01",  # a date stays the text it is
        "j": "2e7",
    }
    assert _read(tmp_path, "") == {}
    for shipped in sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml")):
        assert read_yaml_mapping(shipped) == yaml.safe_load(shipped.read_text()), shipped.name


def test_bad_values_of_plain_tags_and_deep_nesting_are_one_line(tmp_path: Path) -> None:
    for text, match in [
        ("a: !!int abc\n", r"line 1, column 4: 'abc' is not a valid !!int"),
        ("a: !!bool maybe\n", r"'maybe' is not a valid !!bool"),
        ("a: " + "[" * 40 + "]" * 40 + "\n", r"nested too deeply to be a config \(over 32 levels\)"),
        ("a: " + "[" * 100_000 + "\n", r"nested too deeply|not valid YAML"),
        ("a: [" + "1," * 20_000 + "]\n", r"line 1, column \d+: the file holds over 10,000 values; a config holds"),
    ]:
        with pytest.raises(YamlFileError, match=match):
            _read(tmp_path, text)


def test_messages_quote_a_short_prefix_of_any_value(tmp_path: Path) -> None:
    big = "x" * 20_000
    assert len(short_repr(big)) == 60 and short_repr(big).startswith("'xxx") and short_repr(big).endswith("...")
    assert short_repr(10**5000).startswith("<an integer of") and short_repr([[big] * 100] * 100).endswith("...")
    for text in (
        f"'{big}': 1\n'{big}': 2\n",  # a long key given twice
        f"a: !{big} 1\n",  # a long tag
        f"a: &{big} 1\n",  # a long anchor
        f"- {big}\n",  # not a mapping
        f"a: [{big}\n",  # a syntax error next to a long value
    ):
        with pytest.raises(YamlFileError) as info:
            _read(tmp_path, text)
        assert len(str(info.value)) < MAX_MESSAGE, str(info.value)[:300]


def test_every_yaml_file_is_read_by_the_one_reader() -> None:
    """No module but ``agents/cli/settings.py`` parses YAML itself (``yaml.safe_load`` had no alias or key checks)."""
    import re

    root = Path(__file__).resolve().parents[1]
    sources = [*root.glob("*.py"), *(p for d in ("scopa_env", "agents", "bench") for p in (root / d).rglob("*.py"))]
    parse = re.compile(r"yaml\.(safe_load|load|full_load|unsafe_load|load_all|safe_load_all|compose|parse)\(")
    strays = [str(p.relative_to(root)) for p in sources if parse.search(p.read_text(encoding="utf-8"))]
    assert strays == ["agents/cli/settings.py"], strays


# --------------------------------------------------------------------------------------------------- the commands


def _write_run(tmp_path: Path, text: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(text)
    return run


COMMANDS: dict[str, tuple[Callable[[list[str]], int], Callable[[Path], list[str]]]] = {
    "train.py": (train.main, lambda p: ["--config", str(p), "--print-config"]),
    "train.py --resume": (train.main, lambda p: ["--resume", str(p.parent)]),
    "evaluate.py": (evaluate.main, lambda p: ["--config", str(p), "--agents", "random", "greedy"]),
    "expert_iteration": (expert_iteration.main, lambda p: ["--config", str(p)]),
    "expert_iteration --resume": (expert_iteration.main, lambda p: ["--resume", str(p.parent)]),
}
"""Each command that reads a config: its main and its arguments for the config file ``p`` (``--resume``: the run
directory holding it as ``config.yaml``)."""


def _run(command: str, path: Path) -> int:
    main, argv = COMMANDS[command]
    return main(argv(path))


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"not one line:\n{err}"
    assert "Traceback" not in err and "error:" in lines[0]
    assert len(lines[0]) < MAX_MESSAGE, lines[0][:300]
    return lines[0]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_every_command_gives_one_line_for_a_hostile_config(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    case: str,
) -> None:
    text, line, phrase = BAD_CONFIGS[case]
    monkeypatch.chdir(tmp_path)
    path = _write_run(tmp_path, text) / "config.yaml"
    assert _run(command, path) == 2
    message = _one_error_line(capsys.readouterr().err)
    assert str(path) in message and f"line {line}" in message and phrase in message, message
    assert "bad_yaml" not in message  # a sentence, not the error's kind
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", ["expert_iteration", "expert_iteration --resume"])
@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("agents: [random\n", "is not valid YAML (line 2, column 1"),
        ("- a\n- b\n", "must hold a mapping of settings, got ['a', 'b'] (list)"),
        (b"\xff\xfe\x00", "is not text (not UTF-8)"),
        ("variant: nope\n", "variant: unknown variant 'nope'"),
        ("name: 'a,b'\n", "name must be letters, digits"),
    ],
)
def test_expert_iteration_words_every_bad_config_as_a_sentence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    text: str | bytes,
    phrase: str,
) -> None:
    """``--config F.yaml`` with a bad file said ``config file F.yaml: bad_yaml``; an unknown variant was a traceback."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    assert _run(command, run / "config.yaml") == 2
    message = _one_error_line(capsys.readouterr().err)
    assert phrase in message, message


@pytest.mark.parametrize(
    ("command", "text"),
    [
        ("train.py", "variant: {big}\n"),
        ("train.py", "name: 'a,{big}'\n"),
        ("train.py", "total_steps: '{digits}'\n"),
        ("train.py", "? {big}\n: 1\n"),  # an explicit key: an implicit one is at most 1,024 characters
        ("evaluate.py", "variant: {big}\n"),
        ("evaluate.py", "plugins: ['{big}-']\n"),
        ("evaluate.py", "? {big}\n: 1\n"),
        ("expert_iteration", "teacher: {big}\n"),
        ("expert_iteration", "variant: {big}\n"),
        ("expert_iteration", "hands: '{digits}'\n"),
    ],
)
def test_long_values_are_quoted_by_a_short_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str, text: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write_run(tmp_path, text.format(big="x" * 100_000, digits="7" * 5000)) / "config.yaml"
    assert _run(command, path) == 2
    _one_error_line(capsys.readouterr().err)


# --------------------------------------------------------------------------------------------------- fuzzing


class _Accepted(Exception):
    """Raised by the tripwires: the command read its config and was about to do the work."""


def _trip(*args: object, **kwargs: object) -> None:
    raise _Accepted


SCALAR = st.one_of(
    json_scalars(20),
    st.sampled_from(["classic", "random", "greedy", "pimc:worlds=2", "2e7", "0", "-1", "nan", ".inf"]),
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
KEYS = [
    "seed",
    "variant",
    "name",
    "agents",
    "deals",
    "workers",
    "total_steps",
    "hands",
    "iterations",
    "teacher",
    "net_arch",
    "learning_rate",
    "progress",
    "sprt",
    "plugins",
    "run_root",
]
HOSTILE = [
    "&a [1, 2]",
    "*a",
    "!!set {a, b}",
    "!!python/object/apply:os.system [echo]",
    "!custom x",
    "<<: {a: 1}",
    "[" * 50,
    "{" * 50 + "}" * 50,
    "9" * 4400,
    "0x" + "f" * 40,
    "'unterminated",
    "\t",
    "\x00",
    "- a",
    "? [a]\n: 1",
    "!!int x",
    "!!float y",
    "!!bool z",
    "2026-13-45",
    "---\n---",
    "%YAML 1.1\n---",
    "!!binary aGk=",
    "@",
    "`",
]


@st.composite
def config_texts(draw: st.DrawFn) -> bytes:
    """A YAML config: a mapping of settings dumped as YAML, then lines of hostile YAML inserted or repeated."""
    values = draw(st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=4))
    lines = yaml.safe_dump(values, allow_unicode=True).splitlines() if values else []
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.integers(0, len(lines)))
        kind = draw(st.sampled_from(["hostile", "repeat", "junk"]))
        if kind == "hostile":
            line = f"{draw(st.sampled_from(KEYS))}: {draw(st.sampled_from(HOSTILE))}"
        elif kind == "repeat" and lines:
            line = lines[draw(st.integers(0, len(lines) - 1))]
        else:
            line = draw(st.text(max_size=30))
        lines.insert(where, line)
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]  # cut anywhere, even inside a character
    return data


FUZZ_COMMANDS = ("train.py", "evaluate.py", "expert_iteration")


def _fuzz_config(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], command: str, data: bytes
) -> None:
    work = tmp_path_factory.mktemp("yaml")
    path = work / "c.yaml"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setattr(evaluate, "run_tournament", _trip)
        mp.setattr(expert_iteration, "ExpertIteration", _trip)
        try:
            code: Any = _run(command, path)
        except SystemExit as e:
            code = e.code
        except _Accepted:
            code = 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out, f"{data!r}:\n{err}"
    if code != 0:
        assert code == 2, f"{data!r}: exit status {code}\n{err}"
        lines = [line for line in err.strip().splitlines() if "error:" in line]
        assert len(lines) == 1, f"{data!r}: not one error line:\n{err}"
        assert len(lines[0]) < MAX_MESSAGE, f"{data!r}: {len(lines[0])} characters:\n{lines[0][:300]}"


@pytest.mark.parametrize("command", FUZZ_COMMANDS)
@FAST
@given(data=config_texts())
def test_random_configs_give_a_result_or_one_short_error_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], command: str, data: bytes
) -> None:
    _fuzz_config(tmp_path_factory, capsys, command, data)


@pytest.mark.slow
@pytest.mark.parametrize("command", FUZZ_COMMANDS)
@LONG
@given(data=config_texts() | st.binary(max_size=300))
def test_random_configs_long(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], command: str, data: bytes
) -> None:
    _fuzz_config(tmp_path_factory, capsys, command, data)
