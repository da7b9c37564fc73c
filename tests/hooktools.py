"""Running memex hooks the way Claude Code does: the real `memex` executable, JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transcripts import ClaudeSession, simple_turn, text, tool_use

# The console script installed in this environment (what `memex hooks install` writes into settings.json).
MEMEX = Path(sys.executable).parent / "memex"

SHOP = "/home/dev/shop"
BLOG = "/home/dev/blog"
PAST = "11111111-aaaa-4bbb-8ccc-000000000001"  # shop: the empty-config fix
OTHER = "22222222-aaaa-4bbb-8ccc-000000000002"  # blog: the same bug in another project
CURRENT = "33333333-aaaa-4bbb-8ccc-000000000003"  # shop: the session asking


def wait_for(condition: Callable[[], object], seconds: float = 15.0) -> bool:
    """Whether `condition()` came true within `seconds` (a warm server starting, its first answer)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def hook(
    event: str,
    payload: dict[str, Any] | bytes,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    flags: tuple[str, ...] = (),
):
    """Run `memex hook EVENT [FLAGS]` with `payload` on stdin; returns the CompletedProcess."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(
        [str(MEMEX), "hook", event, *flags],
        input=data,
        capture_output=True,
        env=env or dict(os.environ),
        timeout=timeout,
    )


def start_hooks(event: str, payloads: list[dict[str, Any]]) -> list[tuple[int, bytes, bytes]]:
    """Start one hook process per payload, all at once; returns each (exit code, stdout, stderr)."""
    processes = [
        subprocess.Popen(
            [str(MEMEX), "hook", event], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in payloads
    ]
    for process, payload in zip(processes, payloads, strict=True):
        assert process.stdin is not None
        process.stdin.write(json.dumps(payload).encode())
        process.stdin.close()
        process.stdin = None
    results = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        results.append((process.returncode, out, err))
    return results


def context(result: subprocess.CompletedProcess, event: str) -> str:
    """The additionalContext a hook printed ("" when it printed nothing); checks the exit code and JSON shape."""
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return ""
    data = json.loads(result.stdout)
    assert list(data) == ["hookSpecificOutput"]
    assert data["hookSpecificOutput"]["hookEventName"] == event
    assert set(data["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    return data["hookSpecificOutput"]["additionalContext"]


def runs(home: Path) -> list[dict[str, Any]]:
    from memex.hooks.log import recent

    return recent(home, 1000)


def transcript(root: Path, session_id: str, cwd: str) -> ClaudeSession:
    slug = cwd.replace("/", "-")
    return ClaudeSession(root / slug / f"{session_id}.jsonl", session_id, cwd=cwd)


def subagent(session: ClaudeSession, agent_id: str) -> ClaudeSession:
    """A subagent transcript of `session` (`<session>/subagents/agent-<id>.jsonl`)."""
    path = session.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl"
    return ClaudeSession(path, session.session_id, cwd=session.cwd, agent_id=agent_id)


def build_corpus(root: Path) -> dict[str, ClaudeSession]:
    """Three sessions: a past fix in the shop project, the same bug in the blog project, the asking session."""
    past = transcript(root, PAST, SHOP)
    past.write(past.custom_title("Empty config crash"))
    simple_turn(
        past,
        "parse_config_file crashes when the config file is empty",
        "Fixed parse_config_file: an empty config file now yields the default settings.",
        edit="src/config_loader.py",
    )
    simple_turn(past, "add a worktree cleanup command to the makefile", "Added `make clean-worktrees`.")
    past.write(past.prompt("thanks"))
    other = transcript(root, OTHER, BLOG)
    simple_turn(
        other,
        "the blog generator's parse_config_file crashes on an empty config file too",
        "Same cause as in the shop: parse_config_file now returns defaults for an empty config file.",
        edit="src/config_loader.py",
    )
    other.write(other.prompt("great"))
    current = transcript(root, CURRENT, SHOP)
    simple_turn(
        current,
        "parse_config_file crashes on an empty config file again, look at it",
        "Looking at parse_config_file in the current session.",
        edit="src/config_loader.py",
    )
    return {"past": past, "other": other, "current": current}


def prompt_event(session: ClaudeSession, prompt: str, cwd: str | None = None) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "transcript_path": str(session.path),
        "cwd": cwd or session.cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def stop_event(session: ClaudeSession, event: str = "Stop") -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "transcript_path": str(session.path),
        "cwd": session.cwd,
        "hook_event_name": event,
        "stop_hook_active": False,
        "last_assistant_message": "done",
    }


__all__ = ["text", "tool_use"]
