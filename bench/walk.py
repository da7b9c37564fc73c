"""Incremental `memex index` over many transcripts where (almost) nothing changed: CPU and file-system calls.

    uv run python bench/walk.py                    # 20,000 transcripts, 5 runs of each measure
    uv run python bench/walk.py --files 2000 --runs 3
    uv run python bench/walk.py --instructions     # also the user-space instructions, by valgrind
    uv run python bench/walk.py --store OTHER.db   # start from a copy of another store of the same files
    PYTHONPATH=/tmp/old/src uv run python bench/walk.py   # another tree's code (`git archive REV src`): before/after

The row naming the grown transcript is `memex index PATH` (what the Stop hook does and what a peer that
re-indexes "the one file" does): no folder is walked. The last rows run `memex index` with a warm server up
(`index_warm = 1`, `memex.ingest.live`): the server's live tree (inotify) replaces the walk and the server
runs the index; "server CPU ms" is what its threads spent meanwhile (/proc/PID/task/*/schedstat), to be added
to the client's for the whole cost. The last two rows are the daemon's scan for changed transcripts (every
`daemon_scan_seconds`), polling every file's size and time, and reading the folders from a live tree.

Writes `--files` small Claude Code transcripts (two turns each, 100 per project folder) into
bench/.cache/walk-<files> and backfills them once (cached); then runs `memex index --no-embed` as a new
process: with nothing changed, and after one turn was appended to one transcript. CPU is the process's
user + system time (whole process, start-up included; `memex --version` gives the CLI's start-up, which
`memex index` writing to pipes skips: `memex.cli.lean`); the file-system calls are counted by strace
(stat / lstat / open / readlink of any kind) in one more run.
CPU time on a machine shared with other jobs is inflated (the table's title gives the load average);
`--instructions` adds the instructions the process executes in user space (valgrind's callgrind, one more
run, ~50x slower), a figure other jobs do not change.

`--store` first copies a store of these transcripts made elsewhere (another worktree's bench store, whose
paths name that worktree's files) over the bench's: its first run finds every transcript at a path the store
does not know, and records where each moved (`memex.ingest.moves`). The table's first row is that run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

CACHE = Path(__file__).resolve().parent / ".cache"
MEMEX = Path(sys.executable).with_name("memex")
PER_FOLDER = 100
console = Console(width=150)


def line(kind: str, session: str, n: int, text: str, cwd: str) -> str:
    role = "user" if kind == "user" else "assistant"
    content = text if kind == "user" else [{"type": "text", "text": text}]
    message = {"role": role, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{session[-12:]}_{n}"  # unique per session, as real response ids are
    record = {
        "parentUuid": None,
        "isSidechain": False,
        "type": kind,
        "uuid": f"{session[:8]}-{n}",
        "timestamp": f"2026-03-01T10:{n % 60:02d}:00.000Z",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.1.100",
        "message": message,
    }
    return json.dumps(record) + "\n"


def turn(session: str, n: int, cwd: str) -> str:
    return line("user", session, n, f"prompt {n} about the cache layer of {session[:8]}", cwd) + line(
        "assistant", session, n + 1, f"answer {n}: changed the eviction policy in module {n % 7}", cwd
    )


def build(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "projects" / f"-home-dev-p{i // PER_FOLDER}"
        folder.mkdir(parents=True, exist_ok=True)
        session = str(uuid.UUID(int=i + 1))
        cwd = f"/home/dev/p{i // PER_FOLDER}"
        (folder / f"{session}.jsonl").write_text(turn(session, 0, cwd) + turn(session, 2, cwd))


def environment(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMEX_HOME": str(root / "home"),
        "MEMEX_COMPUTER": "bench",
        "MEMEX_CLAUDE_DIR": str(root / "projects"),
        "MEMEX_CODEX_DIR": str(root / "no-codex"),
        "MEMEX_GEMINI_DIR": str(root / "no-gemini"),
        "MEMEX_INDEX_EMBEDS": "0",
        "MEMEX_INDEX_WARM": "0",  # the walk's rows walk; the warm server's rows turn it on
        "MEMEX_REDIS_URL": "",
    }


def server_cpu(pid: int) -> float:
    """CPU seconds the threads of process `pid` have run so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total / 1e9


