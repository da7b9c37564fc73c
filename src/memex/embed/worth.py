"""What of a text is worth a vector: none of one made only of filler ("ok", "Done.", "thanks", "好的"), and
of a chunk only its lines of language (prose), not code, diffs, logs, JSON or lists of paths.

Search by meaning keeps a hit only when it scores above content-free anchors of exactly this kind
(`memex.search.anchors`), so a filler text's vector could never be found: computing it is wasted work.
Text that is not language is what lexical search finds well (identifiers, paths, error strings) and what
a sentence model reads worst, at the most tokens per character.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
# Words that carry no meaning on their own: acknowledgements, courtesies, confirmations, and the role
# labels a turn's text is written with ("User:", "Assistant:", "User (next):"), in lower case.
_FILLER_WORDS = """
    user assistant
    ok okay k kk yes yeah yep yup no nope sure fine good great nice cool perfect thanks thank thx ty you
    welcome re done please pls continue go ahead proceed next alright right got it sounds lgtm ack the a
    好的 好 谢谢 可以 继续 是的 嗯 はい ありがとう 了解 네 감사합니다
"""
FILLER = frozenset(_FILLER_WORDS.split())

# A line of language: at least this share of its words are plain words (letters only, maybe with inner
# apostrophes or hyphens, no camelCase), once list, quote, diff and heading marks are set aside.
LANGUAGE_MIN_SHARE = 0.6
_MARKS = re.compile(r"^(?:[\s\-+*>#|│•]|\d+[.):]?|\[[ xX]?\])*")
_PLAIN = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_EDGES = "\"'`([{<*_,.;:!?)]}>"
_CAMEL = re.compile(r"[a-z][A-Z]")
# Scripts written without spaces between words (Chinese, Japanese, Korean): a line mostly of them is language.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def has_meaning(text: str) -> bool:
    """True when `text` has a word beyond filler (any number, name, identifier or content word)."""
    return any(word.casefold() not in FILLER for word in _WORD.findall(text))


def is_language(line: str) -> bool:
    """True when `line` reads as language: most of its words are plain words ("Fixed the login loop.",
    "// Retry once the token is refreshed"), not code (`if (!user) {`), a log or diff line, JSON or a path."""
    words = _MARKS.sub("", line).split()
    if not words:
        return False
    plain = sum(1 for word in words if _is_plain(word.strip(_EDGES)))
    if plain and plain >= LANGUAGE_MIN_SHARE * len(words):
        return True
    unspaced = len(_UNSPACED.findall(line))
    return unspaced >= 2 and unspaced >= 0.5 * sum(len(word) for word in words)


def _is_plain(word: str) -> bool:
    return bool(word) and _PLAIN.fullmatch(word) is not None and _CAMEL.search(word) is None


def language_lines(text: str) -> str:
    """The lines of `text` that read as language (`is_language`), in order."""
    return "\n".join(line for line in text.split("\n") if is_language(line))
