"""find-related: the path cache, the lazy centroids and their watermark, sessions and turn windows.

Real SQLite, the real embedding model, transcripts written in Claude Code's shapes (tests/transcripts.py)
and three real Codex rollouts of one project. Few distinct paths, so the model embeds little.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import memex.config
from corpus import CODEX_SHORT, FIXTURES, LIVE_PI, SPECSTORY
from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts
from memex.related import refresh_patterns, related_sessions, related_turns
from memex.related.centroids import compute_centroids
from memex.related.rarity import Rarity
from memex.related.resources import (
    COMPUTING_CENTROIDS,
    EMBEDDING_PATHS,
    FINDING_PATHS,
    LOADING_MODEL,
    counts,
    missing_resources,
    resource_text,
)
from memex.related.windows import best_windows
from memex.store.db import transaction
from memex.store.queries import Filters
from transcripts import ClaudeSession, files_turn, simple_turn

CART = "aaaaaaaa-0000-0000-0000-000000000001"
CART_AGAIN = "bbbbbbbb-0000-0000-0000-000000000002"
DOCS = "cccccccc-0000-0000-0000-000000000003"
AUTH = "dddddddd-0000-0000-0000-000000000004"
PHASES = "eeeeeeee-0000-0000-0000-000000000005"
CODEX_RELATED = (
    FIXTURES / "codex" / "related" / "rollout-2025-11-13T16-00-16-019a7fa9-a846-7393-8d7a-9997d08b0096.jsonl"
)
CODEX_FIRST = FIXTURES / "codex" / "sessions" / "2025/11/12"


def write_store(root: Path, cwd: str = "/home/dev/shop") -> dict[str, ClaudeSession]:
    """Four sessions of one project: two on the cart, one on the docs, one on authentication."""
    folder = root / "-home-dev-shop"
    sessions = {sid: ClaudeSession(folder / f"{sid}.jsonl", sid, cwd=cwd) for sid in (CART, CART_AGAIN, DOCS, AUTH)}
    files_turn(
        sessions[CART],
        "the cart total is wrong",
        reads=("src/shop/cart/discount.py",),
        edits=("src/shop/cart/total.py",),
    )
    files_turn(sessions[CART], "add a test", edits=("tests/cart/test_total.py",))
    files_turn(
        sessions[CART_AGAIN],
        "discounts stack twice",
        reads=("src/shop/cart/total.py",),
        edits=("src/shop/cart/discount.py",),
    )
    files_turn(sessions[DOCS], "document the install", edits=("docs/install.md", "README.md"))
    files_turn(sessions[AUTH], "login loops", reads=("src/shop/auth/session.py",), edits=("src/shop/auth/login.py",))
    return sessions


def index(config: Config, conn, *paths: Path, agent: str = "claude") -> None:
    index_transcripts(conn, config, discover({agent: list(paths)}))


@pytest.fixture
def store(tmp_path: Path, config: Config, conn) -> dict[str, ClaudeSession]:
    sessions = write_store(tmp_path / "projects")
    index(config, conn, tmp_path / "projects")
    return sessions


def count(conn, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- what counts and how a path reads -------------------------------------------------------------------


def test_a_path_reads_as_words() -> None:
    assert resource_text("src/memex/cli/searchCommand.py") == "src memex cli search command py"
    assert resource_text("app/HTTPServer_main-v2.ts") == "app http server main v2 ts"
    assert resource_text("/home/ann/.claude/settings.json") == "claude settings json"


@pytest.mark.parametrize(
    "path, expected",
    [
        ("src/a.py", True),
        ("README.md", True),
        ("/home/ann/.bashrc", True),
        (".", False),
        ("src/", False),
        ("src/**/*.py", False),
        ("https://example.com/a.py", False),
        ("/tmp/claude/tasks/b18a41f.output", False),
        ("", False),
    ],
)
def test_which_paths_count(path: str, expected: bool) -> None:
    assert counts(path) is expected


# --- the math -------------------------------------------------------------------------------------------


def test_centroids_are_weighted_means_of_unit_vectors() -> None:
    vectors = np.eye(3, dtype=np.float32)
    # Session 0: turn 10 reads file 0 and edits file 1 (weight 2); turn 11 reads file 2. Session 1: turn 12.
    centroids = compute_centroids(
        np.array([0, 0, 0, 1]), np.array([10, 10, 11, 12]), np.array([0, 1, 2, 2]), np.array([1, 2, 1, 1]), vectors
    )
    assert centroids.turn_ids.tolist() == [10, 11, 12]
    np.testing.assert_allclose(centroids.turn_vectors[0], np.array([1, 2, 0]) / np.sqrt(5), rtol=1e-6)
    assert centroids.turn_weights.tolist() == [2, 1, 1] and centroids.turn_files.tolist() == [2, 1, 1]
    expected = 2 * np.array([1, 2, 0]) / np.sqrt(5) + np.array([0, 0, 1])
    np.testing.assert_allclose(centroids.session_vectors[0], expected / np.linalg.norm(expected), rtol=1e-6)
    assert centroids.sessions.tolist() == [0, 1] and centroids.session_files.tolist() == [3, 1]
    assert centroids.session_turns.tolist() == [2, 1]


def test_best_windows_slide_and_do_not_overlap() -> None:
    vectors = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [1, 0]], dtype=np.float32)
    query = np.array([0, 1], dtype=np.float32)
    first, second = best_windows(vectors, query, size=2, count=2)
    assert (first.start, first.end, round(first.score, 6)) == (2, 4, 1.0)
    assert second.start >= first.end or second.end <= first.start
    (whole,) = best_windows(vectors[:2], query, size=3, count=2)  # fewer rows than the window: all of them
    assert (whole.start, whole.end) == (0, 2)


# --- sessions -------------------------------------------------------------------------------------------


def test_the_session_that_worked_on_the_same_files_comes_first(store, conn, config: Config) -> None:
    found = related_sessions(conn, config, CART, Filters(), limit=10)
    ids = [hit["session_id"] for hit in found["results"]]
    assert ids[0] == CART_AGAIN and CART not in ids and set(ids) == {CART_AGAIN, DOCS, AUTH}
    assert found["results"][0]["shared_files"] == ["src/shop/cart/discount.py", "src/shop/cart/total.py"]
    assert all(hit["shared_count"] == 0 for hit in found["results"][1:])
    scores = [hit["score"] for hit in found["results"]]
    assert scores == sorted(scores, reverse=True)
    assert found["session"]["file_count"] == 3 and found["session"]["turn_count"] == 2


def test_real_codex_sessions_of_one_project(tmp_path: Path, config: Config, conn) -> None:
    # Three real rollouts of MoonMind: 019a802a shares six spec files with 019a7fa9 and two with 019a7ae6.
    folder = tmp_path / "codex"
    shutil.copytree(CODEX_FIRST, folder / "12")
    (folder / "13").mkdir()
    shutil.copy(CODEX_SHORT, folder / "13")
    shutil.copy(CODEX_RELATED, folder / "13")
    index(config, conn, folder, agent="codex")
    found = related_sessions(conn, config, "019a802a-aab1-7c31-9831-d2510c7a74a2", Filters(), limit=5)
    first, second = found["results"]
    assert first["session_id"].startswith("019a7fa9") and first["shared_count"] == 6
    assert all(path.startswith("specs/005-orchestrator-architecture/") for path in first["shared_files"])
    assert second["session_id"].startswith("019a7ae6") and second["shared_count"] == 2
    # The scratch file under /tmp and the Grep/Glob scopes are no resources.
    assert not conn.execute("SELECT 1 FROM resource_embeddings WHERE resource LIKE '/tmp/%'").fetchone()


def test_a_path_is_embedded_once_across_sessions(store, conn, config: Config) -> None:
    progress: list[tuple[str, int, int | None]] = []
    first = refresh_patterns(conn, config, on_progress=lambda step, done, total: progress.append((step, done, total)))
    # Every step is told from its start: the paths to find, the model loading (nothing to count yet), the
    # paths embedded batch by batch, the sessions' centroids.
    steps = list(dict.fromkeys(step for step, _, _ in progress))
    assert steps == [FINDING_PATHS, LOADING_MODEL, EMBEDDING_PATHS, COMPUTING_CENTROIDS]
    assert progress[0] == (FINDING_PATHS, 0, None)
    embedding = [(done, total) for step, done, total in progress if step == EMBEDDING_PATHS]
    assert embedding[0] == (0, 7) and embedding[-1] == (7, 7)
    assert progress[-1] == (COMPUTING_CENTROIDS, 4, 4)
    # Seven distinct paths in four sessions; total.py and discount.py are touched by two sessions each.
    assert first.embedded == count(conn, "resource_embeddings") == 7
    assert first.sessions == 4 and first.turns == 5
    state = conn.execute("SELECT * FROM access_pattern_state").fetchall()
    related_sessions(conn, config, AUTH, Filters(), limit=3)
    again = refresh_patterns(conn, config)
    assert (again.embedded, again.sessions, again.turns) == (0, 0, 0)
    assert conn.execute("SELECT * FROM access_pattern_state").fetchall() == state  # nothing was written
    assert count(conn, "resource_embeddings") == 7
    # A new session on known files embeds nothing new either.
    extra = ClaudeSession(store[CART].path.with_name("ffffffff-0000-0000-0000-000000000006.jsonl"), "ffffffff-0000")
    files_turn(extra, "total again", edits=("src/shop/cart/total.py",))
    index(config, conn, extra.path)
    report = refresh_patterns(conn, config)
    assert (report.embedded, report.sessions) == (0, 1) and count(conn, "resource_embeddings") == 7


def test_centroids_follow_new_turns_through_the_watermark(store, conn, config: Config) -> None:
    before = related_sessions(conn, config, CART, Filters(), limit=10)
    assert before["results"][0]["session_id"] == CART_AGAIN
    mark, vector = conn.execute(
        "SELECT max_turn_id, embedding FROM session_access_patterns WHERE session_id = ?", (CART,)
    ).fetchone()
    # The cart session moves on to authentication for three turns.
    for prompt in ("sessions expire", "login redirect", "session cookie"):
        files_turn(store[CART], prompt, reads=("src/shop/auth/session.py",), edits=("src/shop/auth/login.py",))
    index(config, conn, store[CART].path)
    after = related_sessions(conn, config, CART, Filters(), limit=10)
    new_mark, new_vector = conn.execute(
        "SELECT max_turn_id, embedding FROM session_access_patterns WHERE session_id = ?", (CART,)
    ).fetchone()
    assert new_mark > mark and new_vector != vector
    assert after["results"][0]["session_id"] == AUTH
    assert after["session"]["turn_count"] == 5
    # Nothing else was recomputed, and nothing is when nothing changed.
    assert refresh_patterns(conn, config).sessions == 0


def test_subagent_files_count_for_the_parent_session(tmp_path: Path, config: Config, conn) -> None:
    root = tmp_path / "projects"
    write_store(root)
    parent_id = "99999999-0000-0000-0000-000000000009"
    parent = ClaudeSession(root / "-home-dev-shop" / f"{parent_id}.jsonl", parent_id)
    simple_turn(parent, "look into the cart for me", "I asked a subagent.")
    sub = ClaudeSession(root / "-home-dev-shop" / parent_id / "subagents" / "agent-a1.jsonl", parent_id, agent_id="a1")
    files_turn(sub, "fix the cart total", reads=("src/shop/cart/discount.py",), edits=("src/shop/cart/total.py",))
    index(config, conn, root)
    found = related_sessions(conn, config, parent_id, Filters(), limit=10)
    assert found["results"][0]["session_id"] in (CART, CART_AGAIN)
    assert found["session"]["file_count"] == 2
    agents = conn.execute(
        "SELECT t.agent_id FROM turn_access_patterns p JOIN turns t ON t.id = p.turn_id WHERE p.session_id = ?",
        (parent_id,),
    ).fetchall()
    assert [row[0] for row in agents] == ["a1"]


def test_filters_and_no_candidates(store, conn, config: Config) -> None:
    assert related_sessions(conn, config, CART, Filters(agent="codex"), limit=5)["results"] == []
    assert related_sessions(conn, config, CART, Filters(project="elsewhere"), limit=5)["results"] == []
    assert len(related_sessions(conn, config, CART, Filters(project="shop"), limit=2)["results"]) == 2


# --- the combined score: files in common, weighted by rarity, then the centroids ----------------------------

NEAR_BY_NAME = "ffffffff-0000-0000-0000-000000000006"
ONE_SHARED = "99999999-0000-0000-0000-000000000007"


def test_rarity_weighs_a_file_by_the_sessions_that_touched_it() -> None:
    rare = Rarity(4, {"README.md": frozenset("abcd"), "src/a.py": frozenset("ab"), "src/b.py": frozenset("a")})
    assert rare.weight("README.md") == 0.0  # every session touched it: it says nothing
    assert rare.weight("src/a.py") == pytest.approx(math.log(2))
    assert rare.weight("src/b.py") == pytest.approx(math.log(4)) and rare.weight("unknown.py") == 0.0
    mine = ["README.md", "src/a.py", "src/b.py"]
    assert rare.shared(mine, ["README.md"]) == 0.0  # sharing only the file everyone has weighs nothing
    assert rare.shared(mine, ["src/a.py"]) == pytest.approx(math.log(2) / math.log(8))
    assert rare.shared(mine, ["src/a.py", "README.md"]) == rare.shared(mine, ["src/a.py"])
    assert rare.shared(mine, mine) == pytest.approx(1.0)
    assert rare.sharing() == {s: ({"README.md", "src/a.py"} if s == "b" else {"README.md"}) for s in "bcd"} | {
        "a": set(mine)
    }


def add_rarity_sessions(store: dict[str, ClaudeSession]) -> None:
    """Two more sessions: one whose paths read like the cart's but are other files, one that shares a single
    cart file with a spread of unrelated work; and a README every session opens."""
    folder = store[CART].path.parent
    near = ClaudeSession(folder / f"{NEAR_BY_NAME}.jsonl", NEAR_BY_NAME, cwd="/home/dev/shop")
    files_turn(near, "cart view", reads=("src/shop/cart/discount_view.py",), edits=("src/shop/cart/total_view.py",))
    one = ClaudeSession(folder / f"{ONE_SHARED}.jsonl", ONE_SHARED, cwd="/home/dev/shop")
    files_turn(one, "release", reads=("tests/cart/test_total.py",), edits=("deploy/helm/values.yaml",))
    files_turn(one, "ci", edits=(".github/workflows/release.yml", "scripts/publish.sh"))
    for session in (*store.values(), near, one):
        files_turn(session, "readme", reads=("README.md",))


def test_sessions_sharing_files_come_first_and_a_file_everyone_has_adds_nothing(store, conn, config: Config) -> None:
    add_rarity_sessions(store)
    index(config, conn, store[CART].path.parent)
    found = related_sessions(conn, config, CART, Filters(), limit=10)
    hits = {hit["session_id"]: hit for hit in found["results"]}
    order = [hit["session_id"] for hit in found["results"]]
    # The two sessions that share cart files come first, the one sharing two ahead of the one sharing one ...
    assert order[:2] == [CART_AGAIN, ONE_SHARED]
    # ... though the session whose paths only read like the cart's is nearer by centroid than the second.
    assert hits[NEAR_BY_NAME]["similarity"] > hits[ONE_SHARED]["similarity"]
    assert hits[NEAR_BY_NAME]["shared_count"] == 1  # the README, which every session touched
    for sid in (NEAR_BY_NAME, DOCS, AUTH):
        assert hits[sid]["shared_score"] == 0.0
        assert hits[sid]["score"] == pytest.approx(0.3 * hits[sid]["similarity"], abs=1e-3)
    assert set(order[2:]) == {NEAR_BY_NAME, DOCS, AUTH}
    rest = [hits[sid]["score"] for sid in order[2:]]
    assert rest == sorted(rest, reverse=True)
    # Each result explains itself: the score is made of the shared part and the similarity.
    first = hits[CART_AGAIN]
    assert first["score"] == pytest.approx(0.7 * first["shared_score"] + 0.3 * first["similarity"], abs=1e-3)
    assert first["shared_files"] == ["src/shop/cart/discount.py", "src/shop/cart/total.py", "README.md"]
    assert first["shared"][-1] == {"path": "README.md", "sessions": 6}
    assert first["shared"][0] == {"path": "src/shop/cart/discount.py", "sessions": 2}


def test_min_shared_keeps_only_results_with_that_many_files_in_common(store, conn, config: Config) -> None:
    add_rarity_sessions(store)
    index(config, conn, store[CART].path.parent)

    def ids(n: int) -> list[str]:
        found = related_sessions(conn, config, CART, Filters(), 10, min_shared=n)
        return [hit["session_id"] for hit in found["results"]]

    assert len(ids(0)) == 5 and len(ids(1)) == 5  # the README is in common with every session
    assert ids(2) == [CART_AGAIN, ONE_SHARED]
    assert ids(3) == [CART_AGAIN] and ids(4) == []
    windows = related_turns(conn, config, CART, Filters(), limit=10, window=3, min_shared=3)
    assert {hit["session_id"] for hit in windows["results"]} == {CART_AGAIN}
    assert all(hit["shared_count"] >= 3 for hit in windows["results"])


# --- turns ----------------------------------------------------------------------------------------------


def test_turn_windows_find_the_stretch_on_the_same_files(store, tmp_path: Path, conn, config: Config) -> None:
    # A long session: three turns on authentication, then three on the cart, then three on the docs.
    phases = ClaudeSession(tmp_path / "projects" / "-home-dev-shop" / f"{PHASES}.jsonl", PHASES)
    for prompt in ("auth one", "auth two", "auth three"):
        files_turn(phases, prompt, edits=("src/shop/auth/login.py",))
    for prompt in ("cart one", "cart two", "cart three"):
        files_turn(phases, prompt, reads=("src/shop/cart/discount.py",), edits=("src/shop/cart/total.py",))
    for prompt in ("docs one", "docs two", "docs three"):
        files_turn(phases, prompt, edits=("docs/install.md",))
    index(config, conn, phases.path)
    found = related_turns(conn, config, CART_AGAIN, Filters(), limit=10, window=3)
    assert found["warnings"] and "only 1 turn" in found["warnings"][0]
    best = next(hit for hit in found["results"] if hit["session_id"] == PHASES)
    assert [turn["prompt"] for turn in best["turns"]] == ["cart one", "cart two", "cart three"]
    # Most worked on first: total.py was edited in each of the three turns, discount.py only read.
    assert best["shared_files"] == ["src/shop/cart/total.py", "src/shop/cart/discount.py"]
    assert CART_AGAIN not in {hit["session_id"] for hit in found["results"]}
    windows = [hit for hit in found["results"] if hit["session_id"] == PHASES]
    assert len(windows) <= config.related_windows_per_session
    # The query is the session's last N turns: from the phases session, the cart sessions' turns match
    # its last (docs) stretch less than the docs session does.
    own = related_turns(conn, config, PHASES, Filters(), limit=3, window=3)
    assert own["warnings"] == [] and own["results"][0]["session_id"] == DOCS
    assert len(own["query_turns"]) == 3


# --- the cache follows the store ------------------------------------------------------------------------


def test_deleting_turns_removes_their_patterns(store, conn, config: Config) -> None:
    refresh_patterns(conn, config)
    assert count(conn, "turn_access_patterns") == 5
    with transaction(conn):
        conn.execute("DELETE FROM turns WHERE session_id = ? AND line_index > 0", (CART,))
    assert count(conn, "turn_access_patterns") == 4
    stale = conn.execute("SELECT stale FROM session_access_patterns WHERE session_id = ?", (CART,)).fetchone()[0]
    assert stale == 1
    report = refresh_patterns(conn, config)
    assert report.sessions == 1
    row = conn.execute("SELECT stale, turns FROM session_access_patterns WHERE session_id = ?", (CART,)).fetchone()
    assert tuple(row) == (0, 1)
    with transaction(conn):
        conn.execute("DELETE FROM sessions WHERE session_id = ?", (CART,))
    assert not conn.execute("SELECT 1 FROM session_access_patterns WHERE session_id = ?", (CART,)).fetchone()
    assert not conn.execute("SELECT 1 FROM turn_access_patterns WHERE session_id = ?", (CART,)).fetchone()
    assert count(conn, "resource_embeddings") == 7  # the path cache only grows


def test_a_new_path_recipe_reembeds_and_recomputes_without_mixing(
    store, conn, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh_patterns(conn, config)
    monkeypatch.setattr(memex.config, "RESOURCE_TEXT_VERSION", memex.config.RESOURCE_TEXT_VERSION + 1)
    report = refresh_patterns(conn, config)
    assert report.embedded == 7 and report.sessions == 4
    versions = {
        table: {r[0] for r in conn.execute(f"SELECT DISTINCT model_version FROM {table}")}
        for table in ("turn_access_patterns", "session_access_patterns", "access_pattern_state")
    }
    assert all(found == {config.resource_model_version} for found in versions.values())
    assert count(conn, "resource_embeddings") == 14  # both versions' vectors stay (switching back is free)


def test_folders_cursor_listed_are_no_files_worked_on(tmp_path: Path, config: Config, conn) -> None:
    """Cursor's `list_dir` names a folder (`Listed directory src/commands` in a SpecStory export), as
    Claude Code's LS and Gemini's list_directory do; it was counted as a file the session worked on, so
    `src`, `src/commands` and `src/commands/session` were among a session's files and shared ones."""
    folder = tmp_path / "proj" / ".specstory" / "history"
    folder.mkdir(parents=True)
    export = SPECSTORY / "history" / "2025-04-28_16-22-backlog-task-inquiry.md"
    shutil.copy(export, folder)
    shutil.copy(export, folder / "2025-04-29_10-00-backlog-task-inquiry-again.md")  # a second session
    index(config, conn, folder, agent="cursor")
    listed = {"src", "src/commands", "src/commands/session"}
    mentioned = {row[0] for row in conn.execute("SELECT file_path FROM file_mentions WHERE tool_name = 'list_dir'")}
    assert listed <= mentioned  # the listings are kept (the Files line, --file) ...
    first, second = (row[0] for row in conn.execute("SELECT session_id FROM sessions ORDER BY session_id"))
    found = related_sessions(conn, config, first, Filters(), limit=5)
    (other,) = found["results"]
    assert other["session_id"] == second and other["shared_count"] == other["file_count"] > 0
    assert not set(other["files"]) & listed and not set(other["shared_files"]) & listed, other
    assert not conn.execute("SELECT 1 FROM resource_embeddings WHERE resource = 'src/commands'").fetchone()


