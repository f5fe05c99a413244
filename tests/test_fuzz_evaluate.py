"""Fuzz evaluate.py: malformed values for every option and every config key give exit status 2 and one clean
``evaluate.py: error:`` line naming what was wrong, never a traceback, and no game is played.

Each case runs ``evaluate.main(argv)`` in this process with ``scopa_env.games.driver.play`` replaced by a tripwire, so a
value that slipped through the checks fails the test instead of starting a tournament. Hand-picked bad values
(types, ranges, empty strings, NUL characters, paths that are files or folders) are joined by seeded random junk.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

import evaluate
from agents.errors import TournamentError
from agents.evaluation import eval_config, tournament
from agents.evaluation.eval_config import EvalConfig

JUNK_CHARS = string.ascii_letters + string.digits + "!#$%&()*+;<>?@[]^_`{|}~ ,:="
"""Characters of the random junk: no path separators or dots (a junk agent spec stays a name, not a file), no
quotes (the messages show values with repr)."""


def junk(rng: random.Random, n: int) -> list[str]:
    """``n`` random strings that are no number, name, agent, module or variant (they start with a letter and hold a
    character a name cannot)."""
    out = []
    for _ in range(n):
        body = "".join(rng.choice(JUNK_CHARS) for _ in range(rng.randint(1, 12)))
        out.append(rng.choice(string.ascii_letters) + rng.choice("!#$%&*;<>?@^`|~") + body)
    return out


def bad_files(tmp: Path) -> dict[str, Path]:
    """Files every path option must refuse to read from or write to."""
    tmp.mkdir(parents=True, exist_ok=True)
    a_file = tmp / "a_file.txt"
    a_file.write_text("not a folder\n")
    binary = tmp / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    deep = tmp / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    not_dict = tmp / "list.json"
    not_dict.write_text("[1, 2, 3]")
    bad_seeds = tmp / "bad_seeds.json"
    bad_seeds.write_text(json.dumps({"variant": "classic", "mode": "hands", "seeds": [1, -2, "x"]}))
    other_variant = tmp / "other.json"
    other_variant.write_text(json.dumps({"variant": "scopa-d-assi", "mode": "hands", "seeds": [1, 2]}))
    bad_yaml = tmp / "bad.yaml"
    bad_yaml.write_text("agents: [random, greedy\nworkers: : 3\n")
    evil_yaml = tmp / "evil.yaml"
    evil_yaml.write_text("!!python/object/apply:os.system ['touch PWNED']\n")
    big_yaml = tmp / "big.yaml"
    big_yaml.write_text("# padding\n" * 200_000)
    deep_yaml = tmp / "deep.yaml"
    deep_yaml.write_text("agents: " + "[" * 5000 + "]" * 5000 + "\n")
    return {
        "dir": tmp,
        "file": a_file,
        "under_file": a_file / "x",
        "binary": binary,
        "deep": deep,
        "not_dict": not_dict,
        "bad_seeds": bad_seeds,
        "other_variant": other_variant,
        "missing": tmp / "missing.json",
        "bad_yaml": bad_yaml,
        "evil_yaml": evil_yaml,
        "big_yaml": big_yaml,
        "deep_yaml": deep_yaml,
    }


def bad_arguments(tmp: Path) -> list[tuple[str, list[str]]]:
    """(option, bad values) for every option of evaluate.py that takes a value."""
    f = {k: str(v) for k, v in bad_files(tmp).items()}
    counts = ["0", "-3", "1e30", "5.7", "abc", "", " ", "1,000", "0x10", "true", "nan", str(eval_config.MAX_DEALS + 1)]
    counts += ["9" * 30, "9" * 5000]
    nul = ["a\x00b"]
    rng = random.Random(20240521)
    cases = [
        ("--hands", counts + junk(rng, 5)),
        ("--matches", counts + junk(rng, 5)),
        ("--batch", counts + junk(rng, 5)),
        ("--seed", ["-1", str(2**64), str(2**70), "1e30", "1.5", "abc", "", "nan", "inf", *junk(rng, 5)]),
        ("--workers", ["-1", "100000", "two", "1.5", "", *junk(rng, 5)]),
        ("--bootstrap", ["-1", str(eval_config.MAX_BOOTSTRAP + 1), "1e9", "x", "", *junk(rng, 5)]),
        ("--level", ["0", "1", "-0.5", "1.5", "nan", "inf", "abc", "", *junk(rng, 5)]),
        ("--anchor-rating", ["nan", "inf", "-inf", "abc", "", "1e400", *junk(rng, 5)]),
        ("--sprt", ["0", "0,", ",20", "20,0", "0,0", "0,inf", "nan,20", "a,b", "0,20,40", "", *junk(rng, 5)]),
        ("--sprt-alpha", ["0", "0.5", "1", "-0.1", "nan", "x", "", *junk(rng, 3)]),
        ("--sprt-beta", ["0", "0.5", "1", "-0.1", "nan", "x", "", *junk(rng, 3)]),
        ("--variant", ["", "nope", "classic\x00", "CLASSIC-99", *junk(rng, 5)]),
        ("--agents", ["", "nosuchbot", "random:speed=3", "random:=", ":", "x=", "greedy:depth", *nul, *junk(rng, 8)]),
        ("--gauntlet", ["", "nosuchbot", "missing/best.zip", "random:x=1", *nul, *junk(rng, 5)]),
        ("--partner", ["", "nosuchbot", "missing/best.zip", "expert", *nul, *junk(rng, 3)]),  # classic: no teams
        ("--anchor", ["", "nobody", *nul, *junk(rng, 5)]),
        ("--deals", ["", f["missing"], f["dir"], f["binary"], f["deep"], f["not_dict"], f["bad_seeds"]]),
        ("--deals", [f["other_variant"], f["under_file"], *nul]),
        ("--save-deals", ["", f["dir"], f["under_file"], *nul]),
        ("--records", ["", f["dir"], f["under_file"], *nul]),
        ("--plugin", ["", "no_such_module_xyz", "../x", "a..b", "1abc", "fuzz_raises_on_import", *nul, *junk(rng, 5)]),
        ("--start-method", ["thread", "", "SPAWN", *junk(rng, 3)]),
        ("--out", ["", f["file"], f["under_file"], *nul]),
        ("--config", ["", f["missing"], f["dir"], f["binary"], f["bad_yaml"], f["evil_yaml"], f["big_yaml"]]),
        ("--config", [f["deep_yaml"], f["not_dict"], *nul]),
        ("--ray", ["", " ", "nowhere", "host:", ":6379", "ray://", "a b:1", "127.0.0.1:123456", *nul]),
        ("--review", ["0", "-3", "1e30", "5.7", "abc", "", " ", "0x10", "true", "9" * 30, *nul]),
    ]
    return cases


BASE = {
    "--agents": ["random", "greedy"],
    "--hands": ["4"],
    "--workers": ["1"],
    "--bootstrap": ["0"],
}
"""A valid evaluation the bad value is added to (without the option under test)."""


def argv_for(option: str, value: str, out: Path) -> list[str]:
    args: list[str] = []
    for opt, vals in BASE.items():
        if opt == option or (option in ("--hands", "--matches") and opt == "--hands"):
            continue
        args += [opt, *vals]
    if option == "--agents":
        args += ["--agents", "random", value]
    else:
        args += [option, value]
    if option != "--out":
        args += ["--out", str(out)]
    return [*args, "--no-progress", "--no-plot", "--quiet"]


@pytest.fixture
def tripwire(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No game may be played; the working folder is a temporary one; a plugin that raises on import exists."""

    def play(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played: a malformed value passed the checks")

    monkeypatch.setattr(tournament, "play", play)
    monkeypatch.chdir(tmp_path)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "fuzz_raises_on_import.py").write_text("raise RuntimeError('this plugin is broken')\n")
    monkeypatch.syspath_prepend(str(plugins))


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    try:
        code: Any = evaluate.main(argv)
    except SystemExit as e:  # argparse's own errors (unknown option, missing value) exit 2 from parse_args
        code = e.code
    return code, capsys.readouterr().err


