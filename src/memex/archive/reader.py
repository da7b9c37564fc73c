"""Reading the archive back: a transcript whose file is gone, as a stream of bytes or a restored file.

`open_copy` gives a file-like reader of a session's archived transcript (what `memex show --raw` and the
HTTP API's raw route serve when the original is gone). `archived_sources` restores, for a re-parse, the
streams whose original is gone and whose indexed state no longer matches the copy (a store rebuilt from
scratch, a format change that asked for every stream to be read again): each is decompressed into a
private temporary folder, with its original's time, and handed to ingest as the `source` of a transcript
that keeps its original path (the session stays the one it was).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from memex.archive import frames
from memex.archive.copies import archive_root, now
from memex.config import Config
from memex.ingest.state import load_state
from memex.sources import fingerprint, is_synthetic
from memex.sources.model import Transcript
from memex.store.archive import (
    ArchiveRow,
    archive_paths,
    archive_rows,
    copies_checked_at,
    copy_needed,
    listed_folders,
    mark_source_gone,
    save_archive_row,
    save_copies_checked_at,
    save_listed_folders,
)
from memex.store.db import make_private_folder, open_private, transaction
from memex.store.forget import forgotten_sessions

# How old an archive folder's modification time must be to be trusted as a listing's (`register_found`).
RECENT_NS = 2_000_000_000
# How often `memex index` looks at every copy even though no folder it watches changed (`mark_lost_copies`).
CHECK_COPIES_EVERY_NS = 86_400 * 10**9


class ArchiveReader:
    """The archived bytes of one transcript, read like a file (`read`, `close`, `name`, `size`)."""

    def __init__(self, path: Path) -> None:
        self.name = str(path)
        self._handle = open(path, "rb")  # noqa: SIM115 (closed by close())
        try:
            scan = frames.scan(self._handle, os.fstat(self._handle.fileno()).st_size)
        except BaseException:
            self._handle.close()
            raise
        if scan is None:
            self._handle.close()
            raise frames.ArchiveCorrupt(f"{path} is not a memex archive")
        self.header = scan.header
        self.size = scan.raw_bytes
        self.mtime_ns = scan.pieces[-1].mtime_ns if scan.pieces else None
        self._pieces = iter(scan.pieces)
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (all that is left when negative); b"" at the end."""
        while size < 0 or len(self._buffer) < size:
            item = next(self._pieces, None)
            if item is None:
                break
            self._buffer += frames.read_piece(self._handle, item)
        if size < 0:
            size = len(self._buffer)
        block, self._buffer = self._buffer[:size], self._buffer[size:]
        return block

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def copy_path(conn: sqlite3.Connection, config: Config, session_id: str, agent_id: str = "") -> Path | None:
    """The archive file of a stream, when there is one."""
    for row in archive_rows(conn, [session_id]):
        if row.agent_id == agent_id:
            path = archive_root(config) / row.archive_path
            return path if path.is_file() else None
    return None


def open_copy(conn: sqlite3.Connection, config: Config, session_id: str, agent_id: str = "") -> ArchiveReader | None:
    """A reader of a stream's archived transcript, or None when it has no copy."""
    path = copy_path(conn, config, session_id, agent_id)
    return ArchiveReader(path) if path else None


def unknown_copies(root: Path, known: set[str]) -> list[Path]:
    """The archive files under `root` that no row of `known` (relative paths) names, sorted.

    A copy's folder is `<agent>/<session>/`: one listing per agent's folder finds the session folders no
    known row lives in, and only those are listed further. A store that knows every session (the usual
    case) costs one directory read per agent, not one per session.
    """
    known_folders = {path.rsplit("/", 1)[0] for path in known}
    found: list[Path] = []
    for agent in sorted(os.scandir(root), key=lambda e: e.name):
        if not agent.is_dir(follow_symlinks=False):
            continue
        for session in sorted(os.scandir(agent.path), key=lambda e: e.name):
            if f"{agent.name}/{session.name}" in known_folders or not session.is_dir(follow_symlinks=False):
                continue
            found.extend(
                Path(entry.path)
                for entry in sorted(os.scandir(session.path), key=lambda e: e.name)
                if entry.name.endswith(".zst") and entry.is_file(follow_symlinks=False)
            )
    return [path for path in found if path.relative_to(root).as_posix() not in known]


