"""Ingest benchmark: full backfill throughput, mixed-agent backfill, and incremental-ingest latency.

    uv run python bench/ingest.py                 # 500 MB Claude backfill, 200 MB mixed, 5/50/100 MB incremental
    uv run python bench/ingest.py --size-mb 50 --mixed-mb 50    # a quicker run
    uv run python bench/ingest.py --incremental-only            # only the incremental latencies

The incremental transcripts repeat a real 1.4 MB session, each copy with its own response ids (as one
long session has): a 50 MB one holds a 1.8M-character conversation, a 100 MB one a mirror at its
2,000,000-character cap, whose last half then slides along with every turn.

The backfill corpus is the real Claude Code transcripts of ../shared/data/claude replicated (each copy with
fresh session ids) to the requested size. The mixed corpus adds the real Codex rollouts of
../shared/data/codex and the Gemini chats of tests/fixtures/gemini, replicated the same way (about half
Claude, 40% Codex, 10% Gemini by bytes), and is indexed as `memex index --all` does: in one process, then
with worker processes parsing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.config import load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.sources import claude
from memex.store.db import connect

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "claude"
SHARED_CODEX = SHARED.parent / "codex" / "MoonLadderStudios__MoonMind" / "sessions"
GEMINI_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gemini" / "tmp"
UUID_LIKE = 36
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def build_backfill_corpus(target: Path, size_mb: int) -> int:
    """Copies of every shared Claude transcript, each copy with new session ids; returns bytes written."""
    sources = [p for p in SHARED.rglob("*.jsonl") if p.stat().st_size > 0]
    originals = [(p, p.read_bytes()) for p in sources]
    ids = {p.stem for p in sources if len(p.stem) == UUID_LIKE}
    written, copy = 0, 0
    while written < size_mb * 1_048_576:
        renames = {old: str(uuid.uuid4()) for old in ids}
        folder = target / f"-home-bench-copy{copy}"
        folder.mkdir(parents=True)
        for path, data in originals:
            for old, new in renames.items():
                if old.encode() in data:
                    data = data.replace(old.encode(), new.encode())
            name = renames.get(path.stem, f"{path.stem}-{copy}") + ".jsonl"
            if path.stem.startswith("agent-"):
                name = path.name
            (folder / name).write_bytes(data)
            written += len(data)
        copy += 1
    return written


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds used by this process and by its finished children (the parsing workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def build_mixed_corpus(target: Path, size_mb: int) -> dict[str, int]:
    """Claude, Codex and Gemini transcripts with fresh session ids, about 50/40/10 by bytes; bytes per agent."""
    written = {"claude": build_backfill_corpus(target / "claude", size_mb // 2)}
    rollouts = [(p, p.read_bytes()) for p in sorted(SHARED_CODEX.rglob("rollout-*.jsonl"))]
    written["codex"], copy = 0, 0
    while written["codex"] < size_mb * 0.4 * 1_048_576:
        for path, data in rollouts:
            old, new = _UUID.search(path.name).group(0), str(uuid.uuid4())  # type: ignore[union-attr]
            day = target / "codex" / f"copy{copy}"
            day.mkdir(parents=True, exist_ok=True)
            (day / path.name.replace(old, new)).write_bytes(data.replace(old.encode(), new.encode()))
            written["codex"] += len(data)
        copy += 1
    chats = [(p, p.read_bytes()) for p in sorted(GEMINI_FIXTURES.rglob("*.json*"))]
    written["gemini"], copy = 0, 0
    while written["gemini"] < size_mb * 0.1 * 1_048_576:
        renames = {old: str(uuid.uuid4()) for _, data in chats for old in set(_UUID.findall(data.decode()))}
        for path, data in chats:
            relative = str(path.relative_to(GEMINI_FIXTURES))
            for old, new in renames.items():
                data = data.replace(old.encode(), new.encode())
                relative = relative.replace(old, new).replace(old[:8], new[:8])
            destination = target / "gemini" / f"project{copy % 20}-{relative}"
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(data)
            written["gemini"] += len(data)
        copy += 1
    return written


def backfill(roots: dict[str, list[Path]], home: Path, corpus_bytes: int, workers: int = 1) -> dict[str, float]:
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    transcripts = discover(roots)
    before = _cpu_seconds()
    started = time.perf_counter()
    report = index_transcripts(conn, config, transcripts, workers=workers)
    seconds = time.perf_counter() - started
    after = _cpu_seconds()
    conn.close()
    return {
        "writer_cpu": after[0] - before[0],
        "workers_cpu": after[1] - before[1],
        "files": report.files,
        "turns": report.turns,
        "mirrors": report.mirrors,
        "seconds": seconds,
        "mb_per_s": corpus_bytes / 1_048_576 / seconds,
        "turns_per_s": report.turns / seconds,
    }


def _turn_lines(session_id: str, n: int) -> bytes:
    """One realistic turn, written as Claude Code writes it: a prompt, a tool call, its result, an answer."""
    stamp = "2026-06-01T10:00:00.000Z"
    base = {"sessionId": session_id, "cwd": "/home/bench/big", "timestamp": stamp, "isSidechain": False}
    message_id = f"msg_{n}"
    records = [
        {**base, "type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"fix the bug #{n}"}},
        {
            **base,
            "type": "assistant",
            "uuid": f"a{n}",
            "message": {
                "id": message_id,
                "role": "assistant",
                "content": [{"type": "text", "text": f"Let me read the module {n}."}],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": f"b{n}",
            "message": {
                "id": message_id,
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{n}",
                        "name": "Read",
                        "input": {"file_path": f"/home/bench/big/src/mod{n}.py"},
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": f"r{n}",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{n}", "content": "def f():\n    return 1\n" * 200}
                ],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": f"c{n}",
            "message": {
                "id": f"msg_{n}b",
                "role": "assistant",
                "content": [{"type": "text", "text": f"Fixed: mod{n}.py now returns early. " * 20}],
            },
        },
    ]
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def incremental(workdir: Path, size_mb: int, appends: int = 30) -> dict[str, float]:
    """Latency of ingesting one appended turn into a transcript of `size_mb` megabytes."""
    session_id = str(uuid.uuid4())
    path = workdir / f"{session_id}.jsonl"
    seed = (SHARED / "obra__episodic-memory" / "large-conversation.jsonl").read_bytes()
    with path.open("wb") as handle:
        for copy in itertools.count():  # a copy with the same response ids would be dropped as a repeat
            if handle.tell() >= size_mb * 1_048_576:
                break
            handle.write(seed.replace(b'"msg_', f'"msg_{copy}_'.encode()))
    config = load_config({"MEMEX_HOME": str(workdir / f"home-{size_mb}"), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    transcript = claude.classify(path)
    ingest_transcript(conn, config, transcript)
    mirror_chars = conn.execute("SELECT length(conversation_text) FROM mirrors").fetchone()[0]
    timings = []
    for n in range(appends):
        with path.open("ab") as handle:
            handle.write(_turn_lines(session_id, n))
        started = time.perf_counter()
        ingest_transcript(conn, config, transcript)
        timings.append((time.perf_counter() - started) * 1000)
    conn.close()
    timings.sort()
    return {
        "p50_ms": statistics.median(timings),
        "p95_ms": timings[int(len(timings) * 0.95) - 1],
        "mirror_chars": mirror_chars,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=500, help="backfill corpus size (default 500)")
    parser.add_argument("--mixed-mb", type=int, default=200, help="mixed-agent backfill corpus size (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for the mixed backfill")
    parser.add_argument("--big-mb", type=int, default=50, help="transcript size for the incremental test")
    parser.add_argument("--capped-mb", type=int, default=100, help="a transcript whose mirror is at its cap")
    parser.add_argument("--incremental-only", action="store_true", help="skip the backfills")
    args = parser.parse_args()
    console = Console()
    table = Table(title="memex ingest benchmark")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    with tempfile.TemporaryDirectory(prefix="memex-bench-") as folder:
        work = Path(folder)
        if not args.incremental_only:
            backfills(args, work, table, console)
        console.print("incremental ingest …", style="dim")
        for size in (max(1, args.big_mb // 10), args.big_mb, args.capped_mb):
            result = incremental(work, size)
            table.add_row(
                f"incremental: +1 turn on {size} MB (mirror of {result['mirror_chars']:,} characters)",
                f"p50 {result['p50_ms']:.1f} ms · p95 {result['p95_ms']:.1f} ms",
                "< 100 ms",
            )
    console.print(table)
    console.print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", style="dim")


def backfills(args: argparse.Namespace, work: Path, table: Table, console: Console) -> None:
    """The Claude backfill and the mixed-agent backfill (one process, then parsing workers), as table rows."""
    console.print(f"building a {args.size_mb} MB corpus from {SHARED} …", style="dim")
    corpus_bytes = build_backfill_corpus(work / "corpus", args.size_mb)
    console.print("full backfill …", style="dim")
    full = backfill({"claude": [work / "corpus"]}, work / "home", corpus_bytes)
    console.print(f"building a {args.mixed_mb} MB mixed-agent corpus …", style="dim")
    mixed_bytes = build_mixed_corpus(work / "mixed", args.mixed_mb)
    mixed_total = sum(mixed_bytes.values())
    roots = {
        "claude": [work / "mixed" / "claude"],
        "codex": [work / "mixed" / "codex"],
        "gemini": [work / "mixed" / "gemini"],
    }
    console.print("mixed-agent backfill, one process …", style="dim")
    mixed_one = backfill(roots, work / "home-mixed-1", mixed_total, workers=1)
    console.print(f"mixed-agent backfill, {args.workers} workers …", style="dim")
    mixed_par = backfill(roots, work / "home-mixed-n", mixed_total, workers=args.workers)
    table.add_row(
        f"full backfill ({corpus_bytes / 1_048_576:.0f} MB, {full['files']} files)",
        f"{full['mb_per_s']:.1f} MB/s",
        "≥ 20 MB/s",
    )
    table.add_row("  turns per second", f"{full['turns_per_s']:,.0f}", "")
    table.add_row("  wall time", f"{full['seconds']:.1f} s", "")
    shares = ", ".join(f"{agent} {size / 1_048_576:.0f}" for agent, size in mixed_bytes.items())
    for label, result in (("one process", mixed_one), (f"{args.workers} parsing workers", mixed_par)):
        table.add_row(
            f"mixed-agent backfill ({mixed_total / 1_048_576:.0f} MB: {shares}; {result['files']} files), {label}",
            f"{result['mb_per_s']:.1f} MB/s · {result['seconds']:.1f} s",
            "≥ 20 MB/s",
        )
    table.add_row(
        "  CPU: writer · parsing workers",
        f"{mixed_one['writer_cpu']:.1f} s · — / {mixed_par['writer_cpu']:.1f} s · {mixed_par['workers_cpu']:.1f} s",
        "",
    )
    table.add_row("  mirrors written", f"{mixed_par['mirrors']:,}", "")


if __name__ == "__main__":
    sys.exit(main())
