"""Where a backfill's time goes: one process indexes a replicated Claude corpus under cProfile.

    uv run python bench/backfill_profile.py                 # 100 MB, top 25 functions by own time
    uv run python bench/backfill_profile.py --size-mb 50 --top 40

The corpus is bench/ingest.py's (the real Claude Code transcripts of ../shared/data/claude, each copy with
fresh session ids). Prints MB/s and peak RSS of the run without the profiler, then a table of the time
spent in each stage (own time of the functions in those modules, profiled), then the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ingest import build_backfill_corpus
from memex.config import load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

console = Console()
# Stages, by the file a function lives in (first match wins); "sqlite" is the C calls into the store.
STAGES = [
    ("JSON decoding", ("orjson", "json/")),
    ("reading lines (jsonl)", ("sources/jsonl.py",)),
    ("entries (source adapter)", ("sources/claude.py", "sources/guard.py", "sources/injected.py", "sources/model.py")),
    ("turns, chunks, mentions", ("ingest/turns.py", "ingest/chunks.py", "ingest/mentions.py", "ingest/prs.py")),
    ("mirrors", ("ingest/mirrors.py", "ingest/mirror_store.py", "redact.py")),
    ("pipeline and writes", ("ingest/pipeline.py", "ingest/state.py", "ingest/indexer.py")),
    ("SQLite (execute, commit)", ("sqlite3.Connection", "sqlite3.Cursor", "'execute", "'executemany", "'commit")),
    ("text utilities", ("textutil.py", "re.py", "'sub' of", "'findall'", "'split'", "'encode'")),
]


def stage_of(key: tuple[str, int, str]) -> str:
    where = f"{key[0]}:{key[2]}"
    for name, marks in STAGES:
        if any(mark in where for mark in marks):
            return name
    return "other"


def run(corpus: Path, home: Path) -> tuple[float, int]:
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench", "MEMEX_INDEX_EMBEDS": "0"})
    conn = connect(config.db_path)
    started = time.perf_counter()
    index_transcripts(conn, config, discover({"claude": [corpus]}))
    conn.close()
    return time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memex-bench-profile-") as work:
        corpus = Path(work) / "corpus"
        size = build_backfill_corpus(corpus, args.size_mb)
        cpu0 = time.process_time()
        seconds, peak_kb = run(corpus, Path(work) / "plain")
        cpu = time.process_time() - cpu0
        console.print(
            f"{size / 1_048_576:.0f} MB in {seconds:.1f} s ({size / 1_048_576 / seconds:.1f} MB/s, "
            f"{cpu:.1f} s CPU, {size / 1_048_576 / cpu:.1f} MB per CPU-second), peak RSS {peak_kb / 1024:.0f} MB"
        )
        profile = cProfile.Profile()
        profile.enable()
        run(corpus, Path(work) / "profiled")
        profile.disable()
    stats = pstats.Stats(profile)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    by_stage: dict[str, float] = {}
    for key, entry in raw.items():
        by_stage[stage_of(key)] = by_stage.get(stage_of(key), 0.0) + entry[2]
    table = Table(title="Backfill, own time per stage (profiled)")
    table.add_column("stage")
    table.add_column("share", justify="right")
    for name, seconds_in in sorted(by_stage.items(), key=lambda item: -item[1]):
        table.add_row(name, f"{seconds_in / total:.0%}")
    console.print(table)
    top = Table(title=f"Top {args.top} functions by own time")
    for column in ("function", "calls", "own s", "share"):
        top.add_column(column, justify="left" if column == "function" else "right")
    for key, entry in sorted(raw.items(), key=lambda item: -item[1][2])[: args.top]:
        name = f"{Path(key[0]).name}:{key[1]} {key[2]}" if key[0] != "~" else key[2]
        top.add_row(name[:90], f"{entry[1]:,}", f"{entry[2]:.2f}", f"{entry[2] / total:.1%}")
    console.print(top)


if __name__ == "__main__":
    main()
