"""Lexical query building: an any-word search also finds the other forms of plain English words."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memex.search.lexical import fold, fts_query
from memex.textutil import _CJK_CLASS, has_cjk


def test_stems_are_prefixes_only_for_plain_english_words() -> None:
    expression = fts_query("adopted symbolizes diving parse_config_file 2022 连接池", match_all=False, stems=True)
    assert expression == '"adopt"* OR "symbol"* OR "diving" OR "parse_config_file" OR "2022" OR "连 接" OR "接 池"'
    # All words must match: each as written (the precise search comes first).
    assert fts_query("adopted symbolizes", match_all=True, stems=True) == '"adopted" AND "symbolizes"'
    assert fts_query("adopted", match_all=False) == '"adopted"'


@given(st.text())
def test_fold_lowers_and_drops_every_combining_mark(text: str) -> None:
    """`fold` as FTS5 compares: NFKD, lower case, each combining mark removed (ASCII only lowered)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    assert fold(text) == "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def test_fold_examples() -> None:
    assert fold("Crème Brûlée") == "creme brulee"
    assert fold("PARSE_Config.py") == "parse_config.py"
    assert fold("Ｆｕｌｌ ｗｉｄｔｈ 连接") == "full width 连接"


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFFFF)) | st.text())
def test_has_cjk_is_any_character_of_the_cjk_class(text: str) -> None:
    cjk = re.compile(f"[{_CJK_CLASS}]")
    assert has_cjk(text) == (cjk.search(text) is not None)
    assert has_cjk(text + "连") and has_cjk("한국어 " + text) and not has_cjk("naïve café — …")


def test_an_english_word_finds_its_indexed_forms_not_the_words_its_stem_begins(conn, config, tmp_path) -> None:
    """`adopting` finds `adopted` and `adoption`; `connecting` finds `connected` but not `connectors`, a word
    that only begins with the stem's letters (as the prefix query `"connect"*` did): the forms are read from
    the index's vocabulary."""
    from memex.ingest.indexer import discover, index_transcripts
    from memex.search.lexical import TermRarity, search_chunks
    from memex.store.queries import Filters
    from transcripts import ClaudeSession, simple_turn

    root = tmp_path / "projects" / "-home-dev-shop"
    texts = {
        "aaaa0000-adopted": ("We adopted the new linter", "Done."),
        "bbbb0000-adoption": ("Plan the adoption of strict typing", "Planned."),
        "cccc0000-connectors": ("The connectors file runs on push", "Fixed."),
        "dddd0000-connected": ("The cache connected after the restart", "Good."),
    }
    for session_id, (prompt, answer) in texts.items():
        simple_turn(ClaudeSession(root / f"{session_id}.jsonl", session_id, cwd="/home/dev/shop"), prompt, answer)
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    rarity = TermRarity(conn)
    assert set(rarity.forms("adopt")) == {"adopted", "adoption"}
    assert rarity.forms("connect") == ["connected"]
    expression = fts_query("adopting connecting", match_all=False, stems=True, forms=rarity.forms)
    assert expression is not None and "*" not in expression

    def found(query: str) -> set[str]:
        hits = search_chunks(conn, query, Filters(), 10, stems=True)
        sessions = conn.execute(
            f"SELECT DISTINCT session_id FROM turns WHERE id IN ({','.join(str(h.turn_id) for h in hits) or 0})"
        )
        return {r[0] for r in sessions}

    assert found("adopting sessions") == {"aaaa0000-adopted", "bbbb0000-adoption"}
    assert found("connecting wires") == {"dddd0000-connected"}


def _store(conn, sessions: dict[str, list[str]]) -> dict[str, int]:
    """Sessions of one turn each holding the given chunks, written straight into SQLite; each one's turn id."""
    stamp = "2026-05-01T10:00:00.000Z"
    turns = {}
    with conn:
        for session_id, chunks in sessions.items():
            conn.execute(
                "INSERT INTO sessions (session_id, agent, computer, project_dir, title, started_at, updated_at) "
                "VALUES (?, 'claude', 'testbox', '/home/dev/shop', 't', ?, ?)",
                (session_id, stamp, stamp),
            )
            turn_id = conn.execute(
                "INSERT INTO turns (session_id, line_index, end_line_index, kind, prompt_text, full_text, started_at) "
                "VALUES (?, 0, 1, 'prompt', 'p', ?, ?)",
                (session_id, "\n".join(chunks), stamp),
            ).lastrowid
            conn.executemany(
                "INSERT INTO chunks (turn_id, chunk_index, content) VALUES (?, ?, ?)",
                [(turn_id, i, text) for i, text in enumerate(chunks)],
            )
            turns[session_id] = turn_id
    return turns


