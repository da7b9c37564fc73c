"""The embedding queue: ingest enqueues, the worker drains, survives kill -9, retries, re-embeds on a
version bump, and deleting an owner deletes its vectors."""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from corpus import SLAY
from memex.config import Config, load_config
from memex.embed.model import load_embedder
from memex.embed.texts import MAX_RUN_CHARS, bound_text, embed_texts, session_summary, text_hash, turn_embed_text
from memex.embed.worker import EmbedBusy, drain, pending_count, retry_errors, worker_lock
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect, transaction
from mirrortools import store_received_mirror
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.model, pytest.mark.subprocess]


def _index(conn: sqlite3.Connection, config: Config, *paths: Path) -> None:
    index_transcripts(conn, config, discover({"claude": list(paths)}))


def _counts(conn: sqlite3.Connection, sql: str) -> dict[str, int]:
    return {r[0]: r[1] for r in conn.execute(sql)}


def test_ingest_enqueues_every_chunk_turn_and_mirror(conn, config, projects: Path) -> None:
    _index(conn, config, projects)
    jobs = _counts(conn, "SELECT level, count(*) FROM embed_jobs WHERE status = 'pending' GROUP BY level")
    assert jobs == {
        "chunk": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
        "turn": conn.execute("SELECT count(*) FROM turns").fetchone()[0],
        "session": conn.execute("SELECT count(*) FROM mirrors").fetchone()[0],
    }
    assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0  # ingest never embeds


def test_drain_gives_every_level_its_vectors_on_a_real_transcript(conn, config, tmp_path: Path) -> None:
    target = tmp_path / "p" / SLAY.parent.name
    target.mkdir(parents=True)
    (target / SLAY.name).write_bytes(SLAY.read_bytes())
    _index(conn, config, target)
    with worker_lock(config.home):
        report = drain(conn, config)
    assert report.failed == 0 and pending_count(conn) == 0
    vectors = _counts(conn, "SELECT level, count(*) FROM vectors GROUP BY level")
    assert vectors == {
        "chunk": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
        "turn": conn.execute("SELECT count(*) FROM turns").fetchone()[0],
        "session": 1,
    }
    # A turn's only chunk reads as the turn: its vector is the turn's, copied, not computed again.
    single = conn.execute(
        "SELECT c.id, c.turn_id FROM chunks c GROUP BY c.turn_id HAVING count(*) = 1 LIMIT 1"
    ).fetchone()
    assert single is not None
    chunk_vector, turn_vector = (
        conn.execute("SELECT embedding FROM vectors WHERE level = ? AND owner_id = ?", (level, owner)).fetchone()[0]
        for level, owner in (("chunk", single[0]), ("turn", single[1]))
    )
    assert chunk_vector == turn_vector
    assert report.reused >= 1 and report.from_turns == 1  # the session: its most central turn's vector
    assert sum(report.by_level.values()) + report.reused + report.from_turns == sum(vectors.values())
    row = conn.execute("SELECT model_name, model_version, embedding FROM vectors LIMIT 1").fetchone()
    assert (row[0], row[1]) == (config.embed_model, config.model_version)
    vector = np.frombuffer(row[2], dtype="<f4")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3
    # A second drain has nothing to do, and re-indexing the unchanged file queues nothing.
    _index(conn, config, target)
    assert pending_count(conn) == 0
    with worker_lock(config.home):
        assert drain(conn, config).embedded == 0


