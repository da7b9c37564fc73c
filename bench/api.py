"""API benchmark: the daemon's HTTP API under load, from a daemon in a process of its own.

    uv run python bench/api.py                                  # 200 clients, 2,000 requests, 100 slow
    uv run python bench/api.py --clients 200 --requests 2000 --slow 100 --timeout 10

The daemon (no Redis) indexes the real Claude Code and Codex transcripts in ../shared/data, then serves
its API on 127.0.0.1 with its default limits; this process is the clients (non-blocking sockets, one
thread), so the server's threads, descriptors and memory are read from /proc for its process alone.

- concurrent clients: `--clients` connections opened at once, one request each (`/v1/search` with a
  word from the transcripts, or a session's `/mirror`); a request not answered within `--timeout` s (the
  CLI's `api_timeout_seconds`) fails. Success rate, latency p50 / p95 from connect to the last byte.
- many requests: descriptors, RSS and threads of the server before and after `--requests` requests
  (search, mirror, raw, health, bad input), 20 at a time.
- slow clients: `--slow` connections sending their request line a byte a second; the server's threads
  after 3 s (minus those it had), a normal request's latency meanwhile, and when the server cut them.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.table import Table

from memex.config import Config, load_config
from memex.store.db import connect_readonly

# ../shared/data beside the repository (from a worktree: the first such folder above it)
SHARED = next(
    (up / "shared" / "data" for up in Path(__file__).resolve().parents if (up / "shared" / "data").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data",
)
TOKEN = "bench-token-" + "a" * 24
WORDS = ["test", "error", "config", "database", "install", "commit", "function", "server", "python", "build"]


def config_for(home: Path) -> Config:
    return load_config(
        {
            "MEMEX_HOME": str(home),
            "MEMEX_COMPUTER": "bench",
            "MEMEX_CLAUDE_DIR": str(home / "no-claude"),  # the daemon watches nothing: the corpus is indexed once
            "MEMEX_CODEX_DIR": str(home / "no-codex"),
            "MEMEX_GEMINI_DIR": str(home / "no-gemini"),
            "MEMEX_REDIS_URL": "",
            "MEMEX_API_ADDRESS": "127.0.0.1:0",
            "MEMEX_API_TOKEN": TOKEN,
            "MEMEX_INDEX_WORKERS": "1",
            "MEMEX_INDEX_EMBEDS": "0",
        }
    )


def serve(home: Path) -> None:
    """The server process: a daemon (index, then the API); prints its port, stops when stdin closes."""
    from memex.ingest.indexer import discover, index_transcripts
    from memex.sync.daemon import Daemon

    config = config_for(home)
    daemon = Daemon(config, serve_api=True)
    index_transcripts(daemon.conn, config, discover({"claude": [SHARED / "claude"], "codex": [SHARED / "codex"]}))
    daemon.start(index=False)
    assert daemon.api is not None
    print(daemon.api.port, flush=True)
    sys.stdin.read()
    daemon.close()


# --- the clients -----------------------------------------------------------------------------------


def request(path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    ).encode()


def burst(port: int, requests: list[bytes], timeout: float) -> list[tuple[int | None, float]]:
    """One connection per request, all opened at once; (status or None, seconds from connect to the
    server's close) each. A request not finished within `timeout` s is (None, timeout)."""
    selector = selectors.DefaultSelector()
    started = time.perf_counter()
    answers = [b""] * len(requests)
    ended: list[float | None] = [None] * len(requests)
    for index in range(len(requests)):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE, index)
    while selector.get_map():
        left = started + timeout - time.perf_counter()
        if left <= 0:
            break
        for key, events in selector.select(timeout=min(left, 0.5)):
            sock, index = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                if events & selectors.EVENT_WRITE:
                    sock.sendall(requests[index])  # small: fits in the socket buffer
                    selector.modify(sock, selectors.EVENT_READ, index)
                    continue
                data = sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            answers[index] += data
            if not data:
                ended[index] = time.perf_counter() - started
                selector.unregister(sock)
                sock.close()
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    selector.close()
    results = []
    for answer, end in zip(answers, ended, strict=True):
        first = answer.split(b"\r\n", 1)[0].split()
        status = int(first[1]) if end is not None and len(first) > 1 and first[1].isdigit() else None
        results.append((status, end if end is not None else timeout))
    return results


def slow_clients(port: int, count: int, probe: str, watch: int, limit: float) -> tuple[int, float, int, float | None]:
    """`count` connections sending a request line a byte a second. Returns the server's extra threads
    after 3 s, a normal request's latency meanwhile (s), how many the server closed within `limit` s,
    and when the last of those was closed."""
    baseline = threads_of(watch)
    line = b"GET /health HTTP/1.1\r\nX-Slow: " + b"s" * 1000
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    for sock in sockets:
        sock.setblocking(False)
    closed: dict[int, float] = {}
    started = time.perf_counter()
    held = 0
    probe_latency = float("nan")
    sent = 0
    while time.perf_counter() - started < limit and len(closed) < count:
        for index, sock in enumerate(sockets):
            if index in closed:
                continue
            try:
                if sock.recv(4096) == b"":
                    closed[index] = time.perf_counter() - started
                    continue
            except BlockingIOError:
                pass
            except OSError:
                closed[index] = time.perf_counter() - started
                continue
            try:
                sock.send(line[sent : sent + 1])
            except OSError:
                closed[index] = time.perf_counter() - started
        sent += 1
        if sent == 3:
            held = threads_of(watch) - baseline
            probe_latency = burst(port, [request(probe)], timeout=limit)[0][1]
        time.sleep(max(0.0, started + sent - time.perf_counter()))
    for sock in sockets:
        sock.close()
    return held, probe_latency, len(closed), max(closed.values()) if closed else None


