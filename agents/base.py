"""The policy interface shared by the envs, the tournament (``evaluate.py``) and the trainer.

A policy acts on a *batch* of decisions at once. Each decision row comes with the acting seat's observation and
legal-action mask; agents that reason about the game (rule-based, search) also get the batched core ``State`` and
the index of each row's game in it. They may read only what the acting seat may know (RULES.md section 7): its own
hand, the table, the piles, scores, hand sizes, the stock size, and the set of unseen cards — never other hands or
the stock order. Search agents must resample those before looking ahead.

Agents are built from short spec strings so that every command-line tool accepts them::

    make_agent("random", "classic", seed=0)
    make_agent("pimc:worlds=12,depth=5", "classic")
    make_agent("runs/classic__default__0__.../best.zip", "classic")

Any agent also plays in another library's loop: ``act_env(agent, env)`` gives its action in a Scopa env (AEC,
parallel or Gymnasium; ``scopa_env.envs.interop``, re-exported here), ``act_observation`` for an observation alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from agents.cli.shell import python_command
from agents.errors import ScopaError
from scopa_env.games.policy import Policy, set_spec_resolver
from scopa_env.rules import Rules, get_rules

__all__ = [
    "AGENT_FILE_SUFFIXES",
    "MODEL_CARD",
    "AgentSpecError",
    "PathKind",
    "act_env",
    "act_observation",
    "load_network",
    "looks_like_path",
    "make_agent",
    "parse_spec",
    "path_kind",
    "register_agent",
    "registered_agents",
    "set_network_loader",
]


class AgentSpecError(ScopaError, ValueError):
    """A spec string that names no agent, has bad options, or points at an unusable file."""


_REGISTRY: dict[str, tuple[Callable[..., Policy], str]] = {}


def register_agent(name: str, help: str = "") -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Decorator: make ``factory(rules, seed, **options)`` available as spec ``name[:k=v,...]``."""

    def deco(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        _REGISTRY[name] = (factory, help)
        return factory

    return deco


def registered_agents() -> dict[str, str]:
    """Known spec names and their one-line help."""
    _load_builtin()
    return {k: h for k, (_, h) in sorted(_REGISTRY.items())}


def _convert(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    return value


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``'pimc:worlds=12,depth=5'`` -> ``('pimc', {'worlds': 12, 'depth': 5})``."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    opts: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, val = item.partition("=")
        if not eq or not key:
            raise AgentSpecError(f"agent spec {spec!r}: option {item!r} must look like key=value")
        opts[key.strip().replace("-", "_")] = _convert(val.strip())
    return name.strip(), opts


_LIGHT_MODULES = (
    "agents.baselines.random_agent",
    "agents.baselines.greedy",
    "agents.search.expert",
    "agents.search.pimc",
    "agents.search.ismcts",
    "agents.nets.bot",
    "agents.nets.netsearch",
    "agents.nets.vpimc",
)
_TORCH_MODULES = ("agents.nets.checkpoint", "agents.nets.rllib")  # imports torch: loaded only when a spec needs it


def _load_builtin(with_torch: bool = True) -> None:
    import importlib

    for mod in _LIGHT_MODULES + (_TORCH_MODULES if with_torch else ()):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:  # a module not written yet, or an optional dependency missing
            if e.name != mod:
                raise


_NETWORK_LOADER: Callable[[Rules, str], Any] | None = None


def set_network_loader(loader: Callable[[Rules, str], Any]) -> None:
    """Install the function that opens a network for a search (``agents.nets.netsearch`` installs its cached opener)."""
    global _NETWORK_LOADER
    _NETWORK_LOADER = loader


def load_network(rules: Rules, path: str) -> Any:
    """The network of a bot directory or a ``train.py`` checkpoint as a search evaluator (``NetEvaluator``, cached):
    the one public way for a search to open a network (a playing agent: ``make_agent``; layers: ``open_network``).

    How a search below the nets floor (``pimc:model=PATH``) gets a network without importing ``agents.nets``: the
    loader is registered like the agents are, by ``agents.nets.netsearch`` when the registry imports it.
    """
    _load_builtin(with_torch=False)
    if _NETWORK_LOADER is None:
        raise AgentSpecError(f"{path}: loading a network needs agents.nets.netsearch, which failed to import")
    return _NETWORK_LOADER(rules, path)


def _probe(path: Path, test: str) -> bool:
    """``path.is_dir()`` / ``is_file()`` / ``exists()``, False for a name the OS refuses (too long, bad bytes)."""
    try:
        return bool(getattr(path, test)())
    except (OSError, ValueError):
        return False


AGENT_FILE_SUFFIXES = (".zip", ".onnx", ".npz", ".pt")
"""Endings that make a spec a path even without a folder in it: a checkpoint (``.zip``), a bot's network
(``.onnx``, ``.npz``), a torch file (``.pt``)."""
MODEL_CARD = "model_card.json"
"""The file that makes a directory a bot export directory (``agents.nets.bot`` writes and reads it)."""
PathKind = Literal["bot", "dir", "bot_file", "checkpoint", "file"]


def looks_like_path(spec: str) -> bool:
    """Whether a spec names a file or a folder rather than a registered agent: it holds a path separator, ends in
    one of ``AGENT_FILE_SUFFIXES`` or exists."""
    return any(ch in spec for ch in "/\\") or spec.endswith(AGENT_FILE_SUFFIXES) or _probe(Path(spec), "exists")


def path_kind(spec: str | Path) -> PathKind | None:
    """The one path sniffer: what a spec (or an agent's ``path`` option) names on disk, or None for no path.

    ``"bot"``: a bot export directory (it holds ``model_card.json``); ``"dir"``: any other directory; ``"bot_file"``:
    a bot's ``.onnx`` / ``.npz`` (its directory is the bot); ``"checkpoint"``: a ``train.py`` checkpoint (``.zip``);
    ``"file"``: another file path (agents may register loaders for its suffix).
    """
    path = Path(spec)
    if _probe(path, "is_dir"):
        return "bot" if _probe(path / MODEL_CARD, "is_file") else "dir"
    if not looks_like_path(str(spec)):
        return None
    if path.suffix in (".onnx", ".npz"):
        return "bot_file"
    return "checkpoint" if path.suffix.lower() == ".zip" else "file"


def _from_path(spec: str, rules: Rules, seed: int | None) -> Policy | None:
    """The agent a path spec names (a bot directory, an export file, a checkpoint), or None if it is no path."""
    kind = path_kind(spec)
    if kind is None:
        return None
    if kind == "dir":
        raise AgentSpecError(
            f"agent {spec!r} is a directory without a {MODEL_CARD}, so it is not a bot export directory; "
            "give a checkpoint file (runs/<run>/best.zip) or export one first: "
            f"{python_command('-m', 'agents.nets.export', 'runs/<run>/best.zip', '--out', 'DIR')}"
        )
    if kind in ("bot", "bot_file") and "bot" in _REGISTRY:
        factory, _ = _REGISTRY["bot"]
        return factory(rules, seed, path=spec if kind == "bot" else str(Path(spec).parent))
    if "file" not in _REGISTRY:
        raise AgentSpecError(
            f"agent {spec!r}: loading checkpoints needs agents.nets.checkpoint, which failed to import"
        )
    factory, _ = _REGISTRY["file"]
    return factory(rules, seed, path=spec)


def make_agent(spec: str | Policy, rules: Rules | str, seed: int | None = None) -> Policy:
    """Build an agent from a spec string.

    A spec is a registered name with options (``pimc:worlds=12,depth=5``), a ``train.py`` checkpoint
    (``runs/.../best.zip``) or an export directory holding a ``model_card.json`` (``agents/bots/classic``).
    """
    rules = get_rules(rules)
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec must be a non-empty string, got {spec!r}")
    name = spec.split(":", 1)[0].strip()
    _load_builtin(with_torch=False)
    if len(spec) > 4096 or "\0" in spec:
        raise AgentSpecError(
            f"agent spec {spec[:60]!r}... is not a name, a spec or a path (too long or holds a NUL byte); give e.g. "
            "'greedy', 'pimc:worlds=64' or runs/<run>/best.zip"
        )
    if name not in _REGISTRY and not _probe(Path(spec), "is_dir"):
        _load_builtin(with_torch=True)  # checkpoints and the neural specs need torch
    if name not in _REGISTRY:
        try:
            agent = _from_path(spec, rules, seed)
        except OSError as e:  # a path the OS refuses or cannot read: name it and say what it must be
            raise AgentSpecError(
                f"agent {spec[:200]!r}: cannot read it ({e.strerror or e}); give a checkpoint file "
                "(runs/<run>/best.zip), a bot directory or an agent name"
            ) from None
        if agent is not None:
            return agent
    name, opts = parse_spec(spec)
    if name not in _REGISTRY:
        known = ", ".join(sorted(k for k in _REGISTRY if k != "file"))
        raise AgentSpecError(
            f"unknown agent {name!r} in spec {spec!r}; known agents: {known}, a checkpoint path (.zip) "
            "or an export directory"
        )
    factory, _ = _REGISTRY[name]
    try:
        agent = factory(rules, seed, **opts)
    except AgentSpecError:
        raise
    except (TypeError, ValueError) as e:  # an option the agent refuses, e.g. pimc:worlds=-1 or worlds=abc
        shown = ", ".join(f"{k}={v!r}" for k, v in opts.items()) or "none"
        raise AgentSpecError(
            f"agent spec {spec!r}: bad option ({e}); options given: {shown} (see evaluate.py --list-agents)"
        ) from None
    agent.name = spec
    return agent


def act_env(policy: Policy, env: Any, agent: str | None = None) -> Any:
    """``policy``'s action in a Scopa env (AEC, parallel, Gymnasium or vector): ``scopa_env.envs.interop.act_env``.

    Build the agent once (``make_agent(spec, variant, seed)``) and call this at each of its turns; the agent reads
    its own game's state inside the env, the caller gets the action only.
    """
    from scopa_env.envs.interop import act_env as _act_env  # the env faces load only when an agent plays in one

    return _act_env(policy, env, agent)


def act_observation(policy: Policy, rules: Rules | str, obs: Any, mask: Any = None) -> Any:
    """``policy``'s action for an observation alone (state-free agents): ``scopa_env.envs.interop.act_observation``."""
    from scopa_env.envs.interop import act_observation as _act_observation

    return _act_observation(policy, rules, obs, mask)


set_spec_resolver(make_agent)  # the envs (scopa_env) build policies from spec strings through it