def test_session_vector_reads_the_extractive_summary(conn, config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(
        session, "The checkout total ignores the discount code", "Fixed: apply_discount ran after tax.", edit="cart.py"
    )
    simple_turn(session, "thanks, now add a test", "Added test_discount_before_tax in tests/test_cart.py.")
    session.write(session.pr_link(42))
    _index(conn, config, session.path.parent)
    from memex.embed.texts import session_summary

    mirror_id = conn.execute("SELECT id FROM mirrors").fetchone()[0]
    summary = session_summary(conn, mirror_id, config)
    assert "Request: The checkout total ignores the discount code" in summary
    assert "Outcome: Added test_discount_before_tax" in summary
    assert "Files: cart.py" in summary and "Pull requests: #42 (dev/shop)" in summary
    assert len(summary) <= config.embed_session_max_chars


class CountingEmbedder:
    """The real model, keeping every passage it was asked to embed."""

    def __init__(self, config: Config) -> None:
        self._model = load_embedder(config)
        self.name, self.dimension, self.model_version = self._model.name, self._model.dimension, config.model_version
        self.passages: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += texts
        return self._model.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.embed_queries(texts)


def test_a_local_session_takes_its_most_central_turns_vector_without_the_model(conn, config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "The checkout total ignores the discount code", "Fixed: apply_discount ran after tax.")
    simple_turn(session, "Does the discount apply before tax now?", "Yes: the cart applies the discount, then tax.")
    simple_turn(session, "Unrelated: what time is the standup tomorrow?", "It is at 9:30 in the small room.")
    session.write()
    _index(conn, config, session.path.parent)
    remote = store_received_mirror(
        conn, "remote-1", "laptop", "/home/ana/kitchen", "Proofing timer", "the timer fires early", "Raised it to 90."
    )
    embedder = CountingEmbedder(config)
    with worker_lock(config.home):
        report = drain(conn, config, embedder=embedder)
    local = conn.execute("SELECT id FROM mirrors WHERE computer = ?", (config.computer,)).fetchone()[0]
    turns = [
        (r[0], np.frombuffer(r[1], dtype="<f4"))
        for r in conn.execute("SELECT text_hash, embedding FROM vectors WHERE level = 'turn' ORDER BY owner_id")
    ]
    matrix = np.stack([vector for _, vector in turns])
    central = int(np.argmax(matrix @ matrix.mean(axis=0)))
    digest, blob = conn.execute(
        "SELECT text_hash, embedding FROM vectors WHERE level = 'session' AND owner_id = ?", (local,)
    ).fetchone()
    assert len(turns) == 3 and central != 2  # the off-topic turn is not the session's gist
    assert digest == turns[central][0] and np.array_equal(np.frombuffer(blob, dtype="<f4"), turns[central][1])
    assert report.from_turns == 1 and report.by_level["session"] == 1  # the other computer's session was embedded
    assert session_summary(conn, remote, config) in embedder.passages
    assert session_summary(conn, local, config) not in embedder.passages
    assert len(embedder.passages) == 3 + 1  # three turns and the remote summary: nothing else ran the model


def test_kill_9_mid_drain_then_rerun_stores_each_vector_once(home: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(corpus / "s1.jsonl", "s1")
    for n in range(40):
        simple_turn(
            session, f"question {n}: why does the worker {n} stall " + "on the queue " * 30, f"answer {n} " * 60
        )
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_EMBED_BATCH_SIZE": "4"}
    subprocess.run(
        [sys.executable, "-m", "memex", "index", "--no-embed", str(corpus)], env=env, check=True, capture_output=True
    )
    conn = connect(home / "memex.db")
    total = conn.execute("SELECT count(*) FROM embed_jobs").fetchone()[0]
    killed = 0
    for _ in range(3):
        process = subprocess.Popen(
            [sys.executable, "-m", "memex", "embed"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        done_before = conn.execute("SELECT count(*) FROM embed_jobs WHERE status = 'done'").fetchone()[0]
        while time.monotonic() < deadline and process.poll() is None:  # kill it once it made progress
            done = conn.execute("SELECT count(*) FROM embed_jobs WHERE status = 'done'").fetchone()[0]
            if done > done_before:
                os.kill(process.pid, signal.SIGKILL)
                killed += 1
                break
            time.sleep(0.05)
        process.wait()
    assert killed >= 1 and pending_count(conn) > 0, "the worker finished before it could be killed"
    finished = subprocess.run(
        [sys.executable, "-m", "memex", "embed", "--json"], env=env, capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stderr
    assert pending_count(conn) == 0
    assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == total
    duplicates = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM vectors GROUP BY level, owner_id HAVING count(*) > 1)"
    )
    assert duplicates.fetchone()[0] == 0


def test_a_version_bump_re_embeds_lazily_while_search_keeps_working(
    home: Path, config, conn, run, projects: Path
) -> None:
    _index(conn, config, projects)
    with worker_lock(config.home):
        drain(conn, config)
    before = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    bumped = load_config({**os.environ, "MEMEX_EMBED_TURN_MAX_CHARS": "1000"})
    assert bumped.model_version != config.model_version
    # Before the worker runs, search still uses the old vectors (same model).
    hit = run("search", "observability dashboard", "--mode", "semantic", "--json")
    assert hit.exit_code == 0 and '"session_id"' in hit.stdout
    with worker_lock(config.home):
        partial = drain(conn, bumped, max_jobs=3)
    versions = _counts(conn, "SELECT model_version, count(*) FROM vectors GROUP BY model_version")
    assert partial.embedded + partial.reused == 3 and set(versions) == {config.model_version, bumped.model_version}
    assert sum(versions.values()) == before  # each owner has exactly one vector, old or new
    with worker_lock(config.home):
        drain(conn, bumped)
    assert _counts(conn, "SELECT model_version, count(*) FROM vectors GROUP BY model_version") == {
        bumped.model_version: before
    }


def test_a_version_bump_computes_only_the_texts_it_changed(config, conn, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "Why does the checkout total ignore the discount code?", "apply_discount ran after tax.")
    long_answer = " ".join(f"Step {i}: the cart reads price rule {i} before it rounds the total." for i in range(60))
    simple_turn(session, "Walk me through the whole pricing pipeline", long_answer)
    session.write()
    _index(conn, config, session.path.parent)
    with worker_lock(config.home):
        drain(conn, config)
    old = {
        (r[0], r[1]): (r[2], r[3])
        for r in conn.execute("SELECT level, owner_id, text_hash, embedding FROM vectors WHERE level != 'session'")
    }
    bumped = load_config({**os.environ, "MEMEX_EMBED_TURN_MAX_CHARS": "500"})  # the long turn reads less
    assert bumped.model_version != config.model_version
    new_texts = {
        (level, owner): text_hash(text)
        for level in ("turn", "chunk")
        for owner, text in embed_texts(conn, level, [o for lv, o in old if lv == level], bumped).items()
    }
    changed = set(new_texts.values()) - {digest for digest, _ in old.values()}
    assert changed and len(changed) < len(set(new_texts.values()))  # some texts changed, others did not
    with worker_lock(config.home):
        report = drain(conn, bumped)
    assert report.embedded == len(changed)  # each changed text once; every other vector was reused
    assert report.from_turns == conn.execute("SELECT count(*) FROM mirrors").fetchone()[0]
    rows = conn.execute("SELECT level, owner_id, text_hash, embedding FROM vectors WHERE level != 'session'")
    for level, owner, digest, vector in rows:
        assert digest == new_texts[(level, owner)]
        if digest == old[(level, owner)][0]:
            assert vector == old[(level, owner)][1]


class FlakyEmbedder:
    """The real model, except that any text holding `poison` fails (a backend error on one input)."""

    def __init__(self, config: Config, poison: str) -> None:
        self._model = load_embedder(config)
        self.name, self.dimension, self.model_version = self._model.name, self._model.dimension, config.model_version
        self.poison = poison

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.poison in t for t in texts):
            raise RuntimeError("engine failure on a poisoned text")
        return self._model.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.embed_queries(texts)


def test_a_failing_text_fails_alone_is_retried_with_back_off_then_left_in_error(conn, tmp_path: Path) -> None:
    config = load_config({**os.environ, "MEMEX_EMBED_MAX_ATTEMPTS": "2", "MEMEX_EMBED_RETRY_BASE_SECONDS": "0"})
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "a normal question about caching", "a normal answer")
    simple_turn(session, "POISON question", "an answer")
    simple_turn(session, "another normal question", "fine")
    _index(conn, config, session.path.parent)
    flaky = FlakyEmbedder(config, "POISON")
    with worker_lock(config.home):
        first = drain(conn, config, embedder=flaky)
    failing = conn.execute("SELECT status, attempts, last_error FROM embed_jobs WHERE status != 'done'").fetchall()
    assert first.failed >= 2  # the turn and its chunk, at least once each
    assert {r["status"] for r in failing} == {"error"} and {r["attempts"] for r in failing} == {2}
    assert all("engine failure" in r["last_error"] for r in failing)
    # Every other job got its vector despite sharing batches with the poisoned ones.
    assert (
        conn.execute("SELECT count(*) FROM embed_jobs WHERE status = 'done'").fetchone()[0]
        == (conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    )
    assert retry_errors(conn) == len(failing)
    with worker_lock(config.home):
        healed = drain(conn, config)  # the real model has no trouble with it
    assert healed.embedded + healed.reused == len(failing) and pending_count(conn) == 0


def test_with_a_one_second_back_off_a_failed_job_waits(conn, tmp_path: Path) -> None:
    config = load_config({**os.environ, "MEMEX_EMBED_RETRY_BASE_SECONDS": "3600"})
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "POISON question", "an answer")
    _index(conn, config, session.path.parent)
    with worker_lock(config.home):
        drain(conn, config, embedder=FlakyEmbedder(config, "POISON"))
        again = drain(conn, config, embedder=FlakyEmbedder(config, "POISON"))
    assert again.failed == 0  # nothing retried before its time
    rows = conn.execute("SELECT attempts, next_attempt_at FROM embed_jobs WHERE status = 'pending'").fetchall()
    assert rows and all(r["attempts"] == 1 and r["next_attempt_at"] for r in rows)


def test_texts_that_are_not_language_are_bounded_and_embedded(conn, config, tmp_path: Path) -> None:
    blob = base64.b64encode(os.urandom(150_000)).decode()
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "here is the payload " + blob, "minified: " + "function(a){return a+1};" * 4000)
    simple_turn(session, "", "   ")
    _index(conn, config, session.path.parent)
    with worker_lock(config.home):
        report = drain(conn, config)
    assert report.failed == 0 and pending_count(conn) == 0
    assert bound_text(blob, 2_000) == blob[:MAX_RUN_CHARS] + "…"
    assert len(turn_embed_text("x " * 100_000, "Tools: Bash ×1", config)) <= config.embed_turn_max_chars