def folder_stamps(root: Path) -> dict[str, int]:
    """The modification time of the archive folder (`''`) and of each agent's folder in it: a session
    folder added anywhere changes one of them."""
    stamps = {"": os.stat(root).st_mtime_ns}
    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            stamps[entry.name] = entry.stat(follow_symlinks=False).st_mtime_ns
    return stamps


def register_found(conn: sqlite3.Connection, config: Config) -> int:
    """Record the archive files the store does not know (a store rebuilt from scratch): their headers say
    what each is a copy of. Returns how many were recorded. Copies in a session folder the store already
    knows were written by this store, which recorded them, so only unknown session folders are read; and
    while no folder of the archive changed since the store last knew them all, none is listed."""
    root = archive_root(config)
    if not root.is_dir():
        return 0
    stamps = folder_stamps(root)  # before the listing: a folder added meanwhile is listed next time
    if stamps == listed_folders(conn):
        return 0
    found = 0
    for path in unknown_copies(root, archive_paths(conn)):
        relative = path.relative_to(root).as_posix()
        try:
            with ArchiveReader(path) as reader:
                info, size, mtime_ns = reader.header, reader.size, reader.mtime_ns
            stored = path.stat().st_size
        except (OSError, frames.ArchiveCorrupt):
            continue
        if not all(isinstance(info.get(k), str) for k in ("agent", "session_id", "agent_id", "source")):
            continue
        row = ArchiveRow(
            info["session_id"], info["agent_id"], info["agent"], info["source"], relative, size, stored, 0,
            size, mtime_ns, None, now(),
        )  # fmt: skip
        with transaction(conn):
            save_archive_row(conn, row)
        found += 1
    # A folder changed within the file system's timestamp granularity could change again unseen at the
    # same time: only older stamps are trusted (the next run lists once more).
    if max(stamps.values()) < time.time_ns() - RECENT_NS:
        with transaction(conn):
            save_listed_folders(conn, stamps)
    return found


def lost_copies(conn: sqlite3.Connection, root: Path) -> list[ArchiveRow]:
    """The archive's recorded copies that are missing or shorter than recorded (a `stat` per copy)."""
    lost = []
    for row in archive_rows(conn):
        try:
            whole = (root / row.archive_path).stat().st_size >= row.stored_bytes
        except OSError:
            whole = False
        if not whole:
            lost.append(row)
    return lost


def mark_lost_copies(conn: sqlite3.Connection, config: Config, *, thorough: bool = False) -> int:
    """Make pending again the streams whose recorded copy is gone or cut short while their transcript is
    still on disk (the archive folder deleted, a store restored without it, one copy deleted), so the run
    that follows copies them anew. Returns how many. Every copy is looked at (a `stat` each) when the
    archive's or an agent's folder changed since the store last listed them (a `stat` per agent folder),
    the archive folder is gone, the last such look is older than `CHECK_COPIES_EVERY_NS`, or `thorough`
    (`memex index --check-archive`). A copy deleted inside its session's folder changes that folder's
    time only: a `stat` per session folder on every run would find it at once, for twice the run's calls."""
    root = archive_root(config)
    started = time.time_ns()  # before the look: a copy lost meanwhile is looked for next time
    if not thorough and root.is_dir() and folder_stamps(root) == listed_folders(conn):
        checked = copies_checked_at(conn)
        if checked is not None and 0 <= started - checked < CHECK_COPIES_EVERY_NS:
            return 0
    lost = [(row.session_id, row.agent_id) for row in lost_copies(conn, root) if row.source_gone_at is None]
    with transaction(conn):
        if lost:
            copy_needed(conn, lost)  # pending until copied: the others were whole
        save_copies_checked_at(conn, started)
    return len(lost)


