"""End to end with the real Claude Code, interactive (in a tmux pane), memex's hooks installed: the answer
just given is stored by the Stop hook, not one prompt later.

Claude Code 2.1 writes the transcript tens of milliseconds after its Stop hooks start: a Stop hook that read
the transcript at once found the prompt without its answer, so memex was always one answer behind. The Stop
hook now waits for the answer the event names (`memex.hooks.events.await_transcript`). Here the session is
still open when the store is asked, so SessionEnd cannot have done it instead.

Skipped without `claude` (`.ci/run` installs it) or tmux; same offline mock model as test_claude_code.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_claude_code import mock_model, pytestmark  # noqa: F401

TMUX = shutil.which("tmux")
pytestmark = [*pytestmark, pytest.mark.skipif(TMUX is None, reason="tmux is not installed")]
KEY = "dummy-key-for-the-mock-0123456789"
PROMPT = "Which walrus colony did the zebrafish survey count twice?"


def _until(check, seconds: float = 60.0):
    """`check()`'s first true value, polled for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.25)
    raise AssertionError(f"not within {seconds} s: {check.__doc__ or check}")


def test_the_stop_hook_stores_the_answer_just_given(tmp_path: Path, mock_model) -> None:  # noqa: F811
    port, requests = mock_model
    home, project, memex_home = tmp_path / "home", tmp_path / "proj", tmp_path / "memex-home"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    # What a first start asks (theme, the API key, trusting the folder), answered as a user once did.
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}},
            }
        )
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TERM": "xterm-256color",
        "MEMEX_HOME": str(memex_home),
        "MEMEX_COMPUTER": "e2e",
        "MEMEX_INDEX_EMBEDS": "0",
        "MEMEX_WARM_IDLE_SECONDS": "0",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    memex = [sys.executable, "-m", "memex"]
    subprocess.run([*memex, "hooks", "install", "--command", f"{sys.executable} -m memex"], env=env, check=True)
    server = f"memex-e2e-{os.getpid()}"
    tmux = [str(TMUX), "-L", server]
    start = [*tmux, "new-session", "-d", "-s", "cc", "-x", "150", "-y", "40", "-c", str(project)]
    environment = [f"{name}={value}" for name, value in env.items()]
    subprocess.run([*start, "env", *environment, str(shutil.which("claude"))], env=env, check=True)
    try:

        def pane() -> str:
            """the pane's text"""
            return subprocess.run([*tmux, "capture-pane", "-t", "cc", "-p"], capture_output=True, text=True).stdout

        def ready() -> bool:
            """Claude Code waits for a prompt"""
            return "❯" in pane()

        _until(ready)
        # Typed, then sent once it shows: an Enter that arrives while the input box is still starting up is
        # lost (seen on a loaded machine), so it is pressed again if the model was not asked meanwhile.
        subprocess.run([*tmux, "send-keys", "-t", "cc", "-l", PROMPT], check=True)

        def typed() -> bool:
            """the prompt is in the input box"""
            return PROMPT[:24] in pane()

        _until(typed)

        def asked() -> int:
            return len(requests.read_text().splitlines()) if requests.exists() else 0

        before = asked()
        subprocess.run([*tmux, "send-keys", "-t", "cc", "Enter"], check=True)
        sent = time.monotonic()

        def answered() -> bool:
            """the mock's answer is shown"""
            nonlocal sent
            if "Mock answer" in pane():
                return True
            if asked() == before and time.monotonic() - sent > 15:
                subprocess.run([*tmux, "send-keys", "-t", "cc", "Enter"], check=True)
                sent = time.monotonic()
            return False

        _until(answered)

        def stopped() -> dict | None:
            """the Stop hook ran and logged"""
            log = memex_home / "hooks.log"
            runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            return next((r for r in runs if r["event"] == "Stop" and r["status"] == "ok"), None)

        stop = _until(stopped)
        assert stop.get("turns", 0) >= 1, stop
        search = [*memex, "search", "walrus zebrafish", "--json"]
        hits = json.loads(subprocess.run(search, env=env, capture_output=True, text=True).stdout)
        assert hits and "Mock answer" in hits[0]["full_text"], hits  # the answer, while the session is open
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
