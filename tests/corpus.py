"""The test corpus: paths of the fixture transcripts (see fixtures/README.md for their sources), and how to
compare what two ingests stored. A plain module, imported by name (`from corpus import SLAY`), so that no
test depends on which conftest pytest loaded first."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
HILLVIEW = FIXTURES / "claude" / "hillview" / "-home-jenkins-Personal-AI-Infrastructure"
SLAY = FIXTURES / "claude" / "slay" / "-Users-chloe-c-slay" / "2969822b-3c7d-47bd-8814-4bc86f67056a.jsonl"
MISC = FIXTURES / "claude" / "misc"
USAGE_ONLY = FIXTURES / "claude" / "ccusage" / "project-alpha" / "session-alpha" / "chat.jsonl"
CODEX = FIXTURES / "codex" / "sessions"
CODEX_ABORTED = CODEX / "2025/11/12/rollout-2025-11-12T17-48-11-019a7ae6-1945-7c63-98f2-210adb922af9.jsonl"
CODEX_SHORT = CODEX / "2025/11/13/rollout-2025-11-13T18-21-11-019a802a-aab1-7c31-9831-d2510c7a74a2.jsonl"
CODEX_OLD = CODEX / "2025/05/01/rollout-2025-05-01T10-00-00-old-format.jsonl"
CODEX_PARTIAL = FIXTURES / "codex" / "partial" / "session-alpha.jsonl"
GEMINI = FIXTURES / "gemini" / "tmp"
WEBSHOP_HASH = (
    "616b7ef4d9a23f3c7c27f4058a52f106bc7c0e392e4a737efe77d5b9108d4f08"  # sha256 of /home/alice/projects/webshop
)
GEMINI_LEGACY = GEMINI / WEBSHOP_HASH / "chats" / "session-2025-09-01T10-00-abcd1234.json"
GEMINI_JSONL = GEMINI / "inventory-api" / "chats" / "session-2026-03-02T09-15-ef567890.jsonl"
GEMINI_SUBAGENT = GEMINI / "inventory-api" / "chats" / "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b" / "k3x9q2.jsonl"
# Files written by Claude Code 2.1.330, Codex CLI 0.169 and Gemini CLI 0.61 (see fixtures/README.md).
LIVE = FIXTURES / "live"
LIVE_COPILOT = LIVE / "copilot-1.0.102" / "session-state"
LIVE_QWEN = LIVE / "qwen-code-0.24.4" / "projects"
LIVE_PI = LIVE / "pi-0.73.1" / "sessions"
LIVE_KIMI_CODE = LIVE / "kimi-code-2.1.0"
LIVE_KIMI_LEGACY = LIVE / "kimi-cli-1.52.0"
LIVE_CLINE = LIVE / "cline-3.0.65" / "sessions"
LIVE_AIDER = LIVE / "aider-0.86.2" / "project"
AIDER = FIXTURES / "aider"
LIVE_OPENCODE_DB = LIVE / "opencode-1.18.33" / "opencode.db"
SPECSTORY = FIXTURES / "cursor" / "specstory"
LIVE_CLAUDE = LIVE / "claude-2.1.330" / "projects"
LIVE_CLAUDE_SUBAGENT_SESSION = LIVE_CLAUDE / "-home-dev-proj" / "322e6fc1-933c-4088-b825-a0b12dac4c7a.jsonl"
LIVE_CLAUDE_PLAIN = LIVE_CLAUDE / "-home-dev-proj" / "e1cbd8a0-0bea-47bf-bd56-745e54160fdf.jsonl"
LIVE_CODEX = LIVE / "codex-0.169.0" / "sessions"
_LIVE_DAY = LIVE_CODEX / "2026" / "11" / "23"
LIVE_CODEX_HELLO = _LIVE_DAY / "rollout-2026-11-23T19-09-11-01a209cf-ef81-7983-a647-5b68d79bee7f.jsonl"
LIVE_CODEX_READ = _LIVE_DAY / "rollout-2026-11-23T19-09-43-01a209d0-6a09-7253-b0bc-bc8841e9b922.jsonl"
LIVE_CODEX_PARENT = _LIVE_DAY / "rollout-2026-11-23T19-10-20-01a209d0-f96a-7271-b275-d9f0c96d0cf5.jsonl"
LIVE_CODEX_CHILD = _LIVE_DAY / "rollout-2026-11-23T19-10-20-01a209d0-fa7c-7962-b6c3-548f6f302da0.jsonl"
LIVE_GEMINI = LIVE / "gemini-0.61.0" / "tmp"
LIVE_GEMINI_CHATS = LIVE_GEMINI / "proj" / "chats"
LIVE_GEMINI_BEFORE_RESUME = (
    LIVE / "gemini-0.61.0" / "before-resume" / "before-resume-session-2026-11-23T19-15-e4530f8d.jsonl"
)


def db_content(connection) -> dict[str, list[tuple]]:
    """What the store holds, without ids and clocks: two ingests that did the same work compare equal."""
    queries = {
        "sessions": "SELECT session_id, agent, project_dir, title, started_at, ended_at, last_line_index, "
        "last_offset, resume_line_index, provisional_turn_start, last_compact_line_index FROM sessions",
        "subagents": "SELECT session_id, agent_id, last_line_index, last_offset, resume_line_index "
        "FROM subagent_sessions",
        "entries": "SELECT session_id, agent_id, line_index, entry_type, kind, timestamp, text FROM entries",
        "turns": "SELECT session_id, agent_id, line_index, end_line_index, kind, provisional, full_text, "
        "tool_summary, started_at FROM turns",
        "chunks": "SELECT t.session_id, t.agent_id, t.line_index, c.chunk_index, c.content FROM chunks c "
        "JOIN turns t ON t.id = c.turn_id",
        "mentions": "SELECT t.session_id, t.line_index, m.file_path, m.tool_name FROM file_mentions m "
        "JOIN turns t ON t.id = m.turn_id",
        "pr_links": "SELECT session_id, pr_number, pr_url, repository, agent_id, source, line_index FROM pr_links",
        "unknown": "SELECT session_id, agent_id, line_index, record_type, agent_version FROM unknown_records",
        "fts": "SELECT count(*) FROM chunks_fts",
        "tool_outputs": "SELECT t.session_id, t.agent_id, t.line_index, o.line_index, o.tool_name, o.is_error, "
        "o.chars, o.text FROM tool_outputs o JOIN turns t ON t.id = o.turn_id",
        "tool_fts": "SELECT count(*) FROM tool_outputs_fts",
        "entries_fts": "SELECT count(*) FROM entries_fts",
    }
    return {name: sorted(tuple(row) for row in connection.execute(sql)) for name, sql in queries.items()}
