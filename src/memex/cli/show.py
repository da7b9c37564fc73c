"""`memex show SESSION`: a session as a readable conversation."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click
from rich.rule import Rule
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option
from memex.cli.render import project_name, short_time, subagent_label
from memex.errors import UserError
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
@click.option("--raw", is_flag=True, help="Print the transcript file itself.")
@json_option
@click.pass_obj
def show_command(app: App, session: str, raw: bool, as_json: bool) -> None:
    """Show a session's turns (SESSION: an id or a unique prefix)."""
    conn = app.db_readonly()
    session_id = resolve_session(conn, session)
    info = get_session(conn, session_id)
    if raw:
        _print_raw(app, info["transcript_path"], session_id)
        return
    turns = session_turns(conn, session_id)
    if as_json:
        app.emit_json({"session": info, "turns": turns})
        return
    out = app.out
    out.print(Text(info["title"] or "(untitled)", style="bold"))
    meta = [info["session_id"], info["agent"], project_name(info["project_dir"]), short_time(info["started_at"])]
    if info["prs"]:
        meta.append("PR " + ", ".join(f"#{p['pr_number']}" for p in info["prs"]))
    if info["subagents"]:
        meta.append(f"{len(info['subagents'])} subagents")
    out.print(Text(" · ".join(meta), style="dim"))
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


def _print_raw(app: App, transcript_path: str | None, session_id: str) -> None:
    if not transcript_path or not Path(transcript_path).is_file():
        raise UserError(f"the transcript of {session_id} is not on this computer")
    with open(transcript_path, "rb") as handle:
        stream = getattr(app.stdout, "buffer", None)
        for block in iter(lambda: handle.read(1 << 16), b""):
            if stream is not None:
                stream.write(block)
            else:
                app.stdout.write(block.decode("utf-8", "replace"))
        if stream is not None:
            stream.flush()
    sys.stdout.flush()
