"""Retrieval quality on LoCoMo: Recall@5, Recall@10 and MRR of lexical, semantic and hybrid search; hubs.

    uv run python bench/retrieval.py                  # the test half of LoCoMo (first run embeds ~6,000 texts)
    uv run python bench/retrieval.py --split dev      # the half the search was tuned on
    uv run python bench/retrieval.py --split all --conversations 3
    uv run python bench/retrieval.py --hubs           # also: hub sessions on the real transcripts
    uv run python bench/retrieval.py --split dev --mode hybrid   # one mode only (a third of the time)

Held-out split: the search's tunable numbers were chosen on the `dev` part (LoCoMo conversations 7-10) and
are reported on the `test` part (conversations 1-6), which they were never tried on.

LoCoMo (../shared/data/locomo, CC BY-NC 4.0: benchmark use) holds 10 long conversations between two
people, in sessions, with 1,986 questions whose `evidence` names the dialogue lines that answer them.
Each LoCoMo session becomes a Claude Code transcript (the first speaker as the user, the other as the
assistant) in a project folder per conversation, indexed and embedded by memex's own pipeline. A
question is searched in its conversation's project (`--project`); a result turn is relevant when it holds
an evidence line as its prompt or answer. Recall@k is the share of a question's evidence lines found in
the first k turns; MRR the mean of 1/rank of the first relevant turn. Every result of a session is kept
(`per_session` = k): the benchmark measures ranking, not the CLI's one-result-per-session view.
Adversarial questions (category 5) are reported apart.

Hubs (`--hubs`): the Claude Code and Codex transcripts of ../shared/data are indexed and embedded, then
asked questions they cannot answer (LoCoMo's questions about two people's lives, and code identifiers
none of them holds), one result per session, top 5 as `memex search` shows them. A hub is a session that
turns up for many such questions; the table gives how many questions returned anything, and the share of
the questions the most frequent sessions answered.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import re
import sqlite3
import statistics
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.config import load_config
from memex.embed.worker import drain, worker_lock
from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import MODES, hybrid_search
from memex.store.db import connect
from memex.store.queries import Filters

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
# Some conversations tune, the others test: `dev` is what the search's numbers were chosen on.
SPLITS = {"dev": slice(6, 10), "test": slice(0, 6), "all": slice(0, 10)}
# Code identifiers that none of the real transcripts holds (asked of them for the hub measure).
UNKNOWN_IDENTIFIERS = (
    "parse_config_file",
    "retryFetchOnFailure",
    "KafkaConsumerRebalanceListener",
    "useInfiniteScrollQuery",
    "compute_shipping_rates",
    "terraform_remote_state",
    "OAuth2PKCEVerifier",
    "render_invoice_pdf",
    "GraphQLSubscriptionResolver",
    "debounce_search_input",
    "kubernetes liveness probe timeout",
    "flaky selenium test on CI",
)

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
CACHE = Path(__file__).resolve().parent / ".cache" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"D\d+:\d+")
_WHEN = re.compile(r"(\d{1,2}):(\d{2}) (am|pm) on (\d{1,2}) (\w+), (\d{4})")
_MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}


def _timestamp(text: str, minute: int) -> str:
    match = _WHEN.search(text or "")
    if not match:
        return f"2023-01-01T00:{minute % 60:02d}:00.000Z"
    hour, mins, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half == "pm" else 0)
    total = hour_24 * 60 + int(mins) + minute
    return f"{year}-{_MONTHS.get(month, 1):02d}-{int(day):02d}T{(total // 60) % 24:02d}:{total % 60:02d}:00.000Z"


def write_transcripts(root: Path, conversations: list[dict]) -> dict[tuple[str, int], str]:
    """One Claude Code transcript per LoCoMo session; returns (session id, line index) -> dialogue id."""
    lines_to_dia: dict[tuple[str, int], str] = {}
    for conv in conversations:
        sample = conv["sample_id"]
        talk = conv["conversation"]
        first_speaker = talk["speaker_a"]
        project = f"/locomo/{sample}"
        for key in sorted((k for k in talk if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            session_id = f"{sample}-{key}"
            folder = root / project.replace("/", "-")
            folder.mkdir(parents=True, exist_ok=True)
            records = []
            for index, line in enumerate(talk[key]):
                user = line["speaker"] == first_speaker
                text = f"{line['speaker']}: {line['text']}"
                if line.get("blip_caption"):
                    text += f" [shares a photo: {line['blip_caption']}]"
                base = {
                    "type": "user" if user else "assistant",
                    "uuid": f"{session_id}-{index}",
                    "sessionId": session_id,
                    "cwd": project,
                    "timestamp": _timestamp(talk.get(f"{key}_date_time", ""), index),
                }
                if user:
                    base["message"] = {"role": "user", "content": text}
                else:
                    base["message"] = {
                        "id": f"m-{session_id}-{index}",
                        "role": "assistant",
                        "content": [{"type": "text", "text": text}],
                    }
                records.append(json.dumps(base))
                lines_to_dia[(session_id, index)] = line["dia_id"]
            path, text = folder / f"{session_id}.jsonl", "\n".join(records) + "\n"
            if not path.exists() or path.read_text() != text:  # an unchanged file is not indexed again
                path.write_text(text)
    return lines_to_dia


def adopt_copied_store(conn: sqlite3.Connection, transcripts: Path) -> int:
    """Point a store copied from another checkout at this one's transcripts; returns the sessions moved.

    The copy names its transcripts at their old place, where they still are: the indexer would take the
    ones here for copies beside their originals, sessions of their own, and every conversation would be
    asked of twice its sessions (dev hybrid Recall@10 0.819 -> 0.759, and its vectors embedded again)."""
    new = f"{transcripts}/"
    found = conn.execute(
        "SELECT transcript_path FROM sessions WHERE transcript_path LIKE '%/transcripts/%' "
        "AND substr(transcript_path, 1, ?) != ? LIMIT 1",
        (len(new), new),
    ).fetchone()
    if found is None:
        return 0
    here = conn.execute("SELECT 1 FROM sessions WHERE substr(transcript_path, 1, ?) = ? LIMIT 1", (len(new), new))
    if here.fetchone():
        raise SystemExit(f"{transcripts.parent} holds every conversation twice (a copy indexed before): delete it")
    old = found[0][: found[0].rindex("/transcripts/")] + "/transcripts/"
    with conn:
        moved = conn.execute(
            "UPDATE sessions SET transcript_path = ? || substr(transcript_path, ?) "
            "WHERE substr(transcript_path, 1, ?) = ?",
            (new, len(old) + 1, len(old), old),
        ).rowcount
        conn.execute(
            "UPDATE archive_streams SET source_path = ? || substr(source_path, ?) WHERE substr(source_path, 1, ?) = ?",
            (new, len(old) + 1, len(old), old),
        )
    return moved


def build_store(conversations: list[dict], home: Path) -> tuple[dict[int, set[str]], float]:
    """Index and embed the conversations (reused when already built); turn id -> its dialogue ids."""
    config = load_config({**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    lines_to_dia = write_transcripts(home / "transcripts", conversations)
    conn = connect(config.db_path)
    adopt_copied_store(conn, home / "transcripts")
    index_transcripts(conn, config, discover({"claude": [home / "transcripts"]}))
    started = time.perf_counter()
    with worker_lock(config.home):
        report = drain(conn, config)
    embed_seconds = time.perf_counter() - started
    if report.embedded:
        print(f"embedded {report.embedded} texts in {embed_seconds:.0f} s ({report.per_second:.1f}/s)")
    turn_dias: dict[int, set[str]] = {}
    for row in conn.execute("SELECT id, session_id, line_index, end_line_index, kind FROM turns"):
        dias = {lines_to_dia.get((row[1], i)) for i in range(row[2], row[3] + 1)}
        turn_dias[row[0]] = {d for d in dias if d}
    conn.close()
    return turn_dias, embed_seconds


def evaluate(
    conversations: list[dict], home: Path, turn_dias: dict[int, set[str]], modes: tuple[str, ...] = MODES
) -> dict:
    config = load_config({**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    scores: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in modes}
    latency: dict[str, list[float]] = defaultdict(list)
    for conv in conversations:
        filters = Filters(project=f"/locomo/{conv['sample_id']}")
        for qa in conv["qa"]:
            evidence = set(_DIA.findall(" ".join(qa.get("evidence", []))))
            if not evidence:
                continue
            group = "adversarial" if qa.get("category") == 5 else "all"
            for mode in modes:
                started = time.perf_counter()
                outcome = hybrid_search(conn, config, qa["question"], filters, limit=10, mode=mode, per_session=10)
                latency[mode].append(time.perf_counter() - started)
                ranked = [turn_dias.get(hit["id"], set()) for hit in outcome.results if hit["source"] == "turn"]
                for k in (5, 10):
                    found = set().union(*ranked[:k]) if ranked[:k] else set()
                    scores[mode][f"{group}:r{k}"].append(len(found & evidence) / len(evidence))
                first = next((i for i, dias in enumerate(ranked, 1) if dias & evidence), None)
                scores[mode][f"{group}:mrr"].append(1 / first if first else 0.0)
                category = CATEGORIES.get(qa.get("category"), "?")
                scores[mode][f"{category}:r10"].append(scores[mode][f"{group}:r10"][-1])
    conn.close()
    return {"scores": scores, "latency": latency}


def hubs(questions: list[str]) -> Table:
    """How often one real session turns up in the top 5 of questions it cannot answer."""
    home = CACHE.parent / "real"
    config = load_config({**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    index_transcripts(conn, config, discover({"claude": [SHARED / "claude"], "codex": [SHARED / "codex"]}))
    with worker_lock(config.home):
        drain(conn, config)
    total = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    table = Table(title=f"Hubs: {total} real sessions, questions they cannot answer, top 5 (one per session)")
    for column in ("questions", "count", "with any result", "results / question", "top session", "top 3 sessions"):
        table.add_column(column, justify="right" if column != "questions" else "left")
    for label, asked in (("LoCoMo (daily life)", questions), ("unknown code identifiers", UNKNOWN_IDENTIFIERS)):
        seen: dict[str, int] = defaultdict(int)
        answered = results = 0
        for question in asked:
            found = hybrid_search(conn, config, question, Filters(), limit=5).results
            answered += bool(found)
            results += len(found)
            for hit in found:
                seen[hit["session_id"]] += 1
        top = sorted(seen.values(), reverse=True)
        table.add_row(
            label,
            str(len(asked)),
            f"{answered / len(asked):.0%}",
            f"{results / len(asked):.2f}",
            f"{top[0] / len(asked):.0%}" if top else "—",
            " / ".join(f"{n / len(asked):.0%}" for n in top[:3]) or "—",
        )
    conn.close()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10, help="the first N conversations make the store")
    parser.add_argument("--split", choices=SPLITS, default="test", help="which of them are asked (default: test)")
    parser.add_argument("--hubs", action="store_true", help="also measure hub sessions on the real transcripts")
    parser.add_argument("--mode", choices=MODES, action="append", help="only this mode (repeatable; default: all)")
    args = parser.parse_args()
    conversations = json.loads(LOCOMO.read_text())[: args.conversations]
    home = CACHE / f"home-{args.conversations}"
    turn_dias, _ = build_store(conversations, home)
    asked = conversations[SPLITS[args.split]]
    modes = tuple(args.mode or MODES)
    result = evaluate(asked, home, turn_dias, modes)
    scores, latency = result["scores"], result["latency"]
    questions = len(scores[modes[0]]["all:r10"])
    table = Table(
        title=f"LoCoMo retrieval ({args.split} split: {len(asked)} conversations, {questions} questions, "
        "categories 1-4; turn-level relevance)"
    )
    for column in ("mode", "Recall@5", "Recall@10", "MRR", "adversarial R@10", "p50 ms"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for mode in modes:
        s = scores[mode]
        table.add_row(
            mode,
            f"{statistics.mean(s['all:r5']):.3f}",
            f"{statistics.mean(s['all:r10']):.3f}",
            f"{statistics.mean(s['all:mrr']):.3f}",
            f"{statistics.mean(s['adversarial:r10']):.3f}" if s["adversarial:r10"] else "—",
            f"{statistics.median(latency[mode]) * 1000:.0f}",
        )
    Console().print(table)
    by_category = Table(title="Recall@10 by question category")
    by_category.add_column("mode")
    for name in CATEGORIES.values():
        by_category.add_column(name, justify="right")
    for mode in modes:
        by_category.add_row(mode, *(f"{statistics.mean(scores[mode][f'{n}:r10']):.3f}" for n in CATEGORIES.values()))
    Console().print(by_category)
    if args.hubs:
        questions_asked = [qa["question"] for conv in conversations for qa in conv["qa"][::10]]
        Console().print(hubs(questions_asked))


if __name__ == "__main__":
    main()
