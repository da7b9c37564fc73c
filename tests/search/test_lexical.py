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
