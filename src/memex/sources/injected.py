"""What an agent or its harness wrote into the user's side of a conversation: never a prompt.

Every agent puts text of its own into user-role messages: instruction files (AGENTS.md, CLAUDE.md), the
environment, IDE context around the user's words, a subagent's result coming back, a turn limit reached,
hook output. Taken for prompts they become sessions' titles and first prompts, and recall then matches the
boilerplate instead of the request. These helpers say what is the user's own text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson

from memex.plain import Record

# --- Codex -------------------------------------------------------------------------------------------

# Text Codex injects as a user message: project instructions and the environment block.
_CODEX_PREFIXES = ("# AGENTS.md instructions", "<user_instructions>", "<environment_context>", "<INSTRUCTIONS>")
# Any message that is one XML-like envelope: `<environment_context>…</environment_context>`, `<turn_aborted>`,
# `<user_shell_command>`, `<subagent_notification>` and the tags later versions add.
_ENVELOPE = re.compile(r"^<([A-Za-z_][\w -]*)>.*</\1>$", re.DOTALL)
# The IDE extension and Codex Desktop put the context (active file, open tabs, files mentioned) above the
# user's words, which follow this heading.
_CODEX_REQUEST = "## My request for Codex:"
_CODEX_CONTEXT_HEADINGS = ("# Context from my IDE setup:", "# Files mentioned by the user:")


def codex_user_text(text: str) -> str | None:
    """The user's own words in a Codex user message, or None when Codex wrote the whole message."""
    stripped = text.strip()
    if stripped.startswith(_CODEX_CONTEXT_HEADINGS) or _CODEX_REQUEST in stripped:
        at = stripped.find(_CODEX_REQUEST)
        stripped = stripped[at + len(_CODEX_REQUEST) :].strip() if at >= 0 else ""
        if not stripped:
            return None
    if stripped.startswith(_CODEX_PREFIXES) or _ENVELOPE.match(stripped):
        return None
    return stripped if stripped else None


class AgentReport(Record):
    """A subagent's result as its parent received it."""

    __slots__ = ("agent_id", "description", "result")

    agent_id: str | None
    description: str | None
    result: str

    def __init__(self, agent_id: str | None, description: str | None, result: str) -> None:
        self.agent_id = agent_id
        self.description = description
        self.result = result

    def text(self) -> str:
        """The report as a line of the parent's conversation."""
        name = f' "{self.description}"' if self.description else ""
        return f"Subagent{name} reported: {self.result}"


def codex_subagent_report(text: str, nickname: Callable[[str], str | None] | None = None) -> AgentReport | None:
    """The result in a `<subagent_notification>` message (a spawned agent finished), else None; named by
    `nickname` (the agent's thread id -> what Codex calls it, "Laplace") when it knows the agent."""
    stripped = text.strip()
    if not stripped.startswith("<subagent_notification>"):
        return None
    body = stripped.removeprefix("<subagent_notification>").removesuffix("</subagent_notification>").strip()
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    status = data.get("status")
    result = None
    if isinstance(status, dict):
        result = next((v for v in status.values() if isinstance(v, str) and v.strip()), None)
    if result is None:
        return None
    agent = data.get("agent_path") or data.get("agent_id")
    agent = agent if isinstance(agent, str) else None
    return AgentReport(agent, nickname(agent) if nickname and agent else None, result.strip())


# --- Claude Code --------------------------------------------------------------------------------------

_TAG = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.DOTALL) for name in ("task-id", "summary", "result", "status")}
# Claude Code's subagent ids: `a` and 16 hex digits (background shell tasks have others).
_AGENT_ID = re.compile(r"^a[0-9a-f]{16}$")
_AGENT_SUMMARY = re.compile(r'^Agent "(.+)" (?:finished|completed|failed|was stopped|stopped)', re.DOTALL)
# Hook output older Claude Code versions appended to the prompt itself.
_PROMPT_HOOK = re.compile(r"<user-prompt-submit-hook>.*?</user-prompt-submit-hook>\s*", re.DOTALL)


def claude_task_report(text: str) -> AgentReport | None:
    """The result of a background task (`<task-notification>`) when it carries one, else None."""
    stripped = text.strip()
    if not stripped.startswith("<task-notification>"):
        return None
    found = {name: pattern.search(stripped) for name, pattern in _TAG.items()}
    result = found["result"].group(1).strip() if found["result"] else ""
    if not result:
        return None
    summary = found["summary"].group(1).strip() if found["summary"] else ""
    task_id = found["task-id"].group(1).strip() if found["task-id"] else None
    described = _AGENT_SUMMARY.match(summary)
    if described is None and not (task_id and _AGENT_ID.match(task_id)):
        return None  # a background shell command's notification, not a subagent's
    return AgentReport(task_id, described.group(1) if described else None, result)


def strip_prompt_hooks(text: str) -> str:
    """A Claude prompt without the `<user-prompt-submit-hook>` output older versions appended to it."""
    if "<user-prompt-submit-hook>" not in text:
        return text
    return _PROMPT_HOOK.sub("", text).strip()


# --- Gemini CLI ---------------------------------------------------------------------------------------

# The CLI's own user-role text: session context and hook context (`isIgnoredUserContent`), and what a
# subagent's executor sends when it stops it (`local-executor.ts`, `fastAckHelper.ts`).
_GEMINI_PREFIXES = ("<session_context>", "<hook_context>", "Background execution update:\n<background_output>")
_GEMINI_LIMITS = re.compile(
    r"^You have (?:exceeded the maximum number of turns|exceeded the time limit|stopped calling tools without "
    r"finishing)\.\s+You have one final chance to complete the task"
)


def gemini_is_injected(text: str) -> bool:
    """True for a Gemini user message the CLI wrote itself (context blocks, a subagent's turn limit)."""
    stripped = text.lstrip()
    return stripped.startswith(_GEMINI_PREFIXES) or _GEMINI_LIMITS.match(stripped) is not None