def assert_clean_error(code: Any, err: str, names: tuple[str, ...], what: str) -> None:
    assert code == 2, f"{what}: exit status {code}, stderr:\n{err}"
    assert "Traceback" not in err, f"{what}: traceback:\n{err}"
    lines = err.strip().splitlines()
    assert lines, f"{what}: no message"
    errors = [line for line in lines if line.startswith("evaluate.py: error: ")]
    assert len(errors) == 1 and lines[-1].startswith("evaluate.py: error: "), f"{what}: not one error line:\n{err}"
    assert any(n in errors[0] for n in names), f"{what}: the message names none of {names}:\n{err}"


@pytest.mark.usefixtures("tripwire")
def test_every_option_refuses_malformed_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    cases = bad_arguments(tmp_path / "files")
    assert {opt for opt, _ in cases} >= {
        a.option_strings[0] for a in evaluate.build_parser()._actions if a.option_strings and a.nargs != 0
    }, "an option of evaluate.py has no fuzz case"
    checked = 0
    for option, values in cases:
        for value in values:
            argv = argv_for(option, value, out)
            code, err = run_main(argv, capsys)
            shown = value.strip() and value.replace("\x00", "\\x00")
            assert_clean_error(code, err, tuple(n for n in (option, shown) if n), f"{option} {value!r}")
            checked += 1
    assert checked > 200
    assert not (tmp_path / "PWNED").exists()  # the YAML config never runs code


