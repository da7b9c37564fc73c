"""Source adapters, one per agent: find transcripts and turn their records into normalised entries.

Each adapter is a module satisfying `sources.protocol.SourceAdapter` (`AGENT`, `INCREMENTAL`, `discover`,
`classify`, `subagent_transcripts`, `read_entries`), listed in `AGENTS`. A module with
`INCREMENTAL = False` is re-read whole whenever its file changes (its offsets are ignored).

Every adapter sees the same folders when paths are given by hand, so each claims only its own files.

Two optional module attributes cover transcripts that are not one file per stream:
- `INLINE_SUBAGENTS = True`: subagents write into their parent's file (Copilot CLI). `read_entries` marks
  each entry with its subagent's `agent_id`; every stream of the file keeps only its own entries.
- `fingerprint(path) -> (size, mtime_ns)`: the transcript is not a file of its own (a session in an
  agent's SQLite database, one run of a Markdown history). Its path is synthetic, `<file>#<key>`; the
  fingerprint says when it changed (it is then re-read whole), in place of the file's size and time.
- `SIEVES = True`: `discover(roots, skipped, sieve)` takes a third argument, a `memex.sources.files.Sieve`,
  and passes it to `candidates`: the files the store holds at their size and time are taken out unread.
  Only for adapters that classify each file from itself alone (its path, its own first lines), so a file
  left out changes nothing of how the others are read (not Gemini: a `.json` is an alias of its `.jsonl`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memex.config import Config

if TYPE_CHECKING:
    from memex.sources import aider, claude, cline, codex, copilot, cursor, gemini, kimi, opencode, pi, qwen, roo
    from memex.sources.jsonl import RawLine
    from memex.sources.model import BadLine, Entry, Transcript
    from memex.sources.protocol import SourceAdapter

# The agents memex reads, each with its adapter module `memex.sources.<agent>`.
AGENTS = ("claude", "codex", "gemini", "copilot", "qwen", "pi", "kimi", "cline", "roo", "aider", "cursor", "opencode")


class _Adapters(Mapping[str, "SourceAdapter"]):
    """The adapter of each agent, its module imported when it is first asked for: a command that only
    names the agents (a filter's choices, a check of `--agent`) reads none of the twelve parsers."""

    def __getitem__(self, agent: str) -> SourceAdapter:
        if agent not in AGENTS:
            raise KeyError(agent)
        return cast("SourceAdapter", importlib.import_module(f"{__name__}.{agent}"))

    def __iter__(self) -> Iterator[str]:
        return iter(AGENTS)

    def __len__(self) -> int:
        return len(AGENTS)

    def __contains__(self, agent: object) -> bool:
        return agent in AGENTS


ADAPTERS: Mapping[str, SourceAdapter] = _Adapters()

if TYPE_CHECKING:  # mypy checks that every adapter module satisfies the protocol
    _CHECKED: dict[str, SourceAdapter] = {
        "claude": claude,
        "codex": codex,
        "gemini": gemini,
        "copilot": copilot,
        "qwen": qwen,
        "pi": pi,
        "kimi": kimi,
        "cline": cline,
        "roo": roo,
        "aider": aider,
        "cursor": cursor,
        "opencode": opencode,
    }


def adapter(agent: str) -> SourceAdapter:
    """The source adapter module of `agent`."""
    return ADAPTERS[agent]


def is_incremental(agent: str, path: Path | None = None) -> bool:
    """Whether `agent`'s transcripts (this one, when its adapter says per file through `incremental(path)`)
    can be read from where the last run stopped (append-only files)."""
    source = ADAPTERS[agent]
    per_file = getattr(source, "incremental", None)
    if per_file is not None and path is not None:
        return bool(per_file(path))
    return getattr(source, "INCREMENTAL", True)


def is_synthetic(transcript: Transcript) -> bool:
    """Whether a transcript is a synthetic path `<file>#<key>` (see `fingerprint`), not a file to open."""
    return hasattr(ADAPTERS[transcript.agent], "fingerprint") and "#" in transcript.path.name


def fingerprint(transcript: Transcript) -> tuple[int, int]:
    """(size, mtime_ns) of a transcript: its file's, or what its adapter says of a synthetic one. Raises
    FileNotFoundError when it is gone, OSError when it cannot be read."""
    if is_synthetic(transcript):
        found = cast(Any, ADAPTERS[transcript.agent]).fingerprint(transcript.path)
        if found is None:
            raise FileNotFoundError(str(transcript.path))
        return (int(found[0]), int(found[1]))
    stat = transcript.read_path.stat()
    return stat.st_size, stat.st_mtime_ns


def stream_entries(
    transcript: Transcript, start_offset: int, start_line: int, max_line_bytes: int = Config.max_line_bytes
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The entries of one stream (a session's main conversation, or one subagent's) of a transcript."""
    from memex.sources.model import BadLine, Entry

    source = ADAPTERS[transcript.agent]
    lines = source.read_entries(transcript.read_path, start_offset, start_line, max_line_bytes)
    if not getattr(source, "INLINE_SUBAGENTS", False):
        yield from lines
        return
    wanted = transcript.subagent_id
    for line, entry in lines:
        if isinstance(entry, Entry) and (entry.agent_id or None) != wanted:
            entry = None  # another stream's record
        elif isinstance(entry, BadLine) and wanted is not None:
            entry = None  # counted once, in the main stream
        yield line, entry


def split_synthetic(path: Path) -> tuple[Path, str]:
    """(the real file, the key) of a synthetic transcript path `<file>#<key>`."""
    name, _, key = path.name.rpartition("#")
    return path.with_name(name), key


def raw_transcript(agent: str, path: Path) -> Iterator[bytes]:
    """The transcript as the agent wrote it: the file's bytes, or (a session in a database) its records as
    JSON lines. Raises FileNotFoundError when it is not on this computer."""
    records = getattr(ADAPTERS.get(agent), "raw_records", None)
    if records is not None and "#" in path.name:
        return iter(records(path))
    if not path.is_file():
        raise FileNotFoundError(str(path))
    return _file_blocks(path)


def _file_blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        yield from iter(lambda: handle.read(1 << 16), b"")
