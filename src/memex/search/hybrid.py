"""Hybrid search: BM25 and vector neighbours at three levels, fused by reciprocal rank.

Each list ranks candidates under the same filters: lexical chunks (grouped to turns), lexical mirrors
(sessions), and the nearest chunk, turn and session vectors to the query. Reciprocal-rank fusion adds
`weight / (k + rank)` per list. Levels cascade: a pin-point question weighs fine levels first (chunk →
turn → session), an "overall / trend / summary" question coarse levels first; `level` forces one.
Candidates are grouped to turns, a session hit lends its weight to that session's best turn (or is a
result of its own when no turn of it was found: another computer's mirror), results are deduplicated
by session, and hits found only by meaning must clear a relevance floor.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from memex.background import Background
from memex.config import Config
from memex.embed.model import Embedder, EmbedderUnavailable, backend_of, embedded_query
from memex.mirrors.search import excerpt, mirror_hits, search_mirrors
from memex.plain import Record
from memex.search.dates import named_days
from memex.search.highlight import spans_json
from memex.search.lexical import Coverage, TermRarity, chunk_texts, search_chunks, word_coverage
from memex.search.sharedscan import SharedScans
from memex.search.wordrank import rerank
from memex.store.queries import Filters, turns_by_ids, where

# numpy and the vector index are imported only when a search goes by meaning: a search by words (or one in a
# store without vectors) starts as fast as `memex --version` (bench/cold_start.py).
if TYPE_CHECKING:
    import numpy as np

    from memex.search.vector import Neighbour, Scan, VectorIndex

MODES = ("hybrid", "lexical", "semantic")
# A filtered vector search first takes this many times the neighbours it wants, unfiltered, and keeps those
# the filters admit; only when too few pass does it list every admitted owner.
POST_FILTER_FACTOR = 20
# ... but a filter that only leaves out one session (prompt recall's) first takes twice as many: they nearly
# always hold enough, and re-ranking and listing 20 times the neighbours cost prompt recall ~2 ms (of ~6
# after its embedding, at 100k turns).
FIRST_FILTER_FACTOR = 2
MAX_ADMITTED_BATCH = 4_096  # neighbours checked against the filters at most at a time (SQL parameters)
LEVELS = ("chunk", "turn", "session")
# Weight of each list by its level's place in the cascade (first, second, third). The third level only
# breaks ties: on LoCoMo (bench/retrieval.py) a session-level weight of 0.5 behind chunks and turns cut
# hybrid Recall@10 from 0.75 to 0.57, since a session's summary lifts all of its turns alike.
CASCADE_WEIGHTS = (1.0, 0.7, 0.1)
# A hit found only by meaning must come within this cosine of the query's best hit (besides beating the
# content-free anchors): far below the best, similarity is what any two texts share, not an answer. On
# LoCoMo's dev conversations 0.03 already costs no recall (the relevant turns found by meaning alone sit
# near the top); 0.05 leaves room for a query whose answers spread.
RELATIVE_COSINE_MARGIN = 0.05
# A turn found by words vouches for itself only when it holds at least this share of the query's word
# weight (rare words weigh most): an any-word match on "group" or "support" alone is no answer to "When
# did Caroline go to the LGBTQ support group?". Below it, the turn must be justified by meaning like a
# hit found by meaning alone. Without it, a few large real sessions answered 67% of unrelated questions
# (bench/retrieval.py --hubs).
MIN_WORD_COVERAGE = 0.5
# ... but a turn holding at least PARTIAL_WORD_COVERAGE of that weight has some of the words besides its
# meaning: it clears a semantic floor (the content-free anchors') lower by PARTIAL_FLOOR_RELIEF. Words and
# meaning that agree are more evidence than meaning alone, and the relative margin to the query's best hit
# still holds. LoCoMo (bench/retrieval.py) hybrid R@5 / R@10 / MRR: dev 0.737 / 0.822 / 0.608 -> 0.741 /
# 0.828 / 0.611 (0.2 the same; a relief of 0.01 or 0.015 0.827, of 0.0025 0.825), test 0.714 / 0.798 / 0.593
# -> 0.716 / 0.801 / 0.596; hubs (--hubs) 7% of LoCoMo's questions with a result still, 0.08 -> 0.09 results
# a question, top session 4%.
PARTIAL_WORD_COVERAGE = 0.25
PARTIAL_FLOOR_RELIEF = 0.005
# A turn borrows this share of the fused score of each found turn at most NEIGHBOUR_REACH turns away in its
# session: an answer often spans a few consecutive turns (a question in one, its answer in the next; an
# event told over several), so a turn whose neighbours were found is likelier to be relevant than a lone
# one. Only turns some list found are lifted: a neighbour nothing found is never a result of its own. On
# LoCoMo's dev conversations (bench/retrieval.py) hybrid Recall@10 0.750 -> 0.779, MRR 0.528 -> 0.547;
# 0.25 of the next turn alone gave 0.772, and a share of 1.0 0.758 (the neighbours outweigh the turn).
# For the same reason a turn next to a justified one (it holds the query's words, or clears the semantic
# floor) is vouched for by it and need not clear the floor itself: it is part of the exchange that answers.
# Dev Recall@10 0.779 -> 0.796 vouched for by the words alone (the floor cut 0.017 there), 0.798 -> 0.800
# with meaning's hits too (test 0.767 -> 0.780). With a turn's reaction out of its words' score
# (`lexical.own_paragraphs`), a share of 0.4 gave dev 0.822 -> 0.826 but test 0.798 -> 0.797: kept 0.3.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_REACH = 2
# A turn from a day the query names ("on March 16, 2022", memex.search.dates) has its fused score multiplied
# by 1 + DATE_LIFT. It lifts only turns some list found, so it never makes a result of its own. On LoCoMo's
# dev conversations: Recall@5 +0.008, MRR +0.007 (1.0 and 2.0 alike; the 41 dev questions that name a day
# with its year: Recall@10 0.74 -> 0.77).
DATE_LIFT = 1.0
# A turn found by words has its fused score multiplied by 1 + PARAGRAPH_LIFT × the share of the query's word
# weight its best paragraph holds alone (a prompt, an answer: `lexical.word_coverage`): words that answer
# together stand together, while a long turn can gather them from unrelated places. It also tells whose
# line answers: "What did Evan start a year ago?" is answered by Evan's line, not by his friend's reply
# that names him. Before the neighbours' lending, so the exchange around such a paragraph rises with it. On
# LoCoMo's dev conversations (with irregular verbs): hybrid Recall@5 0.723 -> 0.731, Recall@10 0.812 ->
# 0.817, MRR 0.569 -> 0.587; a lift of 2, or of the share squared, gave the same within 0.002.
PARAGRAPH_LIFT = 1.0
_COARSE = re.compile(
    r"\b(overall|overview|summar\w*|trends?|in general|generally|big picture|recap|history of|over time|"
    r"across (?:all |the )?(?:sessions|projects)|so far|progress (?:on|of)|what have (?:i|we) (?:been|done))\b"
    r"|总结|概述|概要|总体|整体|趋势|まとめ|全体|傾向|요약|전체|추세|개요",
    re.IGNORECASE,
)


# A code name: snake_case, camelCase / PascalCase, a dotted or slashed path, `a::b`.
_CODE_NAME = re.compile(r"\w[_.:/]+\w|[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")


def names_only(query: str) -> bool:
    """True when every word of the query is a code name (`parse_config_file`, `retryFetchOnFailure`,
    `src/a.py`): a name is found by itself, so a turn found by meaning alone does not answer it (e5 puts
    any identifier near any code discussion)."""
    words = query.split()
    return bool(words) and all(_CODE_NAME.search(word) for word in words)


def is_coarse(query: str) -> bool:
    """True when the question asks for an overview (trend, summary…) rather than a precise fact."""
    return _COARSE.search(query) is not None


def level_order(query: str, level: str | None = None) -> list[str]:
    """The levels to search, in cascade order."""
    if level:
        return [level]
    return ["session", "turn", "chunk"] if is_coarse(query) else ["chunk", "turn", "session"]


class _Candidate(Record):
    """A turn (or a session known only by its mirror) and what each list said about it."""

    __slots__ = (
        "best_cosine",
        "chunk_id",
        "coverage",
        "key",
        "lexical",
        "neighbours",
        "paragraph",
        "parts",
        "score",
        "session_id",
    )

    key: tuple[str, int]  # ("turn", turn id) or ("mirror", mirror id)
    session_id: str
    score: float
    parts: dict[str, dict[str, float]]
    chunk_id: int | None
    lexical: bool  # it holds enough of the query's words to answer it by itself
    neighbours: list[int]  # found turns at most NEIGHBOUR_REACH away
    best_cosine: float
    paragraph: float  # the query's word weight its best paragraph holds (found by words), else 0
    coverage: float  # the query's word weight the whole turn holds (found by words), else 0

    def __init__(
        self,
        key: tuple[str, int],
        session_id: str,
        score: float = 0.0,
        parts: dict[str, dict[str, float]] | None = None,
        chunk_id: int | None = None,
        lexical: bool = False,
        neighbours: list[int] | None = None,
        best_cosine: float = 0.0,
        paragraph: float = 0.0,
        coverage: float = 0.0,
    ) -> None:
        self.key = key
        self.session_id = session_id
        self.score = score
        self.parts = {} if parts is None else parts
        self.chunk_id = chunk_id
        self.lexical = lexical
        self.neighbours = [] if neighbours is None else neighbours
        self.best_cosine = best_cosine
        self.paragraph = paragraph
        self.coverage = coverage


class SearchOutcome(Record):
    """The results and how they were found."""

    __slots__ = ("levels", "mode", "notes", "results")

    results: list[dict[str, Any]]
    mode: str  # the mode actually used (hybrid degrades to lexical when no model or vectors)
    levels: list[str]
    notes: list[str]

    def __init__(
        self,
        results: list[dict[str, Any]],
        mode: str,
        levels: list[str],
        notes: list[str] | None = None,
    ) -> None:
        self.results = results
        self.mode = mode
        self.levels = levels
        self.notes = [] if notes is None else notes


def _owners_sql(level: str, filters: Filters) -> tuple[str, list[Any]]:
    """SELECT of the owner ids of `level` the filters admit (to be completed by `AND …` conditions)."""
    clauses, params = filters.turn_clauses("t", "s")
    if level == "chunk":
        joins = "FROM chunks o JOIN turns t ON t.id = o.turn_id JOIN sessions s ON s.session_id = t.session_id"
    elif level == "turn":
        joins = "FROM turns o JOIN sessions s ON s.session_id = o.session_id JOIN turns t ON t.id = o.id"
    else:
        scoped = filters.mirror_clauses("o")
        if scoped is not None:
            return "SELECT o.id FROM mirrors o" + where(["1", *scoped[0]]), scoped[1]
        # Files and PRs are known of local sessions only.
        return (
            "SELECT o.id FROM mirrors o JOIN sessions s2 ON s2.session_id = o.session_id AND s2.computer = o.computer "
            "WHERE o.session_id IN (SELECT t.session_id FROM turns t JOIN sessions s ON s.session_id = t.session_id"
            + where(clauses)
            + ")",
            params,
        )
    return f"SELECT o.id {joins}" + where(["1", *clauses]), params


def allowed_owners(conn: sqlite3.Connection, level: str, filters: Filters) -> np.ndarray | None:
    """The owners of `level` the filters admit; None when nothing is filtered."""
    if filters == Filters():
        return None
    import numpy as np

    sql, params = _owners_sql(level, filters)
    return np.fromiter((r[0] for r in conn.execute(sql, params)), dtype=np.int64)


def _admitted(
    conn: sqlite3.Connection, level: str, filters: Filters, neighbours: list[Neighbour], wanted: int
) -> list[Neighbour]:
    """The first `wanted` neighbours the filters admit (all of them when fewer are), in their order: checked
    best first, twice `wanted` then twice as many each time (prompt recall keeps 20 neighbours, nearly all
    admitted: 40 checked)."""
    sql, params = _owners_sql(level, filters)
    admitted: list[Neighbour] = []
    checked, size = 0, wanted * 2
    while checked < len(neighbours) and len(admitted) < wanted:
        batch = neighbours[checked : checked + size]
        marks = ",".join("?" * len(batch))
        ids = {r[0] for r in conn.execute(f"{sql} AND o.id IN ({marks})", [*params, *(n.owner_id for n in batch)])}
        admitted.extend(n for n in batch if n.owner_id in ids)
        checked, size = checked + len(batch), min(size * 2, MAX_ADMITTED_BATCH)
    return admitted[:wanted]


def filtered_search(
    conn: sqlite3.Connection,
    index: VectorIndex,
    vector: np.ndarray,
    level: str,
    filters: Filters,
    wanted: int,
    need: int,
    scanned: Scan | None = None,
) -> list[Neighbour]:
    """Nearest neighbours under the filters: the unfiltered nearest, filtered, when enough of them pass
    (a query reads a few thousand rows' filter columns); otherwise a search restricted to every admitted
    owner (listing them costs ~0.3 s per level per million rows). `scanned`: the query's scan of
    the index, made beforehand.

    A filter that only leaves out one session (prompt recall's) takes twice as many as `wanted` first: when
    `wanted` of them pass, they are the first `wanted` that any longer list would admit (a shorter search lists
    the first of a longer one, `VectorIndex.search`), so the answer is the one POST_FILTER_FACTOR times as
    many give. Other filters may admit few, and would pay for both."""
    if filters == Filters():
        return index.search(conn, vector, wanted, scanned=scanned)
    if filters == Filters(exclude_session=filters.exclude_session):
        if scanned is None:  # both searches read the same scan of the codes
            scanned = index.scan_once(conn, vector)
        first = index.search(conn, vector, wanted * FIRST_FILTER_FACTOR, verify=False, scanned=scanned)
        admitted = _admitted(conn, level, filters, first, wanted)
        if len(admitted) >= wanted:
            return admitted
    # The owners are checked next.
    nearest = index.search(conn, vector, wanted * POST_FILTER_FACTOR, verify=False, scanned=scanned)
    admitted = _admitted(conn, level, filters, nearest, wanted)
    if len(admitted) >= need or len(nearest) < wanted * POST_FILTER_FACTOR:
        return admitted
    return index.search(conn, vector, wanted, allowed_owners(conn, level, filters))


def has_vectors(conn: sqlite3.Connection, config: Config, level: str, filters: Filters) -> bool:
    """True when a vector of this model at `level` belongs to an owner the filters admit (one indexed lookup
    unfiltered; filtered, the admitted owners are read until one has a vector). The `+` keeps SQLite on the
    (level, owner_id) index for the vector test: on the model index it read every vector of the level per
    owner (3 s per level on LoCoMo's 3,000 turns, bench/retrieval.py)."""
    if filters == Filters():
        sql = "SELECT 1 FROM vectors WHERE model_name = ? AND level = ? LIMIT 1"
        return conn.execute(sql, (config.embed_model, level)).fetchone() is not None
    owners, params = _owners_sql(level, filters)
    sql = (
        f"{owners} AND EXISTS (SELECT 1 FROM vectors v WHERE v.level = ? AND v.owner_id = o.id "
        "AND +v.model_name = ?) LIMIT 1"
    )
    return conn.execute(sql, [*params, level, config.embed_model]).fetchone() is not None


def levels_with_vectors(conn: sqlite3.Connection, config: Config, levels: list[str], filters: Filters) -> list[str]:
    """The levels among `levels` where a search by meaning could find something under the filters."""
    return [level for level in levels if has_vectors(conn, config, level, filters)]


def _semantic_lists(
    conn: sqlite3.Connection,
    config: Config,
    embedder: Embedder,
    vector: np.ndarray,
    filters: Filters,
    levels: list[str],
    limit: int,
    scans: dict[str, Scan],
) -> dict[str, list[Neighbour]]:
    from memex.search.vector import vector_index

    wanted = max(config.search_vector_candidates, limit * 3)
    lists = {}
    for level in levels:
        index = vector_index(config, level, embedder.dimension)
        lists[level] = filtered_search(conn, index, vector, level, filters, wanted, limit * 3, scans.get(level))
    return lists


def _searched_indexes(conn: sqlite3.Connection, config: Config, levels: list[str]) -> dict[str, VectorIndex]:
    """The vector indexes of `levels` this process has searched before, brought up to date: their matrices
    are scanned as soon as the query is embedded, while the words are searched. None in a new process: numpy
    would be imported here, before the model's thread imports it beside the search by words."""
    if "memex.search.vector" not in sys.modules:
        return {}
    from memex.search.vector import searched_index

    indexes = {level: searched_index(config, level) for level in levels}
    for index in indexes.values():
        if index is not None:
            index.prepare(conn)
    return {level: index for level, index in indexes.items() if index is not None}


def _embedded_and_scanned(
    config: Config, embedder: Embedder | None, query: str, shared: SharedScans
) -> tuple[Embedder, np.ndarray, dict[str, Scan]]:
    """The embedder, the query's vector, and its scan of the codes of each of `shared`'s indexes (with the
    help of the thread waiting for them)."""
    try:
        embedder, vector = embedded_query(config, embedder, query)
    except BaseException:
        shared.abandon()
        raise
    shared.begin(vector)
    shared.help()
    return embedder, vector, shared.scans()


def _local_sessions(conn: sqlite3.Connection, session_ids: list[str]) -> set[str]:
    if not session_ids:
        return set()
    marks = ",".join("?" * len(session_ids))
    return {r[0] for r in conn.execute(f"SELECT session_id FROM sessions WHERE session_id IN ({marks})", session_ids)}


def _owners(conn: sqlite3.Connection, table: str, ids: list[int], column: str) -> dict[int, Any]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return dict(conn.execute(f"SELECT id, {column} FROM {table} WHERE id IN ({marks})", ids).fetchall())


class _Fusion:
    """Accumulates reciprocal-rank contributions per turn and per session-only mirror."""

    def __init__(self, rrf_k: int) -> None:
        self.rrf_k = rrf_k
        self.turns: dict[int, _Candidate] = {}
        self.sessions: dict[str, list[tuple[str, int, float, dict[str, float]]]] = {}

    def add_turn(self, turn_id: int, part: str, rank: int, weight: float, **info: float) -> _Candidate:
        candidate = self.turns.setdefault(turn_id, _Candidate(("turn", turn_id), ""))
        if part in candidate.parts:  # a turn counts once per list (its best chunk)
            return candidate
        candidate.score += weight / (self.rrf_k + rank)
        candidate.parts[part] = {"rank": rank, **{k: round(v, 4) for k, v in info.items()}}
        return candidate

    def add_session(self, mirror_id: int, session_id: str, part: str, rank: int, weight: float, **info: float) -> None:
        self.sessions.setdefault(session_id, []).append(
            (part, mirror_id, weight / (self.rrf_k + rank), {"rank": rank, **{k: round(v, 4) for k, v in info.items()}})
        )

    def fused(self, standalone: set[str]) -> list[_Candidate]:
        """Candidates best first: a session's weight goes to its best turn; a session none of whose turns
        was found is a result of its own only if it is in `standalone`."""
        best: dict[str, _Candidate] = {}
        for candidate in self.turns.values():
            current = best.get(candidate.session_id)
            if current is None or candidate.score > current.score:
                best[candidate.session_id] = candidate
        results = list(self.turns.values())
        for session_id, contributions in self.sessions.items():
            target = best.get(session_id)
            if target is None and session_id not in standalone:
                continue
            if target is None:
                mirror_id = contributions[0][1]
                target = _Candidate(("mirror", mirror_id), session_id)
                results.append(target)
            for part, _mirror_id, weight, info in contributions:
                if part not in target.parts:
                    target.score += weight
                    target.parts[part] = info
                # The conversation's words may be spread over the session: they vouch for it as a whole,
                # not for one of its turns.
                target.lexical = target.lexical or (part == "mirror" and target.key[0] == "mirror")
                target.best_cosine = max(target.best_cosine, info.get("cosine", 0.0))
        return sorted(results, key=lambda c: -c.score)


def _places(conn: sqlite3.Connection, turn_ids: list[int]) -> dict[int, tuple[str, str, int]]:
    """(session id, agent id, position) of each of the turns that exists: positions count that agent's turns
    of the session, from the first of these turns in it (only their differences mean anything). A turn alone
    in its session is at 0, and the turns between the first and last of the others are read once, rather
    than each turn's predecessors counted from the session's start (a long session's hundreds, per turn;
    1.65 -> 1.3 ms a query in bench/search.py's store of 50-turn sessions)."""
    if not turn_ids:
        return {}
    marks = ",".join("?" * len(turn_ids))
    runs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for turn_id, session_id, agent_id, line in conn.execute(
        f"SELECT id, session_id, agent_id, line_index FROM turns WHERE id IN ({marks})", turn_ids
    ):
        runs.setdefault((session_id, agent_id), []).append((line, turn_id))
    places = {}
    for (session_id, agent_id), members in runs.items():
        lines = sorted(line for line, _ in members)
        between = [lines[0]]
        if len(lines) > 1:
            between = [
                r[0]
                for r in conn.execute(
                    "SELECT line_index FROM turns WHERE session_id = ? AND agent_id = ? AND line_index BETWEEN ? AND ? "
                    "ORDER BY line_index",
                    (session_id, agent_id, lines[0], lines[-1]),
                )
            ]
        for line, turn_id in members:
            places[turn_id] = (session_id, agent_id, bisect.bisect_left(between, line))
    return places


def _lend_to_neighbours(
    conn: sqlite3.Connection, fusion: _Fusion, places: dict[int, tuple[str, str, int]] | None = None
) -> None:
    """Each candidate turn gets NEIGHBOUR_SHARE of the fused score of every candidate at most
    NEIGHBOUR_REACH turns away from it in its session (the scores before any lending), and knows them
    (`neighbours`: a justified one vouches for it). `places`: the candidates' `_places`, read before."""
    if not fusion.turns:
        return
    if places is None:
        places = _places(conn, list(fusion.turns))
    runs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for turn_id in fusion.turns:
        session_id, agent_id, position = places[turn_id]
        runs.setdefault((session_id, agent_id), []).append((position, turn_id))
    base = {turn_id: candidate.score for turn_id, candidate in fusion.turns.items()}
    for members in runs.values():
        members.sort()
        for i, (position, turn_id) in enumerate(members):
            lent = 0.0
            candidate = fusion.turns[turn_id]
            for j in range(max(0, i - NEIGHBOUR_REACH), min(len(members), i + NEIGHBOUR_REACH + 1)):
                if j != i and abs(members[j][0] - position) <= NEIGHBOUR_REACH:
                    lent += base[members[j][1]]
                    candidate.neighbours.append(members[j][1])
            candidate.score += NEIGHBOUR_SHARE * lent


def _lift_named_days(conn: sqlite3.Connection, fusion: _Fusion, query: str) -> None:
    """Multiply by 1 + DATE_LIFT the score of each candidate turn that started on a day the query names."""
    spans = named_days(query)
    if not spans or not fusion.turns:
        return
    ids = list(fusion.turns)
    marks = ",".join("?" * len(ids))
    for turn_id, day in conn.execute(f"SELECT id, substr(started_at, 1, 10) FROM turns WHERE id IN ({marks})", ids):
        if day and any(first <= day <= last for first, last in spans):
            fusion.turns[turn_id].score *= 1 + DATE_LIFT


def _unavailable(exc: EmbedderUnavailable) -> str:
    return f"semantic search unavailable ({exc}); lexical results only"


def _passes_floor(candidate: _Candidate, floor: float, best: float) -> bool:
    """A hit found lexically always passes; one found only by meaning must beat the content-free anchors
    (`floor`, PARTIAL_FLOOR_RELIEF lower for a turn holding some of the query's words) and come within
    RELATIVE_COSINE_MARGIN of the query's best cosine (`best`); a floor above 1 lets none through."""
    if candidate.coverage >= PARTIAL_WORD_COVERAGE:
        floor -= PARTIAL_FLOOR_RELIEF
    return candidate.lexical or (
        candidate.best_cosine >= floor and candidate.best_cosine >= best - RELATIVE_COSINE_MARGIN
    )


def _vouched(candidate: _Candidate, justified: set[int], floor: float) -> bool:
    """True when a neighbour of the turn passed the floor (`justified`: their turn ids), unless the floor is
    above 1 (a query of code names: only the turns that hold them answer it)."""
    return floor <= 1 and any(turn_id in justified for turn_id in candidate.neighbours)


def hybrid_search(
    conn: sqlite3.Connection,
    config: Config,
    query: str,
    filters: Filters,
    limit: int = 10,
    mode: str = "hybrid",
    level: str | None = None,
    per_session: int = 1,
    embedder: Embedder | None = None,
    local_only: bool = False,
) -> SearchOutcome:
    """Search turns and mirrors for `query`; at most `per_session` results per session. `local_only`: never
    another computer's mirror as a result (what this computer answers another's search)."""
    levels = level_order(query, level)
    notes: list[str] = []
    weights = {lvl: CASCADE_WEIGHTS[i] for i, lvl in enumerate(levels)}
    fusion = _Fusion(config.search_rrf_k)
    floor = 0.0
    wanted = limit * max(per_session, 1) * 3
    searchable: list[str] = []
    query_vector: Background[tuple[Embedder, np.ndarray, dict[str, Scan]]] | None = None
    if mode in ("hybrid", "semantic"):
        try:
            backend_of(config)
            searchable = levels_with_vectors(conn, config, levels, filters)
            if searchable:  # otherwise nothing could be found by meaning: no model, no query vector
                # The model loads (in a new process) and embeds the query while the words are searched; in a
                # process that searched by meaning before, the vectors are scanned then too.
                shared = SharedScans(_searched_indexes(conn, config, searchable))
                query_vector = Background(partial(_embedded_and_scanned, config, embedder, query, shared))
                if mode == "semantic":  # nothing to do meanwhile but scan
                    shared.help()
                    query_vector.result()
            elif not levels_with_vectors(conn, config, levels, Filters()):
                notes.append("no vectors yet (run `memex embed`); nothing found by meaning")
            mode = mode if searchable or mode == "semantic" else "lexical"
        except EmbedderUnavailable as exc:
            notes.append(_unavailable(exc))
            mode, searchable, query_vector = "lexical", [], None
    if mode in ("hybrid", "lexical"):
        if "chunk" in weights or "turn" in weights:  # lexical hits are chunk matches, grouped to turns
            # Words weigh as much as meaning's two fine lists together (chunks and turns mostly agree, so
            # meaning would otherwise count twice): LoCoMo dev Recall@10 +0.01 over the chunk weight alone.
            weight = weights.get("chunk", 0.0) + weights.get("turn", 0.0)
            rarity = TermRarity.of(conn)  # the words' counts, read once for both
            hits = search_chunks(conn, query, filters, wanted, stems=True, rarity=rarity)
            texts = chunk_texts(conn, [hit.chunk_id for hit in hits])
            # Ranked again with one BM25 term per word (its forms together), as FTS5 cannot (`search.wordrank`).
            hits = rerank(conn, query, hits, texts, rarity)
            coverage = word_coverage(conn, query, texts, rarity)
            for hit in hits:
                share = coverage.get(hit.chunk_id, Coverage(0.0, 0.0))
                candidate = fusion.add_turn(
                    hit.turn_id, "lexical", hit.rank, weight, bm25=hit.score, coverage=share.whole
                )
                candidate.lexical = share.whole >= MIN_WORD_COVERAGE
                candidate.chunk_id = hit.chunk_id
                candidate.paragraph = share.paragraph
                candidate.coverage = share.whole
        if "session" in weights:
            for rank, found in enumerate(search_mirrors(conn, query, filters, wanted), 1):
                fusion.add_session(
                    found["mirror_id"], found["session_id"], "mirror", rank, weights["session"], bm25=found["score"]
                )
    if query_vector is not None:
        try:
            shared.help()  # the vector's scans, beside the thread that embedded it
            embedder, vector, scans = query_vector.result()
        except EmbedderUnavailable as exc:
            notes.append(_unavailable(exc))
            mode, searchable = "lexical", []
    if mode in ("hybrid", "semantic") and searchable:
        from memex.search.anchors import semantic_floor

        assert embedder is not None
        # In hybrid mode a query of code names is answered by the turns that hold them (`--mode semantic`
        # still ranks by meaning alone).
        floor = 2.0 if mode == "hybrid" and names_only(query) else semantic_floor(config, embedder, vector)
        lists = _semantic_lists(conn, config, embedder, vector, filters, searchable, wanted, scans)
        chunk_turn = _owners(conn, "chunks", [n.owner_id for n in lists.get("chunk", [])], "turn_id")
        best_chunk: dict[int, Neighbour] = {}  # turn id -> its nearest chunk, in order of distance
        for neighbour in lists.get("chunk", []):
            turn_id = chunk_turn.get(neighbour.owner_id)
            if turn_id is not None:
                best_chunk.setdefault(turn_id, neighbour)
        for rank, (turn_id, neighbour) in enumerate(best_chunk.items(), 1):
            candidate = fusion.add_turn(turn_id, "chunk", rank, weights["chunk"], cosine=neighbour.cosine)
            candidate.best_cosine = max(candidate.best_cosine, neighbour.cosine)
            candidate.chunk_id = candidate.chunk_id if candidate.lexical else neighbour.owner_id
        for rank, neighbour in enumerate(lists.get("turn", []), 1):
            candidate = fusion.add_turn(neighbour.owner_id, "turn", rank, weights["turn"], cosine=neighbour.cosine)
            candidate.best_cosine = max(candidate.best_cosine, neighbour.cosine)
        sessions = _owners(conn, "mirrors", [n.owner_id for n in lists.get("session", [])], "session_id")
        for rank, neighbour in enumerate(lists.get("session", []), 1):
            if neighbour.owner_id in sessions:
                fusion.add_session(
                    neighbour.owner_id,
                    sessions[neighbour.owner_id],
                    "session",
                    rank,
                    weights["session"],
                    cosine=neighbour.cosine,
                )
    places = _places(conn, list(fusion.turns))  # each turn's session, and where in it (for the neighbours)
    for turn_id, candidate in list(fusion.turns.items()):
        if turn_id not in places:
            del fusion.turns[turn_id]
        else:
            candidate.session_id = places[turn_id][0]
    for candidate in fusion.turns.values():  # words that stand together in a paragraph answer together
        candidate.score *= 1 + PARAGRAPH_LIFT * candidate.paragraph
    _lend_to_neighbours(conn, fusion, places)
    _lift_named_days(conn, fusion, query)
    # A session found only as a whole is a result of its own when it is known only by its mirror (another
    # computer's), or when the question is about whole sessions (coarse first); otherwise its weight
    # only lifts the turns of it that were found.
    local = _local_sessions(conn, list(fusion.sessions))
    standalone = set(fusion.sessions) if levels[0] == "session" else set(fusion.sessions) - local
    if local_only:
        standalone &= local
    ranked = fusion.fused(standalone)
    best = max((c.best_cosine for c in ranked), default=0.0)
    passed = {c.key for c in ranked if _passes_floor(c, floor, best)}
    justified = {turn_id for kind, turn_id in passed if kind == "turn"}
    chosen: list[_Candidate] = []
    per: dict[str, int] = {}
    for candidate in ranked:
        if per.get(candidate.session_id, 0) >= per_session:
            continue
        if candidate.key not in passed and not _vouched(candidate, justified, floor):
            continue
        per[candidate.session_id] = per.get(candidate.session_id, 0) + 1
        chosen.append(candidate)
        if len(chosen) == limit:
            break
    return SearchOutcome(_render(conn, query, chosen), mode, levels, notes)


def _render(conn: sqlite3.Connection, query: str, chosen: list[_Candidate]) -> list[dict[str, Any]]:
    """Result rows: the turn (with its session's fields) or the mirror, its score and its parts."""
    turns = turns_by_ids(conn, [c.key[1] for c in chosen if c.key[0] == "turn"])
    chunks = chunk_texts(conn, [c.chunk_id for c in chosen if c.chunk_id is not None])
    mirrors = {h["mirror_id"]: h for h in mirror_hits(conn, [c.key[1] for c in chosen if c.key[0] == "mirror"], query)}
    results = []
    for candidate in chosen:
        explain = {"fused": round(candidate.score, 6), **candidate.parts}
        if candidate.key[0] == "turn":
            turn = turns[candidate.key[1]]
            matched = chunks.get(candidate.chunk_id) if candidate.chunk_id else None
            if matched is None:
                matched = excerpt(turn["full_text"], query)
            results.append(
                {
                    **turn,
                    "source": "turn",
                    "score": round(candidate.score, 6),
                    "matched_chunk": matched,
                    "spans": spans_json(matched, query),
                    "explain": explain,
                }
            )
        else:
            results.append({**mirrors[candidate.key[1]], "score": round(candidate.score, 6), "explain": explain})
    return results