def cpu_of(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, command
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started


def syscalls(command: list[str], env: dict[str, str]) -> dict[str, int]:
    """Calls per kind (stat-like, open, readlink, getdents) of one process, counted by strace."""
    if not shutil.which("strace"):
        return {}
    out = subprocess.run(
        ["strace", "-f", "-c", "-e", "trace=%file,getdents64", *command], env=env, capture_output=True, text=True
    ).stderr
    counts: dict[str, int] = {}
    for row in out.splitlines():
        fields = row.split()
        if len(fields) >= 5 and fields[-1].isidentifier() and fields[3].isdigit():
            name, calls = fields[-1], int(fields[3])
            kind = "stat" if re.search(r"stat", name) else name
            counts[kind] = counts.get(kind, 0) + calls
    return counts


def instructions(command: list[str], env: dict[str, str]) -> int | None:
    """User-space instructions one process executes (valgrind's callgrind), or None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out", *command],
            env=env,
            capture_output=True,
            text=True,
        ).stderr
    found = re.search(r"refs:\s+([\d,]+)", out)
    return int(found.group(1).replace(",", "")) if found else None


def daemon_scans(root: Path, runs: int, blanks: int) -> list[list[str]]:
    """Rows of the daemon's scan for changed transcripts (`memex.sync.watch.Watcher.scan`, in this process):
    CPU per scan polling every file, and reading the folders from a live tree (inotify)."""
    from memex.sources.tree import LiveTree, available
    from memex.sync.watch import Watcher

    rows = []
    for label, tree in (("polling", None), ("live tree", LiveTree() if available() else None)):
        if label == "live tree" and tree is None:
            continue
        watcher = Watcher({"claude": [root / "projects"]}, time.monotonic, 1.0, 5.0, tree)
        watcher.baseline()
        spent = []
        for _ in range(runs):
            started = time.process_time()
            watcher.scan()
            spent.append(time.process_time() - started)
        if tree is not None:
            tree.close()
        rows.append([f"the daemon's scan for changes, {label} (in process)", f"{statistics.median(spent) * 1000:.0f}"])
        rows[-1] += ["-"] * blanks
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="Also count instructions (valgrind).")
    parser.add_argument("--store", type=Path, help="Start from a copy of this store (made of the same files).")
    args = parser.parse_args()
    root = CACHE / f"walk-{args.files}"
    env = environment(root)
    index = [str(MEMEX), "index", "--no-embed"]
    if not (root / "home" / "memex.db").exists():
        shutil.rmtree(root, ignore_errors=True)
        console.print(f"writing {args.files:,} transcripts and backfilling them (once) …", style="dim")
        build(root, args.files)
        seconds = cpu_of([*index, "--workers", "2"], env)[1]
        console.print(f"backfilled in {seconds:.0f} s", style="dim")
    if args.store:  # over the bench's own store, through SQLite (what waits in the other's WAL comes too)
        database = root / "home" / "memex.db"
        for stale in (database.with_name("memex.db-wal"), database.with_name("memex.db-shm")):
            stale.unlink(missing_ok=True)
        database.unlink()
        source, target = sqlite3.connect(args.store), sqlite3.connect(database)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
    changed = next((root / "projects").glob("*/*.jsonl"))
    session = changed.stem
    rows = []

    def measure(label: str, command: list[str], before=None, server: int | None = None) -> None:  # type: ignore[no-untyped-def]
        cpu, wall, served = [], [], []
        for _ in range(args.runs):
            if before:
                before()
            spent = server_cpu(server) if server else 0.0
            c, w = cpu_of(command, env)
            served.append(server_cpu(server) - spent if server else 0.0)
            cpu.append(c)
            wall.append(w)
        if before:
            before()
        calls = syscalls(command, env)
        counted = []
        if args.instructions:
            if before:
                before()
            executed = instructions(command, env)
            counted = [f"{executed / 1e6:,.0f}" if executed else "-"]
        rows.append(
            [
                label,
                f"{statistics.median(cpu) * 1000:.0f}",
                f"{statistics.median(served) * 1000:.0f}" if server else "-",
                f"{statistics.median(wall) * 1000:.0f}",
                *counted,
                *(f"{calls.get(k, 0):,}" for k in ("stat", "openat", "readlink", "getdents64")),
            ]
        )

    appended = [0]

    def append_one() -> None:
        appended[0] += 1
        with changed.open("a") as handle:
            handle.write(turn(session, 1000 + 2 * appended[0] + int(time.time()) % 1000 * 100, "/home/dev/p0"))

    first = cpu_of(index, env)
    if args.store:  # a row of one run: the store's first run here, as copied
        rows.append(["`memex index`, the copied store's first run", *(f"{t * 1000:.0f}" for t in first)])
        rows[-1].insert(2, "-")
        rows[-1] += ["-"] * (4 + args.instructions)
    measure("`memex --version` (start-up alone)", [str(MEMEX), "--version"])
    measure("`memex index`, nothing changed", index)
    measure("`memex index`, one transcript grew by a turn", index, append_one)
    # What the Stop hook and a peer's re-index do: the one file is named, no folder is walked.
    measure("`memex index PATH`, the grown transcript named", [*index, str(changed)], append_one)
    env["MEMEX_INDEX_WARM"] = "1"
    server = subprocess.Popen(
        [str(MEMEX), "hooks", "serve", "--for-index", "--idle", "600"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # its socket first: a run finding none would walk (and might start another)
            if list((root / "home").glob("warm-*.sock")):
                break
            time.sleep(0.1)
        for _ in range(200):  # until it answers an index run (its tree made)
            if b'"warm": true' in subprocess.run([*index, "--json"], env=env, capture_output=True).stdout:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("the warm server did not answer")
        measure("`memex index`, warm server up, nothing changed", index, server=server.pid)
        measure("`memex index`, warm server up, one transcript grew", index, append_one, server=server.pid)
    finally:
        server.terminate()
        server.wait()
    rows.extend(daemon_scans(root, args.runs, 6 + args.instructions))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = Table(
        title=f"Incremental `memex index` over {args.files:,} transcripts (median of {args.runs} runs; "
        f"load average {load})"
    )
    columns = ["run", "CPU ms", "server CPU ms", "wall ms", *(["M instructions"] if args.instructions else [])]
    for column in (*columns, "stat calls", "openat", "readlink", "getdents64"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    main()
