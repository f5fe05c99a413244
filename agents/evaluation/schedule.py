"""How a tournament's games are laid out and played: the pairings (a round robin or a gauntlet), the rotations of
the sides that every deal is played in, tasks of ``batch`` deals of one pairing, each played through
``scopa_env.games.driver.play`` one batch per rotation with agent seeds drawn from the task (so results never depend on
which process plays it), the worker pool that spreads the tasks over processes, and the game records written in schedule
order."""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.cli.threads import pin_blas_threads, restore_threads
from agents.errors import TournamentError
from agents.evaluation.entries import AgentEntry, build_agent, import_plugins
from scopa_env.engine import core
from scopa_env.games.driver import GameResults, play
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules, get_rules

__all__ = [
    "PARTNER",
    "RecordSink",
    "Task",
    "TaskResult",
    "TaskRunner",
    "agent_seed",
    "game_plan",
    "has_partners",
    "make_tasks",
    "play_task",
    "schedule_pairings",
    "seat_lineups",
    "side_patterns",
    "single_thread",
    "task_agents",
    "task_games",
    "worker_agent",
]

PARTNER = 2
"""Agent slot of the teammates (``--partner``): slots 0 and 1 are agents A and B."""

PlayGames = Callable[..., GameResults]
"""The batched game driver's signature (``scopa_env.games.driver.play``)."""


# --------------------------------------------------------------------------------------------------- rotations


def side_patterns(num_sides: int) -> list[tuple[int, ...]]:
    """Agent slot (0 = A, 1 = B) of each side, for every game of a deal group.

    Each deal of a pairing is played once per *rotation* of the sides between the two agents, so luck of the cards
    cancels inside the group of games that share the deal (RULES.md section 2 for seats and sides):

    - two sides (classic, teams of two): both ways round, ``A B`` then ``B A``;
    - more sides (simple-3, simple-6-teams, ...): the agents take alternate sides, ``A B A ...``, and every cyclic
      rotation of that pattern *and* of its complement ``B A B ...`` is played (distinct ones only). Each side
      position then holds each agent equally often, and A and B hold the same number of sides in total. So
      simple-3 plays 6 games per deal, simple-4 and simple-8 play 2;
    - an agent occupies every seat of its side (teams variants, ``seat_lineups``).

    >>> side_patterns(2)
    [(0, 1), (1, 0)]
    >>> side_patterns(3)
    [(0, 1, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 0)]
    """
    if num_sides < 2:
        raise ValueError(f"a pairing needs at least two sides, got {num_sides}")
    out: list[tuple[int, ...]] = []
    for first in (0, 1):
        base = [(first + i) % 2 for i in range(num_sides)]
        for r in range(num_sides):
            pat = tuple(base[(i + r) % num_sides] for i in range(num_sides))
            if pat not in out:
                out.append(pat)
    return out


def seat_lineups(rules: Rules) -> npt.NDArray[np.int64]:
    """(L, num_players) int64: agent slot of every seat in each rotation; a side's agent fills all its seats."""
    side_of = np.asarray(rules.seat_side, dtype=np.int64)
    return np.array([np.asarray(p, dtype=np.int64)[side_of] for p in side_patterns(rules.num_sides)])


def has_partners(rules: Rules) -> bool:
    """Whether every side of ``rules`` has two or more seats of the same number (team variants): a ``--partner`` can
    then sit beside each agent."""
    sizes = {len(side) for side in rules.sides}
    return len(sizes) == 1 and min(sizes) >= 2


