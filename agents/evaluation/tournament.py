"""Duplicate-deal tournaments between agents: ``run_tournament`` resolves the settings
(``agents.evaluation.eval_config.EvalConfig``), plays the schedule and writes the results, stopping cleanly on a
signal or an error with the results so far.

``run_tournament(EvalConfig(...))`` schedules a round robin (or a gauntlet: one candidate against every other
agent) on duplicate deals with the sides rotated, and reduces the games to per-deal margins and scores for
``agents.evaluation.ratings``. Results are reproducible for a seed, agent list and batch size, whatever the number of
workers. The parts live beside it: ``agents.evaluation.deals`` (the deal set and deal files),
``agents.evaluation.entries`` (agent arguments and building the agents), ``agents.evaluation.schedule`` (rotations,
tasks, playing them, the worker pool), ``agents.evaluation.cluster`` (the same tasks on a Ray cluster: the ``ray``
setting) and ``agents.evaluation.report`` (the results, ``results.json``, the tables and plots); import their names
from them.

    result = run_tournament(EvalConfig(variant="classic", agents=["random", "greedy"], deals=200, workers=1))
    paths = write_outputs(result, "runs/eval_demo")
"""

from __future__ import annotations

import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.base import AgentSpecError, looks_like_path, parse_spec
from agents.cli.signals import SignalStop, StopSignals
from agents.errors import TournamentError
from agents.evaluation.deals import Deals
from agents.evaluation.entries import AgentEntry, build_agent, import_plugins, make_entries
from agents.evaluation.eval_config import DEFAULT_BATCH, DEFAULT_DEALS, DEFAULT_SPRT_BATCH, EvalConfig
from agents.evaluation.ratings import SPRT, DealHistogram, RatingTable, SPRTResult, bootstrap_ratings, pairing_stats
from agents.evaluation.report import (
    PairingResult,
    TournamentResult,
    write_outputs,
    write_static,
    write_tables,
)
from agents.evaluation.schedule import (
    RecordSink,
    TaskResult,
    TaskRunner,
    game_plan,
    make_tasks,
    schedule_pairings,
    side_patterns,
)
from scopa_env.games.driver import play
from scopa_env.rules import Rules, get_rules

if TYPE_CHECKING:
    from agents.evaluation.cluster import RayTaskRunner

__all__ = ["TournamentInterrupted", "check_output_file", "run_tournament"]

PARTIAL_EVERY = 1.0
"""Seconds between two writes of the results so far while a tournament with an output folder plays."""


class TournamentInterrupted(SignalStop):
    """A signal (``agents.cli.signals.STOP_SIGNALS``: Ctrl-C, SIGTERM, SIGHUP) stopped ``run_tournament``.

    ``result`` holds the games finished before it (``partial`` is True; None if none was scheduled yet) and
    ``paths`` the files written for them (empty without an output folder).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.result: TournamentResult | None = None
        self.paths: dict[str, Path] = {}

    def __str__(self) -> str:
        return f"stopped by {self.signal_name}"


# --------------------------------------------------------------------------------------------------- config


# --------------------------------------------------------------------------------------------------- the run


def _resolve_entries(config: EvalConfig) -> tuple[list[AgentEntry], int | None]:
    args = ([config.gauntlet] if config.gauntlet is not None else []) + list(config.agents)
    entries = make_entries(args)
    return entries, (0 if config.gauntlet is not None else None)


def _partner_entry(config: EvalConfig, entries: list[AgentEntry]) -> AgentEntry | None:
    """The teammates' agent (``partner``) as an entry of its own: it plays in every pairing but is no rated agent."""
    if config.partner is None:
        return None
    entry = make_entries([config.partner])[0]
    taken = {e.label for e in entries}
    label = entry.label if entry.label not in taken else f"{entry.label} (partner)"
    return AgentEntry(label, entry.spec, entry.steps)


def _resolve_anchor(config: EvalConfig, entries: list[AgentEntry], candidate: int | None) -> int:
    if config.anchor is not None:
        for i, e in enumerate(entries):
            if config.anchor in (e.label, e.spec):
                return i
        raise TournamentError(
            f"anchor {config.anchor!r} is not one of the agents ({', '.join(e.label for e in entries)}); "
            "give --anchor one of those labels"
        )
    for i, e in enumerate(entries):
        if i == candidate or looks_like_path(e.spec):
            continue
        try:
            if parse_spec(e.spec)[0] == "random":
                return i
        except AgentSpecError:
            continue  # build_agent reports it
    return 1 if candidate == 0 else 0


