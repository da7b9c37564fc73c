"""The plugin's skills describe the JSON memex really prints: each skill's documented commands run on an
indexed real corpus, and every JSON key the skill names in backticks is in their output."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from corpus import CODEX, HILLVIEW, SLAY

SKILLS = Path(__file__).resolve().parents[2] / "plugin" / "skills"
SLAY_ID = "2969822b-3c7d-47bd-8814-4bc86f67056a"
CODEX_ID = "019a7ae6-1945-7c63-98f2-210adb922af9"  # touched files, as did two other Codex sessions
# What the agent would put in for `$ARGUMENTS` and `<session_id>`, per skill.
ARGUMENTS = {
    "recall": ("dotfiles", SLAY_ID[:8]),
    "sessions": ("slay", SLAY_ID[:8]),
    "find-related": (CODEX_ID[:8], CODEX_ID[:8]),
}


def commands(skill: str) -> list[list[str]]:
    """The `memex …` lines of the skill's bash blocks, with the placeholders filled in, as arguments."""
    text = (SKILLS / skill / "SKILL.md").read_text()
    argument, session = ARGUMENTS[skill]
    lines = [line.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S) for line in block.splitlines()]
    found = []
    for line in lines:
        if line.startswith("memex "):
            line = line.replace("$ARGUMENTS", argument).replace("<session_id>", session)
            found.append(shlex.split(line)[1:])
    return found


def named_keys(skill: str) -> set[str]:
    """The JSON keys the skill's prose names in backticks: `key`, and the keys of `{"a": …, "b": …}` and
    `{a, b}` shapes (options, paths and commands are not keys)."""
    text = re.sub(r"```.*?```", "", (SKILLS / skill / "SKILL.md").read_text(), flags=re.S)
    keys: set[str] = set()
    for quoted in re.findall(r"`([^`]+)`", text):
        if re.fullmatch(r"[a-z_]+", quoted):
            keys.add(quoted)
        elif quoted.startswith("{"):
            keys.update(re.findall(r"[a-z_]+", quoted))
    return keys


def keys_in(value: Any) -> set[str]:
    """Every key of every object in `value`, at any depth."""
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in keys_in(item)}
    if isinstance(value, list):
        return {key for item in value for key in keys_in(item)}
    return set()


@pytest.fixture
def indexed(home: Path, run) -> Path:
    for corpus in (SLAY.parent, HILLVIEW, CODEX):
        assert run("index", str(corpus)).exit_code == 0
    return home


@pytest.mark.parametrize("skill", ["recall", "sessions", pytest.param("find-related", marks=pytest.mark.model)])
def test_every_key_a_skill_names_is_in_the_output_of_its_commands(skill: str, indexed: Path, run) -> None:
    outputs = []
    for args in commands(skill):
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)
        outputs.append(json.loads(result.stdout))
    assert outputs, f"{skill} documents no memex command"
    seen = {key for output in outputs for key in keys_in(output)}
    named = named_keys(skill)
    assert len(named) >= 5
    assert named - seen == set(), f"{skill} names keys its commands do not print"


def test_the_skills_show_a_session_both_ways() -> None:
    shown = [args for skill in ARGUMENTS for args in commands(skill) if args[0] == "show"]
    assert any("--turns" in args for args in shown) and any("--turns" not in args for args in shown)
