"""Whether a text is worth a vector: one made only of filler ("ok", "Done.", "thanks", "好的") is not.

Search by meaning keeps a hit only when it scores above content-free anchors of exactly this kind
(`memex.search.anchors`), so such a text's vector could never be found: computing it is wasted work.
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


def has_meaning(text: str) -> bool:
    """True when `text` has a word beyond filler (any number, name, identifier or content word)."""
    return any(word.casefold() not in FILLER for word in _WORD.findall(text))
