"""Keeping the archive's copy of a transcript up to date: append what the transcript gained, verified.

`keep_copy` brings one stream's copy in line with its source. A source that only grew gets new pieces
appended (never the whole file rewritten per turn); one whose archived bytes changed (a rewrite: Gemini's
JSON chats) is copied again whole. Every piece written is read back and checked against the hash of the
source bytes it was made from. A source that moved (`memex.ingest.moves`) gets a new header naming its new
path, its pieces copied as they are: a store rebuilt from the archive learns every source from its header.

A session an agent keeps in a database (OpenCode, Cursor: a synthetic transcript `<database>#<key>`) is
archived as its records as JSON lines (what `memex show --raw` gives of it), copied again whenever the
adapter's fingerprint of it moves, so it outlives its rows.

Crash safety: pieces are appended after cutting off whatever an interrupted write left past the last
complete piece, then synced, and only then recorded in the store (the file is the truth, the row a cache).
Whole-file writes go to a temporary file renamed over the old copy. A kill at any moment leaves either the
old copy or the new one, each readable; the next run completes it. Writers of one archive take a lock.

When more than `COMPACT_PIECES` small pieces have piled up at the end (one per turn of a long session),
they are merged into full ones: the file is rebuilt from a byte copy of its full pieces and the merged
tail, then renamed over the old one, so compression stays close to that of one frame.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Final

from memex.archive import frames
from memex.config import Config
from memex.errors import SourceChanged
from memex.plain import FrozenRecord, Record
from memex.sources import fingerprint, is_synthetic, raw_transcript
from memex.sources.files import open_regular
from memex.sources.model import Transcript
from memex.store.archive import ArchiveRow, archive_row, copy_kept, is_pending, mark_source_gone, save_archive_row
from memex.store.db import make_private_folder, open_private, transaction

# Small pieces at the end of a file (less than a full piece each) merged once there are this many: a frame
# per turn compresses about a third worse than one frame, and merging costs a copy of the file's compressed
# bytes, so it is done every few dozen turns.
COMPACT_PIECES = 24
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class Stream(FrozenRecord):
    """One transcript to archive: a session's main file (`agent_id` empty) or one subagent's."""

    __slots__ = ("agent", "agent_id", "session_id", "source", "transcript_session_id")

    agent: Final[str]
    session_id: Final[str]  # as the store keys it
    agent_id: Final[str]
    source: Final[Path]
    transcript_session_id: Final[str]  # the id the transcript names, when the store's differs

    def __init__(
        self,
        agent: str,
        session_id: str,
        agent_id: str,
        source: Path,
        transcript_session_id: str = "",
    ) -> None:
        self.agent = agent
        self.session_id = session_id
        self.agent_id = agent_id
        self.source = source
        self.transcript_session_id = transcript_session_id


class KeepReport(Record):
    """What `keep_copy` did: new, appended, compacted, rewritten, relabelled (the transcript moved: its
    header names the new path), unchanged, missing (source gone)."""

    __slots__ = ("raw_bytes", "status", "stored_bytes")

    status: str
    raw_bytes: int
    stored_bytes: int

    def __init__(self, status: str, raw_bytes: int = 0, stored_bytes: int = 0) -> None:
        self.status = status
        self.raw_bytes = raw_bytes
        self.stored_bytes = stored_bytes


def archive_root(config: Config) -> Path:
    """The folder holding every archive file."""
    return config.home / "archive"


def _safe(name: str) -> str:
    clean = _UNSAFE.sub("_", name)[:100]
    if clean != name:  # two names made the same by the cleaning stay apart
        from memex.digest import blake2b

        clean += "-" + blake2b(name.encode(), digest_size=4).hexdigest()
    return clean or "_"


def relative_path(stream: Stream) -> str:
    """Where a stream's copy lives under the archive folder: `<agent>/<session>/<main|agent-id>.zst`."""
    name = f"agent-{_safe(stream.agent_id)}" if stream.agent_id else "main"
    return f"{_safe(stream.agent)}/{_safe(stream.session_id)}/{name}.zst"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@contextlib.contextmanager