def game_plan(rules: Rules, partner: bool = False) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(lineups, sides)`` of every game of a deal group: (L, num_players) agent slot of each seat, and (L, num_sides)
    the slot (A = 0 or B = 1) whose side each side is.

    Without a partner these are ``seat_lineups`` and ``side_patterns``: an agent fills every seat of its side. With one
    (team variants, ``evaluate.py --partner SPEC``), each agent sits in *one* seat of each of its sides and the
    partner (slot ``PARTNER``) in the others, and every side pattern is played once per seat of the side the agents
    take: in scopa a quattro (teams {0, 2} and {1, 3}) ``A B P P``, ``P P A B``, ``B A P P``, ``P P B A``. So A and B
    each sit in every seat once per deal, with the same partner, and the partner's play counts for both alike.

    >>> game_plan(get_rules("scopa-a-quattro"), partner=True)[0].tolist()
    [[0, 1, 2, 2], [2, 2, 0, 1], [1, 0, 2, 2], [2, 2, 1, 0]]
    """
    patterns = np.array(side_patterns(rules.num_sides), dtype=np.int64)
    if not partner:
        return seat_lineups(rules), patterns
    if not has_partners(rules):
        raise ValueError(f"{rules.name} has no teams of equal size, so its players have no partner")
    size = len(rules.sides[0])
    lineups = []
    for pattern in patterns:
        for k in range(size):
            lineup = np.full(rules.num_players, PARTNER, dtype=np.int64)
            for side, seats in enumerate(rules.sides):
                lineup[seats[k]] = pattern[side]
            lineups.append(lineup)
    return np.array(lineups), np.repeat(patterns, size, axis=0)


def schedule_pairings(num_entries: int, candidate: int | None) -> list[tuple[int, int]]:
    """Entry indices ``(a, b)`` of every pairing: the candidate against each other entry, else a round robin."""
    if candidate is not None:
        return [(candidate, j) for j in range(num_entries) if j != candidate]
    return [(i, j) for i in range(num_entries) for j in range(i + 1, num_entries)]


# --------------------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """A slice of one pairing's deals, played in every rotation."""

    index: int
    """Position in the schedule (records are written in this order)."""
    pairing: int
    """Index of the pairing."""
    a: int
    """Entry index of agent A (slot 0: the row agent)."""
    b: int
    """Entry index of agent B (slot 1)."""
    first_deal: int
    """Index of the task's first deal in the deal list."""
    seeds: npt.NDArray[np.uint64]
    """(n,) the deals."""
    labels: tuple[str, ...]
    """Labels of A and B, and of the partner when there is one (for records and messages)."""
    partner: int | None = None
    """Entry index of the teammates' agent (slot ``PARTNER``; ``--partner``), or None: each agent fills its side."""


@dataclass
class TaskResult:
    """Per-deal results of a task, from agent A's point of view."""

    index: int
    pairing: int
    first_deal: int
    margins: npt.NDArray[np.float64]
    """(n,) A's points per hand minus B's, averaged over the deal's games."""
    half_points: npt.NDArray[np.int64]
    """(n,) A's half points over the deal's games (win 2, draw 1, loss 0 each)."""
    wins: npt.NDArray[np.int64]
    """(n,) games A won."""
    draws: npt.NDArray[np.int64]
    """(n,) games drawn (hands mode: equal points; matches mode: unfinished after ``arena.play``'s hand cap)."""
    hands: npt.NDArray[np.int64]
    """(n,) hands played over the deal's games."""
    decisions: int
    """Agent decisions taken."""
    records: list[dict[str, Any]] | None = None
    """Game records (each with an ``eval`` key: pairing, deal, rotation) if asked for."""

    def head(self, count: int) -> TaskResult:
        """The results of the first ``count`` deals only (SPRT stops mid-task)."""
        recs = None
        if self.records is not None:
            last = self.first_deal + count
            recs = [r for r in self.records if r["eval"]["deal"] < last]
        return TaskResult(
            self.index,
            self.pairing,
            self.first_deal,
            self.margins[:count],
            self.half_points[:count],
            self.wins[:count],
            self.draws[:count],
            self.hands[:count],
            self.decisions,
            recs,
        )


