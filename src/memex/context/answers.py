"""What memex says into an agent's context, computed from the store: recalled turns for a prompt, what a
compaction dropped, who touched a file before, the files a session touched. `Memex` calls these for every
door (the hooks' cold path, the warm server, the MCP server).

Every function takes an open connection and returns the text to inject ("" for nothing) and how many items
it holds; none of them writes, and each runs within the hooks' query deadline.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memex.config import Config
from memex.context.render import (
    render_compacted,
    render_file_history,
    render_recall,
    render_recent_files,
)
from memex.search.recall import Recalled, recall, recall_query_vector, semantic_recall
from memex.store.queries import (
    file_mentions_of,
    path_suffixes,
    session_file_tools,
    turns_before,
)

if TYPE_CHECKING:
    import numpy as np

    from memex.background import Background
    from memex.embed.model import Embedder

# Tools whose file mention means the turn changed the file: listed first in a file's history.
CHANGING_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit", "file_history_snapshot"}
_VERBS = {
    "Read": "read",
    "Edit": "edited",
    "MultiEdit": "edited",
    "Write": "written",
    "NotebookEdit": "edited",
    "file_history_snapshot": "edited",
    "at_mention": "mentioned",
    "Grep": "searched",
    "Glob": "listed",
}


@contextlib.contextmanager
def deadline(conn: sqlite3.Connection, milliseconds: int) -> Iterator[None]:
    """Interrupt any query still running `milliseconds` from now (sqlite3.OperationalError: interrupted)."""
    stop_at = time.monotonic() + milliseconds / 1000
    conn.set_progress_handler(lambda: int(time.monotonic() > stop_at), 2_000)
    try:
        yield
    finally:
        conn.set_progress_handler(None, 0)


def recall_answer(
    conn: sqlite3.Connection,
    config: Config,
    prompt: str,
    session_id: str | None = None,
    project_dir: str | None = None,
    *,
    semantic: bool = False,
) -> tuple[str, int]:
    """The recall injection for `prompt` (turns of sessions other than `session_id`, those of
    `project_dir` first), and how many turns it holds (`semantic`: also by meaning, for a process that
    keeps the model loaded)."""
    with deadline(conn, config.hook_query_deadline_ms):
        query_vector = recall_query_vector(conn, config, prompt, session_id) if semantic else None
        hits = recall(
            conn,
            prompt,
            session_id,
            project_dir,
            max_hits=config.recall_max_hits,
            max_per_session=config.recall_max_per_session,
            min_coverage=config.recall_min_coverage_pct / 100,
            min_terms=config.recall_min_terms,
            max_query_terms=config.recall_max_query_terms,
            common_term_share=config.recall_common_term_pct / 100,
        )
        if query_vector is not None:
            hits = _with_meaning(conn, config, prompt, session_id, project_dir, hits, query_vector)
        # Rendering reads nothing more; it is inside the deadline only because it is cheap.
        text = render_recall(hits, config.recall_budget_tokens, config.hook_max_chars, config.recall_hit_max_tokens)
    return text, len(hits)


def _with_meaning(
    conn: sqlite3.Connection,
    config: Config,
    prompt: str,
    session_id: str | None,
    project_dir: str | None,
    hits: list[Recalled],
    query_vector: Background[tuple[Embedder, np.ndarray]],
) -> list[Recalled]:
    """Lexical hits completed by meaning; on any trouble with the model or the vectors, the lexical hits."""
    from memex.embed.model import EmbedderUnavailable

    try:
        return semantic_recall(
            conn,
            config,
            prompt,
            session_id,
            project_dir,
            hits,
            config.recall_max_hits,
            config.recall_max_per_session,
            query_vector,
        )
    except (EmbedderUnavailable, OSError, ValueError, sqlite3.OperationalError):  # model, files, the deadline
        return hits


def compacted_answer(conn: sqlite3.Connection, config: Config, session: sqlite3.Row) -> tuple[str, int]:
    """The session's own last turns before its last compaction boundary (what the summary condensed)."""
    boundary = session["last_compact_line_index"]
    if boundary is None:
        return "", 0
    with deadline(conn, config.hook_query_deadline_ms):
        turns = turns_before(conn, session["session_id"], boundary, config.compact_max_turns)
    text = render_compacted(turns, config.compact_budget_tokens, config.hook_max_chars, config.compact_max_turns)
    return text, len(turns)


def file_history(conn: sqlite3.Connection, path: str, session_id: str | None, limit: int) -> list[dict[str, Any]]:
    """Turns of other sessions that touched the file at absolute `path`: changes first, then newest first,
    one turn per session."""
    rows = file_mentions_of(conn, path_suffixes(path), session_id)
    turns: dict[int, dict[str, Any]] = {}
    for row in rows:
        stored = row["file_path"]
        absolute = stored if stored.startswith("/") else f"{(row['project_dir'] or '').rstrip('/')}/{stored}"
        if absolute != path:
            continue
        turn = turns.setdefault(row["id"], {**dict(row), "tools": set()})
        turn["tools"].add(row["tool_name"])
    ordered = sorted(
        turns.values(),
        key=lambda t: (bool(t["tools"] & CHANGING_TOOLS), t["started_at"] or ""),
        reverse=True,
    )
    chosen, sessions = [], set()
    for turn in ordered:
        if turn["session_id"] in sessions:
            continue
        sessions.add(turn["session_id"])
        turn["tools"] = sorted({_VERBS.get(tool, tool) for tool in turn["tools"]})
        chosen.append(turn)
        if len(chosen) >= limit:
            break
    return chosen


def file_history_answer(
    conn: sqlite3.Connection, config: Config, path: str, session_id: str | None, cwd: str | None
) -> tuple[str, int]:
    """The PreToolUse injection for a file: who touched it before, or ""."""
    with deadline(conn, config.hook_query_deadline_ms):
        rows = file_history(conn, path, session_id, config.file_context_max_turns)
    shown = path
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        shown = path[len(cwd.rstrip("/")) + 1 :]
    text = render_file_history(shown, rows, config.file_context_budget_tokens, config.hook_max_chars)
    return text, len(rows)


def recent_files(conn: sqlite3.Connection, session_id: str, limit: int) -> list[tuple[str, list[str]]]:
    """The files a session's own turns (not its subagents') touched, most recent first, with verbs."""
    rows = session_file_tools(conn, session_id)
    files: dict[str, tuple[int, set[str]]] = {}
    for row in rows:
        last, verbs = files.get(row["file_path"], (-1, set()))
        verbs.add(_VERBS.get(row["tool_name"], row["tool_name"]))
        files[row["file_path"]] = (max(last, row["last_line"]), verbs)
    ordered = sorted(files.items(), key=lambda item: item[1][0], reverse=True)[:limit]
    return [(path, sorted(verbs)) for path, (_, verbs) in ordered]


def recent_files_answer(conn: sqlite3.Connection, config: Config, session_id: str) -> tuple[str, int]:
    with deadline(conn, config.hook_query_deadline_ms):
        files = recent_files(conn, session_id, config.subagent_files_max)
    return render_recent_files(files, config.hook_max_chars), len(files)
