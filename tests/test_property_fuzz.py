"""Property-based fuzzing (hypothesis): random legal and illegal action sequences on every variant and env face,
hostile JSON for saved states, records and model cards, random text for the commands' options. Each must give a
result or a clear error (a ``ValueError`` / ``TypeError`` family exception, or exit status 2 with an ``error:``
line), never a traceback or a changed state.

The default suite runs a few dozen examples per property; ``-m slow`` runs the long version
(``SCOPA_FUZZ_EXAMPLES``, default 500 there).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopa_env.engine import core
from scopa_env.rules import VARIANTS, get_rules
from tests.helpers import json_scalars

ROOT = Path(__file__).resolve().parents[1]
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(
    max_examples=int(os.environ.get("SCOPA_FUZZ_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
CLEAN_ERRORS = (ValueError, TypeError)
"""What a refused input may raise: ``IllegalActionError``, ``StateFormatError``, ``RecordError``, ``BotError``,
``AgentSpecError`` are all ``ValueError`` subclasses."""

JSON = st.recursive(
    json_scalars(12),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=25,
)
"""Any JSON value (NaN and infinities included, as Python's json module reads them)."""

ACTION = st.one_of(
    st.tuples(st.just("legal"), st.integers(0, 10_000)),  # the k-th legal action (mod their number)
    st.tuples(st.just("any"), st.integers(-3, 60)),  # any card id, mostly illegal, some out of range
    st.tuples(st.just("odd"), st.sampled_from([None, 2.5, "7d", float("nan"), [1, 2], True, 2**64])),
)


def _snapshot(state: core.State) -> dict[str, np.ndarray]:
    return {k: np.array(v, copy=True) for k, v in vars(state).items() if isinstance(v, np.ndarray)}


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _run_core(variant: str, seed: int, actions: list[tuple[str, Any]]) -> None:
    rules = get_rules(variant)
    state = core.reset(rules, [seed])
    for kind, value in actions:
        if state.done[0]:
            break
        mask = core.legal_action_mask(rules, state)[0]
        legal = np.flatnonzero(mask)
        action = int(legal[value % legal.size]) if kind == "legal" else value
        is_legal = kind == "legal" or (type(action) is int and 0 <= action < mask.size and bool(mask[action]))
        before = _snapshot(state)
        if is_legal:
            core.step(rules, state, np.array([action]))
        else:
            with pytest.raises(CLEAN_ERRORS):
                core.step(rules, state, np.array([action], dtype=object) if kind == "odd" else np.array([action]))
            assert _same(before, _snapshot(state)), f"a refused action {action!r} changed the state"


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "simple-8"])  # simple-8 (52 cards): -m slow
@FAST
@given(seed=st.integers(0, 2**32), actions=st.lists(ACTION, max_size=60))
def test_core_refuses_illegal_actions_and_keeps_its_state(variant: str, seed: int, actions: list) -> None:
    _run_core(variant, seed, actions)


def _run_gym(variant: str, seed: int, actions: list[tuple[str, Any]]) -> None:
    from scopa_env.envs.gym import ScopaEnv

    env = ScopaEnv(variant, opponents="random", illegal="raise")
    obs, _ = env.reset(seed=seed)
    for kind, value in actions:
        mask = env.action_masks()
        legal = np.flatnonzero(mask)
        action = int(legal[value % legal.size]) if kind == "legal" else value
        is_legal = kind == "legal" or (type(action) is int and 0 <= action < mask.size and bool(mask[action]))
        if not is_legal:
            with pytest.raises(CLEAN_ERRORS):
                env.step(action)
            assert np.array_equal(env.action_masks(), mask), f"a refused action {action!r} changed the env"
            continue
        obs, reward, terminated, truncated, _ = env.step(action)
        assert np.isfinite(reward) and obs.shape == env.observation_space.shape
        if terminated or truncated:
            obs, _info = env.reset(seed=seed + 1)


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "cirulla", "simple-6-teams"])
@FAST
@given(seed=st.integers(0, 2**31), actions=st.lists(ACTION, max_size=40))
def test_gymnasium_env_refuses_illegal_actions_and_keeps_its_state(variant: str, seed: int, actions: list) -> None:
    _run_gym(variant, seed, actions)


def _run_aec(variant: str, seed: int, actions: list[tuple[str, Any]], parallel: bool) -> None:
    from scopa_env import scopa_v0

    if parallel:
        penv = scopa_v0.parallel_env(variant=variant)
        _, infos = penv.reset(seed=seed)
        for kind, value in actions:
            if not penv.agents:
                break
            acting = [a for a in penv.agents if infos[a]["action_mask"].any()]
            step = {}
            for agent in penv.agents:
                mask = infos[agent]["action_mask"]
                legal = np.flatnonzero(mask)
                step[agent] = int(legal[value % legal.size]) if kind == "legal" and legal.size else value
            try:
                _observations, rewards, _terms, _truncs, infos = penv.step(step)
            except CLEAN_ERRORS:
                continue
            assert acting and all(np.isfinite(r) for r in rewards.values())
        return
    env = scopa_v0.env(variant=variant)
    env.reset(seed=seed)
    for kind, value in actions:
        if not env.agents:
            break
        observation, _reward, termination, truncation, _info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        legal = np.flatnonzero(observation["action_mask"])
        action = int(legal[value % legal.size]) if kind == "legal" else value
        try:
            env.step(action)
        except CLEAN_ERRORS:
            observation2, *_ = env.last()  # a refused action: the same agent still to act, the same view
            assert np.array_equal(observation2["action_mask"], observation["action_mask"])


