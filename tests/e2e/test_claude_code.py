"""End to end with the real Claude Code: memex's hooks installed, two `claude -p` runs against a mock model.

Skipped unless the `claude` CLI is on PATH (`.ci/run` installs it with npm). To run it here:

    npm install -g @anthropic-ai/claude-code@2.1.197
    uv run pytest tests/e2e -q -p no:cacheprovider

Claude Code talks to `../shared/data/live/mock_llm.py` on 127.0.0.1 (ANTHROPIC_BASE_URL, a dummy key), with a
temporary HOME, so nothing leaves the machine and the user's own settings are not touched. The mock logs
every request it receives: the second run's request must carry memex's recall of the first session,
which the Stop hook must have indexed (`claude -p` 2.1.197 writes the transcript tens of milliseconds after
Stop starts: the hook waits for the answer the event names; SessionEnd indexes too).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLAUDE = shutil.which("claude")
MOCK = next(
    (
        p / "shared" / "data" / "live" / "mock_llm.py"
        for p in Path(__file__).resolve().parents
        if (p / "shared").is_dir()
    ),
    None,
)
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(CLAUDE is None, reason="the real `claude` CLI is not installed"),
    pytest.mark.skipif(MOCK is None, reason="../shared/data/live/mock_llm.py is not there"),
]
FIRST = "Why does the turbo encabulator overheat when the zebra flux capacitor runs?"
SECOND = "Again: why does the turbo encabulator overheat with the zebra flux capacitor?"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(port: int, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the mock model did not listen on port {port}")


@pytest.fixture
def mock_model(tmp_path: Path):
    """The mock model server (a child process of the test), and the file it logs requests to."""
    port, log = _free_port(), tmp_path / "mock-requests.jsonl"
    env = {**os.environ, "MOCK_PORT": str(port), "MOCK_LOG": str(log)}
    server = subprocess.Popen([sys.executable, str(MOCK)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(port)
        yield port, log
    finally:
        server.terminate()
        server.wait(timeout=10)


def _requests(log: Path) -> list[dict]:
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [e for e in entries if e.get("method") == "POST" and "/messages" in e.get("path", "")]


def test_hooks_index_the_first_session_and_recall_it_in_the_second(tmp_path: Path, mock_model) -> None:
    port, log = mock_model
    home, project, memex_home = tmp_path / "home", tmp_path / "proj", tmp_path / "memex-home"
    home.mkdir()
    project.mkdir()
    memex = [sys.executable, "-m", "memex"]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "MEMEX_HOME": str(memex_home),
        "MEMEX_COMPUTER": "e2e",
        "MEMEX_INDEX_EMBEDS": "0",  # the Stop hook starts no embedding worker
        "MEMEX_WARM_IDLE_SECONDS": "0",  # no warm server left behind: prompts are answered in the hook
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "dummy-key-for-the-mock",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = f"{sys.executable} -m memex"
    installed = subprocess.run(
        [*memex, "hooks", "install", "--command", command], env=env, capture_output=True, text=True, check=True
    )
    assert "installed memex hooks" in installed.stdout
    assert (home / ".claude" / "settings.json").is_file()

    def claude(prompt: str) -> str:
        done = subprocess.run(
            [CLAUDE, "-p", prompt], cwd=project, env=env, capture_output=True, text=True, timeout=180, check=True
        )
        return done.stdout

    assert "Mock answer" in claude(FIRST)
    # The Stop hook (which waited for the transcript's late write) or SessionEnd indexed the first session.
    listed = subprocess.run([*memex, "sessions", "list", "--json"], env=env, capture_output=True, text=True)
    sessions = json.loads(listed.stdout)
    assert [s["title"] for s in sessions] == [FIRST]
    first_requests = len(_requests(log))

    claude(SECOND)
    second = [r for r in _requests(log)[first_requests:] if SECOND in json.dumps(r["body"])]
    assert second, "the second prompt never reached the mock model"
    sent = json.dumps(second[0]["body"])
    assert "memex recall" in sent and f"session {sessions[0]['session_id'][:8]}" in sent
    assert FIRST in sent  # the first session's prompt, recalled into the second one's request
    hook_log = (memex_home / "hooks.log").read_text()
    assert '"event": "Stop"' in hook_log and '"status": "injected"' in hook_log
