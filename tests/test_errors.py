"""One base for the project's errors, and one type for one kind of mistake.

Every error class of ``agents`` derives from ``agents.errors.ScopaError`` (beside the built-in base its callers
catch), so one ``except ScopaError`` catches them all; every error class of ``scopa_env`` derives from
``scopa_env.errors.ScopaEnvError``, and so does ``ScopaError``: one ``except ScopaEnvError`` catches every error
of the project. A bad agent option raises ``AgentSpecError`` (a ``ValueError``) whichever agent it is given to.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from agents.base import AgentSpecError, make_agent
from agents.cli.settings import ConfigError, YamlFileError
from agents.errors import ScopaError
from scopa_env.engine.core import IllegalActionError
from scopa_env.engine.kernel import KernelUnavailableError
from scopa_env.errors import ScopaEnvError

ROOT = Path(__file__).resolve().parents[1]
NOT_ERRORS = {"StopTraining", "EndOfInput", "QuitGame", "SignalStop", "TournamentInterrupted", "ReviewStopped"}
"""Control-flow exceptions: they stop a loop or a run and are not mistakes to report."""


def _modules(package: str = "agents") -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] != "__main__":
            out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_error_class_of_the_package_derives_from_scopa_error() -> None:
    strays = []
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency (e.g. Ray, onnxruntime) missing here
            continue
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name or not issubclass(cls, BaseException) or cls_name in NOT_ERRORS:
                continue
            if not issubclass(cls, ScopaError):
                strays.append(f"{name}.{cls_name}")
    assert not strays, f"error classes that do not derive from agents.errors.ScopaError: {strays}"


def test_the_error_base_keeps_the_builtin_bases() -> None:
    assert issubclass(AgentSpecError, ScopaError) and issubclass(AgentSpecError, ValueError)


def test_every_error_class_of_the_envs_derives_from_scopa_env_error() -> None:
    strays, found = [], []
    for name in _modules("scopa_env"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency (e.g. Ray) missing here
            continue
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name or not issubclass(cls, BaseException):
                continue
            found.append(cls_name)
            if not issubclass(cls, ScopaEnvError):
                strays.append(f"{name}.{cls_name}")
    assert not strays, f"error classes that do not derive from scopa_env.errors.ScopaEnvError: {strays}"
    expected = {"IllegalActionError", "RecordError", "StateFormatError", "KernelUnavailableError"}
    assert expected <= set(found)


def test_one_except_catches_every_error_of_the_project() -> None:
    """The agents' base derives from the envs' root; the envs' errors keep their built-in bases."""
    assert issubclass(ScopaError, ScopaEnvError) and issubclass(AgentSpecError, ScopaEnvError)
    assert issubclass(IllegalActionError, ValueError) and issubclass(KernelUnavailableError, RuntimeError)
    assert issubclass(ConfigError, ValueError) and issubclass(YamlFileError, ScopaError)  # the settings' errors
    for error in (AgentSpecError("bad spec"), IllegalActionError("bad action")):
        with pytest.raises(ScopaEnvError):
            raise error


@pytest.mark.parametrize(
    "spec",
    [
        "greedy:worlds=3",  # an option the agent does not have
        "expert:endgame=-1",
        "pimc:worlds=0",
        "pimc:depth=0",
        "pimc:rollout=magic",
        "pimc:model=no/such/net",
        "ismcts:iters=0",
        "ismcts:c=-1",
        "ismcts:rollout=magic",
        "az:path=agents/bots/classic,worlds=0",
        "bot:endgame=-1",
    ],
)
def test_a_bad_agent_option_raises_agent_spec_error(spec: str) -> None:
    with pytest.raises(AgentSpecError):
        make_agent(spec, "classic", seed=0)
