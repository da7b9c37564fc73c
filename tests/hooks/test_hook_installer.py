"""`memex hooks install | uninstall | status` on real settings files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hooktools import CURRENT, MEMEX, build_corpus, hook, prompt_event

pytestmark = [pytest.mark.subprocess]

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard", "timeout": 5}]}
        ],
    },
    "statusLine": {"type": "command", "command": "echo hi"},
}
EVENTS = [
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "PreCompact",
    "SessionStart",
    "PreToolUse",
    "SubagentStart",
]


@pytest.fixture
def claude_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "dot-claude"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("settings.json.memex-backup-*"))


def test_install_uninstall_round_trip_keeps_other_hooks(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS, indent=4))
    original = settings.read_text()

    result = run("hooks", "install", "--command", "/opt/memex/bin/memex", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["changed"] and report["settings"] == str(settings) and report["events"] == EVENTS
    data = json.loads(settings.read_text())
    assert {k: v for k, v in data.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert list(data["hooks"]) == ["Stop", "PreToolUse", *[e for e in EVENTS if e not in ("Stop", "PreToolUse")]]
    stop = data["hooks"]["Stop"]
    assert stop[0] == USER_SETTINGS["hooks"]["Stop"][0]  # the user's handler first, untouched
    assert stop[1] == {"hooks": [{"type": "command", "command": "/opt/memex/bin/memex hook Stop", "timeout": 60}]}
    assert data["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert data["hooks"]["PreToolUse"][1]["matcher"] == "Read|Edit|MultiEdit|Write|NotebookEdit"
    assert data["hooks"]["SessionStart"] == [
        {
            "matcher": "compact",
            "hooks": [{"type": "command", "command": "/opt/memex/bin/memex hook SessionStart", "timeout": 10}],
        }
    ]
    assert settings.read_text().startswith('{\n    "model"')  # the file's own indentation is kept
    assert [b.read_text() for b in backups(claude_dir)] == [original]

    again = json.loads(run("hooks", "install", "--command", "/opt/memex/bin/memex", "--json").stdout)
    assert not again["changed"] and again["backup"] is None and len(backups(claude_dir)) == 1

    removed = json.loads(run("hooks", "uninstall", "--json").stdout)
    assert removed["changed"] and set(removed["events"]) == set(EVENTS)
    assert json.loads(settings.read_text()) == USER_SETTINGS
    assert not json.loads(run("hooks", "uninstall", "--json").stdout)["changed"]


def test_install_into_a_missing_file_and_out_again(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    result = run("hooks", "install", "--command", "memex")
    assert result.exit_code == 0 and "installed memex hooks for UserPromptSubmit" in result.stdout
    assert set(json.loads(settings.read_text())["hooks"]) == set(EVENTS) and not backups(claude_dir)
    run("hooks", "uninstall")
    assert json.loads(settings.read_text()) == {}


def test_reinstall_with_another_path_replaces_memex_entries_in_place(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    run("hooks", "install", "--command", "/old/memex")
    # The user's own hook added after memex's must stay after it.
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say bye"}]})
    settings.write_text(json.dumps(data))
    run("hooks", "install", "--command", "'/new path/memex'")
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [h["hooks"][0]["command"] for h in stop] == ["notify-send done", "'/new path/memex' hook Stop", "say bye"]
    run("hooks", "uninstall")
    assert [h["hooks"][0]["command"] for h in json.loads(settings.read_text())["hooks"]["Stop"]] == [
        "notify-send done",
        "say bye",
    ]


def test_handler_shared_with_a_user_hook_keeps_the_user_hook(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    shared = {
        "hooks": [{"type": "command", "command": "notify-send"}, {"type": "command", "command": "memex hook Stop"}]
    }
    settings.write_text(json.dumps({"hooks": {"Stop": [shared]}}))
    run("hooks", "uninstall")
    assert json.loads(settings.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send"}]}]}
    }


def test_symlinked_settings_are_written_through_the_link(run, claude_dir: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text(json.dumps(USER_SETTINGS))
    (claude_dir / "settings.json").symlink_to(real)
    run("hooks", "install", "--command", "memex")
    assert (claude_dir / "settings.json").is_symlink()
    assert "UserPromptSubmit" in json.loads(real.read_text())["hooks"]


def test_invalid_settings_are_left_alone(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    settings.write_text('{"hooks": {,}')
    result = run("hooks", "install")
    assert result.exit_code == 2 and "not valid JSON" in result.stderr
    assert settings.read_text() == '{"hooks": {,}' and not backups(claude_dir)


def test_settings_that_are_not_utf8_are_left_alone(run, claude_dir: Path) -> None:
    settings = claude_dir / "settings.json"
    settings.write_bytes(b'\xff\xfe{"hooks": {}}')
    result = run("hooks", "install")
    assert result.exit_code == 2 and "is not UTF-8 text" in result.stderr and "Traceback" not in result.stderr
    assert settings.read_bytes() == b'\xff\xfe{"hooks": {}}' and not backups(claude_dir)


def test_a_device_is_not_read_and_an_unwritable_place_is_one_line(run, tmp_path: Path) -> None:
    """/dev/zero was read until the process ran out of memory; a folder that cannot be made was a traceback."""
    device = run("hooks", "install", "--settings", "/dev/zero")
    assert device.exit_code == 2 and "is not a regular file" in device.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    nowhere = run("hooks", "install", "--settings", str(blocker / "settings.json"))
    assert nowhere.exit_code == 2 and "cannot write" in nowhere.stderr and "Traceback" not in nowhere.stderr
    assert blocker.read_text() == "not a folder"


def test_two_writes_within_one_second_keep_both_backups(run, claude_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The backup of the user's own file was overwritten by the next write's when both fell in one second."""
    monkeypatch.setattr("memex.hooks.installer.time.strftime", lambda _format: "20261124-131143")
    settings = claude_dir / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS, indent=4))
    original = settings.read_text()
    assert run("hooks", "install", "--command", "/opt/memex/bin/memex").exit_code == 0
    installed_text = settings.read_text()
    assert run("hooks", "uninstall").exit_code == 0
    assert [b.read_text() for b in backups(claude_dir)] == [original, installed_text]