def archive_lock(root: Path) -> Iterator[None]:
    """The archive's writer lock (a daemon, a Stop hook and `memex index` may copy the same stream)."""
    make_private_folder(root)
    fd = open_private(root / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _head_hash(source: BinaryIO, end: int) -> str:
    source.seek(0)
    return frames.digest(source.read(min(frames.HEAD_BYTES, end)))


def _range_hash(source: BinaryIO, start: int, end: int) -> str:
    source.seek(start)
    return frames.digest(source.read(end - start))


def _is_prefix(source: BinaryIO, size: int, scan: frames.Scan) -> bool:
    """Whether the source still begins with the archived bytes (its head and last piece hash the same)."""
    if not scan.pieces:
        return True
    last = scan.pieces[-1]
    if size < last.end:
        return False
    return _head_hash(source, last.end) == last.head_hash and _range_hash(source, last.offset, last.end) == last.hash


def _write_pieces(out: BinaryIO, source: BinaryIO, start: int, end: int, level: int) -> int:
    """Append pieces holding the source's bytes [start, end) to `out`; returns how many."""
    count = 0
    position = start
    while position < end:
        source.seek(position)
        raw = source.read(min(frames.PIECE_MAX_BYTES, end - position))
        if not raw:
            raise SourceChanged(f"{source.name} shrank while it was archived")
        head = frames.digest(raw[: frames.HEAD_BYTES]) if position == 0 else _head_hash(source, position + len(raw))
        out.write(frames.piece(raw, position, head, level, os.fstat(source.fileno()).st_mtime_ns))
        position += len(raw)
        count += 1
    return count


def _verify(path: Path, from_offset: int) -> frames.Scan:
    """Scan a written archive and decompress every piece from transcript byte `from_offset` on (each is
    checked against the hash of the source bytes it was made from); ArchiveCorrupt when one fails."""
    with open(path, "rb") as handle:
        scan = frames.scan(handle, os.fstat(handle.fileno()).st_size)
        if scan is None:
            raise frames.ArchiveCorrupt(f"{path} has no archive header after writing")
        for item in scan.pieces:
            if item.end > from_offset:
                frames.read_piece(handle, item)
    return scan


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What a rebuilt copy begins with, in order: bytes, or the bytes [start, end) of a file (the old copy's).
Prefix = list[bytes | tuple[Path, int, int]]


def _copy_range(out: BinaryIO, old: Path, start: int, end: int) -> None:
    with open(old, "rb") as handle:
        handle.seek(start)
        length = end - start
        while length > 0:
            block = handle.read(min(1 << 20, length))
            if not block:
                raise frames.ArchiveCorrupt(f"{old} shrank while it was rewritten")
            out.write(block)
            length -= len(block)


def _rebuild(target: Path, prefix: Prefix, source: BinaryIO | None, start: int, end: int, level: int) -> None:
    """Write a new copy beside `target` (its first bytes: `prefix`), then the pieces of the source's
    [start, end), and rename it over `target`."""
    temporary = target.with_name(target.name + ".tmp")
    fd = open_private(temporary, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as out:
        for part in prefix:
            if isinstance(part, bytes):
                out.write(part)
            else:
                _copy_range(out, *part)
        if source is not None:
            _write_pieces(out, source, start, end, level)
        out.flush()
        os.fsync(out.fileno())
    _verify(temporary, start)
    temporary.replace(target)
    _sync_folder(target.parent)


def _append(target: Path, keep: int, source: BinaryIO, start: int, end: int, level: int) -> None:
    """Cut `target` to its first `keep` bytes (what an interrupted write left after them goes), then append
    the pieces of the source's [start, end) and sync."""
    fd = open_private(target, os.O_RDWR)
    with os.fdopen(fd, "r+b") as out:
        out.truncate(keep)
        out.seek(keep)
        _write_pieces(out, source, start, end, level)
        out.flush()
        os.fsync(out.fileno())
    _verify(target, start)


def _scan(target: Path) -> frames.Scan | None:
    try:
        with open(target, "rb") as handle:
            return frames.scan(handle, os.fstat(handle.fileno()).st_size)
    except FileNotFoundError:
        return None


def _small_tail(scan: frames.Scan) -> list[frames.Piece]:
    """The pieces at the end of the file that are not full."""
    tail: list[frames.Piece] = []
    for item in reversed(scan.pieces):
        if item.length >= frames.PIECE_MAX_BYTES:
            break
        tail.append(item)
    return tail[::-1]


def _header_info(stream: Stream) -> dict[str, str]:
    return {
        "agent": stream.agent,
        "session_id": stream.session_id,
        "agent_id": stream.agent_id,
        "transcript_session_id": stream.transcript_session_id or stream.session_id,
        "source": str(stream.source),
    }


def _header_end(scan: frames.Scan) -> int:
    """Where the header ends in the archive file (the first piece begins)."""
    return scan.pieces[0].at if scan.pieces else scan.end


def _update(target: Path, stream: Stream, source: BinaryIO, size: int, level: int) -> str:
    """Bring the copy at `target` up to the source's first `size` bytes; returns what was done."""
    scan = _scan(target)
    if scan is None or not _is_prefix(source, size, scan):
        status = "new" if scan is None else "rewritten"
        make_private_folder(target.parent)
        _rebuild(target, [frames.header(_header_info(stream))], source, 0, size, level)
        return status
    archived = scan.raw_bytes
    if scan.header.get("source") != str(stream.source):  # the same bytes at a new path: the transcript moved
        header = frames.header(_header_info(stream))
        _rebuild(target, [header, (target, _header_end(scan), scan.end)], source, archived, size, level)
        return "relabelled"
    if archived == size:
        if scan.end != scan.size:  # an interrupted write left bytes past the last piece
            _append(target, scan.end, source, size, size, level)
        return "unchanged"
    tail = _small_tail(scan)
    if len(tail) + 1 > COMPACT_PIECES:
        _rebuild(target, [(target, 0, tail[0].at)], source, tail[0].offset, size, level)
        return "compacted"
    _append(target, scan.end, source, archived, size, level)
    return "appended"


def _relabel(target: Path, stream: Stream) -> int | None:
    """Make the header of the copy at `target` name the stream's source, its pieces copied as they are (a
    transcript that moved: its copy's header is what a store rebuilt from scratch learns the path from,
    `memex.archive.reader.register_found`). Returns the copy's new size; None when it named it already."""
    scan = _scan(target)
    if scan is None or scan.header.get("source") == str(stream.source):
        return None
    header = frames.header(_header_info(stream))
    _rebuild(target, [header, (target, _header_end(scan), scan.end)], None, scan.raw_bytes, scan.raw_bytes, 0)
    return target.stat().st_size


def keep_copy(conn: sqlite3.Connection, config: Config, stream: Stream) -> KeepReport:
    """Bring the archive's copy of `stream` up to date with its source and record it in the store.

    A source that is gone is noted (the copy stays); an unchanged one (same size and time as recorded,
    copy of the recorded size) costs a lookup and a `stat` (a session in a database: its fingerprint).
    Either way the stream is no longer pending (`archive_pending`); a failure (OSError, sqlite3.Error,
    ArchiveCorrupt) leaves it pending, for the next `memex index`.
    """
    root = archive_root(config)
    row = archive_row(conn, stream.session_id, stream.agent_id)
    relative = row.archive_path if row else relative_path(stream)
    target = root / relative
    try:
        opened = _opened(stream, row, target)
    except FileNotFoundError:
        with transaction(conn):
            if row is not None:
                mark_source_gone(conn, stream.session_id, stream.agent_id, now())
            copy_kept(conn, stream.session_id, stream.agent_id)  # nothing left to copy
        return KeepReport("missing", row.raw_bytes if row else 0, row.stored_bytes if row else 0)
    if opened is None:
        assert row is not None
        status = "unchanged"
        if is_pending(conn, stream.session_id, stream.agent_id):  # a read first: most runs write nothing
            # Pending while up to date: made pending by a move (`memex.ingest.moves`), or by a run killed
            # before it copied. A move's header is rewritten, so it names the transcript's new path.
            # The row is saved under the lock too: a writer appending to the copy meanwhile would otherwise
            # have its size overwritten by this one's. A header rewritten by a run killed before its commit
            # is found naming the source already: the row is brought to it then.
            with archive_lock(root):
                stored = _relabel(target, stream)
                relabelled = stored is not None
                if stored is None and row.source_path != str(stream.source):
                    stored = target.stat().st_size
                with transaction(conn):
                    if stored is not None:
                        row.source_path, row.stored_bytes, row.updated_at = str(stream.source), stored, now()
                        save_archive_row(conn, row)
                        status = "relabelled" if relabelled else status
                    copy_kept(conn, stream.session_id, stream.agent_id)
        return KeepReport(status, row.raw_bytes, row.stored_bytes)
    source, (source_size, source_mtime_ns) = opened
    with source:
        size = os.fstat(source.fileno()).st_size
        with archive_lock(root):
            status = _update(target, stream, source, size, config.archive_level)
            scan = _scan(target)
            assert scan is not None
            record = ArchiveRow(
                stream.session_id,
                stream.agent_id,
                stream.agent,
                str(stream.source),
                relative,
                scan.raw_bytes,
                scan.size,
                len(scan.pieces),
                source_size,
                source_mtime_ns,
                None,
                now(),
            )
            with transaction(conn):
                save_archive_row(conn, record)
                copy_kept(conn, stream.session_id, stream.agent_id)
    return KeepReport(status, record.raw_bytes, record.stored_bytes)


def _opened(stream: Stream, row: ArchiveRow | None, target: Path) -> tuple[BinaryIO, tuple[int, int]] | None:
    """The source's bytes, open, and its (size, mtime_ns) as the store records it; None when the copy is
    up to date with it. A session kept in a database is read first (its fingerprint, then its records
    spooled to a temporary file). FileNotFoundError when the source is gone."""
    transcript = Transcript(stream.source, stream.agent, stream.session_id)
    if is_synthetic(transcript):
        version = fingerprint(transcript)  # before the records: a change meanwhile is copied next time
        if _up_to_date(row, target, version):
            return None
        import tempfile  # (and shutil, random: ~2.5 ms) for a session kept in a database only

        spool = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; closed by the caller)
        try:
            for block in raw_transcript(stream.agent, stream.source):
                spool.write(block)
            spool.seek(0)
        except BaseException:
            spool.close()
            raise
        return spool, version
    source = open_regular(stream.source)
    stat = os.fstat(source.fileno())
    version = (stat.st_size, stat.st_mtime_ns)
    if row is not None and row.raw_bytes == stat.st_size and _up_to_date(row, target, version):
        source.close()
        return None
    return source, version


def _up_to_date(row: ArchiveRow | None, target: Path, version: tuple[int, int]) -> bool:
    """Whether the recorded copy was made from the source at `version` and is whole on disk."""
    if row is None or (row.source_size, row.source_mtime_ns) != version:
        return False
    try:
        return target.stat().st_size == row.stored_bytes
    except FileNotFoundError:
        return False


__all__ = ["KeepReport", "SourceChanged", "Stream", "archive_root", "keep_copy", "relative_path"]
