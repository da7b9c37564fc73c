"""The Claude Code plugin folder: a valid manifest, skills whose memex commands exist and speak JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from memex.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"
SKILLS = sorted((PLUGIN / "skills").glob("*/SKILL.md"))
# Commands a skill may name before they exist (documented in the skill, with a fallback).
NOT_YET: set[str] = set()


def frontmatter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{path} has no frontmatter"
    fields = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def test_manifest_and_marketplace() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memex" and manifest["description"]
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    assert entry["name"] == "memex" and (ROOT / entry["source"]).resolve() == PLUGIN
    assert {"recall", "sessions", "find-related"} == {p.parent.name for p in SKILLS}


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.parent.name)
def test_skill_commands_exist_with_json(skill: Path) -> None:
    fields = frontmatter(skill)
    assert fields["name"] == skill.parent.name and re.fullmatch(r"[a-z0-9-]{1,64}", fields["name"])
    assert 40 < len(fields["description"]) <= 1024
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", skill.read_text(), re.DOTALL))
    commands = re.findall(r"^\s*memex ([a-z-]+(?: [a-z-]+)?)(.*)$", blocks, re.MULTILINE)
    assert commands
    for words, rest in commands:
        group = cli
        for word in words.split():
            if word in NOT_YET:
                break
            assert isinstance(group, click.Group), f"{skill}: memex {words}"
            command = group.get_command(click.Context(group), word)  # loads a lazy command
            assert command is not None, f"{skill}: memex {words}"
            group = command
        else:
            assert "--json" in rest, f"{skill}: memex {words} without --json"
            assert any("--json" in param.opts for param in group.params)
