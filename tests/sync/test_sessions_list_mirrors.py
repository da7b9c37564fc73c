"""`memex sessions list` shows the sessions received from other computers, marked with their computer."""

from __future__ import annotations

import json

from synctools import HILLVIEW, SLAY, settle

SLAY_ID = SLAY.stem
HILL_ID = "155715ec-f4e9-47ea-859c-2e4cfcceab6f"


def _listed(computer, *args: str) -> list[dict]:
    result = computer.cli("sessions", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_received_sessions_are_listed_with_their_computer(computers) -> None:
    a, b = computers("alpha"), computers("beta")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    b.add_claude(HILLVIEW / f"{HILL_ID}.jsonl")
    a.start()
    b.start()
    settle(a, b)
    listed = {s["session_id"]: s for s in _listed(b)}
    assert listed[SLAY_ID]["computer"] == "alpha" and listed[SLAY_ID]["source"] == "mirror"
    assert listed[HILL_ID]["computer"] == "beta" and listed[HILL_ID]["source"] == "local"
    assert listed[SLAY_ID]["title"] and listed[SLAY_ID]["started_at"]
    assert [s["session_id"] for s in _listed(b, "--local")] == [HILL_ID]
    assert [s["session_id"] for s in _listed(b, "--computer", "alpha")] == [SLAY_ID]
    assert [s["session_id"] for s in _listed(b, "--computer", "beta")] == [HILL_ID]
    assert _listed(b, "--computer", "nowhere") == []
    assert [s["session_id"] for s in _listed(b, "--project", "slay")] == [SLAY_ID]
    text = b.cli("sessions", "list").stdout
    line = next(line for line in text.splitlines() if line.lstrip().startswith(SLAY_ID[:8]))
    assert "on alpha" in line and "—" in line  # no turn count: only its conversation is here


def test_a_computer_with_only_received_sessions_lists_them(computers) -> None:
    a, b = computers("alpha"), computers("beta")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.start()
    b.start()
    settle(a, b)
    result = b.cli("sessions", "list")
    assert result.exit_code == 0 and SLAY_ID[:8] in result.stdout and "No sessions match" not in result.stderr
