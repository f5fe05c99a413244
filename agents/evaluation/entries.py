"""The agents of a tournament: agent arguments (``SPEC`` or ``LABEL=SPEC``) turned into uniquely labelled entries,
plugin modules imported so that their agents are registered, and each entry built into a policy with every failure
turned into a ``TournamentError`` that names the agent and the fix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import AgentSpecError, looks_like_path, make_agent
from agents.errors import TournamentError
from agents.nets.compat import check_fit
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__ = [
    "AgentEntry",
    "build_agent",
    "checkpoint_steps",
    "import_plugins",
    "make_entries",
    "parse_agent_arg",
]

_LABEL_RE = re.compile(r"^([A-Za-z][\w.+-]*)=(.+)$")
_STEP_RE = re.compile(r"step[_-]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class AgentEntry:
    """One agent of a tournament."""

    label: str
    """Unique display name."""
    spec: str
    """Spec string for ``agents.base.make_agent`` (a registered name with options, or a file)."""
    steps: int | None = None
    """Training steps, parsed from a checkpoint file name like ``step_000123456.zip``."""


def parse_agent_arg(text: str) -> tuple[str | None, str]:
    """``'cand=runs/x/best.zip'`` -> ``('cand', 'runs/x/best.zip')``; a plain spec gets no label.

    A label is a word (letters, digits, ``_ . + -``) before the first ``=``; ``pimc:worlds=12`` has none.
    """
    text = text.strip()
    m = _LABEL_RE.match(text)
    if m and not Path(text).exists():
        return m.group(1), m.group(2).strip()
    return None, text


def checkpoint_steps(spec: str) -> int | None:
    """Training steps in a checkpoint file name (``.../step_000123456.zip`` -> 123456), else None."""
    if not looks_like_path(spec):
        return None
    m = _STEP_RE.search(Path(spec).stem)
    return int(m.group(1)) if m else None


def _default_label(spec: str) -> str:
    if not looks_like_path(spec):
        return spec
    p = Path(spec)
    return f"{p.parent.parent.name}/{p.stem}" if p.parent.name == "checkpoints" and p.parent.parent.name else p.stem


def make_entries(args: Sequence[str]) -> list[AgentEntry]:
    """Entries for agent arguments (``spec`` or ``label=spec``); repeated labels get ``#2``, ``#3`` suffixes."""
    entries: list[AgentEntry] = []
    used: set[str] = set()
    for text in args:
        label, spec = parse_agent_arg(text)
        if not spec:
            raise TournamentError(f"agent argument {text!r} has an empty spec; write NAME=SPEC or just SPEC")
        base = label or _default_label(spec)
        label = base
        k = 2
        while label in used:
            label = f"{base}#{k}"
            k += 1
        used.add(label)
        entries.append(AgentEntry(label, spec, checkpoint_steps(spec)))
    return entries


def build_agent(entry: AgentEntry, rules: Rules, seed: int | None = None) -> Policy:
    """Build one agent, turning every failure into a ``TournamentError`` that names the agent and the fix."""
    where = f"agent {entry.label!r}" + (f" (spec {entry.spec!r})" if entry.spec != entry.label else "")
    try:
        agent = make_agent(entry.spec, rules, seed)
    except AgentSpecError as e:
        raise TournamentError(f"{where}: {e}") from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise TournamentError(f"{where}: cannot read {e.filename}: {e.strerror}; check the path") from None
    except Exception as e:
        raise TournamentError(
            f"{where} could not be built ({type(e).__name__}: {e}); check the spec and its options "
            "(evaluate.py --list-agents shows the known agents)"
        ) from e
    if not isinstance(agent, Policy):
        raise TournamentError(
            f"{where}: the factory returned {type(agent).__name__}, not a scopa_env.games.policy.Policy"
        )
    made: dict[str, Any] = {}
    agent_rules = getattr(agent, "rules", rules)
    if isinstance(agent_rules, Rules):
        made["variant"] = agent_rules.name
    if getattr(agent, "obs_version", None) is not None:
        made["obs_version"] = agent.obs_version  # type: ignore[attr-defined]
    check_fit(where, made, rules, error=TournamentError)
    return agent


def import_plugins(plugins: Sequence[str]) -> None:
    """Import the ``--plugin`` modules (which register custom agents); a failure is a ``TournamentError``."""
    import importlib

    for mod in plugins:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise TournamentError(f"plugin module {mod!r} could not be imported ({e}); check --plugin") from None
        except Exception as e:
            raise TournamentError(
                f"plugin module {mod!r} failed while importing ({type(e).__name__}: {e}); fix the module or drop "
                "--plugin"
            ) from e
