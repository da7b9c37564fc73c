"""Optional LLM session summaries through an OpenAI-compatible chat-completions endpoint.

Off unless `summary_llm_url` is set. The summary is what the session-level vector reads instead of the
extractive one; any failure (endpoint down, bad answer) falls back to the extractive summary, so this can
never stop the worker. The endpoint may be another company's: what it reads is redacted like a published
mirror, message by message and before the conversation is cut to its start and end.
"""

from __future__ import annotations

import json
import os
import sqlite3

from memex.config import Config
from memex.embed.texts import bound_text, head_and_tail
from memex.mirrors.build import redact_mirror
from memex.mirrors.model import mirror_from_row

# What the model reads of a session: its conversation's start and end.
CONVERSATION_CHARS = 8_000
TIMEOUT_SECONDS = 60
PROMPT = (
    "Summarise this coding-agent session for later search in at most 120 words: what the user wanted, "
    "what was decided or found, what was changed (files, commands) and what remains open. Plain text."
)


def _ask(config: Config, conversation: str) -> str:
    import urllib.request  # only when summaries are configured: it costs every `memex` command 17 ms

    body = {
        "model": config.summary_llm_model,
        "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": conversation}],
        "temperature": 0,
    }
    request = urllib.request.Request(
        config.summary_llm_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    key = os.environ.get(config.summary_llm_key_env)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
        answer = json.loads(response.read())
    return str(answer["choices"][0]["message"]["content"])


def llm_summaries(config: Config, mirror_ids: list[int], fallbacks: list[str], conn: sqlite3.Connection) -> list[str]:
    """A summary per mirror from the configured LLM, or its extractive fallback when that fails."""
    summaries = []
    for mirror_id, fallback in zip(mirror_ids, fallbacks, strict=True):
        row = conn.execute("SELECT * FROM mirrors WHERE id = ?", (mirror_id,)).fetchone()
        try:
            if row is None:
                raise LookupError("mirror gone")
            mirror, _ = redact_mirror(mirror_from_row(row))  # the whole of it, before it is cut
            conversation = head_and_tail(mirror.conversation_text, CONVERSATION_CHARS)
            text = _ask(config, f"Title: {mirror.title or ''}\n\n{conversation}")
            summary = bound_text(text, config.embed_session_max_chars)
            summaries.append(summary or fallback)
        except (OSError, ValueError, KeyError, IndexError, TypeError, LookupError):  # URLError is an OSError
            summaries.append(fallback)
    return summaries
