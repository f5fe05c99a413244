"""Malformed values thrown at every public entry point of the envs, the core, the bot and ``agents.nets.export``.

Each entry point's argument gets every value of ``BAD`` (the wrong type, out of range, empty, huge, NaN, ...). A value
an argument accepts is listed with it and must work; every other one must raise a ``TypeError`` or ``ValueError``
(or a subclass: ``IllegalActionError``, ``BotError``, ``AgentSpecError``) whose message names the argument or the
problem: never an ``IndexError``, ``KeyError``, ``AttributeError``, ``OverflowError`` or a silent success. The
command line of ``agents.nets.export`` must stop with exit status 2 and an ``error:`` line, no traceback.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.nets.bot import Bot, make_bot_policy
from scopa_env import scopa_v0
from scopa_env.engine import core, observation, state_moves
from scopa_env.envs.gym import ScopaEnv, ScopaVecEnv

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "agents" / "bots" / "classic"

BAD: dict[str, Any] = {
    "None": None,
    "True": True,
    "-1": -1,
    "2**64": 2**64,
    "2.5": 2.5,
    "nan": float("nan"),
    "inf": float("inf"),
    "str": "x",
    "empty-str": "",
    "empty-list": [],
    "pair": [1, 2],
    "dict": {},
    "bytes": b"\xff\xfe",
    "object": object(),
}


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[Any], object]
    pattern: str
    """What the error message must say (a regex): the argument's name or the problem."""
    valid: frozenset[str] = frozenset()
    """Names of ``BAD`` values the argument accepts."""


def _state() -> core.State:
    return core.reset("classic", [1, 2])


def _raw(**kwargs: Any) -> scopa_v0.raw_env:
    env = scopa_v0.raw_env(**kwargs)
    env.reset(seed=0)
    return env


def _gym() -> ScopaEnv:
    env = ScopaEnv("classic", opponents="random")
    env.reset(seed=0)
    return env


def _vec() -> ScopaVecEnv:
    venv = ScopaVecEnv("classic", 2, seed=0)
    venv.reset()
    return venv