@pytest.mark.filterwarnings("ignore::UserWarning")  # PettingZoo warns on each illegal move it punishes
@pytest.mark.parametrize("parallel", [False, True], ids=["aec", "parallel"])
@pytest.mark.parametrize("variant", ["classic", "scopa-a-quattro", "cirulla-3"])
@FAST
@given(seed=st.integers(0, 2**31), actions=st.lists(ACTION, max_size=40))
def test_pettingzoo_envs_give_a_result_or_a_clean_error(variant: str, parallel: bool, seed: int, actions: list) -> None:
    _run_aec(variant, seed, actions, parallel)


# --------------------------------------------------------------------------------------------------- hostile JSON


def _valid_state_dict(variant: str = "classic") -> dict[str, Any]:
    from scopa_env.records.state_io import state_to_dict

    rules = get_rules(variant)
    state = core.reset(rules, [3])
    return state_to_dict(rules, state)


def _mutate(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """``value`` with one part (a key's value, a list item, or the whole) replaced by random JSON."""
    if depth > 6 or not isinstance(value, (dict, list)) or not value or data.draw(st.integers(0, 3)) == 0:
        return data.draw(JSON)
    if isinstance(value, dict):
        key = data.draw(st.sampled_from(sorted(value)))
        out = dict(value)
        if data.draw(st.booleans()):
            out[key] = _mutate(value[key], data, depth + 1)
        else:
            del out[key]
        return out
    i = data.draw(st.integers(0, len(value) - 1))
    return [*value[:i], _mutate(value[i], data, depth + 1), *value[i + 1 :]]


@FAST
@given(data=st.data())
def test_saved_states_give_a_state_or_a_format_error(data: st.DataObject) -> None:
    from scopa_env.records.state_io import StateFormatError, state_from_json

    saved = _mutate(_valid_state_dict(data.draw(st.sampled_from(["classic", "scopa-a-quattro", "cirulla"]))), data)
    for form in (saved, json.dumps(saved), json.dumps(saved).encode()):
        try:
            state = state_from_json(form)
        except StateFormatError:
            continue
        assert isinstance(state, core.State) and state.batch_size == 1


@FAST
@given(raw=st.binary(max_size=300) | st.text(max_size=300))
def test_saved_states_from_random_bytes(raw: bytes | str) -> None:
    from scopa_env.records.state_io import StateFormatError, state_from_json

    try:
        state_from_json(raw)
    except StateFormatError:
        pass


@functools.cache
def _valid_record_text(variant: str) -> str:
    from agents.cli.record import play_random_records

    return json.dumps(next(iter(play_random_records(variant, 1, 5, batch=1))))


def _valid_record(variant: str) -> dict[str, Any]:
    return dict(json.loads(_valid_record_text(variant)))


@FAST
@given(data=st.data())
def test_records_replay_or_give_a_record_error(data: st.DataObject) -> None:
    from scopa_env.oracle.record_check import RecordError, replay_record
    from scopa_env.records.state_io import StateFormatError, state_from_record

    record = _mutate(_valid_record(data.draw(st.sampled_from(["classic", "cirulla"]))), data)
    try:
        replay_record(record)
    except RecordError:
        pass
    try:
        state_from_record(json.dumps(record))
    except StateFormatError:
        pass


@FAST
@given(lines=st.lists(st.binary(max_size=200), max_size=5))
def test_record_files_of_random_bytes_are_checked_line_by_line(tmp_path_factory: Any, lines: list[bytes]) -> None:
    from scopa_env.oracle.record_check import RecordFileError, check_file

    path = tmp_path_factory.mktemp("rec") / "games.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        count, reason = check_file(path)
    except RecordFileError as e:  # not a text file of records at all (binary, compressed): said as such
        assert "not a .jsonl file" in str(e)
        return
    assert count >= 0 and (reason is None or isinstance(reason, str))


@FAST
@given(data=st.data())
def test_model_cards_load_or_give_a_bot_error(tmp_path_factory: Any, data: st.DataObject) -> None:
    from agents.nets.bot import Bot
    from agents.nets.bot_search import BotError

    folder = tmp_path_factory.mktemp("bot")
    bot_dir = Path(shutil.copytree(ROOT / "agents" / "bots" / "classic", folder / "classic"))
    card = json.loads((bot_dir / "model_card.json").read_text())
    (bot_dir / "model_card.json").write_text(json.dumps(_mutate(card, data)))
    try:
        bot = Bot.load(bot_dir, prefer="numpy")
    except BotError:
        return
    obs = np.zeros((1, bot.obs_size), dtype=np.float32)
    mask = np.ones((1, bot.num_cards), dtype=bool)
    act = bot.act_network if bot.search is not None else bot.act  # the shipped classic bot plays pimc: its network
    assert act(obs, mask).shape == (1,)


# ------------------------------------------------------------------------------------------------ command options


class _Accepted(Exception):
    """Raised by the tripwires: the command accepted its options and was about to do the work."""


def _trip(*args: object, **kwargs: object) -> None:
    raise _Accepted


OPTION_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "-1", "0", "nan", "inf", "1e400", "2**64", "../x", "/dev/zero", "\x00", "a=b", "🂡"]),
    st.integers(-(2**65), 2**65).map(str),
)