# --- the server's process --------------------------------------------------------------------------


def fds_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def rss_of(pid: int) -> int:
    """Resident memory in KiB."""
    return _status(pid, "VmRSS")


def threads_of(pid: int) -> int:
    return _status(pid, "Threads")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def latencies(answered: list[float], asked: int) -> str:
    """`answered/asked`, with p50 and p95 of the answered."""
    if not answered:
        return f"0/{asked} answered"
    p50, p95 = statistics.median(answered) * 1000, percentile(answered, 0.95) * 1000
    return f"{len(answered)}/{asked} answered; p50 {p50:,.0f} ms, p95 {p95:,.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--slow", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=10.0, help="a client's wait for an answer (s)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    console = Console(stderr=True)
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="memex-bench-api-") as folder:
        home = Path(folder) / "home"
        console.print("indexing the shared transcripts and starting the daemon…")
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            pid = server.pid
            conn = connect_readonly(config_for(home).db_path)
            sessions = [row[0] for row in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
            conn.close()
            searches = [f"/v1/search?q={word}&limit=10" for word in WORDS]
            mirrors = [f"/v1/sessions/{quote(session)}/mirror" for session in sessions]
            raws = [f"/v1/sessions/{quote(session)}/raw" for session in sessions]
            others = ["/health", "/v1/search?q=a%00b", "/v1/sessions/nope/mirror", "/v1/search?q="]
            mixed = searches + mirrors + raws + others
            for start in range(0, len(mixed), 20):  # warm: the model loaded, the pool's handles open
                burst(port, [request(path) for path in mixed[start : start + 20]], timeout=60)

            mix = [mirrors[n % len(mirrors)] if n % 10 == 0 else searches[n % len(searches)] for n in range(200)]
            for name, paths in (("/v1/search", searches), ("/mirror", mirrors), ("mixed", mix)):
                console.print(f"{args.clients} concurrent clients, {name}…")
                chosen = [paths[n % len(paths)] for n in range(args.clients)]
                started = time.perf_counter()
                results = burst(port, [request(path) for path in chosen], args.timeout)
                wall = time.perf_counter() - started
                for route in ("/v1/search", "/mirror"):
                    mine = [result for result, path in zip(results, chosen, strict=True) if route in path]
                    if mine:
                        answered = [seconds for status, seconds in mine if status == 200]
                        what = f"{args.clients} concurrent clients, " + (
                            f"mixed: its {route}" if name == "mixed" else route
                        )
                        rows.append(
                            (what, latencies(answered, len(mine)), f"{args.timeout:g} s to answer; {wall:.1f} s in all")
                        )

            console.print(f"{args.requests:,} requests…")
            marks = [(0, fds_of(pid), rss_of(pid), threads_of(pid))]
            statuses: dict[int | None, int] = {}
            for start in range(0, args.requests, 20):
                batch = [request(mixed[n % len(mixed)]) for n in range(start, min(start + 20, args.requests))]
                for status, _ in burst(port, batch, timeout=60):
                    statuses[status] = statuses.get(status, 0) + 1
                done = start + len(batch)
                if done == args.requests or done % (args.requests // 2) == 0:
                    marks.append((done, fds_of(pid), rss_of(pid), threads_of(pid)))
            answered = ", ".join(f"{count} × {status}" for status, count in sorted(statuses.items(), key=str))
            rows.append(
                (
                    "server after " + " → ".join(f"{done:,}" for done, *_ in marks) + " requests",
                    "fds "
                    + " → ".join(str(fds) for _, fds, _, _ in marks)
                    + ", RSS "
                    + " → ".join(f"{rss / 1024:.0f}" for _, _, rss, _ in marks)
                    + " MiB, threads "
                    + " → ".join(str(threads) for *_, threads in marks),
                    f"search, mirror, raw, health, bad input; 20 at a time ({answered})",
                )
            )

            console.print(f"{args.slow} slow clients…")
            held, latency, cut, last = slow_clients(port, args.slow, "/health", pid, limit=40)
            rows.append(
                (
                    f"{args.slow} slow clients (a byte a second)",
                    f"{held} threads held; {cut}/{args.slow} cut"
                    + (f", the last after {last:.1f} s" if last is not None else " within 40 s"),
                    f"a /health meanwhile: {latency * 1000:,.0f} ms",
                )
            )
        finally:
            if server.stdin is not None:
                server.stdin.close()
            server.wait(timeout=30)

    table = Table(title="memex daemon HTTP API (server in its own process, clients on 127.0.0.1)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("what it covers")
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    print(f"{len(sessions)} sessions indexed from ../shared/data (Claude Code and Codex)")


if __name__ == "__main__":
    main()