def test_an_any_word_query_keeps_its_rarest_words_within_the_postings_budget(conn, monkeypatch) -> None:
    """Over a large enough store, an any-word query searches by its rarest words while the chunks holding
    them fit the budget: the rare word's turn is still found first, a chunk holding only a dropped word
    is not found; the two rarest words always stay."""
    from memex.search import lexical
    from memex.search.lexical import TermRarity, _any_word_terms, search_chunks
    from memex.store.queries import Filters

    chunks = [f"filler{i} padding" for i in range(2_400)]
    for i, (word, count) in enumerate((("alpha", 50), ("beta", 100), ("gamma", 100))):
        for j in range(count):
            chunks[i * 100 + j] += f" {word}"
    chunks[2_000] = "gamma only here"
    sessions = {f"s{n:04d}": chunks[n * 10 : n * 10 + 10] for n in range(240)}
    sessions["zz-rare"] = ["the zebrafish alpha"]
    _store(conn, sessions)
    rarity = TermRarity(conn)
    assert rarity.total >= lexical.MIN_CHUNKS_FOR_RARITY
    query = "zebrafish alpha beta gamma"
    assert _any_word_terms(rarity, query, stems=False) == query  # 252 postings: within the budget
    monkeypatch.setattr(lexical, "ANY_WORD_POSTINGS", 150)
    assert _any_word_terms(rarity, query, stems=False) == "zebrafish alpha"
    monkeypatch.setattr(lexical, "ANY_WORD_POSTINGS", 1)
    assert _any_word_terms(rarity, query, stems=False) == "zebrafish alpha"  # the two rarest always

    hits = search_chunks(conn, query, Filters(), 5, stems=True)
    turns = {r[0]: r[1] for r in conn.execute("SELECT id, session_id FROM turns")}
    assert turns[hits[0].turn_id] == "zz-rare"
    gamma_only = conn.execute("SELECT turn_id FROM chunks WHERE content = 'gamma only here'").fetchone()[0]
    assert gamma_only not in {hit.turn_id for hit in hits}


def test_ranked_chunks_under_filters_equal_the_joined_query(conn) -> None:
    """FTS5 ranks every match and the best are filtered after, a batch at a time: the same chunks, in the
    same order, as joining every match to its turn and session, filtering, then ranking; also when the
    left-out session holds all of the best matches, when the filters admit none, and when one ranking is
    shared by searches under other filters (prompt recall's project, then everyone's)."""
    from memex.search.lexical import Ranking, ranked_chunks
    from memex.store.queries import Filters, where

    sessions = {"own": [f"needle needle needle note{i}" for i in range(60)]}
    sessions |= {f"other{n:02d}": [f"needle in haystack {n}", f"plain hay {n}"] for n in range(30)}
    _store(conn, sessions)

    def joined(filters: Filters, count: int) -> list[tuple[int, int, float]]:
        clauses, params = filters.turn_clauses("t", "s")
        sql = (
            "SELECT c.id, c.turn_id, -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "JOIN turns t ON t.id = c.turn_id JOIN sessions s ON s.session_id = t.session_id"
            f"{where(['chunks_fts MATCH ?', *clauses])} ORDER BY bm25(chunks_fts) LIMIT ?"
        )
        return [tuple(r) for r in conn.execute(sql, ['"needle"', *params, count])]

    shared = Ranking(conn)  # one ranking read by every search below, each from its start
    for filters, admitted in (
        (Filters(exclude_session="own"), 30),
        (Filters(), 90),
        (Filters(project="/home/dev/shop"), 90),
        (Filters(project="/elsewhere"), 0),
    ):
        for count in (2, 20, 100):
            found = ranked_chunks(conn, '"needle"', filters, count)
            assert found == joined(filters, count)
            assert len(found) == min(count, admitted)
            assert ranked_chunks(conn, '"needle"', filters, count, shared) == found
    turns = {r[0]: r[1] for r in conn.execute("SELECT id, session_id FROM turns")}
    assert {turns[turn] for _, turn, _ in ranked_chunks(conn, '"needle"', Filters(exclude_session="own"), 5)} <= {
        f"other{n:02d}" for n in range(30)
    }


def test_word_counts_are_kept_until_the_store_changes(conn, config) -> None:
    """TermRarity.of reuses the counts it read while nothing was written; a write by this connection or
    by another one makes it read them again (a word indexed since is counted)."""
    from memex.search.lexical import TermRarity
    from memex.store.db import connect

    _store(conn, {"s1": ["quokka habitat notes"]})
    rarity = TermRarity.of(conn)
    assert rarity.df("quokka") == 1 and rarity.df("wombat") == 0
    assert TermRarity.of(conn) is rarity
    other = connect(config.db_path)
    try:
        _store(other, {"s2": ["wombat burrow notes"]})
    finally:
        other.close()
    again = TermRarity.of(conn)
    assert again is not rarity and again.df("wombat") == 1 and again.df("notes") == 2
    _store(conn, {"s3": ["wombat again"]})
    assert TermRarity.of(conn).df("wombat") == 2
