"""`memex doctor`: one screen of checks, each with what to do; the agents' cleanup named before it bites."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from agent_dirs import OTHER_AGENT_DIRS
from corpus import HILLVIEW
from synctools import free_port


@pytest.fixture
def claude_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "claude-config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.setenv("MEMEX_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # nobody listens there
    return folder


def _checks(run) -> tuple[int, dict[str, dict]]:
    result = run("doctor", "--json")
    return result.exit_code, {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def _age(folder: Path, days: float) -> None:
    then = time.time() - days * 86_400
    for path in folder.rglob("*.jsonl"):
        os.utime(path, (then, then))


def test_a_fresh_computer_is_told_to_index(run, claude_config: Path) -> None:
    code, checks = _checks(run)
    assert code == 1 and checks["store"]["status"] == "fail" and "memex index" in checks["store"]["fix"]
    assert checks["hooks"]["status"] == "warn" and "hooks install" in checks["hooks"]["fix"]
    assert checks["redis"]["status"] == "warn" and "unreachable" in checks["redis"]["detail"]


def test_an_indexed_store_with_copies_is_well(run, claude_config: Path, tmp_path: Path) -> None:
    projects = tmp_path / "claude-projects" / HILLVIEW.name
    shutil.copytree(HILLVIEW, projects)
    assert run("hooks", "install").exit_code == 0
    assert run("index").exit_code == 0
    _age(projects, 28)  # two days before Claude Code deletes them: copied, nothing to fear
    code, checks = _checks(run)
    assert code == 0, checks
    for name in ("store", "hooks", "archive", "agent cleanup", "disk", "computer"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "16 transcripts" in checks["archive"]["detail"]
    text = run("doctor").stdout
    assert "agent cleanup" in text and "archive" in text


def test_transcripts_the_cleanup_will_delete_without_a_copy_are_named(
    run, claude_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (claude_config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 10}))
    projects = tmp_path / "claude-projects" / HILLVIEW.name
    shutil.copytree(HILLVIEW, projects)
    monkeypatch.setenv("MEMEX_ARCHIVE_ENABLED", "0")
    assert run("index").exit_code == 0
    _age(projects, 5)  # within 7 days of a 10-day cleanup
    _, checks = _checks(run)
    cleanup = checks["agent cleanup"]
    assert cleanup["status"] == "warn" and "16 Claude Code transcripts" in cleanup["detail"]
    assert "cleanupPeriodDays 10" in cleanup["detail"] and "archive_enabled" in cleanup["fix"]
    assert checks["archive"]["status"] == "warn"
    monkeypatch.setenv("MEMEX_ARCHIVE_ENABLED", "1")
    assert run("index").exit_code == 0  # the copies are made now
    assert _checks(run)[1]["agent cleanup"]["status"] == "ok"


def test_a_copy_cut_short_fails_the_archive_check(run, claude_config: Path, tmp_path: Path, home: Path) -> None:
    shutil.copytree(HILLVIEW, tmp_path / "claude-projects" / HILLVIEW.name)
    assert run("index").exit_code == 0
    copy = next((home / "archive").rglob("main.zst"))
    copy.write_bytes(copy.read_bytes()[:-10])
    code, checks = _checks(run)
    assert code == 1 and checks["archive"]["status"] == "fail" and "cut short" in checks["archive"]["detail"]


def test_hooks_that_run_a_memex_gone_since_are_a_warning_install_fixes(
    run, claude_config: Path, tmp_path: Path
) -> None:
    # Claude Code's settings written by `memex hooks install` from a venv deleted since (a moved checkout,
    # a reinstall): every hook fails quietly, so "installed" is not "ok".
    settings = claude_config / "settings.json"
    gone = tmp_path / "old-checkout" / ".venv" / "bin" / "memex"
    events = ("UserPromptSubmit", "Stop", "SubagentStop", "PreCompact")
    hooks = {event: [{"hooks": [{"type": "command", "command": f"{gone} hook {event}"}]}] for event in events}
    settings.write_text(json.dumps({"hooks": hooks, "model": "opus"}))
    _, checks = _checks(run)
    assert checks["hooks"]["status"] == "warn", checks["hooks"]
    assert str(gone) in checks["hooks"]["detail"] and "hooks install" in checks["hooks"]["fix"]
    assert run("hooks", "install").exit_code == 0
    _, checks = _checks(run)
    assert checks["hooks"]["status"] == "ok", checks["hooks"]
    assert str(gone) not in settings.read_text() and json.loads(settings.read_text())["model"] == "opus"


def test_hooks_installed_before_an_event_was_added_are_a_warning_install_fixes(run, claude_config: Path) -> None:
    # Hooks installed by an earlier memex lack SessionEnd, where `claude -p` 2.1's sessions are indexed.
    assert run("hooks", "install").exit_code == 0
    settings = claude_config / "settings.json"
    written = json.loads(settings.read_text())
    del written["hooks"]["SessionEnd"]
    settings.write_text(json.dumps(written))
    _, checks = _checks(run)
    assert checks["hooks"]["status"] == "warn" and "not for SessionEnd" in checks["hooks"]["detail"], checks["hooks"]
    assert run("hooks", "install").exit_code == 0
    _, checks = _checks(run)
    assert checks["hooks"]["status"] == "ok", checks["hooks"]


def test_an_agent_folder_set_to_a_missing_path_is_named(
    run, claude_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A typo in a folder setting found no session, and neither `memex index` nor doctor said so.
    for name in ("claude_dir", "codex_dir", "gemini_dir", *OTHER_AGENT_DIRS):
        monkeypatch.delenv(f"MEMEX_{name.upper()}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the defaults, left alone, are never named
    (tmp_path / "projects").mkdir()
    monkeypatch.setenv("MEMEX_CODEX_DIR", str(tmp_path / "projects"))
    _, checks = _checks(run)
    assert checks["agent folders"]["status"] == "ok", checks["agent folders"]
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(tmp_path / "claude" / "project"))
    _, checks = _checks(run)
    assert checks["agent folders"]["status"] == "warn"
    assert f"claude_dir = {tmp_path / 'claude' / 'project'}" in checks["agent folders"]["detail"]