COMMANDS = ("train", "evaluate", "record", "export", "play", "bench", "web", "leaderboard")
"""Every installed command (scopa-train, -evaluate, -record, -export, -play, -bench, -web) and the leaderboard."""


def _options(main: Any) -> list[str]:
    """The long options a command's ``--help`` lists."""
    import contextlib
    import io
    import re

    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
        main(["--help"])
    return sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text.getvalue())) - {"--help"})


@functools.cache
def _command_cases() -> dict[str, tuple[Any, list[str]]]:
    import evaluate
    import train
    from agents.cli import record
    from agents.nets import export
    from agents.play import terminal as play
    from agents.play.web import server
    from scopa_bench import env_speed, leaderboard

    mains = {
        "train": train.main,
        "evaluate": evaluate.main,
        "record": record.main,
        "export": export.main,
        "play": play.main,
        "bench": env_speed.main,
        "web": server.main,
        "leaderboard": leaderboard.main,
    }
    return {name: (main, _options(main)) for name, main in mains.items()}


def test_every_command_has_options_to_fuzz() -> None:
    for name, (_, options) in _command_cases().items():
        assert len(options) >= 3, (name, options)


@pytest.mark.parametrize("command", COMMANDS)
@FAST
@given(data=st.data())
def test_random_option_values_give_a_result_or_one_error_line(
    command: str, data: st.DataObject, tmp_path_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import agents.cli.record
    import agents.evaluation.tournament
    import agents.nets.export
    import agents.play.terminal
    import agents.play.web.server
    import agents.training.trainer
    import scopa_bench.env_speed
    import scopa_bench.leaderboard

    main, names = _command_cases()[command]
    argv: list[str] = []
    for _ in range(data.draw(st.integers(1, 3))):
        argv += [data.draw(st.sampled_from(names)), data.draw(OPTION_TEXT)]
    if command == "export":
        argv = [str(ROOT / "agents" / "bots" / "classic"), *argv]
    if command == "leaderboard":  # never write the project's page: the tripwire stops before, but be sure
        argv += ["--doc", "lb.md", "--plot", "lb.png", "--out", "lb"]
    work = tmp_path_factory.mktemp("cli")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setattr(agents.training.trainer.Trainer, "create", _trip)
        mp.setattr(agents.training.trainer.Trainer, "resume", _trip)
        mp.setattr(agents.evaluation.tournament, "play", _trip)
        mp.setattr(agents.cli.record, "play_random_records", _trip)
        mp.setattr(agents.nets.export, "export_bot", _trip)
        mp.setattr(agents.nets.export, "export_checkpoint", _trip)
        mp.setattr(agents.play.terminal, "run", _trip)
        mp.setattr(agents.play.web.server, "WebServer", _trip)
        mp.setattr(scopa_bench.env_speed, "_run", _trip)
        mp.setattr(scopa_bench.leaderboard, "_play_variant", _trip)
        try:
            code: Any = main(argv)
        except SystemExit as e:
            code = e.code
        except _Accepted:
            code = 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out, f"{argv!r}:\n{err}"
    if code not in (0, None):
        assert code in (1, 2), f"{argv!r}: exit status {code}\n{err}"
        assert "error" in err.lower(), f"{argv!r}: exit status {code} without a message\n{err}"


# ----------------------------------------------------------------------------------------------- the long versions


@pytest.mark.slow
@pytest.mark.parametrize(("run", "max_seed"), [(_run_core, 2**32), (_run_gym, 2**31)], ids=["core", "gymnasium"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_long(variant: str, run: Callable[[str, int, list], None], max_seed: int) -> None:
    """The core and the Gymnasium env on every variant, with longer action lists and ``LONG``'s examples."""

    @LONG
    @given(seed=st.integers(0, max_seed), actions=st.lists(ACTION, max_size=120))
    def fuzz(seed: int, actions: list) -> None:
        run(variant, seed, actions)

    fuzz()
