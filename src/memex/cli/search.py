"""`memex search QUERY`: find past turns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from memex.cli.app import App, count_type
from memex.cli.options import build_filters, display_options, filter_options, json_option
from memex.cli.render import print_line, project_name, title_text
from memex.search.highlight import highlighted_excerpt
from memex.search.hybrid import LEVELS, MODES
from memex.search.scoped import ROLES, SCOPES
from memex.textutil import short_id, subagent_label

if TYPE_CHECKING:
    from memex.results import SearchHit

EXCERPT_CHARS = 400


@click.command("search")
@click.argument("query", nargs=-1, required=True)
@filter_options("project", "agent", "since", "until", "session", "file", "pr")
@click.option("--limit", type=count_type(), default=10, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    help="Words (lexical), meaning (semantic), or both fused.",
)
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    help="Search only this granularity (default: all, fine first; coarse first for overview questions).",
)
@click.option("--per-session", type=count_type(), default=1, show_default=True, help="Results one session may give.")
@click.option(
    "--in",
    "scope",
    type=click.Choice(SCOPES),
    default="conversation",
    show_default=True,
    help="Search the conversation, the output of the tools the turns ran (error text, logs; by words only), or all.",
)
@click.option(
    "--role",
    type=click.Choice(ROLES),
    help="Only what the user (prompts) or the assistant (its messages) wrote; by words only (lexical).",
)
@click.option("--full", is_flag=True, help="Print each turn's whole text, not an excerpt.")
@click.option("--computer", help="Ask this computer's memex daemon instead (its own sessions, turn by turn).")
@json_option
@display_options
@click.pass_obj
def search_command(
    app: App,
    query: tuple[str, ...],
    limit: int,
    mode: str,
    level: str | None,
    per_session: int,
    scope: str,
    role: str | None,
    full: bool,
    computer: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Search past turns and session mirrors for QUERY (words, identifiers, paths, meaning; any language).

    Each word matches as written (quotes, `NEAR`, `:` are plain text); a word ending in `*` matches every word
    it begins: `zebr*` finds zebra and zebras (quote it for the shell; two characters at least before the
    `*`). `--in tools` searches what the tools printed instead (an error message, a log line); `--role` keeps to
    the user's or the assistant's words. Both search by words (lexical); `--mode semantic` is refused."""
    text = " ".join(query).strip()
    filters = build_filters(**options)
    memex = app.memex(readonly=True)
    found = memex.search(
        text,
        filters,
        limit=limit,
        mode=mode,
        level=level,
        per_session=per_session,
        computer=computer,
        scope=scope,
        role=role,
    )
    if as_json:
        app.emit_json(found.to_json())
        return
    for note in found.notes:
        app.say("note", note)
    if not found.hits:
        app.err.print("No matching tool output." if scope == "tools" else "No matching turns.")
        return
    with app.paged():
        print_hits(app, found.hits, text, full)


def print_hits(app: App, hits: list[SearchHit], text: str, full: bool) -> None:
    out = app.out
    for number, hit in enumerate(hits, 1):
        head = Text(f"{number}. ", style="bold")
        head.append(short_id(hit.session_id), style="cyan")
        head.append(f"  {app.when(hit.started_at)} · {hit.agent} · {project_name(hit.project_dir)}", style="dim")
        if hit.agent_id:
            label = subagent_label(hit.agent_id, hit.subagent_name, hit.subagent_description)
            head.append(f" {label}", style="magenta")
        if hit.source == "mirror":
            where = "" if hit.computer == app.config.computer else f" from {hit.computer}"
            head.append(f" [conversation{where}]", style="yellow")
        elif hit.computer and hit.computer != app.config.computer:
            head.append(f" [on {hit.computer}]", style="yellow")
        if hit.source == "tool":
            failed = " (error)" if hit.extra.get("tool_is_error") else ""
            head.append(f" [tool output: {hit.extra.get('tool_name') or 'unknown tool'}{failed}]", style="green")
        print_line(out, head)
        if hit.title:
            print_line(out, Text("   " + title_text(hit.title, 100), style="bold"))
        if full:
            out.print(whole_turn(hit.full_text))
        if not full or hit.source == "tool":  # a tool hit's excerpt is not in the turn's text
            print_line(out, marked_excerpt(hit.matched_chunk, text, hit.spans))
        print_line(out)


def whole_turn(full_text: str) -> Text:
    """A hit's whole turn, styled as `memex show` prints it (imported only for --full)."""
    from memex.cli.show import styled_turn_text

    return styled_turn_text(full_text, drop_reaction=False)


def marked_excerpt(matched: str, query: str, spans: list[list[int]] | None = None) -> Text:
    """The excerpt of a hit, indented, with the query's words in bold (`spans`: the hit's, when it has them)."""
    known = None if spans is None else [(start, end) for start, end in spans]
    excerpt, spans_in_excerpt = highlighted_excerpt(matched, query, EXCERPT_CHARS, known)
    body = Text("   " + excerpt)
    for start, end in spans_in_excerpt:
        body.stylize("bold yellow", start + 3, end + 3)
    return body
