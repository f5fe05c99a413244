"""Running the tournament's tasks, the warm start's teacher games and the trainer's evaluations on a Ray cluster
(optional: ``pip install 'scopa[ray]'``).

``evaluate.py --ray local|auto|ADDRESS`` plays the tournament's tasks (``agents.evaluation.schedule.Task``: ``batch``
deals of one pairing, every rotation) as Ray tasks instead of in a local process pool: ``RayTaskRunner`` has the
interface of ``agents.evaluation.schedule.TaskRunner`` (results yielded as tasks finish, the progress bar ticked per
task), so the tournament reduces them in schedule order exactly as before. A Ray worker builds its agents itself from
the entries (specs), never from agents pickled elsewhere, and every agent seed comes from the task
(``agents.evaluation.schedule.agent_seed``), so the results are those of ``--workers 1`` whichever node plays which
task. A worker process that dies (killed, out of memory, its node lost) has its task run again, up to
``RAY_MAX_RETRIES`` times.

``connect`` opens the session: ``local`` starts a Ray instance on this machine (stopped afterwards), ``auto`` joins
the cluster of this machine (``ray start --head`` / ``RAY_ADDRESS``), anything else is a cluster address
(``HOST:PORT`` or ``ray://HOST:PORT``). Inside a Ray session opened by the caller (``ray.init`` before), that session
is used and left open.

Plugin modules (``--plugin``) and checkpoint files must be importable / readable on every node: install the plugin
module on the nodes (with ``--ray local`` Ray gives the workers this process's import path, as the process pool
does) and give checkpoint paths that exist on every node (a shared file system). See docs/ray.md.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agents.errors import TournamentError
from agents.evaluation.entries import AgentEntry, import_plugins
from agents.evaluation.schedule import (
    Task,
    TaskResult,
    play_task,
    single_thread,
    task_agents,
    task_games,
    worker_agent,
)
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules, get_rules

__all__ = [
    "RAY_INSTALL_HINT",
    "RAY_MAX_RETRIES",
    "RayMissingError",
    "RayTaskRunner",
    "check_ray_address",
    "cluster_cpus",
    "connect",
    "probe_address",
    "ray_error",
    "require_ray",
]

RAY_INSTALL_HINT = "pip install 'scopa[ray]' (in a checkout: pip install -e '.[ray]')"
"""How to install the optional Ray dependency (printed when ``--ray`` is given without it)."""
RAY_MAX_RETRIES = 3
"""Times a Ray task is run again after its worker process died (killed, out of memory, its node lost)."""

_ADDRESS_RE = re.compile(r"^(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


class RayMissingError(TournamentError):
    """``--ray`` was given but Ray is not installed; the message says how to install it."""


def check_ray_address(value: str) -> str:
    """``value`` as a Ray address: ``local``, ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; raises ``ValueError``
    saying what is wrong otherwise."""
    text = value.strip()
    if text.lower() in ("local", "auto"):
        return text.lower()
    if not _ADDRESS_RE.match(text):
        raise ValueError(
            f"got {value!r}, not a Ray address; give local (start Ray on this machine), auto (join this machine's "
            "cluster) or a cluster address HOST:PORT or ray://HOST:PORT, e.g. 127.0.0.1:6379"
        )
    return text


def require_ray() -> Any:
    """The ``ray`` module, or ``RayMissingError`` saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise RayMissingError(
            f"--ray needs the optional Ray package, which is not installed ({e}); {RAY_INSTALL_HINT}"
        ) from None
    return ray


