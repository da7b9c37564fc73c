"""Recall on Codex and Gemini sessions whose user side carries what the agent injected (lexical search).

    uv run python bench/injected.py --conversations 10
    PYTHONPATH=/tmp/memex-base/src uv run python bench/injected.py   # the same with another memex's parsers

LoCoMo's conversations (as in `bench/retrieval.py`) are written three ways, each in the format today's
agent writes, with what that agent puts on the user's side:
- Claude Code: plain prompts (the reference);
- Codex CLI 0.169: a developer message, the AGENTS.md instructions and `<environment_context>` as user
  messages, every prompt wrapped in the IDE extension's context (active file, open tabs, then
  `## My request for Codex:`), the prompt event as `item_completed`;
- Gemini CLI 0.61: `<session_context>` first, and every session resumed once half-way (`--resume` rewrites
  the list through `$set.messages` and appends a second header).
Each question is searched (lexical by default: no embedding needed; `--mode hybrid` embeds first) in its
conversation's project; a turn is relevant when it holds an evidence line. Titles are checked too: the
share of sessions whose title is the first thing the user said.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from memex.config import load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import hybrid_search
from memex.store.db import connect
from memex.store.queries import Filters

_HERE = Path(__file__).resolve()
LOCOMO = next(
    (p / "shared" / "data" / "locomo" / "locomo10.json" for p in _HERE.parents if (p / "shared" / "data").is_dir()),
    Path("locomo10.json"),
)
_DIA = re.compile(r"D\d+:\d+")
AGENTS_MD = (
    "# AGENTS.md instructions for {project}\n\n<INSTRUCTIONS>\n# Repository guidelines\n- Run the tests before "
    "you answer.\n- Keep answers short and cite files.\n</INSTRUCTIONS>"
)
ENVIRONMENT = "<environment_context>\n  <cwd>{project}</cwd>\n  <shell>bash</shell>\n</environment_context>"
IDE = (
    "# Context from my IDE setup:\n\n## Active file: src/app/settings.py\n\n## Open tabs:\n- settings.py: "
    "src/app/settings.py\n- README.md: README.md\n\n## My request for Codex:\n{text}"
)
SESSION_CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "- **Workspace Directories:**\n  - {project}\n</session_context>"
)


USER_LINES: set[str] = set()  # the texts written as the user's


def _lines(talk: dict, key: str) -> list[tuple[bool, str, str]]:
    first = talk["speaker_a"]
    out = []
    for line in talk[key]:
        text = f"{line['speaker']}: {line['text']}"
        if line.get("blip_caption"):
            text += f" [shares a photo: {line['blip_caption']}]"
        out.append((line["speaker"] == first, text, line["dia_id"]))
        if line["speaker"] == first:
            USER_LINES.add(text)
    return out


def _sessions(conversations: list[dict]):
    for conv in conversations:
        talk = conv["conversation"]
        keys = sorted((k for k in talk if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in keys:
            yield conv["sample_id"], f"{conv['sample_id']}-{key}", _lines(talk, key)


def _stamp(n: int) -> str:
    return f"2026-11-23T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"


def write_claude(root: Path, conversations: list[dict]) -> dict[tuple[str, str], str]:
    texts: dict[tuple[str, str], str] = {}
    for sample, sid, lines in _sessions(conversations):
        project = f"/locomo/{sample}"
        records = []
        for n, (user, text, dia) in enumerate(lines):
            base = {
                "uuid": f"{sid}-{n}",
                "sessionId": sid,
                "cwd": project,
                "timestamp": _stamp(n),
                "version": "2.1.330",
            }
            if user:
                records.append({**base, "type": "user", "message": {"role": "user", "content": text}})
            else:
                message = {"id": f"m-{sid}-{n}", "role": "assistant", "content": [{"type": "text", "text": text}]}
                records.append({**base, "type": "assistant", "message": message})
            texts[(sid, text)] = dia
        folder = root / project.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return texts


def write_codex(root: Path, conversations: list[dict]) -> dict[tuple[str, str], str]:
    texts: dict[tuple[str, str], str] = {}
    for number, (sample, _, lines) in enumerate(_sessions(conversations)):
        project = f"/locomo/{sample}"
        uuid = f"01a209d0-{number:04x}-7000-8000-{number:012x}"
        records: list[dict] = []

        def line(kind: str, payload: dict, n: int, records: list[dict] = records) -> None:
            records.append({"timestamp": _stamp(n), "ordinal": len(records), "type": kind, "payload": payload})

        def message(role: str, text: str, n: int) -> None:
            part = "output_text" if role == "assistant" else "input_text"
            line("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}, n)

        meta = {"session_id": uuid, "id": uuid, "timestamp": _stamp(0), "cwd": project, "cli_version": "0.169.0"}
        line("session_meta", meta, 0)
        message("developer", "<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>", 0)
        message("user", AGENTS_MD.format(project=project), 0)
        message("user", ENVIRONMENT.format(project=project), 0)
        for n, (user, text, dia) in enumerate(lines):
            if user:
                wrapped = IDE.format(text=text)
                message("user", wrapped, n)
                item = {"type": "UserMessage", "id": f"u{n}", "content": [{"type": "text", "text": wrapped}]}
                line("event_msg", {"type": "item_completed", "item": item}, n)
            else:
                message("assistant", text, n)
            texts[(uuid, text)] = dia
        folder = root / "2026" / "11" / "23"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-2026-11-23T00-00-{number % 60:02d}-{uuid}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return texts


def write_gemini(root: Path, conversations: list[dict]) -> dict[tuple[str, str], str]:
    texts: dict[tuple[str, str], str] = {}
    for number, (sample, _, lines) in enumerate(_sessions(conversations)):
        project = f"/locomo/{sample}"
        uuid = f"{number:08x}-0000-4000-8000-000000000000"
        header = {"sessionId": uuid, "projectHash": "0" * 64, "startTime": _stamp(0), "lastUpdated": _stamp(0)}
        records: list[dict] = [{**header, "kind": "main"}]
        messages = [
            {
                "id": "ctx",
                "timestamp": _stamp(0),
                "type": "user",
                "content": [{"text": SESSION_CONTEXT.format(project=project)}],
            }
        ]
        records.append({"$set": {"messages": list(messages)}})
        half = len(lines) // 2
        for n, (user, text, dia) in enumerate(lines):
            if n == half:  # --resume: a second header, the list rewritten, every time set to now
                records.append({**header, "startTime": _stamp(5000), "kind": "main"})
                rewritten = [
                    {
                        **m,
                        "timestamp": _stamp(5000),
                        "content": [{"text": m["content"]}] if isinstance(m["content"], str) else m["content"],
                    }
                    for m in messages
                ]
                records.append({"$set": {"messages": rewritten}})
            if user:
                record = {"id": f"m{n}", "timestamp": _stamp(n), "type": "user", "content": [{"text": text}]}
            else:
                record = {"id": f"m{n}", "timestamp": _stamp(n), "type": "gemini", "content": text, "thoughts": []}
            messages.append(record)
            records.append(record)
            texts[(uuid, text)] = dia
        folder = root / "tmp" / sample / "chats"
        folder.mkdir(parents=True, exist_ok=True)
        (folder.parent / ".project_root").write_text(project)
        (folder / f"session-2026-11-23T00-00-{uuid[:8]}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records)
        )
    return texts


def measure(agent: str, conversations: list[dict], home: Path, mode: str = "lexical") -> dict[str, float]:
    writer = {"claude": write_claude, "codex": write_codex, "gemini": write_gemini}[agent]
    transcripts = home / "transcripts"
    texts = writer(transcripts, conversations)
    first_prompts: dict[str, str] = {}
    for (session_id, text), _ in texts.items():  # in writing order: the first user line of each session
        if session_id not in first_prompts and text in USER_LINES:
            first_prompts[session_id] = text
    config = load_config({**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench", "MEMEX_INDEX_EMBEDS": "0"})
    conn = connect(config.db_path)
    index_transcripts(conn, config, discover({agent: [transcripts]}))
    if mode != "lexical":
        from memex.embed.worker import drain, worker_lock

        with worker_lock(config.home):
            drain(conn, config)
    turn_dias: dict[int, set[str]] = defaultdict(set)
    for turn_id, session_id, full_text in conn.execute("SELECT id, session_id, full_text FROM turns"):
        for (sid, text), dia in texts.items():
            if sid.startswith(session_id[:8]) and text in full_text:
                turn_dias[turn_id].add(dia)
    scores: dict[str, list[float]] = defaultdict(list)
    for conv in conversations:
        filters = Filters(project=f"/locomo/{conv['sample_id']}")
        for qa in conv["qa"]:
            evidence = set(_DIA.findall(" ".join(qa.get("evidence", []))))
            if not evidence or qa.get("category") == 5:
                continue
            outcome = hybrid_search(conn, config, qa["question"], filters, limit=10, mode=mode, per_session=10)
            ranked = [turn_dias.get(hit["id"], set()) for hit in outcome.results if hit["source"] == "turn"]
            for k in (5, 10):
                found = set().union(*ranked[:k]) if ranked[:k] else set()
                scores[f"r{k}"].append(len(found & evidence) / len(evidence))
            first = next((i for i, dias in enumerate(ranked, 1) if dias & evidence), None)
            scores["mrr"].append(1 / first if first else 0.0)
    for session_id, title in conn.execute("SELECT session_id, title FROM sessions"):
        expected = first_prompts.get(session_id, "")
        scores["title"].append(float(bool(expected) and (title or "").startswith(expected[:40])))
    conn.close()
    return {name: statistics.mean(values) for name, values in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--mode", default="lexical", help="lexical (default), or hybrid / semantic (embeds first)")
    parser.add_argument("--agents", default="claude,codex,gemini")
    args = parser.parse_args()
    conversations = json.loads(LOCOMO.read_text())[: args.conversations]
    import memex

    print(f"memex from {Path(memex.__file__).parent}")
    print(f"{args.mode}, {args.conversations} conversations")
    print(f"{'agent':8} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'titles = first prompt':>22}")
    for agent in args.agents.split(","):
        with tempfile.TemporaryDirectory() as folder:
            s = measure(agent, conversations, Path(folder), args.mode)
        print(f"{agent:8} {s['r5']:6.3f} {s['r10']:6.3f} {s['mrr']:6.3f} {s['title']:22.2f}")


if __name__ == "__main__":
    main()
