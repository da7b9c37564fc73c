"""`memex show SESSION`: a session as a readable conversation (its mirror), or its full turns."""

from __future__ import annotations

import codecs
import itertools
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.rule import Rule
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option
from memex.cli.render import project_name, short_time, subagent_label
from memex.errors import UserError
from memex.ingest.mirrors import LABELS, Mirror, build_mirror, get_mirror
from memex.sources import ADAPTERS, raw_transcript
from memex.store.queries import get_session, resolve_session, session_turns

_LABEL = re.compile(r"^(User \(next\)|User|Assistant|Compaction summary):", re.MULTILINE)
_STYLES = {
    "User": "bold green",
    "Assistant": "bold blue",
    "Compaction summary": "bold magenta",
    "User (next)": "bold green",
}


def styled_turn_text(full_text: str, drop_reaction: bool = True) -> Text:
    """A turn's text with its speaker labels coloured (and the next prompt dropped, shown by the next turn)."""
    if drop_reaction and "\n\nUser (next): " in full_text:
        full_text = full_text[: full_text.rindex("\n\nUser (next): ")]
    text = Text(full_text)
    for match in _LABEL.finditer(full_text):
        text.stylize(_STYLES[match.group(1)], match.start(), match.end())
    return text


@click.command("show")
@click.argument("session")
@click.option("--turns", "as_turns", is_flag=True, help="Show the full turns, with tool summaries and subagents.")
@click.option("--raw", is_flag=True, help="Print the transcript file itself.")
@click.option("--agent", type=click.Choice(sorted(ADAPTERS)), help="Only a session of this agent.")
@json_option
@click.pass_obj
def show_command(app: App, session: str, as_turns: bool, raw: bool, agent: str | None, as_json: bool) -> None:
    """Show a session as a conversation (SESSION: an id or a unique prefix); --turns for the full turns."""
    conn = app.db_readonly()
    session_id = resolve_session(conn, session, agent)
    local = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone() is not None
    mirror = get_mirror(conn, session_id, app.config.computer)
    if not local:
        assert mirror is not None
        if raw:  # the transcript stays on its computer: ask that computer's daemon for it
            from memex.sync.remote import remote_raw

            _write_blocks(app, remote_raw(app.config, mirror.computer, conn, session_id))
            return
        if as_turns:
            raise UserError(
                f"session {session_id} ran on {mirror.computer}: only its conversation is here (drop --turns, "
                "or use --raw to fetch its transcript from there)"
            )
        _show_mirror(app, _mirror_info(mirror), mirror, as_json)
        return
    info = get_session(conn, session_id)
    if raw:
        _print_raw(app, info["agent"], info["transcript_path"], session_id)
    elif as_turns:
        _show_turns(app, info, session_turns(conn, session_id), as_json)
    else:
        if mirror is None or mirror.computer != info["computer"]:
            mirror = build_mirror(conn, session_id)  # indexed before mirrors existed: built on the fly
        _show_mirror(app, info, mirror, as_json)


def _mirror_info(mirror: Mirror) -> dict[str, Any]:
    """What is known of a session seen only through its mirror, in the shape of a session row."""
    return {
        "session_id": mirror.session_id,
        "agent": mirror.agent,
        "computer": mirror.computer,
        "project_dir": mirror.project,
        "title": mirror.title,
        "started_at": mirror.timestamp_start,
        "ended_at": mirror.timestamp_end,
        "prs": [{"pr_number": n} for n in mirror.metadata.get("prs", [])],
        "subagents": [],
    }


def _header(app: App, info: dict[str, Any], extra: list[str]) -> None:
    out = app.out
    out.print(Text(info["title"] or "(untitled)", style="bold"))
    meta = [info["session_id"], info["agent"], project_name(info["project_dir"]), short_time(info["started_at"])]
    if info["computer"] != app.config.computer:
        meta.append(f"on {info['computer']}")
    if info["prs"]:
        meta.append("PR " + ", ".join(f"#{p['pr_number']}" for p in info["prs"]))
    out.print(Text(" · ".join(meta + extra), style="dim"))


def _show_mirror(app: App, info: dict[str, Any], mirror: Mirror | None, as_json: bool) -> None:
    messages = mirror.messages() if mirror else []
    if as_json:
        data = None
        if mirror is not None:
            metadata = {k: v for k, v in mirror.metadata.items() if k != "messages"}
            fields = {k: v for k, v in vars(mirror).items() if k not in ("conversation_text", "metadata")}
            data = {**fields, "metadata": metadata, "messages": messages}
        app.emit_json({"session": info, "mirror": data})
        return
    extra = [f"{len(info['subagents'])} subagents (--turns shows them)"] if info["subagents"] else []
    _header(app, info, extra)
    if not messages:
        app.out.print(Text("(no conversation: --turns shows what the session did)", style="dim"))
    for message in messages:
        label = Text()
        label.append(LABELS[message["role"]], style=_STYLES[LABELS[message["role"]]])
        if message["timestamp"]:
            label.append(f" · {short_time(message['timestamp'])}", style="dim")
        app.out.print()
        app.out.print(label)
        app.out.print(Text(message["text"]))


def _show_turns(app: App, info: dict[str, Any], turns: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        app.emit_json({"session": info, "turns": turns})
        return
    out = app.out
    _header(app, info, [f"{len(info['subagents'])} subagents"] if info["subagents"] else [])
    for number, turn in enumerate(turns, 1):
        label = f"turn {number} · {short_time(turn['started_at'])}"
        if turn["agent_id"]:
            label += f" · {subagent_label(turn['agent_id'])}"
        if turn["provisional"]:
            label += " · in progress"
        out.print(Rule(Text(label, style="cyan"), align="left"))
        out.print(styled_turn_text(turn["full_text"]))
        if turn["tool_summary"]:
            out.print(Text(turn["tool_summary"], style="dim"))


def _print_raw(app: App, agent: str, transcript_path: str | None, session_id: str) -> None:
    """The transcript file, or (a session kept in an agent's database) its records as JSON lines."""
    try:
        blocks = raw_transcript(agent, Path(transcript_path)) if transcript_path else None
        first = next(blocks, b"") if blocks is not None else None
    except (OSError, sqlite3.Error):
        first = None
    if blocks is None or first is None:
        raise UserError(f"the transcript of {session_id} is not on this computer")
    _write_blocks(app, itertools.chain([first], blocks))


def _write_blocks(app: App, blocks: Iterator[bytes]) -> None:
    """Write bytes to stdout as they come (a transcript may be large, or arrive over the network)."""
    stream = getattr(app.stdout, "buffer", None)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for block in blocks:
        if stream is not None:
            stream.write(block)
        else:
            app.stdout.write(decoder.decode(block))
    if stream is not None:
        stream.flush()
    sys.stdout.flush()
