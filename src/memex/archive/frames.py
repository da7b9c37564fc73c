"""The layout of an archive file: zstd frames that any `zstd -d` turns back into the transcript.

A file is a header, then pieces. The header and each piece's description are zstd *skippable* frames
(a decoder passes over them), so decompressing the whole file with the standard tool gives the archived
bytes of the transcript, in order. A piece is its description followed by one zstd frame of at most
`PIECE_MAX_BYTES` of the transcript:

    [skip: {"memex_archive": 1, "agent", "session_id", …}]
    [skip: {"o": offset, "n": length, "c": compressed length, "h": hash, "a": head hash, "m": mtime}] [zstd]
    [skip: …] [zstd frame] …

`h` is the BLAKE2b of the piece's bytes, `a` the BLAKE2b of the first `HEAD_BYTES` archived so far
(both checked against the source before anything is appended). A piece is complete when its frame is
all there: `scan` stops at the first piece that is not (a write cut short by a crash), so a reader sees
every complete piece and a writer cuts the rest off before appending.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, BinaryIO, Final

import orjson

from memex.digest import blake2b
from memex.errors import ArchiveCorrupt
from memex.plain import FrozenRecord, Record

FORMAT = 1
# Skippable frames are 0x184D2A50..5F; this one is memex's.
SKIPPABLE_MAGIC = 0x184D2A5E
_SKIP_HEAD = struct.Struct("<II")
# A piece holds at most this much of the transcript: compressing it is done in memory, and the frames of
# a long transcript stay large enough to compress as well as one frame would (within 1 % from 1 MiB up).
PIECE_MAX_BYTES = 8 * 1_048_576
# Bytes at the head of the archived part whose hash is kept with every piece.
HEAD_BYTES = 4_096
# A description is a few dozen bytes; anything far larger is not one of ours.
MAX_META_BYTES = 65_536


def digest(data: bytes) -> str:
    """The hash the archive keeps of a piece's bytes (and of the head of the archived part)."""
    return blake2b(data, digest_size=16).hexdigest()


class Piece(FrozenRecord):
    """One complete piece: where its bytes lie in the transcript and in the archive file."""

    __slots__ = ("at", "frame_at", "frame_length", "hash", "head_hash", "length", "mtime_ns", "offset")

    offset: Final[int]  # in the transcript
    length: Final[int]
    at: Final[int]  # in the archive file: the start of its description
    frame_at: Final[int]  # in the archive file: the start of its zstd frame
    frame_length: Final[int]
    hash: Final[str]
    head_hash: Final[str]
    mtime_ns: Final[int | None]  # the source's modification time when the piece was written

    def __init__(
        self,
        offset: int,
        length: int,
        at: int,
        frame_at: int,
        frame_length: int,
        hash: str,
        head_hash: str,
        mtime_ns: int | None = None,
    ) -> None:
        self.offset = offset
        self.length = length
        self.at = at
        self.frame_at = frame_at
        self.frame_length = frame_length
        self.hash = hash
        self.head_hash = head_hash
        self.mtime_ns = mtime_ns

    @property
    def end(self) -> int:
        return self.offset + self.length


class Scan(Record):
    """What an archive file holds: its header and complete pieces, and where the complete part ends."""

    __slots__ = ("end", "header", "pieces", "size")

    header: dict[str, Any]
    pieces: list[Piece]
    end: int  # bytes of the file that are complete pieces (and the header)
    size: int  # bytes of the file (more than `end` after an interrupted write)

    def __init__(self, header: dict[str, Any], pieces: list[Piece], end: int, size: int) -> None:
        self.header = header
        self.pieces = pieces
        self.end = end
        self.size = size

    @property
    def raw_bytes(self) -> int:
        return self.pieces[-1].end if self.pieces else 0


def skippable(payload: dict[str, Any]) -> bytes:
    """A skippable frame carrying `payload` as JSON."""
    data = orjson.dumps(payload)
    return _SKIP_HEAD.pack(SKIPPABLE_MAGIC, len(data)) + data


def header(info: dict[str, Any]) -> bytes:
    """The first frame of an archive file: what it is a copy of."""
    return skippable({"memex_archive": FORMAT, **info})


def piece(raw: bytes, offset: int, head_hash: str, level: int, mtime_ns: int | None = None) -> bytes:
    """A piece (description and frame) holding `raw`, the transcript's bytes from `offset` (`mtime_ns`: the
    source's modification time, so a store rebuilt from the archive knows it)."""
    import zstandard

    frame = zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True).compress(raw)
    meta: dict[str, Any] = {"o": offset, "n": len(raw), "c": len(frame), "h": digest(raw), "a": head_hash}
    if mtime_ns is not None:
        meta["m"] = mtime_ns
    return skippable(meta) + frame


def _read_skippable(handle: BinaryIO, at: int, size: int) -> tuple[dict[str, Any], int] | None:
    """The payload of the skippable frame at `at` and the offset past it; None when it is incomplete."""
    if at + _SKIP_HEAD.size > size:
        return None
    handle.seek(at)
    magic, length = _SKIP_HEAD.unpack(handle.read(_SKIP_HEAD.size))
    if magic != SKIPPABLE_MAGIC or length > MAX_META_BYTES or at + _SKIP_HEAD.size + length > size:
        return None
    try:
        payload = orjson.loads(handle.read(length))
    except orjson.JSONDecodeError:
        return None
    return (payload, at + _SKIP_HEAD.size + length) if isinstance(payload, dict) else None


def scan(handle: BinaryIO, size: int) -> Scan | None:
    """The header and complete pieces of an archive file of `size` bytes (None when it has no header)."""
    first = _read_skippable(handle, 0, size)
    if first is None or first[0].get("memex_archive") != FORMAT:
        return None
    info, at = first
    pieces: list[Piece] = []
    expected = 0
    while True:
        start = at
        found = _read_skippable(handle, at, size)
        if found is None:
            break
        meta, frame_at = found
        try:
            mtime = meta.get("m")
            item = Piece(
                int(meta["o"]),
                int(meta["n"]),
                start,
                frame_at,
                int(meta["c"]),
                str(meta["h"]),
                str(meta["a"]),
                mtime if isinstance(mtime, int) else None,
            )
        except (KeyError, TypeError, ValueError):
            break
        if item.offset != expected or frame_at + item.frame_length > size:
            break
        pieces.append(item)
        expected = item.end
        at = frame_at + item.frame_length
    return Scan(info, pieces, at, size)


def read_piece(handle: BinaryIO, item: Piece) -> bytes:
    """The transcript bytes of one piece, checked against its hash."""
    handle.seek(item.frame_at)
    frame = handle.read(item.frame_length)
    import zstandard

    try:
        raw = zstandard.ZstdDecompressor().decompress(frame, max_output_size=item.length)
    except zstandard.ZstdError as exc:
        raise ArchiveCorrupt(f"piece at byte {item.offset} does not decompress: {exc}") from None
    if len(raw) != item.length or digest(raw) != item.hash:
        raise ArchiveCorrupt(f"piece at byte {item.offset} does not hold what it was written with")
    return raw


def iter_raw(handle: BinaryIO, pieces: list[Piece], start: int = 0) -> Iterator[bytes]:
    """The transcript bytes of `pieces` from byte `start` on, piece by piece."""
    for item in pieces:
        if item.end <= start:
            continue
        raw = read_piece(handle, item)
        yield raw[max(0, start - item.offset) :]