def probe_address(address: str, timeout: float = 5.0) -> None:
    """For a ``HOST:PORT`` address, check that something answers there (Ray itself would retry for minutes);
    ``local`` and ``auto`` pass. Raises ``TournamentError`` saying how to fix it."""
    if address in ("local", "auto"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise TournamentError(
            f"nothing answers at the Ray address {address} ({e.strerror or e}); check the address (ray status on the "
            "head node prints it), start the cluster with 'ray start --head', or use --ray local"
        ) from None


@contextmanager
def connect(address: str, num_cpus: int | None = None) -> Iterator[Any]:
    """A Ray session for ``address`` (``check_ray_address``); yields the ``ray`` module.

    ``local`` starts a Ray instance here with ``num_cpus`` CPUs (None: all cores) and stops it on exit; ``auto`` and an
    address connect to a running cluster and disconnect on exit (the cluster keeps running). If this process is
    already connected (``ray.init`` by the caller), that session is used and left open. Errors say how to fix them.
    """
    ray = require_ray()
    address = check_ray_address(address)
    if ray.is_initialized():
        yield ray
        return
    probe_address(address)
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True, "configure_logging": False}
    try:
        if address == "local":
            ray.init(address="local", num_cpus=num_cpus, **kwargs)  # a new instance, even if a cluster runs here
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if address == "local":
            raise TournamentError(f"cannot start Ray on this machine ({first}); see docs/ray.md") from None
        where = "this machine's Ray cluster" if address == "auto" else f"the Ray cluster at {address}"
        raise TournamentError(
            f"cannot connect to {where} ({first}); start one with 'ray start --head' (and 'ray start --address "
            "HEAD:6379' on the other nodes), or use --ray local to start Ray on this machine only"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cluster_cpus(ray: Any) -> int:
    """CPUs of the connected cluster (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def ray_error(ray: Any, err: BaseException, what: str) -> TournamentError:
    """A ``TournamentError`` for a failed Ray task (``what``: which one): the task's own error if it raised one, else
    the worker's death after its retries."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, TournamentError):
        return TournamentError(str(cause))
    if isinstance(err, ray.exceptions.RayTaskError):
        shown = f"{type(cause).__name__}: {cause}" if cause is not None else str(err).strip().splitlines()[-1]
        return TournamentError(f"{what} failed on a Ray worker ({shown}); rerun with --workers 1 to debug it here")
    return TournamentError(
        f"{what}: its Ray worker died {RAY_MAX_RETRIES + 1} times ({type(err).__name__}); check the workers' logs "
        "(ray logs, /tmp/ray/session_latest/logs) — out of memory? — or rerun with --workers 1"
    )


# --------------------------------------------------------------------------------------------------- workers

_CACHE: dict[tuple[Any, ...], tuple[Rules, dict[int, Policy]]] = {}
"""In a Ray worker process: the rules and agents built so far, per tournament context (variant, entries, seed,
plugins)."""


def _worker_agent(key: tuple[Any, ...], entries: Sequence[AgentEntry], i: int) -> tuple[Rules, Policy]:
    variant, _, seed, plugins = key
    if key not in _CACHE:
        single_thread()
        import_plugins(list(plugins))
        _CACHE.clear()  # one tournament at a time: drop the agents of an earlier one
        _CACHE[key] = (get_rules(variant), {})
    rules, agents = _CACHE[key]
    if i not in agents:
        agents[i] = worker_agent(
            entries[i],
            rules,
            seed,
            "on a Ray worker",
            "An agent registered only in the main script is unknown to the workers: put it in a module importable on "
            "every node and pass --plugin MODULE, or use --workers 1 without --ray",
        )
    return rules, agents[i]


def play_task_remote(
    variant: str,
    entries: tuple[AgentEntry, ...],
    seed: int,
    mode: str,
    plugins: tuple[str, ...],
    task: Task,
    record: bool,
) -> TaskResult:
    """Play one tournament task in a Ray worker (its agents built there from ``entries``, cached per worker)."""
    key = (variant, entries, seed, plugins)
    rules = _worker_agent(key, entries, task.a)[0]
    agents = task_agents(task, lambda i: _worker_agent(key, entries, i)[1])
    return play_task(rules, agents, task, seed, mode, record)


class RayTaskRunner:
    """Runs tournament tasks as Ray tasks, yielding their results as they finish
    (``agents.evaluation.schedule.TaskRunner``'s interface).

    ``address`` is the cluster (``connect``), ``workers`` the most tasks in flight at once (0: the cluster's CPUs;
    resolved on entering, in ``self.workers``), ``bar`` a progress bar ticked by the games of each finished task.
    """

    def __init__(
        self,
        rules: Rules,
        entries: list[AgentEntry],
        *,
        address: str,
        seed: int,
        mode: str,
        plugins: list[str],
        record: bool,
        workers: int,
        bar: Any,
    ) -> None:
        self.rules = rules
        self.entries = tuple(entries)
        self.address = address
        self.seed = seed
        self.mode = mode
        self.plugins = tuple(plugins)
        self.record = record
        self.workers = workers
        self.bar = bar
        self._session: Any = None
        self._ray: Any = None
        self._remote: Any = None
        self._pending: dict[Any, Task] = {}

    def __enter__(self) -> RayTaskRunner:
        self._session = connect(self.address, num_cpus=self.workers or None)
        self._ray = self._session.__enter__()
        if self.workers <= 0:
            self.workers = cluster_cpus(self._ray)
        self._remote = self._ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES, retry_exceptions=False)(
            play_task_remote
        )
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        ray = self._ray
        if ray is not None:
            for ref in self._pending:  # interrupted or failed: stop what still runs
                with contextlib.suppress(Exception):  # already finished or its worker gone: nothing to stop
                    ray.cancel(ref, force=True)
            self._pending.clear()
        if self._session is not None:
            self._session.__exit__(exc_type, exc, tb)
        self._session = self._ray = self._remote = None

    def run(self, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        """Submit ``tasks`` (at most ``workers`` in flight) and yield each result as it finishes."""
        ray, remote = self._ray, self._remote
        if ray is None or remote is None:
            raise RuntimeError("RayTaskRunner.run needs the runner entered first (with RayTaskRunner(...) as r)")
        args = (self.rules.name, self.entries, self.seed, self.mode, self.plugins)
        todo = list(tasks)[::-1]
        while todo or self._pending:
            while todo and len(self._pending) < self.workers:
                t = todo.pop()
                self._pending[remote.remote(*args, t, self.record)] = t
            done, _ = ray.wait(list(self._pending), num_returns=1)
            for ref in done:
                t = self._pending.pop(ref)
                try:
                    res: TaskResult = ray.get(ref)
                except (ray.exceptions.RayTaskError, ray.exceptions.RayError) as e:
                    raise ray_error(ray, e, f"task {t.index} ({t.labels[0]} vs {t.labels[1]})") from e
                if self.bar is not None:
                    self.bar.update(task_games(self.rules, t))
                yield res