@functools.cache
def _network_bot_dir() -> Path:
    """The shipped classic bot's network as a network-only bot (the shipped card plays pimc: ``Bot.act`` refuses)."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz_bot_"))
    for name in ("policy.npz", "policy.onnx"):
        shutil.copyfile(SHIPPED / name, folder / name)
    card = json.loads((SHIPPED / "model_card.json").read_text())
    card.pop("search")
    (folder / "model_card.json").write_text(json.dumps(card))
    return folder


def _bot() -> Bot:
    return Bot.load(_network_bot_dir(), prefer="numpy")


OBS = observation.observe("classic", _state())
MASK = core.legal_action_mask("classic", _state())
NONE = frozenset({"None"})
SPEC = r"opponent|agent spec|unknown agent"

CASES = [
    # the PettingZoo env
    Case("raw_env(variant)", lambda v: scopa_v0.raw_env(variant=v), "variant"),
    Case("raw_env(render_mode)", lambda v: scopa_v0.raw_env(render_mode=v), "render_mode", NONE),
    Case("raw_env(reward)", lambda v: scopa_v0.raw_env(reward=v), "reward"),
    Case("raw_env(max_hands)", lambda v: scopa_v0.raw_env(max_hands=v), "max_hands", frozenset({"2**64"})),
    Case("raw_env.reset(seed)", lambda v: scopa_v0.raw_env().reset(seed=v), "seed", NONE),
    Case("raw_env.step(action)", lambda v: _raw().step(v), r"card id|still playing"),
    Case("raw_env.observe(agent)", lambda v: _raw().observe(v), "unknown agent"),
    Case("env.step(action)", lambda v: _wrapped().step(v), r"card id|still playing"),
    # the Gymnasium env
    Case("ScopaEnv(variant)", lambda v: ScopaEnv(v), "variant"),
    Case("ScopaEnv(opponents)", lambda v: ScopaEnv("classic", opponents=v), SPEC),
    Case("ScopaEnv(probs)", lambda v: ScopaEnv("classic", probs=v), "probs", NONE),
    Case("ScopaEnv(partner)", lambda v: ScopaEnv("scopa-a-quattro", partner=v), r"partner|agent spec|unknown agent"),
    Case("ScopaEnv(learner_seat)", lambda v: ScopaEnv("classic", learner_seat=v), "learner_seat"),
    Case("ScopaEnv(reward)", lambda v: ScopaEnv("classic", reward=v), "reward"),
    Case("ScopaEnv(episode)", lambda v: ScopaEnv("classic", episode=v), "episode"),
    Case("ScopaEnv(max_hands)", lambda v: ScopaEnv("classic", max_hands=v), "max_hands", frozenset({"2**64"})),
    Case("ScopaEnv(illegal)", lambda v: ScopaEnv("classic", illegal=v), "illegal"),
    Case("ScopaEnv(mask_filter)", lambda v: ScopaEnv("classic", mask_filter=v), "mask_filter", NONE),
    Case("ScopaEnv(render_mode)", lambda v: ScopaEnv("classic", render_mode=v), "render_mode", NONE),
    Case("ScopaEnv.reset(seed)", lambda v: ScopaEnv("classic").reset(seed=v), "seed", NONE),
    Case("ScopaEnv.step(action)", lambda v: _gym().step(v), r"card id", frozenset({"-1"})),  # -1: replaced
    # the vector env
    Case("ScopaVecEnv(num_envs)", lambda v: ScopaVecEnv("classic", v), "num_envs"),
    Case("ScopaVecEnv(seed)", lambda v: ScopaVecEnv("classic", 2, seed=v), "seed", NONE),
    Case(
        "ScopaVecEnv(stacked_masks)",
        lambda v: ScopaVecEnv("classic", 2, stacked_masks=v),
        "stacked_masks",
        frozenset({"True"}),
    ),
    Case("ScopaVecEnv(opponents)", lambda v: ScopaVecEnv("classic", 2, opponents=v), SPEC),
    Case("ScopaVecEnv.seed(seed)", lambda v: _vec().seed(v), "seed", NONE),
    Case("ScopaVecEnv.step(actions)", lambda v: _vec().step(v), "actions", frozenset({"pair"})),  # replaced
    Case("ScopaVecEnv.set_opponents(policies)", lambda v: _vec().set_opponents(v), SPEC),
    # the rules core
    Case("core.reset(rules)", lambda v: core.reset(v, [1]), "variant"),
    Case("core.reset(seeds)", lambda v: core.reset("classic", v), "seeds", frozenset({"pair"})),
    Case("core.reset(batch)", lambda v: core.reset("classic", np.random.default_rng(0), batch=v), "batch"),
    Case("core.step(state)", lambda v: core.step("classic", v, np.zeros(2, dtype=np.int64)), "state"),
    Case("core.step(actions)", lambda v: core.step("classic", _state(), v), "action"),
    Case("core.step(on_illegal)", lambda v: core.step("classic", _state(), MASK.argmax(1), on_illegal=v), "on_illegal"),
    Case(
        "core.step(autoreset)",
        lambda v: core.step("classic", _state(), MASK.argmax(1), autoreset=v),
        "autoreset",
        frozenset({"True"}),
    ),
    Case("observation.observe(rules)", lambda v: observation.observe(v, _state()), "variant"),
    Case("observation.observe(state)", lambda v: observation.observe("classic", v), "state"),
    Case("observation.observe(seats)", lambda v: observation.observe("classic", _state(), seats=v), "seats", NONE),
    Case("core.legal_action_mask(state)", lambda v: core.legal_action_mask("classic", v), "state"),
    Case("state_moves.legal_moves(game)", lambda v: state_moves.legal_moves("classic", _state(), v), "game"),
    # the exported bot
    Case("Bot.load(directory)", lambda v: Bot.load(v), r"directory|does not exist"),
    Case("Bot.load(prefer)", lambda v: Bot.load(SHIPPED, prefer=v), "prefer"),
    Case("Bot.load(rules)", lambda v: Bot.load(SHIPPED, prefer="numpy", rules=v), "variant", NONE),
    Case(
        "Bot.load(any_variant)",
        lambda v: Bot.load(SHIPPED, prefer="numpy", any_variant=v),
        "any_variant",
        frozenset({"True"}),
    ),
    Case("Bot.load(threads)", lambda v: Bot.load(SHIPPED, prefer="numpy", threads=v), "threads"),
    Case("Bot.act(obs)", lambda v: _bot().act(v, MASK), "obs"),
    Case("Bot.act(mask)", lambda v: _bot().act(OBS, v), "mask"),
    Case("Bot.act(rng)", lambda v: _bot().act(OBS, MASK, rng=v), "rng", NONE),
    Case("Bot.act_state(game)", lambda v: _bot().act_state(_state(), v), "game"),
    Case(
        "bot spec path",
        lambda v: make_bot_policy("classic", 0, path=v),
        r"path|export directory|does not exist",
        NONE,  # no path: the variant's shipped bot
    ),
    *(
        Case(
            f"bot spec {opt}",
            lambda v, opt=opt: make_bot_policy("classic", 0, path=str(_network_bot_dir()), **{opt: v}),
            opt,
            ok,
        )
        for opt, ok in (
            ("prefer", frozenset()),
            ("sample", frozenset({"True"})),
            ("any_variant", frozenset({"True"})),
            ("threads", frozenset()),
            ("endgame", frozenset({"None", "2**64"})),  # 2**64: every end game solved exactly
        )
    ),
]


def _wrapped() -> Any:
    env = scopa_v0.env()
    env.reset(seed=0)
    return env


@pytest.mark.filterwarnings("ignore::UserWarning")  # gymnasium's passive checkers warn about odd arguments
@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_entry_point_refuses_a_malformed_value_with_a_clean_error(case: Case, bad: str) -> None:
    value = BAD[bad]
    if bad in case.valid:
        case.call(value)  # an accepted value works
        return
    with pytest.raises((TypeError, ValueError)) as exc:
        case.call(value)
    assert not isinstance(exc.value, (LookupError, AttributeError, ArithmeticError)), repr(exc.value)
    assert re.search(case.pattern, str(exc.value)), f"{case.name}({bad}): {exc.value!r} does not say {case.pattern!r}"


# --------------------------------------------------------------------------------------------------- export CLI


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("fuzz-export")
    (d / "text.zip").write_text("not a zip archive")
    with zipfile.ZipFile(d / "empty.zip", "w"):
        pass
    with zipfile.ZipFile(d / "nometa.zip", "w") as z:
        z.writestr("data", "{}")
    (d / "file").write_text("x")
    (d / "full").mkdir()
    (d / "full" / "other.txt").write_text("x")
    return {p.name: p for p in d.iterdir()} | {"dir": d}


def export_cases(f: dict[str, Path]) -> list[list[str]]:
    ok = str(f["nometa.zip"])  # a file, so the options are what is wrong
    new = str(f["dir"] / "new-bot")
    out = ["--out", new]
    return [
        *([ok, *out, "--tolerance", v] for v in ("-1", "nan", "inf", "-inf", "x", "", "1e400", "2")),
        *([ok, *out, "--check-rows", v] for v in ("-1", "0", "15", "2.5", "x", "", "99999999999999999999")),
        *([ok, *out, "--endgame", v] for v in ("-1", "x", "2.5", "")),
        *([ok, *out, "--name", v] for v in ("", " ")),
        *([ok, *out, "--ratings", v] for v in (str(f["dir"] / "missing.json"), str(f["full"]))),
        [ok, *out, "--ratings"],
        [ok, *out, "--bogus"],
        [ok],
        [],
        [ok, "--out", str(f["file"])],
        [ok, "--out", str(f["file"] / "bot")],
        [ok, "--out", str(f["full"])],
        [str(f["dir"] / "missing.zip"), *out],
        [str(f["dir"]), *out],
        ["", *out],
        [str(f["text.zip"]), *out],
        [str(f["empty.zip"]), *out],
        [str(f["nometa.zip"]), *out],
    ]


def test_export_command_line_refuses_every_malformed_argument(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.nets import export

    for argv in export_cases(files):
        with pytest.raises(SystemExit) as exc:
            export.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2, (argv, err)
        assert "python -m agents.nets.export: error: " in err and "Traceback" not in err, (argv, err)
    assert not (files["dir"] / "new-bot").exists()  # nothing was written
