"""The plugin's own hooks (`plugin/hooks/hooks.json`): the same handlers `memex hooks install` writes, and
never doubled: where settings hooks answer an event, the plugin's handler for it stands aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hooktools import CURRENT, PAST, build_corpus, context, hook, prompt_event, runs
from memex.config import load_config
from memex.hooks import installer

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
PROMPT = "why does parse_config_file crash when the config file is empty?"


@pytest.fixture
def corpus(home: Path, tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("MEMEX_WARM_IDLE_SECONDS", "0")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    sessions = build_corpus(tmp_path / "claude-projects")
    assert run("index", str(tmp_path / "claude-projects")).exit_code == 0
    return sessions


def test_hooks_json_is_what_install_writes_marked_as_the_plugins(home: Path) -> None:
    shipped = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert shipped == installer.plugin_hooks(load_config({"MEMEX_HOME": str(home)}))
    commands = [h["command"] for groups in shipped["hooks"].values() for g in groups for h in g["hooks"]]
    assert set(shipped["hooks"]) == {event for event, _, _ in installer.EVENTS}
    assert all(c.startswith("memex hook ") and c.endswith(" --plugin") for c in commands)
    # Settings handlers are recognised by their command; the plugin's are not theirs to remove.
    assert not any(installer.is_memex_handler({"type": "command", "command": c}) for c in commands)


def test_the_plugin_recalls_alone(corpus, home: Path) -> None:
    answer = hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT), flags=("--plugin",))
    injected = context(answer, "UserPromptSubmit")
    assert PAST[:8] in injected and CURRENT[:8] not in injected
    assert runs(home)[-1]["status"] == "injected"


def test_the_plugin_stands_aside_where_settings_hooks_answer(corpus, home: Path, tmp_path: Path, run) -> None:
    settings = tmp_path / "claude-config" / "settings.json"
    assert run("hooks", "install").exit_code == 0 and settings.exists()
    answer = hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT), flags=("--plugin",))
    assert answer.returncode == 0 and answer.stdout == b""
    last = runs(home)[-1]
    assert last["status"] == "stood aside" and str(settings) in last["detail"]
    # The settings handler itself still answers.
    assert PAST[:8] in context(hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)), "UserPromptSubmit")
    # Only the events settings answer are handed over: remove them and the plugin answers again.
    assert run("hooks", "uninstall").exit_code == 0
    again = hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT), flags=("--plugin",))
    assert PAST[:8] in context(again, "UserPromptSubmit")


def test_install_says_when_the_plugin_is_enabled_too(home: Path, tmp_path: Path, run, monkeypatch) -> None:
    config_dir = tmp_path / "claude-config"
    config_dir.mkdir()
    (config_dir / "settings.json").write_text(json.dumps({"enabledPlugins": {"memex@memex-local": True}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    result = run("hooks", "install")
    assert result.exit_code == 0 and "plugin is enabled too" in result.stdout
    assert installer.plugin_enabled(json.loads((config_dir / "settings.json").read_text()))


def test_the_plugin_recalls_beside_a_settings_group_whose_hooks_are_null(corpus, home: Path, tmp_path: Path) -> None:
    """Another tool left `"hooks": null` in a group of the user's settings: the plugin still recalls (its
    check for memex's settings handlers stopped every plugin hook on a TypeError)."""
    settings = tmp_path / "claude-config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": None}]}}))
    answer = hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT), flags=("--plugin",))
    assert PAST[:8] in context(answer, "UserPromptSubmit")
    assert runs(home)[-1]["status"] == "injected"
