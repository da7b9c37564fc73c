"""What the templates need beyond the results themselves: dates, project names, highlighted excerpts and
folded long texts (plain Python values; the templates escape every string)."""

from __future__ import annotations

from dataclasses import dataclass

from memex.textutil import display_time

# Characters shown before the first highlighted word of an excerpt, and an excerpt's size.
LEAD_CHARS = 120
EXCERPT_CHARS = 600
# A text longer than this is folded: its head shown, the rest behind a <details>.
FOLD_CHARS = 2_500
FOLD_HEAD_CHARS = 1_200


def short_time(timestamp: str | None) -> str:
    """A stored timestamp in the server's local time with its zone: `2026-05-03 02:20 CEST` (the viewer
    serves this computer: its zone is the user's)."""
    return display_time(timestamp)


def project_name(project_dir: str | None) -> str:
    """The last folder of a project path."""
    if not project_dir:
        return "—"
    return project_dir.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or project_dir


# How a file came to be touched, where memex's own name for it is no tool's (the rest are the tools' names).
TOUCH_LABELS = {"at_mention": "@-mentioned", "file_history_snapshot": "file history snapshot"}


def touches(tools: list[str]) -> str:
    """The tools that touched a file, for its line in "Files touched": `Edit, Read, @-mentioned`."""
    return ", ".join(TOUCH_LABELS.get(tool, tool) for tool in tools)


def is_web_link(url: str) -> bool:
    """True for an http(s) address: the only links made of a transcript's text (never `javascript:`)."""
    return url.lower().startswith(("https://", "http://"))


def marked(text: str, spans: list[list[int]] | None) -> list[tuple[str, bool]]:
    """An excerpt of `text` around its first span as (piece, highlighted) pieces: the query's words (`spans`,
    [start, end) offsets into `text`) marked, the rest plain."""
    ranges = sorted((max(0, s), min(len(text), e)) for s, e in (spans or []) if e > s)
    start = max(0, ranges[0][0] - LEAD_CHARS) if ranges else 0
    end = min(len(text), start + EXCERPT_CHARS)
    pieces: list[tuple[str, bool]] = [("…", False)] if start else []
    at = start
    for s, e in ranges:
        s, e = max(s, at), min(e, end)
        if s >= e:
            continue
        if s > at:
            pieces.append((text[at:s], False))
        pieces.append((text[s:e], True))
        at = e
    if at < end:
        pieces.append((text[at:end], False))
    if end < len(text):
        pieces.append(("…", False))
    return pieces


@dataclass
class Folded:
    """A text cut for display: `head` always shown, `rest` (maybe empty) behind a <details>."""

    head: str
    rest: str


def folded(text: str | None) -> Folded:
    text = text or ""
    if len(text) <= FOLD_CHARS:
        return Folded(text, "")
    cut = text.rfind("\n", 0, FOLD_HEAD_CHARS)
    cut = cut if cut > FOLD_HEAD_CHARS // 2 else FOLD_HEAD_CHARS
    return Folded(text[:cut], text[cut:])
