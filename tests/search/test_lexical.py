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
