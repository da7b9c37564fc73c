"""Incremental reading of JSONL transcripts: from a byte offset, whole lines only, bad bytes survived."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


@dataclass(slots=True)
class RawLine:
    """One line of a JSONL file and where it lies."""

    line_index: int
    start: int  # byte offset of the line's first byte
    end: int  # byte offset just past the line (and its newline)
    data: Any  # the parsed JSON value, or None when the line is not JSON
    error: str | None = None  # why the line could not be parsed
    repaired: bool = False  # the line held invalid UTF-8, decoded with replacement characters


def parse_json_line(raw: bytes) -> tuple[Any, str | None, bool]:
    """Parse one line: (value, error, repaired). Invalid UTF-8 is replaced rather than lost."""
    try:
        return orjson.loads(raw), None, False
    except orjson.JSONDecodeError as exc:
        first_error = str(exc)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return orjson.loads(raw.decode("utf-8", "replace")), None, True
        except orjson.JSONDecodeError as exc:
            return None, f"invalid JSON: {exc}", True
    return None, f"invalid JSON: {first_error}", False


def read_jsonl(path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[RawLine]:
    """Yield the complete lines of `path` from `start_offset` on (numbered from `start_line`).

    A last line without its newline is yielded only when it is complete JSON: an agent still writing
    it leaves it for the next run. A blank line is yielded with neither data nor error.
    """
    with path.open("rb") as handle:
        handle.seek(start_offset)
        offset = start_offset
        line_index = start_line
        for raw in handle:
            end = offset + len(raw)
            if not raw.endswith(b"\n"):
                data, error, repaired = parse_json_line(raw)
                if error is None:
                    yield RawLine(line_index, offset, end, data, None, repaired)
                return
            body = raw.strip()
            if body:
                data, error, repaired = parse_json_line(body)
                yield RawLine(line_index, offset, end, data, error, repaired)
            else:
                yield RawLine(line_index, offset, end, None)
            offset = end
            line_index += 1
