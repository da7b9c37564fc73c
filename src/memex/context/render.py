"""Compact text for injection into the agent's context, within a token budget and a character ceiling.

Written as facts about past sessions (Claude Code's docs advise against text that reads like out-of-band
instructions), one block per turn: a header with date, project, title, session id and `[Subagent: name (id)]`,
then the prompt, the end of the answer, the user's reaction and the files touched.

Secrets are redacted before any cut (a cut could halve one past recognition): what is injected goes to the
model provider of the session asking, which may not be the one the secret was pasted to (a key given to
Codex must not reach Anthropic because a Claude Code prompt recalled that turn).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memex.redact import redact
from memex.search.recall import Recalled
from memex.textutil import estimate_tokens, plain_title, short_id, subagent_label, token_spans

# Share of a turn's budget given to its prompt; the answer gets the rest (its end: the conclusion).
PROMPT_SHARE = 0.35
# The user's next message is shown when it is this short: "that fixed it" / "no, revert it" say how the
# turn ended; a long one is the next topic.
REACTION_MAX_TOKENS = 25
FILES_MAX_TOKENS = 40
# A block smaller than this is not worth showing: the budget is spent.
MIN_BLOCK_TOKENS = 40
MIN_BLOCK_CHARS = 200

_REACTION = "\n\nUser (next): "
_ASSISTANT = "Assistant: "


def flat(text: str) -> str:
    return " ".join(text.split())


def head_tokens(text: str, limit: int) -> str:
    """The first `limit` estimated tokens of `text`, on one line, with an ellipsis when cut."""
    text = flat(text)
    spans = token_spans(text)
    if len(spans) <= limit:
        return text
    return text[: spans[max(0, limit - 1)][1]].rstrip() + " …" if limit > 0 else ""


def tail_tokens(text: str, limit: int) -> str:
    """The last `limit` estimated tokens of `text`, on one line, with an ellipsis when cut."""
    text = flat(text)
    spans = token_spans(text)
    if len(spans) <= limit:
        return text
    return "… " + text[spans[len(spans) - limit][0] :].lstrip() if limit > 0 else ""


def turn_parts(turn: dict[str, Any]) -> tuple[str, str, str]:
    """(prompt, assistant answer, the user's next message) of a stored turn."""
    full = turn.get("full_text") or ""
    reaction = ""
    if _REACTION in full:
        full, reaction = full.rsplit(_REACTION, 1)
    answer = ""
    position = full.find(_ASSISTANT) if full.startswith(_ASSISTANT) else full.find("\n\n" + _ASSISTANT)
    if position >= 0:
        answer = full[position:].strip().removeprefix(_ASSISTANT)
    return turn.get("prompt_text") or "", answer, reaction


def _files_line(tool_summary: str | None) -> str:
    for line in (tool_summary or "").splitlines():
        if line.startswith("Files: "):
            return line
    return ""


def header(turn: dict[str, Any], *, project: bool = True) -> str:
    """`2026-05-03 · shop · "Title" · session 2969822b [Subagent: Explore "Find the parser" (a77)]`."""
    parts = [(turn.get("started_at") or "")[:10] or "undated"]
    if project and turn.get("project_dir"):
        parts.append(turn["project_dir"].rstrip("/").rsplit("/", 1)[-1])
    if turn.get("title"):
        parts.append(f'"{head_tokens(plain_title(redact(turn["title"])[0]), 16)}"')
    parts.append(f"session {short_id(turn['session_id'])}")
    text = " · ".join(parts)
    if turn.get("agent_id"):
        label = subagent_label(turn["agent_id"], turn.get("subagent_name"), turn.get("subagent_description"))
        text += " " + redact(label)[0]
    return text


def turn_block(turn: dict[str, Any], budget: int, *, project: bool = True, prefix: str = "- ") -> str:
    """One turn in about `budget` tokens: header, prompt, end of the answer, reaction, files."""
    prompt, answer, reaction = (redact(part)[0] if part else part for part in turn_parts(turn))
    lines = [prefix + header(turn, project=project)]
    room = budget - estimate_tokens(lines[0])
    label = "Compaction summary" if turn.get("kind") == "compaction" else "User"
    files = head_tokens(redact(_files_line(turn.get("tool_summary")))[0], FILES_MAX_TOKENS)
    reaction = reaction if 0 < estimate_tokens(reaction) <= REACTION_MAX_TOKENS else ""
    room -= estimate_tokens(files) + estimate_tokens(reaction)
    prompt_room = max(8, int(room * PROMPT_SHARE)) if answer else room
    if prompt:
        shown = head_tokens(prompt, prompt_room)
        lines.append(f"  {label}: {shown}")
        room -= estimate_tokens(shown)
    if answer and room > 8:
        lines.append(f"  Assistant: {tail_tokens(answer, room)}")
    if reaction:
        lines.append(f"  User then: {flat(reaction)}")
    if files:
        lines.append(f"  {files}")
    return "\n".join(lines)


def fit(intro: str, blocks: Iterable[str], budget: int, max_chars: int) -> str:
    """The intro and as many blocks as fit in the budget and the character ceiling; "" with no block.

    A block that would cross the character ceiling is cut there, when enough room is left to be useful.
    """
    text = intro
    used = estimate_tokens(intro)
    count = 0
    for block in blocks:
        cost = estimate_tokens(block)
        if used + cost > budget:
            break
        room = max_chars - len(text) - 2
        if len(block) > room:
            if room >= MIN_BLOCK_CHARS:
                text += "\n\n" + block[: room - 1].rstrip() + "…"
                count += 1
            break
        text += "\n\n" + block
        used += cost
        count += 1
    return text if count else ""


def render_recall(hits: list[Recalled], budget: int, max_chars: int, hit_max_tokens: int) -> str:
    """The recall injection for a prompt, or "" when there is nothing to say."""
    if not hits:
        return ""
    intro = "memex recall: turns from earlier sessions that share this prompt's subject (most relevant first)."
    remaining = budget - estimate_tokens(intro)
    per_hit = max(MIN_BLOCK_TOKENS, min(hit_max_tokens, remaining // len(hits)))
    blocks = (turn_block(hit.turn, per_hit) for hit in hits)
    return fit(intro, blocks, budget, max_chars)


def render_compacted(turns: list[dict[str, Any]], budget: int, max_chars: int, max_turns: int) -> str:
    """What a compaction dropped: the session's last turns before it, in order, within the budget."""
    if not turns:
        return ""
    intro = (
        "memex: the last turns of this session before it was compacted, verbatim excerpts in order "
        "(the summary above is shorter)."
    )
    per_turn = max(MIN_BLOCK_TOKENS * 2, (budget - estimate_tokens(intro)) // max(1, min(len(turns), max_turns)))
    blocks: list[str] = []
    used = estimate_tokens(intro)
    for turn in turns[:max_turns]:  # newest first: the most recent work matters most
        block = turn_block({**turn, "title": None}, per_turn, project=False)
        cost = estimate_tokens(block)
        if used + cost > budget or sum(len(b) + 2 for b in blocks) + len(intro) + len(block) > max_chars:
            break
        blocks.append(block)
        used += cost
    if not blocks:
        return ""
    return intro + "\n\n" + "\n\n".join(reversed(blocks))


def render_file_history(path: str, rows: list[dict[str, Any]], budget: int, max_chars: int) -> str:
    """Past turns of other sessions that touched a file, for PreToolUse; "" when there are none."""
    if not rows:
        return ""
    intro = f"memex: {path} was touched in earlier sessions:"
    lines = []
    for row in rows:
        prompt, _answer, _reaction = turn_parts(row)
        verbs = ", ".join(sorted(set(row["tools"])))
        line = f"- {header(row, project=False)} ({verbs}): {head_tokens(redact(prompt)[0], 30)}"
        lines.append(line)
    return fit(intro, lines, budget, max_chars).replace("\n\n- ", "\n- ")


def render_recent_files(files: list[tuple[str, list[str]]], max_chars: int) -> str:
    """The files a session touched most recently (for a subagent it starts); "" when none."""
    if not files:
        return ""
    lines = ["memex: files the parent session touched most recently (newest first):"]
    for path, tools in files:
        line = f"- {path} ({', '.join(tools)})"
        if sum(len(x) + 1 for x in lines) + len(line) > max_chars:
            break
        lines.append(line)
    return "\n".join(lines)