@pytest.mark.usefixtures("tripwire")
def test_command_line_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Missing values, unknown options, exclusive options together, no agents."""
    shapes = [
        (["--agents"], "--agents"),
        (["--agents", "random", "greedy", "--hands"], "--hands"),
        (["--agents", "random", "greedy", "--no-such-option", "3"], "--no-such-option"),
        (["--agents", "random", "greedy", "--hands", "3", "--matches", "3"], "--matches"),
        (["--hands", "3"], "--agents"),
        (["--agents", "random"], "two agents"),
        (["--gauntlet", "random"], "--agents"),
        (["--agents", "random", "greedy", "--sprt", "0,20"], "--gauntlet"),
        (["--agents", "random", "greedy", "--anchor", "expert"], "anchor"),
        (["--agents", "random", "greedy", "--deals", "d.json", "--save-deals", "d.json"], "--save-deals"),
        (["--agents", "random", "greedy", "--records", "r.jsonl", "--save-deals", "r.jsonl"], "--records"),
    ]
    for argv, name in shapes:
        code, err = run_main([*argv, "--workers", "1", "--out", str(tmp_path / "out")], capsys)
        assert_clean_error(code, err, (name,), repr(argv))


def bad_settings() -> list[tuple[str, Any]]:
    """(config key, bad value as YAML reads it) for every EvalConfig field."""
    rng = random.Random(7)
    cases: dict[str, list[Any]] = {
        "variant": [["classic"], 5, "", "nope", None, True],
        "agents": [5, [1, 2], {"a": 1}, [""], None, [["random"]], "a\x00"],
        "gauntlet": [5, ["x"], "", {"x": 1}],
        "partner": [5, ["x"], "", {"x": 1}],
        "mode": ["hand", 1, True, ["hands"], ""],
        "deals": ["five", 5.7, True, 0, -1, "1e30", 2**70, [5]],
        "seed": [-1, 2**64, "x", 1.5, True, None, [0]],
        "deals_file": [5, ["a"], "", True],
        "save_deals": [5, "", ["x"]],
        "workers": ["two", -1, 1.5, 100_000, None, False],
        "batch": [0, "x", 2.5, False],
        "anchor": [5, [], ""],
        "anchor_rating": ["x", float("nan"), float("inf"), None, True],
        "bootstrap": [-1, "x", 10**9, 1.0, None],
        "level": [1, 0, "x", float("nan"), 1.5, None, True],
        "sprt": ["x", [0], [0, 1, 2], [20, 0], [0, float("inf")], 5, ["a", "b"], [True, 5], {"a": 1}],
        "sprt_alpha": [0.5, "x", 0, None, -1],
        "sprt_beta": [0, [0.05], 1, "x"],
        "records": [5, "", [1]],
        "plugins": [5, [5], ["../x"], [""], {"a": 1}],
        "start_method": ["thread", 5, None, ""],
        "ray": [5, "", "nowhere", ["local"], True, "host:"],
    }
    for key in cases:
        if key not in (
            "agents",
            "gauntlet",
            "partner",
            "anchor",
            "deals_file",
            "save_deals",
            "records",
        ):  # junk is no path
            cases[key] += junk(rng, 2)
    return [(key, value) for key, values in cases.items() for value in values]


def test_every_config_field_has_fuzz_cases() -> None:
    assert {k for k, _ in bad_settings()} == {f for f in EvalConfig.__dataclass_fields__}


@pytest.mark.usefixtures("tripwire")
@pytest.mark.parametrize(("key", "value"), bad_settings())
def test_every_config_key_refuses_malformed_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any
) -> None:
    conf = tmp_path / "eval.yaml"
    settings: dict[str, Any] = {"agents": ["random", "greedy"], "deals": 4, "workers": 1, "bootstrap": 0}
    settings[key] = value
    conf.write_text(yaml.safe_dump(settings, allow_unicode=True))
    assert yaml.safe_load(conf.read_text())[key] == value or value != value  # NaN never equals itself
    code, err = run_main(["--config", str(conf), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert_clean_error(code, err, (key,), f"{key}: {value!r}")
    # The same value from Python: EvalConfig refuses it with the same message.
    with pytest.raises(TournamentError, match=f"^{key}: "):
        EvalConfig(**settings).validate()


@pytest.mark.usefixtures("tripwire")
def test_unknown_and_odd_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "eval.yaml"
    for text in ("hands: 5\n", "foo: 1\n", "1: 2\n", "? [a, b]\n: 3\n", "null: 1\n", "Agents: [random]\n"):
        conf.write_text("agents: [random, greedy]\n" + text)
        code, err = run_main(["--config", str(conf), "--out", str(tmp_path / "out")], capsys)
        assert_clean_error(code, err, ("unknown evaluation setting", "not valid YAML"), repr(text))
