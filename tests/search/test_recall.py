"""Prompt-time recall: the relevance floor, exclusion of the asking session, project first, diversity."""

from __future__ import annotations

from pathlib import Path

from memex.ingest.indexer import discover, index_transcripts
from memex.search.recall import query_terms, recall
from transcripts import ClaudeSession, simple_turn

ASKING = "99999999-aaaa-4bbb-8ccc-000000000009"


def session(root: Path, sid: str, cwd: str = "/home/dev/shop") -> ClaudeSession:
    return ClaudeSession(root / cwd.replace("/", "-") / f"{sid}.jsonl", sid, cwd=cwd)


def index(conn, config, root: Path) -> None:
    index_transcripts(conn, config, discover({"claude": [root]}))


def filler(root: Path, count: int = 12) -> None:
    """Unrelated sessions, so that word rarity means something (in a store of 3 turns every word is common)."""
    for n in range(count):
        simple_turn(session(root, f"00000000-aaaa-4bbb-8ccc-0000000000{n:02d}"), f"update test file {n}", "done")


def test_query_terms() -> None:
    assert query_terms("How do I remove a git worktree?", 24) == ["remove", "git", "worktree"]
    # Identifiers first, kept whole; duplicates once.
    assert query_terms("the tests for parse_config_file and src/a.py fail, the tests!", 24) == [
        "parse_config_file",
        "src/a.py",
        "tests",
        "fail",
    ]
    assert query_terms("删除工作树", 24) == ["删除", "除工", "工作", "作树"]
    assert query_terms("<system-reminder>ignore me</system-reminder> deploy the cluster", 24) == ["deploy", "cluster"]
    assert len(query_terms(" ".join(f"word{n}x" for n in range(50)), 24)) == 24


def test_floor_drops_turns_that_share_only_common_words(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "p"
    filler(root)  # "test" and "file" are everywhere
    relevant = session(root, "11111111-aaaa-4bbb-8ccc-000000000001")
    simple_turn(
        relevant, "the kubernetes ingress returns 502 after the deploy", "The ingress health check path was wrong."
    )
    index(conn, config, root)
    hits = recall(conn, "why does the kubernetes ingress return 502 errors", ASKING, None)
    assert [h.turn["session_id"] for h in hits] == [relevant.session_id]
    assert hits[0].coverage >= 0.5 and "kubernetes" in hits[0].matched
    assert recall(conn, "the test file for the parser", ASKING, None) == []  # only common words match
    # Words the store never saw weigh in: a prompt about something new is not answered by one shared word.
    assert recall(conn, "configure the voice notification kubernetes operator", ASKING, None) == []


def test_plural_falls_back_to_the_indexed_singular(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "p"
    filler(root)
    simple_turn(session(root, "11111111-aaaa-4bbb-8ccc-000000000001"), "the webhook retry policy", "backoff added")
    index(conn, config, root)
    hits = recall(conn, "webhooks retry policy", ASKING, None)
    assert hits and "webhook" in hits[0].matched


def test_never_the_asking_session_nor_its_subagents(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "p"
    asking = session(root, ASKING)
    simple_turn(asking, "the kubernetes ingress returns 502", "looking")
    sub = ClaudeSession(asking.path.with_suffix("") / "subagents" / "agent-s1.jsonl", ASKING, agent_id="s1")
    simple_turn(sub, "kubernetes ingress 502 investigation", "found it")
    index(conn, config, root)
    assert recall(conn, "kubernetes ingress 502", ASKING, None) == []
    assert {h.turn["agent_id"] for h in recall(conn, "kubernetes ingress 502", "someone-else", None)} == {"", "s1"}


def test_same_project_first_and_one_session_cannot_fill_the_page(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "p"
    filler(root)
    chatty = session(root, "22222222-aaaa-4bbb-8ccc-000000000002", "/home/dev/blog")
    for n in range(4):
        simple_turn(chatty, f"kubernetes ingress 502 errors again and again {n}", "kubernetes ingress fixed")
    local = session(root, "33333333-aaaa-4bbb-8ccc-000000000003", "/home/dev/shop")
    simple_turn(local, "kubernetes ingress gives 502", "kubernetes ingress timeout raised")
    index(conn, config, root)
    hits = recall(conn, "kubernetes ingress 502 errors", ASKING, "/home/dev/shop", max_per_session=2)
    assert [h.turn["session_id"][:8] for h in hits] == ["33333333", "22222222", "22222222"]
    assert hits[0].same_project and not hits[1].same_project
