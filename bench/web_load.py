"""Load test of the browser game's server (``scopa-web``): players finishing whole matches while slow clients hold
connections; the latency of a move.

    python bench/web_load.py                                  # 200 players, 300 slow clients, scopone-scientifico
    python bench/web_load.py --players 400 --slow 600 --variant classic
    python bench/web_load.py --url http://127.0.0.1:8000/     # a server already running (its bots and limits)

Without ``--url`` the server is started as its own process (``python -m agents.play.web --port 0``, bound to 127.0.0.1,
the variant's shipped bot, ``--body-timeout``), so the clients and the server do not share one interpreter.

The players (``--players``, one asyncio task and one keep-alive connection each, spoken with ``h11``: light, so
the clients are not what is measured) all start a match at once against the bot and play it to the end, the first
legal move each turn (and no knock); every answer must be a 2xx. The slow clients (``--slow``, asyncio connections)
each send a request's headers announcing a 100-byte body and then one byte a second, like a slowloris attack; when
the server cuts one off (408 or a closed connection) it connects again, so they hold that many connections for the
whole run. A move's latency is the time from sending ``POST /api/games/<id>/move`` to its whole answer (the
player's move and the bots' replies), on the client.

Prints a summary, then one JSON line: players, slow, matches, moves, errors, the move latency's median, p99 and
max in milliseconds, cut_offs (slow connections the server cut off), seconds, the CPU seconds of the clients and of
the server, the load average before and after.
Exit status 1 when any request failed. Needs the ``web`` extra (``pip install 'scopa[web]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from agents.cli.settings import add_field_options, parse_options, setting

ROOT = Path(__file__).resolve().parent.parent
MAX_PLAYERS = 5000
"""The most ``--players`` (and ``--slow``): each is a connection, and this machine's open-file limit counts them."""
DEFAULT_MAX_CONNECTIONS = 1000
"""The server's default ``--max-connections``."""
CONNECTION_MARGIN = 50
"""Connections the server should have to spare beyond the clients' (a slow client reconnecting overlaps its old one
for a moment)."""
SLOW_BODY_BYTES = 100
"""The body size a slow client announces (it never sends more than a byte a second of it)."""
SERVER_START_S = 300.0
"""How long the started server may take to print its address (it tries its bots on every variant and loads the
compiled kernel first: a minute when numba compiles it)."""


@dataclass
class LoadReport:
    """What a run measured."""

    players: int
    slow: int
    variant: str
    opponent: str
    matches: int = 0
    """Matches played to the end."""
    moves: int = 0
    """Move requests answered."""
    errors: list[str] = field(default_factory=list)
    """Each failed request: what was asked and the answer (at most the first 20)."""
    error_count: int = 0
    median_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    cut_offs: int = 0
    """Slow connections the server cut off (408 or closed)."""
    seconds: float = 0.0
    load_before: float = 0.0
    """The machine's 1-minute load average before the run (``os.getloadavg``)."""
    load_after: float = 0.0
    client_cpu_s: float = 0.0
    """CPU seconds the clients (this process) used during the run."""
    server_cpu_s: float = 0.0
    """CPU seconds the started server used during the run (0 with ``--url``)."""
    server_output: list[str] = field(default_factory=list)
    """The last lines the started server printed."""
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    """Every move's latency (left out of the JSON line)."""

    def summary(self) -> str:
        return (
            f"{self.players} players ({self.variant} against {self.opponent}), {self.slow} slow clients: "
            f"{self.matches} matches, {self.moves} moves in {self.seconds:.1f} s, {self.error_count} errors; "
            f"move latency median {self.median_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, max {self.max_ms:.1f} ms; "
            f"{self.cut_offs} slow connections cut off; CPU: server {self.server_cpu_s:.1f} s, clients "
            f"{self.client_cpu_s:.1f} s; load average {self.load_before:.2f} -> {self.load_after:.2f} on "
            f"{os.cpu_count()} cores"
        )


def _loadavg() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