def restore(reader: ArchiveReader, target: Path, mtime_ns: int | None) -> None:
    """Write the archived transcript to `target` (mode 0600), with its original's modification time."""
    make_private_folder(target.parent)
    with os.fdopen(open_private(target, os.O_WRONLY | os.O_TRUNC), "wb") as out:
        while block := reader.read(1 << 20):
            out.write(block)
    if mtime_ns is not None:
        os.utime(target, ns=(mtime_ns, mtime_ns))


def _in_database(row: ArchiveRow) -> bool:
    """Whether the copy holds a session an agent keeps in a database (its records as JSON lines): served
    by `--raw`, never parsed again (its adapter reads the database, not its records)."""
    return is_synthetic(Transcript(Path(row.source_path), row.agent, row.session_id))


def source_exists(agent: str, path: str) -> bool:
    """Whether `agent`'s transcript is still where it was read: its file, or (a session kept in a database)
    its records in that database."""
    try:
        fingerprint(Transcript(Path(path), agent, ""))
    except (OSError, sqlite3.Error, KeyError):  # KeyError: an agent this memex no longer reads
        return False
    return True


def _needs_parse(conn: sqlite3.Connection, row: ArchiveRow) -> bool:
    """Whether the store's state of a stream is not what its copy holds (never read, or to be read again)."""
    state = load_state(conn, row.session_id, row.agent_id)
    if state is None or state.file_size != row.raw_bytes:
        return True
    return row.source_mtime_ns is not None and state.file_mtime_ns != row.source_mtime_ns


@contextlib.contextmanager
def archived_sources(
    conn: sqlite3.Connection,
    config: Config,
    agents: Iterable[str],
    present: Iterable[Transcript] = (),
    unchanged: Collection[str] = (),
) -> Iterator[list[Transcript]]:
    """The archived streams of `agents` whose original is gone and that need parsing, restored for the
    duration of the block (a temporary folder in MEMEX_HOME, removed after). `present` and `unchanged`
    (paths) were found on disk just now."""
    register_found(conn, config)
    wanted = set(agents)
    live = {str(t.path) for t in present}  # found on disk just now: no need to look again
    forgotten = forgotten_sessions(conn)
    outside = [row for row in archive_rows(conn, outside=unchanged or live) if row.source_path not in live]
    missing = [row for row in outside if not source_exists(row.agent, row.source_path)]
    gone = [row for row in missing if row.source_gone_at is None]
    if gone:
        with transaction(conn):
            for row in gone:
                mark_source_gone(conn, row.session_id, row.agent_id, now())
    rows = [
        row
        for row in missing
        if row.agent in wanted and row.session_id not in forgotten and not _in_database(row) and _needs_parse(conn, row)
    ]
    if not rows:
        yield []
        return
    make_private_folder(config.home)
    import tempfile  # (and shutil, random: ~2.5 ms) only when a copy is restored: not on every run

    with tempfile.TemporaryDirectory(prefix="restore-", dir=config.home) as folder:
        transcripts = []
        for row in rows:
            try:
                with ArchiveReader(archive_root(config) / row.archive_path) as reader:
                    transcript_id = reader.header.get("transcript_session_id") or row.session_id
                    # The original's name and folders: adapters read the layout (a Gemini chat's suffix).
                    target = Path(folder) / row.source_path.lstrip("/")
                    restore(reader, target, row.source_mtime_ns)
            except (OSError, frames.ArchiveCorrupt):
                continue
            transcripts.append(
                Transcript(Path(row.source_path), row.agent, transcript_id, row.agent_id or None, source=target)
            )
        yield transcripts