def test_project_scopes(run, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    run("hooks", "install", "--scope", "project", "--project-dir", str(project), "--command", "memex")
    run("hooks", "install", "--scope", "local", "--project-dir", str(project), "--command", "memex")
    assert "Stop" in json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert "Stop" in json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]


def test_installed_command_runs_outside_the_project(
    claude_dir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed by the real executable, the command line works from any folder with a bare PATH."""
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    result = subprocess.run([str(MEMEX), "hooks", "install"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = json.loads((claude_dir / "settings.json").read_text())
    command = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{MEMEX} hook UserPromptSubmit"
    sessions = build_corpus(tmp_path / "claude-projects")
    subprocess.run([str(MEMEX), "index", str(tmp_path / "claude-projects")], capture_output=True, check=True)
    env = {"PATH": "/usr/bin:/bin", "MEMEX_HOME": str(home), "MEMEX_WARM_IDLE_SECONDS": "0", "HOME": str(tmp_path)}
    event = json.dumps(prompt_event(sessions["current"], "why does parse_config_file crash on an empty config file"))
    ran = subprocess.run(["bash", "-c", command], input=event, capture_output=True, text=True, env=env, cwd="/")
    assert ran.returncode == 0 and CURRENT[:8] not in ran.stdout
    assert "memex recall" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]


def test_status_shows_installs_and_runs(
    run, claude_dir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("hooks", "install", "--command", "/opt/memex/bin/memex")
    monkeypatch.setenv("MEMEX_WARM_IDLE_SECONDS", "0")
    hook("UserPromptSubmit", {"session_id": "abc", "prompt": "yes"})
    hook("Stop", b"not json")
    status = json.loads(run("hooks", "status", "--json", "--project-dir", str(tmp_path)).stdout)
    user = status["installed"][0]
    assert user["scope"] == "user" and set(user["events"]) == set(EVENTS)
    assert user["events"]["Stop"] == ["/opt/memex/bin/memex hook Stop"]
    assert [r["event"] for r in status["runs"]] == ["UserPromptSubmit", "Stop"]
    assert status["runs"][0]["detail"] == "gated: acknowledgement" and status["runs"][1]["status"] == "error"
    assert status["warm_server"]["running"] is False
    table = run("hooks", "status", "--project-dir", str(tmp_path)).stdout
    assert "UserPromptSubmit" in table and "gated: acknowledgement" in table and "error" in table
    assert "command: /opt/memex/bin/memex hook Stop" in table


def test_a_group_whose_hooks_are_null_does_not_break_status_or_uninstall(run, claude_dir: Path) -> None:
    """A settings file another tool left with `"hooks": null` in a group: memex installs beside it, and
    status, doctor and uninstall read past it (uninstall stopped on a TypeError traceback)."""
    settings = claude_dir / "settings.json"
    odd = {"hooks": {"Stop": [{"hooks": None}, {"hooks": [None, 5]}]}}
    settings.write_text(json.dumps(odd))
    assert run("hooks", "install").exit_code == 0
    status = run("hooks", "status")
    assert status.exit_code == 0 and "Stop" in status.stdout
    assert run("doctor").exit_code in (0, 1)
    result = run("hooks", "uninstall")
    assert result.exit_code == 0, result.stderr
    assert json.loads(settings.read_text()) == odd