class ClientConnection:
    """One keep-alive HTTP/1.1 connection of a player, on asyncio streams with the ``h11`` parser (uvicorn's own
    dependency): far lighter than a general client, so the clients are not what a run measures. A connection the
    server closes is opened again for the next request; a request on it that fails is an error, not retried."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._conn: Any = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """Send one request (``body`` as JSON); the status and the whole answer's body."""
        import h11

        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
            self._conn = h11.Connection(h11.CLIENT)
        reader, writer = self._streams
        conn = self._conn
        data = b"" if body is None else json.dumps(body).encode()
        headers = [("Host", f"{self.host}:{self.port}"), ("Content-Length", str(len(data)))]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        out = conn.send(h11.Request(method=method, target=path, headers=headers))
        out += conn.send(h11.Data(data=data)) if data else b""
        writer.write(out + conn.send(h11.EndOfMessage()))
        status, chunks = 0, []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the server closed the connection before answering")
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        else:  # the server asked to close (Connection: close)
            self.close()
        return status, b"".join(chunks)

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def _player(host: str, port: int, index: int, seed: int, variant: str, opponent: str, report: LoadReport) -> None:
    """One player on its own connection: a new match, then the first legal move (or no knock) until it is over."""
    import h11

    def failed(what: str, answer: str) -> None:
        report.error_count += 1
        if len(report.errors) < 20:
            report.errors.append(f"player {index}: {what}: {answer[:200]}")

    client = ClientConnection(host, port)
    path, body = "/api/games", {"variant": variant, "opponent": opponent, "seed": seed + index}
    try:
        status, answer = await client.request("POST", path, body)
        if status != 201:
            return failed(f"POST {path}", f"{status} {answer.decode(errors='replace')}")
        view = json.loads(answer)
        while not view["done"]:
            if not view["your_turn"]:
                return failed("a view", "not the player's turn in a running match")
            if view["knock_options"]:
                path, body = f"/api/games/{view['id']}/knock", {"knock": "none"}
            else:
                card, captures = next(iter(view["moves"].items()))
                path, body = f"/api/games/{view['id']}/move", {"card": card, "capture": captures[0]}
            start = time.perf_counter()
            status, answer = await client.request("POST", path, body)
            if status != 200:
                return failed(f"POST {path}", f"{status} {answer.decode(errors='replace')}")
            view = json.loads(answer)
            if path.endswith("/move"):
                report.latencies_ms.append(1000.0 * (time.perf_counter() - start))
                report.moves += 1
        report.matches += 1
        path = f"/api/games/{view['id']}"
        status, answer = await client.request("DELETE", path)
        if status != 200:
            return failed(f"DELETE {path}", f"{status} {answer.decode(errors='replace')}")
    except (OSError, h11.ProtocolError) as e:
        return failed(path, f"{type(e).__name__}: {e}")
    finally:
        client.close()


class _SlowConnection(asyncio.Protocol):
    """A slow client's connection: sends the request's headers and the body's first byte when it opens."""

    def __init__(self, head: bytes, closed: asyncio.Future[bytes]) -> None:
        self.head = head
        self.closed = closed
        self.answer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.head)

    def data_received(self, data: bytes) -> None:
        self.answer += data

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(self.answer)


