"""The irregular forms of English verbs (`buy`, `bought`; `break`, `broke`, `broken`): a stem does not join
them, so a question in one tense ("When did Dave buy a camera?") would miss the answer told in another
("I bought a vintage camera")."""

from __future__ import annotations

from functools import cache

# Base form, past tense, past participle: common verbs of everyday and technical English. Verbs whose forms
# are all stopwords (be, have, do, make, get, …) are left out; one whose forms are alike (cut) has none to add.
_TABLE = """
arise arose arisen; awake awoke awoken; bear bore borne; beat beat beaten; become became become;
begin began begun; bend bent bent; bet bet bet; bind bound bound; bite bit bitten; bleed bled bled;
blow blew blown; break broke broken; breed bred bred; bring brought brought; build built built;
burn burnt burnt; buy bought bought; catch caught caught; choose chose chosen; cling clung clung;
come came come; cost cost cost; creep crept crept; cut cut cut; deal dealt dealt; dig dug dug;
draw drew drawn; dream dreamt dreamt; drink drank drunk; drive drove driven; eat ate eaten; fall fell fallen;
feed fed fed; feel felt felt; fight fought fought; find found found; flee fled fled; fly flew flown;
forbid forbade forbidden; forget forgot forgotten; forgive forgave forgiven; freeze froze frozen;
go went gone; grind ground ground; grow grew grown; hang hung hung; hear heard heard; hide hid hidden;
hit hit hit; hold held held; hurt hurt hurt; keep kept kept; kneel knelt knelt; lay laid laid; lead led led;
lean leant leant; leap leapt leapt; learn learnt learnt; leave left left; lend lent lent; lie lay lain;
light lit lit; lose lost lost; mean meant meant; meet met met; pay paid paid; prove proved proven;
quit quit quit; read read read; ride rode ridden; ring rang rung; rise rose risen; run ran run;
say said said; seek sought sought; sell sold sold; send sent sent; set set set; sew sewed sewn;
shake shook shaken; shine shone shone; shoot shot shot; shrink shrank shrunk; shut shut shut;
sing sang sung; sink sank sunk; sit sat sat; sleep slept slept; slide slid slid; speak spoke spoken;
speed sped sped; spend spent spent; spin spun spun; split split split; spread spread spread;
spring sprang sprung; stand stood stood; steal stole stolen; stick stuck stuck; sting stung stung;
strike struck struck; swear swore sworn; sweep swept swept; swim swam swum; swing swung swung;
teach taught taught; tear tore torn; throw threw thrown; understand understood understood;
undo undid undone; upset upset upset; wake woke woken; wear wore worn; weave wove woven; weep wept wept;
win won won; wind wound wound; withdraw withdrew withdrawn; write wrote written; rewrite rewrote rewritten;
overwrite overwrote overwritten; override overrode overridden; undergo underwent undergone;
"""


@cache
def _lemmas() -> dict[str, tuple[str, ...]]:
    forms: dict[str, tuple[str, ...]] = {}
    for entry in _TABLE.split(";"):
        words = tuple(dict.fromkeys(entry.split()))
        if len(words) > 1:
            for word in words:
                forms.setdefault(word, words)
    return forms


def irregular_forms(word: str) -> tuple[str, ...]:
    """The forms of `word`'s verb when it is irregular (`bought` -> buy, bought), else ()."""
    return _lemmas().get(word.lower(), ())