def test_deleting_a_turn_deletes_its_vectors_and_its_chunks_vectors(conn, config, projects: Path) -> None:
    _index(conn, config, projects)
    with worker_lock(config.home):
        drain(conn, config)
    turn_id = conn.execute("SELECT turn_id FROM chunks GROUP BY turn_id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    chunk_ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE turn_id = ?", (turn_id,))]
    with transaction(conn):
        conn.execute("DELETE FROM turns WHERE id = ?", (turn_id,))
    marks = ",".join("?" * len(chunk_ids))
    assert (
        conn.execute(
            f"SELECT count(*) FROM vectors WHERE (level = 'turn' AND owner_id = ?) OR "
            f"(level = 'chunk' AND owner_id IN ({marks}))",
            [turn_id, *chunk_ids],
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute("SELECT count(*) FROM embed_jobs WHERE level = 'turn' AND owner_id = ?", (turn_id,)).fetchone()[0]
        == 0
    )


def test_one_worker_at_a_time(config) -> None:
    with worker_lock(config.home), pytest.raises(EmbedBusy, match="another memex process"), worker_lock(config.home):
        pass


def test_embed_command_and_stats(run, projects: Path) -> None:
    assert run("index", "--no-embed", str(projects)).exit_code == 0
    stats = run("stats", "--json")
    assert '"pending"' in stats.stdout
    result = run("embed", "--json")
    assert result.exit_code == 0 and '"queued": 0' in result.stdout
    assert '"from_turns": 2' in result.stdout  # the two sessions: a turn's vector each, no model call
    assert '"done"' in run("stats", "--json").stdout


def test_an_unknown_model_is_one_clear_error_and_search_stays_lexical(run, projects: Path, monkeypatch) -> None:
    """A misspelled embed_model: every command that would embed says so in one line naming the setting and
    the models memex has; search and indexing go on by words."""
    assert run("index", "--no-embed", str(projects)).exit_code == 0
    monkeypatch.setenv("MEMEX_EMBED_MODEL", "e5-smal-q4")
    line = "embed_model 'e5-smal-q4' is not a model memex knows; choices: e5-small-q4"
    failed = run("embed")
    assert failed.exit_code == 1 and failed.stderr == f"memex: error: {line}\n"
    found = run("search", "observability")
    assert found.exit_code == 0 and "155715ec" in found.stdout
    assert found.stderr == f"note: semantic search unavailable ({line}); lexical results only\n"
    monkeypatch.setenv("MEMEX_INDEX_EMBEDS", "1")
    assert f"warning: vectors not computed: {line}" in run("index", str(projects)).stderr
    doctor = next(c for c in json.loads(run("doctor", "--json").stdout)["checks"] if c["name"] == "embedding")
    assert doctor["status"] == "warn" and doctor["detail"] == line
    monkeypatch.delenv("MEMEX_EMBED_MODEL")
    doctor = next(c for c in json.loads(run("doctor", "--json").stdout)["checks"] if c["name"] == "embedding")
    assert doctor["status"] == "ok"


def test_index_drains_the_queue_unless_told_not_to(run, projects: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_INDEX_EMBEDS", "1")
    result = run("index", str(projects), "--json")
    assert result.exit_code == 0 and '"queued": 0' in result.stdout and '"embedded": 0' not in result.stdout
    assert '"embed": null' in run("index", str(projects), "--no-embed", "--json").stdout


class DeletingEmbedder(FlakyEmbedder):
    """The real model; while it embeds, an ingest deletes the turns being embedded (a provisional turn
    rebuilt by a Stop hook)."""

    def __init__(self, config: Config, conn: sqlite3.Connection) -> None:
        super().__init__(config, poison="\x00never")
        self.conn = conn

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super().embed_passages(texts)
        if any(t.startswith("User: ") for t in texts):  # a batch of turns (a session summary starts "Title:")
            with transaction(self.conn):
                self.conn.execute("DELETE FROM turns")
        return vectors


def test_an_owner_deleted_while_its_batch_is_embedded_gets_no_vector(conn, config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
    simple_turn(session, "why is the cache stale after a deploy", "The CDN kept the old manifest.")
    _index(conn, config, session.path.parent)
    with worker_lock(config.home):
        drain(conn, config, embedder=DeletingEmbedder(config, conn))
    orphans = conn.execute(
        "SELECT count(*) FROM vectors v WHERE (v.level = 'turn' AND v.owner_id NOT IN (SELECT id FROM turns)) "
        "OR (v.level = 'chunk' AND v.owner_id NOT IN (SELECT id FROM chunks))"
    ).fetchone()[0]
    assert orphans == 0
