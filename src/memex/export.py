"""One conversation, exported for sharing: Markdown, JSON or a self-contained HTML page.

What is exported is the session's mirror (the user's and the assistant's words, no tools, no thinking),
with secrets redacted as for a mirror that leaves this computer (unless asked otherwise). Works for a
session indexed here and for one known only by another computer's mirror.
"""

from __future__ import annotations

import html
import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from memex.errors import UserError
from memex.mirrors.build import build_mirror, get_mirror, redact_mirror
from memex.mirrors.model import LABELS, Mirror
from memex.store.queries import get_session, is_indexed
from memex.textutil import plain_title

FORMATS = ("md", "json", "html")


@dataclass
class Conversation:
    """What an export holds: who, where, when, and the messages."""

    session_id: str
    title: str | None
    agent: str
    computer: str
    project: str | None
    started_at: str | None
    ended_at: str | None
    messages: list[dict[str, Any]]
    redacted: int

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def conversation(conn: sqlite3.Connection, session_id: str, computer: str, redact: bool = True) -> Conversation:
    """The conversation of a session (local: rebuilt from its entries when its mirror is not this
    computer's; else the mirror received)."""
    mirror: Mirror | None = get_mirror(conn, session_id, computer)
    worked = False
    if is_indexed(conn, session_id):
        session = get_session(conn, session_id)
        worked = bool(session["turns"] or session["subagents"])
        if mirror is None or mirror.computer != session["computer"]:
            mirror = build_mirror(conn, session_id)
    if mirror is None:
        only = " (only tool work: `memex show --turns` shows it)" if worked else ""
        raise UserError(f"session {session_id} has no conversation to export{only}")
    count = 0
    if redact:
        mirror, count = redact_mirror(mirror)
    return Conversation(
        mirror.session_id,
        mirror.title,
        mirror.agent,
        mirror.computer,
        mirror.project,
        mirror.timestamp_start,
        mirror.timestamp_end,
        mirror.messages(),
        count,
    )


def _meta_line(item: Conversation) -> str:
    parts = [item.session_id, item.agent, f"on {item.computer}"]
    if item.project:
        parts.append(item.project)
    if item.started_at:
        parts.append(item.started_at)
    return " · ".join(parts)


def to_markdown(item: Conversation) -> str:
    lines = [f"# {plain_title(item.title or '') or 'Untitled session'}", "", f"_{_meta_line(item)}_", ""]
    for message in item.messages:
        label = LABELS[message["role"]]
        when = f" · {message['timestamp']}" if message["timestamp"] else ""
        lines += [f"## {label}{when}", "", message["text"].rstrip(), ""]
    return "\n".join(lines)


def to_json(item: Conversation) -> str:
    return orjson.dumps(item.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n"


_CSS = (
    ":root{color-scheme:light dark;--fg:#222;--muted:#666;--bg:#fff;--user:#eef6ee;--assistant:#f2f4fa;"
    "--summary:#f7f0f7;--code:#e6e8ec;--line:#d0d4da;--link:#1a5fb4}"
    "@media (prefers-color-scheme:dark){:root{--fg:#e4e6ea;--muted:#a3a9b3;--bg:#16181c;--user:#1d2a1f;"
    "--assistant:#1e2330;--summary:#2a1f2a;--code:#2c313a;--line:#3a404a;--link:#8cb4ff}}"
    "body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:var(--fg);"
    "background:var(--bg)}a{color:var(--link)}"
    ".meta{color:var(--muted)}.message{margin:1.2rem 0;padding:.6rem 1rem;border-radius:6px}"
    ".user{background:var(--user)}.assistant{background:var(--assistant)}.summary{background:var(--summary)}"
    ".who{font-weight:600}.when{color:var(--muted);font-weight:400}"
    ".md{overflow-wrap:break-word}.md>:first-child{margin-top:.4rem}.md>:last-child{margin-bottom:0}"
    ".md pre{overflow-x:auto;padding:.5rem .7rem;background:var(--code);border-radius:4px}"
    ".md code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--code);padding:0 .2rem;"
    "border-radius:3px}.md pre code{padding:0;background:none}.md table{border-collapse:collapse;display:block;"
    "overflow-x:auto}.md th,.md td{border:1px solid var(--line);padding:.2rem .5rem}"
)


def to_html(item: Conversation) -> str:
    """A page with no script and no remote resource, light or dark as the reader's system is: messages'
    Markdown rendered as the viewer renders it (raw HTML shown as text, links only to web, mail or relative
    addresses, images as links), everything else escaped."""
    from memex.markdown import markdown

    title = html.escape(plain_title(item.title or "") or "Untitled session")
    parts = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta">{html.escape(_meta_line(item))}</p>',
    ]
    for message in item.messages:
        role = message["role"]
        when = f' <span class="when">{html.escape(message["timestamp"])}</span>' if message["timestamp"] else ""
        parts.append(
            f'<div class="message {role}"><div class="who">{html.escape(LABELS[role])}{when}</div>'
            f'<div class="md">{markdown(message["text"])}</div></div>'
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


RENDERERS = {"md": to_markdown, "json": to_json, "html": to_html}


def render(item: Conversation, fmt: str) -> str:
    """The conversation in format `fmt` (md, json, html)."""
    return RENDERERS[fmt](item)