def make_tasks(
    pairs: Sequence[tuple[int, int]],
    seeds: npt.NDArray[np.uint64],
    batch: int,
    labels: Sequence[str],
    partner: int | None = None,
) -> list[Task]:
    """Every pairing's deals cut into tasks of ``batch`` deals, pairing by pairing (``labels``: of the entries;
    ``partner``: the entry index of the teammates' agent, if any)."""
    tasks: list[Task] = []
    for p, (a, b) in enumerate(pairs):
        for lo in range(0, len(seeds), batch):
            names = (labels[a], labels[b]) + ((labels[partner],) if partner is not None else ())
            tasks.append(Task(len(tasks), p, a, b, lo, seeds[lo : lo + batch], names, partner))
    return tasks


def agent_seed(seed: int, pairing: int, first_deal: int, rotation: int, slot: int) -> int:
    """The seed an agent gets for one rotation of one task (independent of which process plays it)."""
    return int(np.random.SeedSequence([seed, pairing, first_deal, rotation, slot]).generate_state(1, np.uint64)[0])


def _illegal_move_message(err: core.IllegalActionError, task: Task, lineup: npt.NDArray[np.int64]) -> str:
    m = re.search(r"seat (\d+)", str(err))
    culprit = " or ".join(repr(x) for x in task.labels)
    if m and int(m.group(1)) < lineup.size:
        slot = int(lineup[int(m.group(1))])
        culprit = repr(task.labels[slot]) + (" (the partner)" if slot == PARTNER else "")
    return (
        f"agent {culprit} made an illegal move in pairing {task.labels[0]} vs {task.labels[1]} ({err}); "
        "an agent must only choose actions allowed by batch.mask — fix the agent"
    )


def play_task(
    rules: Rules,
    agents: tuple[Policy, ...],
    task: Task,
    seed: int,
    mode: str,
    record: bool = False,
    on_games: Callable[[int], None] | None = None,
    play_games: PlayGames = play,
) -> TaskResult:
    """Play a task's deals in every rotation (one ``arena.play`` batch per rotation) and reduce them per deal.

    ``agents`` are A and B, and the partner third when the task has one (``game_plan``). ``play_games`` is the game
    driver, ``scopa_env.games.driver.play`` unless another is given (tests wrap it).
    """
    lineups, patterns = game_plan(rules, partner=task.partner is not None)
    n, num_rot = task.seeds.size, len(patterns)
    margins = np.zeros((num_rot, n))
    half = np.zeros((num_rot, n), dtype=np.int64)
    hands = np.zeros((num_rot, n), dtype=np.int64)
    decisions = 0
    records: list[dict[str, Any]] | None = [] if record else None
    deal_of_seed = {int(s): task.first_deal + i for i, s in enumerate(task.seeds)}
    for r in range(num_rot):
        for slot in range(len(agents)):
            agents[slot].seed(agent_seed(seed, task.pairing, task.first_deal, r, slot))
        table = np.broadcast_to(lineups[r], (n, rules.num_players))
        try:
            res = play_games(rules, list(agents), table, task.seeds, mode=mode, record=record, on_step=on_games)
        except core.IllegalActionError as e:
            raise TournamentError(_illegal_move_message(e, task, lineups[r])) from e
        a_sides = patterns[r] == 0
        pts = res.hand_points.astype(np.float64)
        pa, pb = pts[:, a_sides].mean(axis=1), pts[:, ~a_sides].mean(axis=1)
        margins[r] = (pa - pb) / np.maximum(res.hands, 1)
        if mode == "hands":
            half[r] = np.where(pa > pb, 2, np.where(pa == pb, 1, 0))
        else:
            w = res.winner.astype(np.int64)
            half[r] = np.where(w < 0, 1, np.where(patterns[r][np.maximum(w, 0)] == 0, 2, 0))
        hands[r] = res.hands
        decisions += res.decisions
        if records is not None and res.records is not None:
            side_labels = [task.labels[int(x)] for x in patterns[r]]
            if task.partner is not None:
                side_labels = [f"{label} + {task.labels[PARTNER]}" for label in side_labels]
            for rec in res.records:
                rec["agents"] = side_labels
                rec["eval"] = {"pairing": list(task.labels[:2]), "deal": deal_of_seed[int(rec["seed"])], "rotation": r}
                if task.partner is not None:
                    rec["eval"]["partner"] = task.labels[PARTNER]
                records.append(rec)
    if records is not None:
        records.sort(key=lambda x: (x["eval"]["deal"], x["eval"]["rotation"]))
    return TaskResult(
        task.index,
        task.pairing,
        task.first_deal,
        margins.mean(axis=0),
        half.sum(axis=0),
        (half == 2).sum(axis=0),
        (half == 1).sum(axis=0),
        hands.sum(axis=0),
        decisions,
        records,
    )


