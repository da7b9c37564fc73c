"""Web viewer benchmark: each page of `memex web` over a real socket, on a store of 10,000 sessions.

    uv run python bench/web.py                          # 10,000 sessions of 3 turns, 30 requests per page
    uv run python bench/web.py --sessions 1000 --requests 20
    uv run python bench/web.py --keep /tmp/wb           # index once, reuse the store on the next run

The sessions are Claude Code transcripts written here in Claude Code's record shapes, their prompts and
answers drawn from the real transcripts of ../shared/data (words recombined when there are too few), over
50 projects; they are indexed by the real pipeline (`Memex.index`, no embeddings: search is lexical). The
viewer runs in this process on 127.0.0.1; each request is a new connection, timed from connect to the last
byte. Prints p50 / p95 per page.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from corpus import claude_messages
from memex.api import Discovery, Memex
from memex.config import Config, load_config
from memex.web.server import WebServer

PROJECTS = 50
TURNS = 3
START = datetime(2025, 6, 1)


def real_texts() -> tuple[list[str], list[str]]:
    """(prompts, answers) of the real Claude Code transcripts, plain text only."""
    prompts, answers = [], []
    for kind, content in claude_messages():
        if kind == "user" and isinstance(content, str) and 10 < len(content) < 2_000:
            prompts.append(content)
        elif kind == "assistant" and isinstance(content, list):
            texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            answers.extend(t for t in texts if 10 < len(t) < 4_000)
    words = " ".join(prompts + answers).split() or ["memex", "search", "session", "index", "viewer"]
    rng = random.Random(7)
    while len(prompts) < 200 or len(answers) < 200:  # too few real texts: recombine their words
        prompts.append(" ".join(rng.choices(words, k=12)))
        answers.append(" ".join(rng.choices(words, k=60)))
    return prompts, answers


def write_sessions(root: Path, count: int) -> None:
    prompts, answers = real_texts()
    rng = random.Random(11)
    for n in range(count):
        project = f"/home/dev/project-{n % PROJECTS:02d}"
        session_id = f"{n:08x}-0000-4000-8000-{n:012x}"
        folder = root / project.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for turn in range(TURNS):
            stamp = (START + timedelta(minutes=7 * n, seconds=turn)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            base = {
                "sessionId": session_id,
                "cwd": project,
                "version": "2.1.100",
                "timestamp": stamp,
                "isSidechain": False,
            }
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": f"{session_id}-u{turn}",
                    "message": {"role": "user", "content": rng.choice(prompts)},
                }
            )
            message = {
                "role": "assistant",
                "id": f"msg_{n}_{turn}",
                "content": [{"type": "text", "text": rng.choice(answers)}],
            }
            lines.append({**base, "type": "assistant", "uuid": f"{session_id}-a{turn}", "message": message})
        (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def config_for(home: Path) -> Config:
    return load_config(
        {
            "MEMEX_HOME": str(home / "memex"),
            "MEMEX_COMPUTER": "bench",
            "MEMEX_CLAUDE_DIR": str(home / "claude"),
            "MEMEX_INDEX_EMBEDS": "0",
        }
    )


def timed_get(server: WebServer, path: str) -> float:
    began = time.perf_counter()
    connection = http.client.HTTPConnection(server.host, server.port, timeout=120)
    connection.request("GET", path)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    if answer.status != 200:
        raise SystemExit(f"{path}: HTTP {answer.status}")
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30, help="requests per page")
    parser.add_argument("--keep", type=Path, help="a folder to build the store in once and reuse")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="memex-web-bench-"))
    config = config_for(home)
    console = Console()
    if not config.db_path.exists():
        began = time.perf_counter()
        write_sessions(home / "claude", args.sessions)
        with Memex(config) as memex:
            found = memex.discover([home / "claude"], ["claude"])
            memex.index(Discovery(found.roots, found.transcripts))
        console.print(f"indexed {args.sessions} sessions in {time.perf_counter() - began:.0f} s")
    with Memex(config, readonly=True) as memex:
        sessions = memex.sessions(limit=args.requests)
        total = memex.stats().sessions
    rng = random.Random(3)
    word = "session"
    pages = {
        "sessions (100 newest)": lambda: "/",
        "sessions, one project": lambda: f"/?project=project-{rng.randrange(PROJECTS):02d}",
        "sessions, 1,000": lambda: "/?limit=1000",
        "conversation": lambda: f"/s/{rng.choice(sessions).session_id}",
        "turns": lambda: f"/s/{rng.choice(sessions).session_id}?turns=1",
        f"search '{word}' (lexical)": lambda: f"/search?q={word}&mode=lexical",
        "search, one project": lambda: f"/search?q={word}&mode=lexical&project=project-07",
        "forget (confirmation)": lambda: f"/s/{rng.choice(sessions).session_id}/forget",
    }
    server = WebServer(config)
    server.start()
    try:
        table = Table(title=f"memex web over {total:,} sessions ({args.requests} requests per page)")
        for column in ("page", "p50 ms", "p95 ms"):
            table.add_column(column, justify="left" if column == "page" else "right")
        for name, path in pages.items():
            timed_get(server, path())  # warm: templates compiled, pages of the store cached
            times = sorted(timed_get(server, path()) for _ in range(args.requests))
            p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
            table.add_row(name, f"{statistics.median(times):.1f}", f"{p95:.1f}")
        console.print(table)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