def _resolve_deals(config: EvalConfig, rules: Rules) -> Deals:
    if config.deals_file is not None:
        deals = Deals.load(config.deals_file)
        if deals.variant != rules.name:
            raise TournamentError(
                f"deal file {config.deals_file} was made for variant {deals.variant!r}, not {rules.name!r}; "
                f"use --variant {deals.variant} or make a new deal file with --save-deals"
            )
        if config.mode is not None and deals.mode != config.mode:
            raise TournamentError(
                f"deal file {config.deals_file} was made for --{deals.mode}, not --{config.mode}; "
                f"use --{deals.mode} or make a new deal file with --save-deals"
            )
        return deals.take(config.deals) if config.deals is not None else deals
    return Deals.generate(rules.name, config.mode or "hands", config.deals or DEFAULT_DEALS, config.seed)


def _progress_bar(total: int, unit: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, dynamic_ncols=True, file=sys.stderr, smoothing=0.1)


def _check_writable_ancestor(start: Path, path: Path, what: str, noun: str) -> None:
    """Refuse ``path`` unless the nearest existing folder at or above ``start`` is a writable folder."""
    anc = start
    while not anc.exists() and anc.parent != anc:
        anc = anc.parent
    if not anc.is_dir():
        made = "so no folder can be made inside it" if noun == "folder" else "not a folder"
        raise TournamentError(f"{what} {path}: {anc} is a file, {made}; choose another {noun}")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise TournamentError(f"{what} {path}: {anc} is not writable (permission denied); choose another {noun}")


def _probe_writable_dir(path: Path, what: str) -> None:
    """Refuse, before anything is played or created, a folder that cannot be made or written (``what``: its option)."""
    try:
        if path.exists() and not path.is_dir():
            raise TournamentError(
                f"{what} {path} is a file, not a folder; give a folder for the results (it is created if missing) "
                "or move the file away"
            )
        _check_writable_ancestor(path, path, what, "folder")
    except OSError as e:
        raise TournamentError(f"{what} {path} cannot be checked ({e.strerror}); choose another folder") from None


def check_output_file(path: Path, what: str, example: str = "games.jsonl") -> None:
    """Refuse, with a ``TournamentError`` naming ``what`` (its option), a file path to write that is a folder or whose
    folder cannot be made or written (``example``: a file name to suggest inside a folder given instead)."""
    try:
        if path.is_dir():
            raise TournamentError(f"{what} {path} is a folder; give a file path inside it, e.g. {path / example}")
        _check_writable_ancestor(path.parent, path, what, "path")
    except OSError as e:
        raise TournamentError(f"{what} {path} cannot be checked ({e.strerror}); choose another path") from None


