"""Incremental reading of JSONL transcripts: from a byte offset, whole lines only, bad bytes survived.

Reading is bounded: a file is read up to the size it had when it was opened (a file that grows, or a
special file that never ends, cannot keep the reader going), and a line longer than `max_line_bytes` is
streamed past without being held, and reported as a bad line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from memex.config import Config
from memex.plain import Record
from memex.sources.files import open_regular

# The default of the `max_line_bytes` setting (see memex.config).
DEFAULT_MAX_LINE_BYTES: int = Config.max_line_bytes
_BOM = b"\xef\xbb\xbf"
# A line is read this much at a time until its end is found: a longer line is measured before it is read
# whole (and is never read whole when over the limit).
_SCAN_CHUNK = 1 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")


class RawLine(Record):
    """One line of a JSONL file and where it lies."""

    __slots__ = ("data", "end", "error", "line_index", "repaired", "start")

    line_index: int
    start: int  # byte offset of the line's first byte
    end: int  # byte offset just past the line (and its newline)
    data: Any  # the parsed JSON value, or None when the line is not JSON
    error: str | None  # why the line could not be parsed
    repaired: bool  # the line held invalid UTF-8, decoded with replacement characters

    def __init__(
        self,
        line_index: int,
        start: int,
        end: int,
        data: Any,
        error: str | None = None,
        repaired: bool = False,
    ) -> None:
        self.line_index = line_index
        self.start = start
        self.end = end
        self.data = data
        self.error = error
        self.repaired = repaired


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number is infinity when parsed as double")
    return value


def scrub(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD (iteratively: the
    value may be nested as deep as the parser allows)."""
    fix = lambda text: _SURROGATE.sub("\ufffd", text)  # noqa: E731
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = fix(item)
        elif isinstance(item, list):
            stack.extend((item, index) for index in range(len(item)))
        elif isinstance(item, dict):
            fixed = {fix(k) if isinstance(k, str) else k: v for k, v in item.items()}
            if fixed.keys() != item.keys():
                item.clear()
                item.update(fixed)
            stack.extend((item, k) for k in list(item))
    return root[0]


def _with_surrogates(text: str) -> Any:
    """Parse JSON that holds lone UTF-16 surrogate escapes (`"\\ud83d"`: Node writes them when it cuts a
    string inside an emoji), which orjson refuses; they become U+FFFD."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return scrub(value)


def parse_json_line(raw: bytes) -> tuple[Any, str | None, bool]:
    """Parse one line: (value, error, repaired). A byte-order mark is ignored, invalid UTF-8 is replaced and
    lone surrogate escapes are decoded, rather than the line lost."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        return orjson.loads(raw), None, False
    except orjson.JSONDecodeError as exc:
        first_error = str(exc)
    repaired = False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text, repaired = raw.decode("utf-8", "replace"), True
        try:
            return orjson.loads(text), None, True
        except orjson.JSONDecodeError as exc:
            first_error = str(exc)
    if "surrogate" in first_error:
        try:
            return _with_surrogates(text), None, repaired
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            return None, f"invalid JSON: {exc}", repaired
    return None, f"invalid JSON: {first_error}", repaired


def _line_end(handle: Any, position: int, size: int) -> int | None:
    """Read on from `position` (inside a line) to the end of that line without keeping what is read; the
    offset just past its newline, or None when the file ends first (a line still being written)."""
    while position < size:
        piece = handle.readline(min(_SCAN_CHUNK, size - position))
        if not piece:
            return None
        position += len(piece)
        if piece.endswith(b"\n"):
            return position
    return None


def read_jsonl(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[RawLine]:
    """Yield the complete lines of `path` from `start_offset` on (numbered from `start_line`).

    A last line without its newline is yielded only when it is complete JSON: an agent still writing
    it leaves it for the next run. A blank line is yielded with neither data nor error. A line longer
    than `max_line_bytes` is yielded with an error, unread: a long line's end is found first (reading
    through it a piece at a time), and only a line within the limit is then read whole.
    """
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(start_offset)
        offset = start_offset
        line_index = start_line
        chunk = min(_SCAN_CHUNK, max_line_bytes + 1)  # a line over the limit never fits in the first piece
        while offset < size:
            raw = handle.readline(min(chunk, size - offset))
            if not raw:
                return
            end = offset + len(raw)
            if not raw.endswith(b"\n") and end < size:  # a long line: where does it end?
                line_end = _line_end(handle, end, size)
                length = (size if line_end is None else line_end) - offset
                if length - (line_end is not None) > max_line_bytes:  # its newline aside
                    if line_end is None:
                        return  # still being written; counted when complete
                    reason = f"line of {length:,} bytes is over max_line_bytes ({max_line_bytes:,})"
                    yield RawLine(line_index, offset, line_end, None, reason)
                    offset, line_index = line_end, line_index + 1
                    continue
                handle.seek(offset)
                raw = handle.read(length)
                end = offset + len(raw)
            if not raw.endswith(b"\n"):
                data, error, repaired = parse_json_line(raw)
                if error is None:
                    yield RawLine(line_index, offset, end, data, None, repaired)
                return
            if (raw[len(_BOM) :] if raw.startswith(_BOM) else raw).isspace():
                yield RawLine(line_index, offset, end, None)
            else:
                data, error, repaired = parse_json_line(raw)
                yield RawLine(line_index, offset, end, data, error, repaired)
            offset = end
            line_index += 1
