"""`memex show SESSION`: a session as a readable conversation (its mirror), or its full turns."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterator
from typing import Any

import click
from rich.rule import Rule
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import display_options, json_option
from memex.cli.render import project_name, title_text
from memex.mirrors.model import LABELS
from memex.sources import ADAPTERS
from memex.textutil import counted, in_progress, subagent_label, turn_numbers

_LABEL = re.compile(r"^(User \(next\)|User|Assistant|Compaction summary):", re.MULTILINE)
_STYLES = {
    "User": "bold green",
    "Assistant": "bold blue",
    "Compaction summary": "bold magenta",
    "User (next)": "bold green",
}
# The subagents listed under a session's header, each with its name (the rest counted).
_SUBAGENTS_LISTED = 10


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
@display_options
@click.pass_obj
def show_command(app: App, session: str, as_turns: bool, raw: bool, agent: str | None, as_json: bool) -> None:
    """Show a session as a conversation (SESSION: an id or a unique prefix); --turns for the full turns."""
    if raw and (as_turns or as_json):  # the file as it is has no turns and no other shape
        raise click.UsageError(
            f"--raw prints the transcript as it is; it cannot be combined with {'--turns' if as_turns else '--json'}"
        )
    memex = app.memex(readonly=True)
    if raw:
        _write_blocks(app, memex.raw(session, agent=agent))
        return
    view = memex.show(session, turns=as_turns, agent=agent)
    if as_json:
        app.emit_json(view.to_json())
        return
    with app.paged():
        if view.turns is not None:
            _show_turns(app, view.session, view.turns)
        else:
            _show_mirror(app, view.session, view.messages)


def _header(app: App, info: dict[str, Any], extra: list[str]) -> None:
    out = app.out
    out.print(Text(title_text(info["title"], empty="(untitled)"), style="bold"))
    meta = [info["session_id"], info["agent"], project_name(info["project_dir"]), app.when(info["started_at"])]
    if info["computer"] != app.config.computer:
        meta.append(f"on {info['computer']}")
    if info["prs"]:
        meta.append("PR " + ", ".join(f"#{p['pr_number']}" for p in info["prs"]))
    out.print(Text(" · ".join(meta + extra), style="dim"))
    details = info.get("subagent_details") or []
    for detail in details[:_SUBAGENTS_LISTED]:
        label = subagent_label(detail["agent_id"], detail.get("agent_type"), detail.get("description"))
        out.print(Text("  " + label, style="magenta"))
    if len(details) > _SUBAGENTS_LISTED:
        out.print(Text(f"  … and {counted(len(details) - _SUBAGENTS_LISTED, 'more subagent')}", style="dim"))


def _show_mirror(app: App, info: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    extra = [f"{counted(len(info['subagents']), 'subagent')} (--turns shows them)"] if info["subagents"] else []
    _header(app, info, extra)
    if not messages:
        worked = info.get("turns") or info["subagents"]  # else a transcript of summaries or primed subagents
        said = "no conversation: --turns shows what the session did" if worked else "no conversation and no turns"
        app.out.print(Text(f"({said})", style="dim"))
    for message in messages:
        label = Text()
        label.append(LABELS[message["role"]], style=_STYLES[LABELS[message["role"]]])
        if message["timestamp"]:
            label.append(f" · {app.when(message['timestamp'])}", style="dim")
        app.out.print()
        app.out.print(label)
        app.out.print(Text(message["text"]))


def _show_turns(app: App, info: dict[str, Any], turns: list[dict[str, Any]]) -> None:
    out = app.out
    _header(app, info, [counted(len(info["subagents"]), "subagent")] if info["subagents"] else [])
    for number, turn in zip(turn_numbers(turns), turns, strict=True):  # the main agent's 1…n, a subagent's own
        label = f"turn {number} · {app.when(turn['started_at'])}"
        if turn["agent_id"]:
            label += f" · {subagent_label(turn['agent_id'], turn['subagent_name'], turn['subagent_description'])}"
        if in_progress(turn["provisional"], turn["ended_at"] or turn["started_at"]):
            label += " · in progress"
        out.print(Rule(Text(label, style="cyan"), align="left"))
        out.print(styled_turn_text(turn["full_text"]))
        if turn["tool_summary"]:
            out.print(Text(turn["tool_summary"], style="dim"))


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