def _make_out_dir(path: Path) -> None:
    """Create the output folder and check that a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise TournamentError(
            f"cannot write in the output folder {path} (--out): {e.strerror}; choose a folder you can write to"
        ) from None


@dataclass
class _Played:
    """What a tournament has played so far."""

    parts: dict[int, list[TaskResult]]
    """Finished task results by pairing."""
    hands: int = 0
    """Hands played, including SPRT tasks cut short."""
    sprt: SPRTResult | None = None


def idle_workers_note(tasks: int, workers: int, deals: int, pairings: int, batch: int) -> str:
    """The advice when fewer tasks than workers were made: the ``--batch`` that gives every worker a task."""
    per_pairing = -(-workers // pairings)  # tasks a pairing needs for every worker to get one
    suggest = max(1, -(-deals // per_pairing))
    return (
        f"{tasks} task(s) of up to {batch} deals for {workers} workers: {workers - tasks} worker(s) will have nothing "
        f"to do; --batch {suggest} splits the deals among all of them (results depend on --batch: keep the batch of "
        "an earlier run to compare with it)"
    )


def run_tournament(
    config: EvalConfig,
    progress: bool = False,
    out: str | Path | None = None,
    plots: bool = True,
    handle_signals: bool = False,
    notes: Callable[[str], None] | None = None,
) -> TournamentResult:
    """Play the evaluation ``config`` describes and compute its statistics.

    Every agent is built here first, so an unknown spec, a missing or corrupt checkpoint, or an agent made for
    another variant or observation version raises ``TournamentError`` before any game is played. ``config`` is not
    changed; the result holds a resolved copy (deal count and mode filled in).

    With ``out`` the folder is checked and made before any game, the results so far are written to it while the
    tournament plays (every ``PARTIAL_EVERY`` seconds at most, each file replaced atomically, ``results.json``
    marked ``"partial": true``) and ``write_outputs`` writes the final ones. If a game fails (an illegal move, a
    worker that dies) the results so far are written before the error is raised. A ``KeyboardInterrupt`` (and with
    ``handle_signals``, SIGTERM or SIGHUP) stops the workers and raises ``TournamentInterrupted`` carrying the
    partial result and the paths written.

    ``notes`` receives advice on the settings that does not stop the run (e.g. more ``workers`` asked for than
    there are tasks).
    """
    config = replace(config, agents=list(config.agents), plugins=list(config.plugins))
    config.validate()
    if config.ray is not None:
        from agents.evaluation.cluster import probe_address, require_ray

        require_ray()  # not installed: say how to install it, before anything is written
        probe_address(config.ray)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        _probe_writable_dir(out_dir, "--out")
    for key, option in (("records", "--records"), ("save_deals", "--save-deals")):
        if getattr(config, key) is not None:
            check_output_file(Path(getattr(config, key)), option)
    rules = get_rules(config.variant)
    with StopSignals(handle_signals, stop=TournamentInterrupted, once=True) as stop:
        try:
            return _run(config, rules, progress, out_dir, plots, stop, notes)
        except KeyboardInterrupt as e:
            if isinstance(e, TournamentInterrupted):
                raise
            raise TournamentInterrupted(signal.SIGINT) from None


def _run(
    config: EvalConfig,
    rules: Rules,
    progress: bool,
    out: Path | None,
    plots: bool,
    stop: StopSignals,
    notes: Callable[[str], None] | None = None,
) -> TournamentResult:
    import_plugins(config.plugins)
    entries, candidate = _resolve_entries(config)
    partner = _partner_entry(config, entries)
    players = entries + ([partner] if partner is not None else [])  # the partner is built and played, not rated
    partner_index = len(entries) if partner is not None else None
    deals = _resolve_deals(config, rules)
    agents = [build_agent(e, rules, config.seed) for e in players]
    anchor = _resolve_anchor(config, entries, candidate)
    config.deals = len(deals)
    if config.batch is None:
        config.batch = DEFAULT_BATCH if config.sprt is None else DEFAULT_SPRT_BATCH
    batch = config.batch
    config.mode = deals.mode
    schedule = schedule_pairings(len(entries), candidate)
    if partner is None:
        rotations = side_patterns(rules.num_sides)
    else:  # seat lineups: the agent slot of every seat (PARTNER for the teammates)
        rotations = [tuple(int(x) for x in lineup) for lineup in game_plan(rules, partner=True)[0]]
    num_rot = len(rotations)

    tasks = make_tasks(schedule, deals.seeds, batch, [e.label for e in players], partner_index)
    workers = max(1, min(config.num_workers, len(tasks)))
    if notes is not None and config.ray is None and config.workers > len(tasks):  # asked for (0: all cores)
        notes(idle_workers_note(len(tasks), config.num_workers, len(deals), len(schedule), batch))
    if config.ray is not None:  # Ray: the most tasks in flight, 0 = the cluster's CPUs (known once connected)
        workers = config.workers
    created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    played = _Played({p: [] for p in range(len(schedule))})
    t0 = time.perf_counter()

    def result(bootstrap: int, status: str) -> TournamentResult:
        return _make_result(
            config, entries, deals, rotations, schedule, anchor, played, time.perf_counter() - t0, workers,
            sink.count, created, bootstrap, status,
        )  # fmt: skip

    with stop.hold():
        if config.save_deals is not None:
            try:
                deals.save(config.save_deals)
            except OSError as e:
                raise TournamentError(f"cannot write --save-deals {config.save_deals}: {e.strerror}") from None
        static: dict[str, Path] = {}
        if out is not None:
            _make_out_dir(out)
            static = write_static(config, deals, out)
        sink = RecordSink(config.records)
    last_write = -math.inf

    def checkpoint() -> None:  # the results so far, at most every PARTIAL_EVERY seconds
        nonlocal last_write
        if out is not None and time.monotonic() - last_write >= PARTIAL_EVERY:
            write_tables(result(0, "running"), out)
            last_write = time.monotonic()

    unit = "hand" if config.mode == "hands" else "game"
    bar = _progress_bar(len(deals) * num_rot * len(schedule), unit, progress)
    failure: BaseException | None = None
    try:
        runner: TaskRunner | RayTaskRunner
        # what both runners take from the config (the rules, the players, the deals' mode, the plugins, the records)
        common: dict[str, Any] = dict(
            seed=config.seed,
            mode=deals.mode,
            plugins=config.plugins,
            record=config.records is not None,
            workers=workers,
            bar=bar,
        )
        if config.ray is not None:
            from agents.evaluation.cluster import RayTaskRunner

            runner = RayTaskRunner(rules, players, address=config.ray, **common)
        else:
            runner = TaskRunner(
                rules,
                players,
                agents,
                start_method=config.start_method,
                play_games=play,  # this module's name, looked up now (tests replace agents.evaluation.tournament.play)
                check=stop.check,
                **common,
            )
        with runner:
            workers = max(1, min(runner.workers, len(tasks)))  # Ray: the cluster's CPUs when workers is 0
            if config.sprt is None:
                for res in runner.run(tasks):
                    with stop.hold():  # its exit raises the stop of a signal that came meanwhile (or was lost)
                        played.parts[res.pairing].append(res)
                        played.hands += int(res.hands.sum())
                        sink.put(res.index, res.records)
                        checkpoint()
            else:
                sprt = SPRT(config.sprt[0], config.sprt[1], config.sprt_alpha, config.sprt_beta, num_rot)
                counts = np.zeros(2 * num_rot + 1)
                for lo in range(0, len(tasks), workers):
                    rnd = sorted(runner.run(tasks[lo : lo + workers]), key=lambda r: r.index)
                    decision = "inconclusive"
                    with stop.hold():
                        played.hands += sum(int(r.hands.sum()) for r in rnd)
                        for res in rnd:
                            used, _, decision = sprt.scan(res.half_points, counts)
                            res = res.head(used) if used < res.half_points.size else res
                            counts += np.bincount(res.half_points, minlength=counts.size)
                            played.parts[0].append(res)
                            sink.put(res.index, res.records)
                            if decision != "inconclusive":
                                break
                        played.sprt = sprt.result(counts)
                        checkpoint()
                    if decision != "inconclusive":
                        break
    except (KeyboardInterrupt, Exception) as e:
        failure = e
    finally:
        stop.stopping = True  # from here on signals are ignored: the results are being written
        with stop.hold():
            sink.close()
            if bar is not None:
                bar.close()
    if failure is None:
        with stop.hold():
            final = result(config.bootstrap, "complete")
            if out is not None:
                final.paths = write_outputs(final, out, plots=plots)
        return final
    interrupted_ = isinstance(failure, KeyboardInterrupt)
    partial = result(config.bootstrap, "interrupted" if interrupted_ else "failed")
    if out is not None:
        partial.paths = {**static, **write_tables(partial, out)}
    if not interrupted_:
        if out is None or not isinstance(failure, TournamentError):
            raise failure
        raise TournamentError(
            f"{failure}. The {partial.games_played} games finished before it are saved in {out}/ (results.json, "
            "marked partial)"
        ) from failure
    interrupted = failure if isinstance(failure, TournamentInterrupted) else TournamentInterrupted(signal.SIGINT)
    interrupted.result, interrupted.paths = partial, partial.paths
    raise interrupted


def _partial_ratings(num: int, hist: list[DealHistogram], anchor: int, config: EvalConfig, n_boot: int) -> RatingTable:
    """Ratings of the games played so far; all NaN while the pairings played do not link every agent."""
    try:
        return bootstrap_ratings(num, hist, anchor, config.anchor_rating, n_boot, config.level, config.seed)
    except ValueError:
        nan = np.full(num, np.nan)
        return RatingTable(nan, nan.copy(), nan.copy(), np.zeros((0, num)), anchor, config.anchor_rating)


def _make_result(
    config: EvalConfig,
    entries: list[AgentEntry],
    deals: Deals,
    rotations: list[tuple[int, ...]],
    schedule: list[tuple[int, int]],
    anchor: int,
    played: _Played,
    seconds: float,
    workers: int,
    records_written: int,
    created: str,
    bootstrap: int,
    status: str,
) -> TournamentResult:
    num_rot = len(rotations)
    pairings: list[PairingResult] = []
    for p, (a, b) in enumerate(schedule):
        got = sorted(played.parts[p], key=lambda r: r.first_deal)
        margins = np.concatenate([np.zeros(0)] + [r.margins for r in got])
        half = np.concatenate([np.zeros(0, dtype=np.int64)] + [r.half_points for r in got])
        wins = int(sum(int(r.wins.sum()) for r in got))
        draws = int(sum(int(r.draws.sum()) for r in got))
        hands = int(sum(int(r.hands.sum()) for r in got))
        losses = margins.size * num_rot - wins - draws
        stats = pairing_stats(margins, half, num_rot, wins, draws, losses, hands, config.level)
        pairings.append(PairingResult(a, b, margins, half, wins, draws, losses, hands, stats))
    hist = [DealHistogram.from_half_points(p.a, p.b, p.half_points, num_rot) for p in pairings]
    if status == "complete":
        ratings = bootstrap_ratings(
            len(entries), hist, anchor, config.anchor_rating, bootstrap, config.level, config.seed
        )
    else:
        ratings = _partial_ratings(len(entries), hist, anchor, config, bootstrap)
    return TournamentResult(
        config,
        entries,
        deals,
        rotations,
        pairings,
        ratings,
        anchor,
        played.sprt,
        played.hands,
        seconds,
        workers,
        records_written,
        created,
        status,
        len(deals) * num_rot * len(schedule),
    )
