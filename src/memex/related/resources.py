"""Resources: which file mentions count for find-related, the text a path is embedded as, and the cache of
path vectors (`resource_embeddings`) that every session's centroids share.

What counts, and why:
- A file a tool read, edited or wrote (Claude's Read/Edit/Write…, Codex's apply_patch and the files a
  shell command names, Gemini's read_file/replace/write_file…) and a file the user @-mentioned.
- Not a Grep/Glob/LS call (and Gemini's, Cursor's, OpenCode's, Pi's, Cline's and Roo Code's equivalents):
  what they record is a folder or a pattern to search, not a file the turn worked on.
- Not a `file_history_snapshot`: Claude Code's snapshot before each prompt lists every file it has tracked
  since the session began, so it repeats the Edit/Write mentions of earlier turns; counting it would pull
  each later turn's centroid toward everything edited before it. The edits themselves are already counted.
- Not the project root, a folder (`src/`), a glob, a URL, or a scratch file under a temporary folder.

Changing any of this, or the path recipe, means bumping `memex.config.RESOURCE_TEXT_VERSION`.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence

import numpy as np

from memex.config import Config
from memex.embed.model import load_embedder
from memex.store import access_patterns as patterns
from memex.store.access_patterns import json_list
from memex.store.db import transaction
from memex.textutil import normalize_timestamp

# Tools whose file mention means the turn changed the file (they weigh `related_edit_weight`).
CHANGING_TOOLS = (
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "apply_patch",
    "replace",
    "write_file",
    "edit",
    "edit_file",
)
# Mentions that say nothing about which file a turn worked on (see the module's docstring).
IGNORED_TOOLS = (
    "Grep",
    "Glob",
    "LS",
    "glob",
    "grep",
    "grep_search",
    "search_file_content",
    "list_directory",
    "list_dir",  # Cursor's (a SpecStory export's `Listed directory src`)
    "list",  # OpenCode's
    "ls",  # Pi's (and its `find`, which takes a folder and a pattern)
    "find",
    "list_files",  # Cline's and Roo Code's (and their searches of a folder)
    "search_files",
    "list_code_definition_names",
    "file_history_snapshot",
)
TEMP_ROOTS = ("/tmp/", "/private/tmp/", "/var/tmp/", "/var/folders/", "/private/var/folders/", "/dev/", "/proc/")
_PATTERN_CHARS = re.compile(r"[*?\[\]{}]")
_HOME = re.compile(r"^(?:/home|/Users)/[^/]+/|^~/")
_SEPARATORS = re.compile(r"[\s/\\._\-]+")
# Inside a word: `camelCase` → camel Case, `HTTPServer` → HTTP Server.
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# What find-related is doing, for a progress bar: (the step, done, total; None while it cannot be counted).
ProgressFn = Callable[[str, int, int | None], None]
FINDING_PATHS = "Finding new file paths"
LOADING_MODEL = "Loading the embedding model"
EMBEDDING_PATHS = "Embedding file paths"
COMPUTING_CENTROIDS = "Computing centroids"


def resource_text(path: str, max_chars: int | None = None) -> str:
    """The words a path is embedded as: `src/memex/cli/searchCommand.py` → `src memex cli search command py`.

    The user's home folder is dropped (`/home/ann/.bashrc` reads as `bashrc`): it names a person, not
    what the file is about.
    """
    words: list[str] = []
    for piece in _SEPARATORS.split(_HOME.sub("", path.strip())):
        words.extend(word.lower() for word in _CAMEL.split(piece) if word)
    text = " ".join(words)
    return text[:max_chars].strip() if max_chars else text


def counts(path: str) -> bool:
    """Whether a mentioned path is a file that says what a turn worked on."""
    path = path.strip()
    return bool(
        path
        and path not in (".", "..")
        and not path.endswith("/")
        and "://" not in path
        and not _PATTERN_CHARS.search(path)
        and not path.startswith(TEMP_ROOTS)
        and resource_text(path)
    )


def weight_sql(config: Config, fm: str = "fm") -> tuple[str, list[object]]:
    """The weight of a mention in file_mentions aliased `fm`: `related_edit_weight` for a changing tool, else 1."""
    marks = ",".join("?" * len(CHANGING_TOOLS))
    return f"(CASE WHEN {fm}.tool_name IN ({marks}) THEN ? ELSE 1 END)", [*CHANGING_TOOLS, config.related_edit_weight]


def counted_tools_sql(fm: str = "fm") -> tuple[str, list[object]]:
    """The condition leaving out mentions of ignored tools. Which paths count is decided by `counts` when a
    path is embedded: a mention counts only when its path has a vector."""
    return f"{fm}.tool_name NOT IN ({','.join('?' * len(IGNORED_TOOLS))})", list(IGNORED_TOOLS)


def missing_resources(conn: sqlite3.Connection, config: Config, session_ids: Sequence[str]) -> list[str]:
    """Paths the sessions' turns (subagents' included) mention that count and have no vector yet."""
    if not session_ids:
        return []
    condition, params = counted_tools_sql()
    rows = conn.execute(
        "SELECT DISTINCT fm.file_path FROM turns t JOIN file_mentions fm ON fm.turn_id = t.id "
        f"WHERE t.session_id IN (SELECT value FROM json_each(?)) AND {condition} "
        "AND NOT EXISTS (SELECT 1 FROM resource_embeddings r WHERE r.resource = fm.file_path "
        "AND r.model_version = ?) ORDER BY fm.file_path",
        [json_list(session_ids), *params, config.resource_model_version],
    ).fetchall()
    return [row[0] for row in rows if counts(row[0])]


def embed_resources(
    conn: sqlite3.Connection, config: Config, paths: Sequence[str], on_progress: ProgressFn | None = None
) -> int:
    """Embed and cache `paths` (those that count): each batch is embedded outside any transaction, then
    stored in one; how many were stored. `on_progress` hears of the model loading, then of every batch.

    Safe to interrupt (what was stored stays) and to run beside another process doing the same (a path
    already cached is left as it is).
    """
    paths = [p for p in dict.fromkeys(paths) if counts(p)]
    stored, size = 0, max(1, config.embed_batch_size)
    if paths and on_progress is not None:
        on_progress(LOADING_MODEL, 0, None)  # the first batch loads the model: seconds with nothing to count
        load_embedder(config)
        on_progress(EMBEDDING_PATHS, 0, len(paths))
    for start in range(0, len(paths), size):
        batch = paths[start : start + size]
        vectors = _embed(config, batch)
        with transaction(conn):
            stored += _insert(conn, config, batch, vectors)
        if on_progress is not None:
            on_progress(EMBEDDING_PATHS, min(start + size, len(paths)), len(paths))
    return stored


def store_vectors(conn: sqlite3.Connection, config: Config, paths: Sequence[str]) -> int:
    """Embed and cache `paths` (those that count) inside the caller's transaction; how many were stored."""
    paths = [p for p in dict.fromkeys(paths) if counts(p)]
    return _insert(conn, config, paths, _embed(config, paths)) if paths else 0


def _embed(config: Config, paths: Sequence[str]) -> np.ndarray:
    embedder = load_embedder(config)
    return embedder.embed_passages([resource_text(p, config.related_path_max_chars) for p in paths])


def _insert(conn: sqlite3.Connection, config: Config, paths: Sequence[str], vectors: np.ndarray) -> int:
    stamp = normalize_timestamp(time.time())
    return patterns.put_path_vectors(
        conn,
        [
            (path, config.resource_model_version, _blob(vector), stamp)
            for path, vector in zip(paths, vectors, strict=True)
        ],
    )


def load_vectors(conn: sqlite3.Connection, resource_ids: Sequence[int]) -> np.ndarray:
    """The cached vectors of these resource rows, in the order given (one row each)."""
    if not resource_ids:
        return np.zeros((0, 0), dtype=np.float32)
    rows = patterns.path_vectors(conn, resource_ids)
    return np.frombuffer(b"".join(rows[i] for i in resource_ids), dtype="<f4").reshape(len(resource_ids), -1)


def _blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()
