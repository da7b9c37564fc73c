"""Lexical query building: an any-word search also finds the other forms of plain English words."""

from __future__ import annotations

from memex.search.lexical import fts_query


def test_stems_are_prefixes_only_for_plain_english_words() -> None:
    expression = fts_query("adopted symbolizes diving parse_config_file 2022 连接池", match_all=False, stems=True)
    assert expression == '"adopt"* OR "symbol"* OR "diving" OR "parse_config_file" OR "2022" OR "连 接" OR "接 池"'
    # All words must match: each as written (the precise search comes first).
    assert fts_query("adopted symbolizes", match_all=True, stems=True) == '"adopted" AND "symbolizes"'
    assert fts_query("adopted", match_all=False) == '"adopted"'