async def _slow_client(host: str, port: int, stop: asyncio.Event, report: LoadReport) -> None:
    """Hold a connection by sending a body a byte a second; connect again whenever the server cuts it off."""
    head = (
        f"POST /api/games HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {SLOW_BODY_BYTES}\r\n\r\n{{"
    ).encode()
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        closed: asyncio.Future[bytes] = loop.create_future()
        try:
            transport, _ = await loop.create_connection(functools.partial(_SlowConnection, head, closed), host, port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        for _ in range(SLOW_BODY_BYTES - 2):
            await asyncio.wait([closed], timeout=1.0)
            if closed.done() or stop.is_set():
                break
            transport.write(b" ")
        if closed.done():  # cut off by the server: 408, or closed
            report.cut_offs += 1
        transport.close()


async def run_load(
    url: str,
    players: int,
    slow: int,
    variant: str,
    opponent: str,
    seed: int = 0,
    min_cut_offs: int = 0,
) -> LoadReport:
    """``players`` whole matches at once against ``opponent`` on the server at ``url`` while ``slow`` slow clients
    hold connections. ``min_cut_offs``: once the matches are over, keep the slow clients on until the server has
    cut off at least that many of their connections (a check that its body deadline works under load)."""
    report = LoadReport(players, slow, variant, opponent, load_before=_loadavg())
    cpu_start = time.process_time()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    stop = asyncio.Event()
    slow_tasks = [asyncio.create_task(_slow_client(host, port, stop, report)) for _ in range(slow)]
    await asyncio.sleep(0.5 if slow else 0)  # let them connect first
    start = time.perf_counter()
    await asyncio.gather(*(_player(host, port, i, seed, variant, opponent, report) for i in range(players)))
    report.seconds = time.perf_counter() - start
    while report.cut_offs < min_cut_offs and slow:
        await asyncio.sleep(0.2)
    stop.set()
    await asyncio.gather(*slow_tasks)
    latencies = np.asarray(report.latencies_ms, dtype=np.float64)
    if latencies.size:
        report.median_ms = float(np.median(latencies))
        report.p99_ms = float(np.percentile(latencies, 99))
        report.max_ms = float(latencies.max())
    report.load_after = _loadavg()
    report.client_cpu_s = time.process_time() - cpu_start
    return report


@dataclass
class StartedServer:
    """A server process started by ``started_server``: its URL and what it printed (read all along, so the
    process never blocks on a full pipe)."""

    url: str
    output: list[str]
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time the server process has used so far (user + system; Linux's /proc, else 0)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def started_server(
    bots: dict[str, str],
    max_games: int,
    body_timeout: float,
    threads: int | None = None,
    connections: int = 0,
) -> Iterator[StartedServer]:
    """``python -m agents.play.web`` on 127.0.0.1, a free port, with these bots; stopped (SIGTERM: a graceful
    shutdown) at the end. ``connections``: the clients' connections at once; ``--max-connections`` is raised above
    them when the default (1000) is too few, else left at its default."""
    command = [sys.executable, "-m", "agents.play.web", "--port", "0", "--max-games", str(max_games)]
    command += ["--body-timeout", f"{body_timeout:g}"]
    if connections + CONNECTION_MARGIN > DEFAULT_MAX_CONNECTIONS:
        command += ["--max-connections", str(connections + CONNECTION_MARGIN)]
    command += [] if threads is None else ["--threads", str(threads)]
    for name, spec in bots.items():
        command += ["--bot", f"{name}={spec}"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    started = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line.rstrip("\n"))
            if "open http://" in line:
                started.set()
        started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        started.wait(SERVER_START_S)
        lines = [line for line in output if "open http://" in line]
        if not lines:
            raise RuntimeError("the server did not start: " + "\n".join(output[-10:]))
        yield StartedServer(lines[0].split("open ", 1)[1].split()[0], output, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_PLAYERS}, got {text!r}") from None
    if not 0 <= value <= MAX_PLAYERS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_PLAYERS}, got {text!r}")
    return value


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    players: int = setting(200, "players playing a match at once (default 200)", parse=_count, show_default=False)
    slow: int = setting(300, "slow clients holding connections (default 300)", parse=_count, show_default=False)
    variant: str = setting(
        "scopone-scientifico", "the variant (default scopone-scientifico: short matches)", show_default=False
    )
    opponent: str | None = setting(None, "the bot's name on the server (default: bot-<variant>)", show_default=False)
    seed: int = setting(0, "player i plays the deal seed+i (default 0)", parse=_count, show_default=False)
    body_timeout: float = setting(
        10.0, "the started server's --body-timeout (default 10)", parse=float, show_default=False
    )
    threads: int | None = setting(
        None, "the started server's --threads (default: the server's default)", parse=_count, show_default=False
    )
    url: str | None = setting(None, "load a server already running instead of starting one", show_default=False)


DESCRIPTION = (
    "Load test of scopa-web: players finishing whole matches while slow clients hold connections; prints the latency "
    "of a move (median, p99) and one JSON line."
)
"""The command's ``--help`` summary."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/web_load.py", description=DESCRIPTION)
    add_field_options(parser, Options, typed=True, once=False)
    args = parse_options(parser, Options, argv)
    try:
        import h11  # noqa: F401
    except ImportError:
        parser.error("needs h11 (with uvicorn, the web extra): pip install 'scopa[web]'")
    from agents.nets.bot import shipped_bot
    from scopa_env.rules import VARIANTS

    if args.variant not in VARIANTS:
        parser.error(f"--variant: unknown variant {args.variant!r}; choose one of {list(VARIANTS)}")
    if args.threads == 0:
        parser.error("--threads must be at least 1 (or left out: the server's default)")
    if not args.body_timeout > 0:
        parser.error(f"--body-timeout must be positive, got {args.body_timeout}")
    opponent = args.opponent or f"bot-{args.variant}"
    if args.url is not None:
        if urlsplit(args.url).scheme != "http":
            parser.error(f"--url must be an http:// address, got {args.url!r}")
        report = asyncio.run(run_load(args.url, args.players, args.slow, args.variant, opponent, args.seed))
    else:
        shipped = shipped_bot(args.variant)
        if args.opponent is None and shipped is None:
            parser.error(f"--variant {args.variant} has no shipped bot; name one with --opponent (expert, greedy)")
        bots = {opponent: str(shipped) if args.opponent is None else args.opponent}
        connections = args.players + args.slow
        with started_server(bots, args.players + 10, args.body_timeout, args.threads, connections) as server:
            cpu_start = server.cpu_seconds()
            report = asyncio.run(run_load(server.url, args.players, args.slow, args.variant, opponent, args.seed))
            report.server_cpu_s = server.cpu_seconds() - cpu_start
        report.server_output = server.output[-20:]
    print(report.summary())
    for error in report.errors:
        print("error:", error)
    for line in report.server_output if report.error_count else []:
        print("server:", line)
    print(json.dumps({k: v for k, v in asdict(report).items() if k != "latencies_ms"}))
    return 1 if report.error_count else 0


if __name__ == "__main__":
    sys.exit(main())
