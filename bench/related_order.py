"""find-related ordering on real transcripts: the centroid similarity alone (before) against the combined
score (after: files in common weighted by rarity, shared files first; memex.related.rarity).

    uv run python bench/related_order.py                 # every real transcript of ../shared/data
    uv run python bench/related_order.py --show 8        # and the top 5 of 8 sessions, before and after

Indexes the real Claude Code, Codex and recorded live transcripts of ../shared/data into a temporary
store (the real embedding model embeds their file paths), then asks `find-related sessions` of every
session that touched a file, over all the others, and compares the two orderings of the same results.
Measures, per query, averaged over the queries that have at least one session sharing a file:
- the rank of the first result sharing a file, and the mean rank of those that share one;
- inversions: pairs where a result sharing no file ranks above one that shares a file;
- files in common, and the rarity-weighted share, of the top 5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.api import Memex
from memex.config import load_config
from memex.errors import UserError
from memex.related import related_sessions
from memex.store.db import connect
from memex.store.queries import Filters

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ROOTS = [SHARED / "claude", SHARED / "codex", SHARED / "live"]
TOP = 5


def measures(hits: list[dict]) -> dict[str, float]:
    """The ordering's figures for one query's results, in the order given."""
    sharing = [rank for rank, hit in enumerate(hits, 1) if hit["shared_count"]]
    inversions = sum(
        1 for i, a in enumerate(hits) for b in hits[i + 1 :] if not a["shared_count"] and b["shared_count"]
    )
    top = hits[:TOP]
    return {
        "first": sharing[0],
        "mean": statistics.fmean(sharing),
        "inversions": inversions,
        "shared_top": statistics.fmean(hit["shared_count"] for hit in top),
        "rarity_top": statistics.fmean(hit["shared_score"] for hit in top),
    }


def label(hit: dict) -> str:
    return f"{hit['session_id'][:8]}({hit['shared_count']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=6, help="sessions whose top 5 is printed (default 6)")
    args = parser.parse_args()
    console = Console(width=170)
    with tempfile.TemporaryDirectory(prefix="memex-related-order-") as home:
        os.environ["MEMEX_HOME"] = home
        config = load_config()
        with Memex(config) as memex:
            memex.index(memex.discover([p for p in ROOTS if p.is_dir()]))
        conn = connect(config.db_path)
        sessions = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT session_id FROM file_mentions WHERE tool_name NOT IN "
                "('Grep', 'Glob', 'LS', 'file_history_snapshot') ORDER BY session_id"
            )
        ]
        related_sessions(conn, config, sessions[0], Filters(), 1)  # embeds the paths, computes the centroids
        queries = conn.execute("SELECT count(*) FROM session_access_patterns WHERE embedding IS NOT NULL").fetchone()
        projects = dict(conn.execute("SELECT session_id, project_dir FROM sessions").fetchall())
        before_rows, after_rows, shown = [], [], []
        for session_id in sessions:
            try:
                found = related_sessions(conn, config, session_id, Filters(), 10_000)["results"]
            except UserError:  # a session whose only files do not count: nothing to compare
                continue
            if not any(hit["shared_count"] for hit in found):
                continue
            before = sorted(found, key=lambda hit: (-hit["similarity"], hit["session_id"]))
            before_rows.append(measures(before))
            after_rows.append(measures(found))
            shown.append((session_id, before, found))
        conn.close()

    table = Table(
        title=f"find-related sessions ordering on real transcripts — {queries[0]} sessions with files, "
        f"{len(after_rows)} with at least one other session sharing a file"
    )
    table.add_column("measure (mean over those sessions)")
    table.add_column("before: similarity", justify="right")
    table.add_column("after: combined score", justify="right")
    for key, name, fmt in (
        ("first", "rank of the first result sharing a file", "{:.2f}"),
        ("mean", "mean rank of the results sharing a file", "{:.2f}"),
        ("inversions", "results sharing no file ranked above one that shares", "{:.2f}"),
        ("shared_top", f"files in common in the top {TOP}", "{:.2f}"),
        ("rarity_top", f"rarity-weighted share in the top {TOP}", "{:.3f}"),
    ):
        table.add_row(
            name,
            fmt.format(statistics.fmean(r[key] for r in before_rows)),
            fmt.format(statistics.fmean(r[key] for r in after_rows)),
        )
    console.print(table)
    detail = Table(title=f"top {TOP}, before and after: session(files in common)")
    for column in ("session", "project", "before", "after"):
        detail.add_column(column)
    for session_id, before, after in shown[: args.show]:
        project = (projects.get(session_id) or "—").rstrip("/").rsplit("/", 1)[-1]
        detail.add_row(
            session_id[:8],
            project,
            " ".join(label(hit) for hit in before[:TOP]),
            " ".join(label(hit) for hit in after[:TOP]),
        )
    console.print(detail)


if __name__ == "__main__":
    main()