@pytest.mark.parametrize("tool", ["ls", "find"])
def test_folders_pi_listed_are_no_files_worked_on(tmp_path: Path, config: Config, conn, tool: str) -> None:
    """Pi's `ls` and `find` name a folder to list or search, as Claude Code's LS does: the path is kept as a
    mention, but it is not a file the session worked on (its `read` of the same path is)."""
    source = LIVE_PI / "--home-dev-proj--" / "2026-11-23T21-15-47-723Z_01a20a43-d68b-756a-b2da-442f90eab4f9.jsonl"
    read = '"name":"read","arguments":{"path":"/home/dev/proj/README.md"}'
    for name, call in (("read", read), (tool, read.replace('"read"', f'"{tool}"'))):
        folder = tmp_path / name / "--home-dev-proj--"
        folder.mkdir(parents=True)
        text = source.read_text()
        assert read in text
        (folder / source.name).write_text(text.replace(read, call))
        conn.execute("DELETE FROM sessions")
        index(config, conn, folder.parent, agent="pi")
        (session_id,) = (row[0] for row in conn.execute("SELECT session_id FROM sessions"))
        tools = {row[0] for row in conn.execute("SELECT tool_name FROM file_mentions WHERE file_path = 'README.md'")}
        assert tools == {name}
        assert missing_resources(conn, config, [session_id]) == (["README.md"] if name == "read" else [])
