"""Text helpers shared by every layer: token estimates, CJK-aware search text, timestamps."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """`pattern`, compiled on its first use and kept: a class over large Unicode ranges costs milliseconds
    to compile, which every process importing this module would pay whether it matches or not."""
    return cache(lambda: re.compile(pattern, flags))


# Han, Hiragana, Katakana, Hangul and CJK punctuation-free ranges. Scripts written without spaces
# (and Korean, which glues particles to words) are indexed one character per token.
_CJK_RANGES = (
    ("\u3040", "\u30ff"),  # Hiragana, Katakana
    ("\u3400", "\u4dbf"),  # CJK extension A
    ("\u4e00", "\u9fff"),  # CJK unified ideographs
    ("\uf900", "\ufaff"),  # CJK compatibility ideographs
    ("\uac00", "\ud7af"),  # Hangul syllables
    ("\u1100", "\u11ff"),  # Hangul jamo
)
_CJK_FIRST = min(low for low, _ in _CJK_RANGES)
_CJK_CLASS = "".join(f"{low}-{high}" for low, high in _CJK_RANGES)
_CJK_CHAR = lazy_pattern(f"[{_CJK_CLASS}]")
_TOKEN = lazy_pattern(f"[{_CJK_CLASS}]|[^\\W{_CJK_CLASS}]+|[^\\w\\s]")
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.DOTALL)


def has_cjk(text: str) -> bool:
    """True when the text holds any Chinese, Japanese or Korean character.

    Its distinct characters are compared with the ranges: a regular expression over them takes milliseconds
    to compile, more than a short command spends on everything it searches."""
    if text.isascii():
        return False
    return any(low <= char <= high for char in set(text) if char >= _CJK_FIRST for low, high in _CJK_RANGES)


def fts_text(text: str) -> str | None:
    """The text FTS5 should index when it differs from the text itself, else None.

    SQLite's unicode61 tokenizer keeps a run of CJK characters as one token, so a two-character word in
    the middle of a Chinese sentence could never match; spacing every CJK character makes each one a
    token and a query becomes a phrase of characters.
    """
    if not has_cjk(text):
        return None
    return _CJK_CHAR().sub(lambda m: f" {m.group(0)} ", text)


def token_spans(text: str) -> list[tuple[int, int]]:
    """Start/end offsets of the estimated tokens of `text` (words, CJK characters, punctuation)."""
    return [m.span() for m in _TOKEN().finditer(text)]


def estimate_tokens(text: str) -> int:
    """A cheap, model-free token estimate (a little below a word-piece count for English)."""
    return sum(1 for _ in _TOKEN().finditer(text))


def strip_system_reminders(text: str) -> str:
    """Remove `<system-reminder>…</system-reminder>` blocks the agent injected into a message."""
    if "<system-reminder>" not in text:
        return text
    return _SYSTEM_REMINDER.sub("", text).strip()


# An agent-named session id: `specstory-4b54246d18b7dd2b`, `aider-96d3bf7ba5991776` (memex names them so).
_NAMED_ID = re.compile(r"[a-z]+-(?=[0-9a-f]{8})")
# Ids that begin with the time they were made, so that sessions started within a minute or two share their
# first 8 characters: a UUID version 7 (Codex, Pi: `01a209d0-f96a-7…`, 48 bits of milliseconds), OpenCode's
# `ses_` and its time in hex (`ses_df5c216e4ffe…`), Cline's milliseconds (`1795468856782_epoob`, an
# extension task's bare `1745000000000`). The match is the part shown: the time to the millisecond (to 16
# for OpenCode), which tells apart sessions a user starts one after the other.
_TIMED_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}(?=-7[0-9a-f]{3}-)|ses_[0-9a-f]{8}|[0-9]{13}(?![0-9])")
SHORT_ID_CHARS = 8
_RANDOM_ID = re.compile(r"[0-9a-f]{8}")  # a UUID's first group, a hash: random from its first character
NAME_ID_CHARS = 36  # as long as a UUID


def short_id(session_id: str) -> str:
    """A session id as shown: its first 8 characters (a UUID's first group), or for an id memex named after
    its agent (`specstory-…`, `aider-…`) that name and the 8 characters after it: every SpecStory session
    would otherwise show as `specstor`; for an id that begins with its time (`_TIMED_ID`) that time, as
    the first 8 characters of two Codex sessions started in the same minute are the same; an id that is a
    name (a transcript named `session-alpha.jsonl`, `medium-conversation.jsonl`) whole, up to 36
    characters: `session-alpha` and `session-beta` both showed as `session-`. Any prefix of an id finds it
    (`memex show`), so the short form finds the session."""
    timed = _TIMED_ID.match(session_id)
    if timed:
        return timed.group()
    named = _NAMED_ID.match(session_id)
    if named:
        return session_id[: named.end() + SHORT_ID_CHARS]
    if _RANDOM_ID.match(session_id.lower()):
        return session_id[:SHORT_ID_CHARS]
    return session_id[:NAME_ID_CHARS]


def counted(count: int, noun: str) -> str:
    """`count` and the noun, plural unless it is one: "1 subagent", "2 subagents", "0 files"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# Names an agent gives every subagent alike (Cline's `subagent`): they say nothing a label does not.
_GENERIC_SUBAGENT_NAMES = frozenset({"subagent", "sub-agent", "agent"})


def subagent_name(agent_type: str | None, description: str | None = None) -> str:
    """How a person knows a subagent: its type or nickname (Claude Code's `agentType`, Codex's nickname,
    Gemini's agent name) and what it was asked to do, `general-purpose "List project files"`; "" when the
    agent named it neither way."""
    name = " ".join((agent_type or "").split())
    if name.lower() in _GENERIC_SUBAGENT_NAMES:
        name = ""
    what = shorten(description, 60) if description and description.strip() else ""
    return " ".join(part for part in (name, f'"{what}"' if what else "") if part)


def subagent_tally(names: list[str]) -> str:
    """A session's subagents by name, each once with how many ran, `Explore ×2, general-purpose`; generic
    names left out, "" when none is left."""
    counts: dict[str, int] = {}
    for name in names:
        shown = subagent_name(name)
        if shown:
            counts[shown] = counts.get(shown, 0) + 1
    return ", ".join(name if count == 1 else f"{name} ×{count}" for name, count in counts.items())


def subagent_title(agent_id: str, agent_type: str | None = None, description: str | None = None) -> str:
    """A subagent by name and full id (what memex accepts back), `general-purpose "List project files"
    (a6464d481e77bfaa0)`; its id alone when it has no name."""
    name = subagent_name(agent_type, description)
    return f"{name} ({agent_id})" if name else agent_id


def subagent_label(agent_id: str | None, agent_type: str | None = None, description: str | None = None) -> str:
    """A subagent as the terminal and recall label its turns: `[Subagent: Explore "Find the parser" (a77)]`,
    `[Subagent: <id>]` when it has no name, "" for the main agent."""
    return f"[Subagent: {subagent_title(agent_id, agent_type, description)}]" if agent_id else ""


def turn_numbers(turns: Sequence[Mapping[str, object]]) -> list[int]:
    """Each turn's number as the sessions list counts them: the main agent's turns 1, 2, 3… and each
    subagent's its own 1, 2… (a subagent's turn between the main agent's second and third leaves that
    third turn 3)."""
    seen: dict[object, int] = {}
    numbers = []
    for turn in turns:
        agent = turn.get("agent_id") or ""
        seen[agent] = seen.get(agent, 0) + 1
        numbers.append(seen[agent])
    return numbers


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to at most `limit` characters with an ellipsis (never inside a secret: one
    the cut would halve is cut off whole, so redaction still recognises it wherever the text goes)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    from memex.redact import clear_cut  # only when something is cut (hooks import this module)

    return flat[: clear_cut(flat, max(0, limit - 1))].rstrip() + "…"


def _moment(timestamp: str) -> datetime | None:
    """An ISO-8601 time (a naive one read as UTC), or None when it is not one."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def display_time(timestamp: str | None, utc: bool = False) -> str:
    """A stored timestamp (UTC) in local time with its zone, `2026-05-03 02:20 CEST` (the zone's offset,
    `+0530`, where it has no abbreviation), or in UTC: `2026-05-03 00:20 UTC`; `—` for none."""
    if not timestamp:
        return "—"
    moment = _moment(timestamp)
    if moment is None:
        return timestamp[:16].replace("T", " ")
    moment = moment.astimezone(UTC if utc else None)
    zone = moment.strftime("%Z")
    if not zone or zone.lstrip("+-").isdigit():  # `+03` or nothing: the offset says more
        zone = moment.strftime("%z")
    return f"{moment:%Y-%m-%d %H:%M} {zone}"


# A turn whose end its transcript does not show yet (the session's last) is shown "in progress" while it
# was active this recently; an older one is simply where the session stopped.
IN_PROGRESS_SECONDS = 6 * 3600


def in_progress(provisional: object, last_activity: str | None, now: datetime | None = None) -> bool:
    """Whether a turn (its `provisional` flag, and its stored end or start time) is still being written."""
    moment = _moment(last_activity) if provisional and last_activity else None
    return moment is not None and ((now or datetime.now(UTC)) - moment).total_seconds() < IN_PROGRESS_SECONDS


def normalize_timestamp(value: object) -> str | None:
    """An ISO-8601 UTC timestamp with milliseconds (`2026-05-03T00:20:03.895Z`), or None if unreadable.

    One format everywhere makes timestamps comparable as strings in SQL.
    """
    moment: datetime | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        with contextlib.suppress(OverflowError, OSError, ValueError):
            moment = datetime.fromtimestamp(seconds, UTC)
    elif isinstance(value, str) and value:
        moment = _moment(value)
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_RELATIVE = re.compile(r"^(\d+)\s*([mhdwy])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_when(value: str, *, end_of_day: bool = False, now: datetime | None = None) -> str:
    """A user's date (`2026-05-01`, ISO time, `7d`, `3h`, `2w`, `today`, `yesterday`) as a timestamp.

    A bare date means its first moment, or its last one with `end_of_day` (for `--until`).
    Raises ValueError with a readable message.
    """
    now = now or datetime.now(UTC)
    text = value.strip().lower()
    relative = _RELATIVE.match(text)
    if relative:
        moment = now.timestamp() - int(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
        result = normalize_timestamp(moment)
        if result is None:  # before year 1: as no date at all, `forget --before` would have taken everything
            raise ValueError(f"cannot read {value!r} as a date: it is before the year 1")
        return result
    if text in ("today", "yesterday"):
        day = now.date() if text == "today" else datetime.fromtimestamp(now.timestamp() - 86400, UTC).date()
        text = day.isoformat()
    else:  # ISO 8601 as written (`T`, `Z`: what `--json` prints), or lowercased: Python reads no `z`
        text = text.upper()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) and end_of_day:
        text += "T23:59:59.999+00:00"
    result = normalize_timestamp(text)
    if result is None:
        raise ValueError(f"cannot read {value!r} as a date: use 2026-05-01, 2026-05-01T14:00, 7d, 12h or 2w")
    return result


# Markdown and HTML in a title (`plain_title`). A title is often a prompt's first words, written in
# Markdown; on a terminal, a web page or a list of sessions those marks are noise. Conservative on purpose:
# `snake_case`, `__init__.py`, `a * b`, `Vec<String>` and `#123` are text, not marks.
_FENCE = re.compile(r"(?:```|~~~)[\w+#.-]*")  # a code fence and the language named after it
_HEADING = re.compile(r"(?:^|(?<=\s))#{1,6}(?=\s|$|…)", re.MULTILINE)
_QUOTE_OR_BULLET = re.compile(r"^[ \t]{0,3}(?:>[ \t]?|[-*+][ \t]+)+", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]+)>")
# Tags that format text (Markdown allows inline HTML) and custom ones with a hyphen, as Claude Code wraps a
# slash command's prompt in (`<command-name>/init</command-name>`). Others stay: a title asking why a
# `<script>` tag breaks a page is about that tag.
_TAG_NAME = (
    r"(?:[a-z][a-z0-9]*-[a-z0-9-]+"
    r"|b|i|u|s|em|strong|code|kbd|mark|sup|sub|small|br|hr|p|span|div|a|img|details|summary)"
)
_TAG = re.compile(rf"</{_TAG_NAME}\s*>|(?<![\w<])<{_TAG_NAME}(?:\s[^<>]*)?/?>")
_CODE = re.compile(r"(`+)(.+?)\1")
_STARS = re.compile(r"(?<![\w*\\])(\*{1,3}|~~)(?=\S)(.+?)(?<=[^\s\\])\1(?![\w*])")
_UNDERSCORES = re.compile(r"(?<![\w\\])(_{1,3})(?=[^\s_])(.+?)(?<=[^\s_\\])\1(?=[\s,;:!?)]|$)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>~|])")


def plain_title(text: str) -> str:
    """A title as plain text on one line: Markdown headings, emphasis, code marks, links (their text kept),
    images (their alt text kept), quotes, bullets and formatting HTML tags removed (`## Fix **the** [cart](x)` →
    `Fix the cart`). Works on a prompt's lines and on a title already flattened to one line."""
    text = _FENCE.sub(" ", text)
    text = _QUOTE_OR_BULLET.sub("", text)
    text = _HEADING.sub("", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2), text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _CODE.sub(lambda m: m.group(2).strip(), text)
    for _ in range(2):  # `***both***`, `**_nested_**`
        text = _STARS.sub(r"\2", text)
        text = _UNDERSCORES.sub(r"\2", text)
    text = _ESCAPE.sub(r"\1", text)
    return " ".join(text.split())