# --------------------------------------------------------------------------------------------------- workers

_WORKER: dict[str, Any] = {}
"""State of a worker process: rules, agent entries, seed, mode and the agents built so far (by entry index)."""


_WORKER_BLOCKED = {getattr(signal, n) for n in ("SIGINT", "SIGHUP") if hasattr(signal, n)}
"""Signals blocked while worker processes are started (a started process inherits the block until it ignores them)."""


@contextmanager
def _worker_signals_blocked() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a signal that came meanwhile is delivered now


def single_thread() -> None:
    """Pin this worker (a pool's process, a Ray worker) to one thread (BLAS for the processes it starts, torch if
    loaded)."""
    pin_blas_threads(force=True)  # for processes this worker starts; its own BLAS is loaded already
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def worker_agent(entry: AgentEntry, rules: Rules, seed: int, where: str, unknown: str) -> Policy:
    """``entry``'s agent built in a worker (then pinned to one thread: the agent may have imported torch); a spec
    the worker does not know fails as ``{where}: {the error}. {unknown}`` (``unknown``: why, and what to do)."""
    try:
        agent = build_agent(entry, rules, seed)
    except TournamentError as e:
        raise TournamentError(f"{where}: {e}. {unknown}") from None
    single_thread()
    return agent


def _init_worker(variant: str, entries: list[AgentEntry], seed: int, mode: str, plugins: list[str]) -> None:
    # Ctrl-C and a closed terminal reach the whole process group: the main process stops the workers itself and
    # writes the results, so they ignore both (no traceback from every worker). They were blocked while it spawned.
    for name in ("SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_BLOCKED)
    single_thread()
    import_plugins(plugins)
    _WORKER.update(rules=get_rules(variant), entries=entries, seed=seed, mode=mode, agents={})


def _worker_agent(i: int) -> Policy:
    cache: dict[int, Policy] = _WORKER["agents"]
    if i not in cache:
        cache[i] = worker_agent(
            _WORKER["entries"][i],
            _WORKER["rules"],
            _WORKER["seed"],
            "in a worker process",
            "An agent registered only in the main script is unknown to workers: put it in an importable module and "
            "pass --plugin MODULE, or use --workers 1",
        )
    return cache[i]


def task_games(rules: Rules, task: Task) -> int:
    """Games a task plays: its deals times the games of a deal group (``game_plan``)."""
    return task.seeds.size * len(game_plan(rules, partner=task.partner is not None)[0])


def task_agents(task: Task, agent: Callable[[int], Policy]) -> tuple[Policy, ...]:
    """The agents of a task from ``agent(entry index)``: A, B and the partner if the task has one."""
    slots = (task.a, task.b) if task.partner is None else (task.a, task.b, task.partner)
    return tuple(agent(i) for i in slots)


def _run_in_worker(task: Task, record: bool) -> TaskResult:
    agents = task_agents(task, _worker_agent)
    return play_task(_WORKER["rules"], agents, task, _WORKER["seed"], _WORKER["mode"], record)


@dataclass(eq=False)
class TaskRunner:
    """Runs tasks in this process (one worker) or in a process pool, yielding results as they finish.

    ``agents`` are the entries built in this process (used with one worker; a pool's workers build their own),
    ``seed`` and ``mode`` the tournament's, ``plugins`` the modules every worker imports first, ``start_method`` the
    pool's, ``record`` whether games are recorded, ``bar`` a progress bar (``update(games)``) or None,
    ``play_games`` the game driver of this process (``play_task``'s), and ``check`` a function called after every
    step of the games played in this process and after every task finished by a worker (it raises to stop the run).
    """

    rules: Rules
    entries: list[AgentEntry]
    agents: list[Policy]
    _: KW_ONLY
    seed: int
    mode: str
    plugins: list[str]
    start_method: str
    record: bool
    workers: int
    bar: Any
    play_games: PlayGames = play
    check: Callable[[], None] | None = None
    pool: ProcessPoolExecutor | None = field(default=None, init=False)
    saved_env: dict[str, str | None] = field(default_factory=dict, init=False)

    def __enter__(self) -> TaskRunner:
        if self.workers > 1:
            import multiprocessing as mp

            # Workers start on demand while tasks are submitted; they must inherit single-threaded BLAS / OpenMP
            # settings (numpy loads BLAS before any initializer runs, and busy BLAS threads of several workers
            # fight over the cores). The parent's own libraries are loaded already, so this does not affect it.
            self.saved_env = pin_blas_threads(force=True)

            self.pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=mp.get_context(self.start_method),
                initializer=_init_worker,
                initargs=(self.rules.name, self.entries, self.seed, self.mode, self.plugins),
            )
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self.pool is not None:
            if exc_type is not None:  # interrupted or failed: stop the workers now, not after their current task
                processes = list((getattr(self.pool, "_processes", None) or {}).values())
                for proc in processes:
                    with contextlib.suppress(Exception):
                        proc.terminate()
                for proc in processes:
                    with contextlib.suppress(Exception):
                        proc.join(timeout=10)
            self.pool.shutdown(wait=True, cancel_futures=True)
            restore_threads(self.saved_env)

    def run(self, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        record = self.record
        if self.pool is None:
            for t in tasks:
                yield play_task(
                    self.rules,
                    task_agents(t, self.agents.__getitem__),
                    t,
                    self.seed,
                    self.mode,
                    record,
                    on_games=self._tick,
                    play_games=self.play_games,
                )
            return
        with _worker_signals_blocked():  # workers are spawned while tasks are submitted
            futures: dict[Future[TaskResult], Task] = {self.pool.submit(_run_in_worker, t, record): t for t in tasks}
        pending = set(futures)
        # Left early (an error, a signal), the tasks still pending are not cancelled here: __exit__ terminates the
        # workers and the pool fails them all (cancelling them first trips the pool's own clean-up in Python 3.11).
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    res = f.result()
                except BrokenProcessPool as e:
                    raise TournamentError(
                        f"a worker process died ({e}); its error is printed above — rerun with --workers 1 to "
                        "get it in this process"
                    ) from e
                self._tick(task_games(self.rules, futures[f]))
                yield res

    def _tick(self, n: int) -> None:
        if n and self.bar is not None:
            self.bar.update(n)
        if self.check is not None:
            self.check()


class RecordSink:
    """Writes game records in schedule order, whatever order the tasks finish in."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.file: io.TextIOBase | None = None
        self.pending: dict[int, list[dict[str, Any]]] = {}
        self.next = 0
        self.count = 0
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.file = open(self.path, "w", encoding="utf-8")
            except OSError as e:
                raise TournamentError(
                    f"cannot write --records {self.path}: {e.strerror}; choose a file path you can write to"
                ) from None

    def put(self, index: int, records: list[dict[str, Any]] | None) -> None:
        if self.file is None:
            return
        self.pending[index] = records or []
        while self.next in self.pending:
            self._write(self.pending.pop(self.next))
            self.next += 1

    def _write(self, records: list[dict[str, Any]]) -> None:
        assert self.file is not None
        for rec in records:
            self.file.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.count += len(records)
        self.file.flush()  # the games of every finished task are on disk, whatever happens next

    def close(self) -> None:
        if self.file is None:
            return
        for i in sorted(self.pending):
            self._write(self.pending.pop(i))
        self.file.close()
        self.file = None
