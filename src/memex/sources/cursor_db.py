"""Cursor's editor database: `globalStorage/state.vscdb` (SQLite) in Cursor's user folder, from its public
descriptions (no real database is at hand).

Table `cursorDiskKV(key, value)`: `composerData:<composer id>` holds a chat (a "composer") as JSON {composerId,
name, createdAt, lastUpdatedAt, fullConversationHeadersOnly: [{bubbleId, type}], or, in older versions, the
messages inline as `conversation`}; `bubbleId:<composer id>:<bubble id>` holds one message {type: 1 (user) or
2 (assistant), text, thinking {text}, toolFormerData {name, params or rawArgs, result}, createdAt}. Each
workspace's own `workspaceStorage/<id>/state.vscdb` lists its composers (`ItemTable`, key
`composer.composerData`), and `workspace.json` beside it names the workspace's folder: the project.

Each composer is a synthetic transcript `<database>#<composer id>` (`memex.sources.sqlite_read`), re-read whole
when its fingerprint (the size of its records and its last update) moves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from functools import lru_cache, partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from memex.sources import sqlite_read
from memex.sources.files import Skipped, reason_of, safe_resolve
from memex.sources.guard import checked
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import items, obj, output_text, text, tool_block
from memex.textutil import normalize_timestamp

AGENT = "cursor"
DATABASE = "state.vscdb"
_COMPOSER = "composerData:"
_BUBBLE = "bubbleId:"
_USER, _ASSISTANT = 1, 2


def _loads(raw: Any) -> Any:
    if isinstance(raw, memoryview):
        raw = bytes(raw)
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def is_database(path: Path) -> bool:
    """Whether `path` is a Cursor database holding chats (`cursorDiskKV`)."""
    return path.name.endswith(".vscdb") and sqlite_read.has_tables(path, "cursorDiskKV")


def is_synthetic(path: Path) -> bool:
    """Whether `path` names one chat of a Cursor database."""
    parts = sqlite_read.split(path)
    return parts is not None and parts[0].name.endswith(".vscdb")


# --- projects: each workspace's database lists its chats --------------------------------------------


def _folder_of(workspace: Path) -> str | None:
    try:
        data = obj(orjson.loads((workspace / "workspace.json").read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return None
    uri = text(data.get("folder"))
    return unquote(urlparse(uri).path) if uri and uri.startswith("file:") else None


@lru_cache(maxsize=4)
def _projects(storage: Path, version: int) -> dict[str, str]:
    """Composer id -> project folder, from every workspace under `workspaceStorage` beside the database."""
    found: dict[str, str] = {}
    for database in sorted(storage.glob(f"*/{DATABASE}")):
        folder = _folder_of(database.parent)
        if folder is None:
            continue
        try:
            with sqlite_read.reading(database) as conn:
                row = conn.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()
        except (OSError, sqlite3.Error):
            continue
        for composer in items(obj(_loads(row[0] if row else None)).get("allComposers")):
            if isinstance(obj(composer).get("composerId"), str):
                found.setdefault(composer["composerId"], folder)
    return found


def project_of(database: Path, composer_id: str) -> str | None:
    """The folder of the workspace a chat belongs to, when a workspace database beside it lists it."""
    storage = database.parent.parent / "workspaceStorage"
    try:
        version = storage.stat().st_mtime_ns
    except OSError:
        return None
    return _projects(storage, version).get(composer_id)


# --- discovery -------------------------------------------------------------------------------------


def _composers(database: Path) -> list[Transcript]:
    with sqlite_read.reading(database) as conn:
        rows = conn.execute(
            "SELECT substr(key, ?) FROM cursorDiskKV WHERE key LIKE 'composerData:%' ORDER BY key",
            (len(_COMPOSER) + 1,),
        ).fetchall()
    return [Transcript(sqlite_read.synthetic(database, row[0]), AGENT, row[0], aliases=(database,)) for row in rows]


def classify(path: Path) -> Transcript | None:
    """One chat of a Cursor database."""
    parts = sqlite_read.split(path)
    if parts is None or not is_database(parts[0]):
        return None
    return next((t for t in _composers(parts[0]) if t.path == path), None)


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """The chats of the Cursor databases among `roots` (databases given as files, or `globalStorage/`)."""
    found: list[Transcript] = []
    for root in roots:
        database = root / DATABASE if root.is_dir() and root.name == "globalStorage" else root
        if not is_database(database):
            continue
        try:
            found += _composers(safe_resolve(database))
        except (OSError, sqlite3.Error) as exc:
            if skipped is not None:
                skipped.append(Skipped(database, reason_of(exc)))
    return found


@lru_cache(maxsize=4)
def _fingerprints(database: Path, version: tuple[int, int]) -> dict[str, tuple[int, int]]:
    with sqlite_read.reading(database) as conn:
        composers = conn.execute(
            "SELECT substr(key, ?), length(value), json_extract(CAST(value AS TEXT), '$.lastUpdatedAt') "
            "FROM cursorDiskKV WHERE key LIKE 'composerData:%' AND json_valid(CAST(value AS TEXT))",
            (len(_COMPOSER) + 1,),
        ).fetchall()
        bubbles = dict(
            conn.execute(
                "SELECT substr(key, ?, instr(substr(key, ?), ':') - 1), sum(length(value)) FROM cursorDiskKV "
                "WHERE key LIKE 'bubbleId:%' GROUP BY 1",
                (len(_BUBBLE) + 1, len(_BUBBLE) + 1),
            ).fetchall()
        )
    found = {}
    for composer_id, size, updated in composers:
        stamp = int(updated) * 1_000_000 if isinstance(updated, (int, float)) else 0
        found[composer_id] = (int(size or 0) + int(bubbles.get(composer_id) or 0), stamp)
    return found


def fingerprint(path: Path) -> tuple[int, int] | None:
    """A chat's version (the size of its records, its last update); None when it is gone."""
    parts = sqlite_read.split(path)
    if parts is None:
        return None
    try:
        return _fingerprints(parts[0], sqlite_read.version_key(parts[0])).get(parts[1])
    except (OSError, sqlite3.Error):
        return None


