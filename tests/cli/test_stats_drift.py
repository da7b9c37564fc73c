"""`memex stats` shows format drift: records of types an agent's adapter does not know, per agent and version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus import LIVE_CODEX_READ
from transcripts import CodexRollout


def _rollout(folder: Path, version: str) -> CodexRollout:
    rollout = CodexRollout(folder / "rollout-2026-12-01T00-00-00-bbbbbbbb-1111-2222-3333-444444444444.jsonl", "bbbb")
    meta = rollout.meta()
    meta["payload"]["cli_version"] = version
    rollout.write(meta, *rollout.prompt("rename the cart"), rollout.line("hologram_state", {"beam": 1}))
    return rollout


def test_stats_counts_unknown_record_types_per_agent_and_version(run, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(LIVE_CODEX_READ, folder)
    rollout = _rollout(folder, "0.170.0")
    run("index", str(folder), "--agent", "codex")
    stats = json.loads(run("stats", "--json").output)
    assert stats["agent_versions"] == {"codex": {"0.170.0": 1, "0.169.0": 1}}
    assert [
        (d["agent"], d["version"], d["record_type"], d["records"], d["sessions"]) for d in stats["unknown_record_types"]
    ] == [("codex", "0.170.0", "hologram_state", 1, 1)]
    # Incremental ingest re-reads the provisional turn: the count stays right.
    rollout.write(rollout.line("hologram_state", {"beam": 2}), *rollout.answer("Renamed."))
    run("index", str(folder), "--agent", "codex")
    (drift,) = json.loads(run("stats", "--json").output)["unknown_record_types"]
    assert drift["records"] == 2
    shown = run("stats").output
    assert "format drift" in shown and "codex 0.170.0: hologram_state ×2 in 1 session(s)" in shown
    # The file rewritten without them: the drift is gone.
    rollout.path.unlink()
    clean = CodexRollout(rollout.path, "bbbb")
    clean.write(*rollout.prompt("rename the cart"), *rollout.answer("Renamed."))
    run("index", str(folder), "--agent", "codex")
    assert json.loads(run("stats", "--json").output)["unknown_record_types"] == []


def test_stats_without_drift(run, conn) -> None:  # `conn`: an empty store
    stats = json.loads(run("stats", "--json").output)
    assert stats["unknown_record_types"] == [] and stats["agent_versions"] == {}
    assert "format drift" not in run("stats").output