# --- reading ---------------------------------------------------------------------------------------


def _like_escape(value: str) -> str:
    """`value` for a LIKE pattern with `\\` as its escape."""
    return value.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")


def _bubble_entry(index: int, bubble: Any) -> Entry | BadLine | None:
    if not isinstance(bubble, dict):
        return BadLine(index, "message is not a JSON object")
    kind = bubble.get("type")
    timestamp = normalize_timestamp(bubble.get("createdAt") or obj(bubble.get("timingInfo")).get("clientStartTime"))
    entry = Entry(index, f"bubble/{kind}", "other", timestamp=timestamp, uuid=text(bubble.get("bubbleId")))
    said = text(bubble.get("text")) or ""
    if kind == _USER:
        entry.role, entry.blocks = "user", [Block("text", said)]
        entry.kind = "prompt" if said.strip() else "user_meta"
        return entry
    if kind != _ASSISTANT:
        entry.unknown = True
        return entry
    entry.kind, entry.role = "assistant", "assistant"
    thinking = text(obj(bubble.get("thinking")).get("text"))
    if thinking:
        entry.blocks.append(Block("thinking", thinking))
    if said.strip():
        entry.blocks.append(Block("text", said))
    tool = obj(bubble.get("toolFormerData"))
    if tool:
        args = tool.get("params") if tool.get("params") is not None else tool.get("rawArgs")
        block = tool_block(tool.get("name"), args, tool.get("toolCallId"))
        if block is not None:
            entry.blocks.append(block)
            result = tool.get("result")
            if result is not None and block.tool is not None:
                output = output_text(_loads(result) or result)
                entry.blocks.append(Block("tool_result", output, tool_use_id=block.tool.id))
    return entry


def read_entries(
    path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """One chat, whole: a header (title, time, project), then its messages in order."""
    parts = sqlite_read.split(path)
    if parts is None:
        raise FileNotFoundError(str(path))
    database, composer_id = parts
    with sqlite_read.reading(database) as conn:
        row = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (_COMPOSER + composer_id,)).fetchone()
        if row is None:
            raise FileNotFoundError(str(path))
        bubbles = dict(
            conn.execute(
                "SELECT substr(key, ?), value FROM cursorDiskKV WHERE key LIKE ? ESCAPE '\\'",
                (
                    len(_BUBBLE) + len(composer_id) + 2,
                    _BUBBLE + _like_escape(composer_id) + ":%",
                ),
            ).fetchall()
        )
    composer = _loads(row[0])
    if not isinstance(composer, dict):
        yield RawLine(0, 0, 0, None, "chat record is not JSON"), BadLine(0, "chat record is not JSON")
        return
    header = Entry(0, "composer", "other", session_id=composer_id, cwd=project_of(database, composer_id))
    header.timestamp = normalize_timestamp(composer.get("createdAt"))
    if text(composer.get("name")):
        header.kind, header.extra = "title", {"title": composer["name"], "source": "custom-title"}
    yield RawLine(0, 0, 0, None), header
    last = header.timestamp
    inline = items(composer.get("conversation"))
    heads = items(composer.get("fullConversationHeadersOnly")) or inline
    for index, head in enumerate(heads, 1):
        bubble_id = text(obj(head).get("bubbleId"))
        raw = bubbles.get(bubble_id) if bubble_id else None
        if raw is not None and len(raw) > max_line_bytes:
            reason = f"a message of {len(raw):,} bytes is over max_line_bytes ({max_line_bytes:,})"
            yield RawLine(index, 0, 0, None, reason), BadLine(index, reason)
            continue
        bubble = _loads(raw) if raw is not None else (head if head in inline else None)
        if bubble is None:
            continue  # listed, not written yet
        entry = checked(index, partial(_bubble_entry, index, bubble))
        if isinstance(entry, Entry):  # a message without a time was written after the one before it
            entry.timestamp = entry.timestamp or last
            last = entry.timestamp
        yield RawLine(index, 0, 0, None), entry


def raw_records(path: Path) -> Iterator[bytes]:
    """A chat as Cursor stored it: its composer record, then each message, as JSON lines."""
    parts = sqlite_read.split(path)
    if parts is None:
        raise FileNotFoundError(str(path))
    database, composer_id = parts
    with sqlite_read.reading(database) as conn:
        rows = conn.execute(
            "SELECT key, value FROM cursorDiskKV WHERE key = ? OR key LIKE ? ESCAPE '\\' ORDER BY key != ?",
            (_COMPOSER + composer_id, _BUBBLE + _like_escape(composer_id) + ":%", _COMPOSER + composer_id),
        ).fetchall()
    if not rows:
        raise FileNotFoundError(str(path))
    for key, value in rows:
        yield orjson.dumps({"key": key, "value": _loads(value)}) + b"\n"
