"""Hook benchmark: Stop after a one-turn append, and UserPromptSubmit cold and warm, on a large store.

    uv run python bench/hooks.py                    # 100,000 turns, 60 runs per measure
    uv run python bench/hooks.py --turns 20000      # a quicker run
    uv run python bench/hooks.py --keep /tmp/hb     # build the store once, reuse it on the next run

Every run is a new `memex hook <Event>` process started the way Claude Code starts it (the venv's `memex`
executable, the event's JSON on stdin), so the figures include interpreter start-up and imports (bytecode
compiled first, as an installed package has it).

The store is built by generating synthetic Claude Code transcripts and ingesting them with memex's own
pipeline (not by inserting rows): prompts and answers are drawn from the words of the real transcripts in
../shared/data/claude, with their frequencies, plus identifiers and file paths, so FTS and the relevance
floor see realistic word statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cold_start import precompile
from corpus import claude_messages
from memex.config import load_config
from memex.hooks import warm
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "claude"
MEMEX = Path(sys.executable).parent / "memex"
TURNS_PER_SESSION = 100
PROJECTS = 25
STAMP = "2026-03-01T10:00:00.000Z"


def vocabulary() -> tuple[list[str], list[int]]:
    """Words of the real transcripts' user and assistant text, with their counts."""
    counts: Counter[str] = Counter()
    for _, content in claude_messages(SHARED):
        texts = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        for text in texts:
            counts.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z']{1,20}", text))
    words = [w for w, _ in counts.most_common(20_000)]
    return words, [counts[w] for w in words]


class Writer:
    """Writes synthetic sessions, one JSONL line per record, in Claude Code's shapes."""

    def __init__(self, rng: random.Random, words: list[str], weights: list[int]) -> None:
        self.rng = rng
        self.words, self.cumulative = words, []
        total = 0
        for weight in weights:
            total += weight
            self.cumulative.append(total)
        self.identifiers = [f"{rng.choice(words)}_{rng.choice(words)}" for _ in range(3000)]
        self.paths = [f"src/{rng.choice(words)}/{rng.choice(words)}.py" for _ in range(2000)]

    def sentence(self, low: int, high: int) -> str:
        words = self.rng.choices(self.words, cum_weights=self.cumulative, k=self.rng.randint(low, high))
        if self.rng.random() < 0.5:
            words.insert(self.rng.randrange(len(words)), self.rng.choice(self.identifiers))
        return " ".join(words)

    def session(self, folder: Path, cwd: str, turns: int) -> Path:
        session_id = str(uuid.UUID(int=self.rng.getrandbits(128)))
        path = folder / f"{session_id}.jsonl"
        base = {"sessionId": session_id, "cwd": cwd, "timestamp": STAMP, "isSidechain": False, "version": "2.1.100"}
        lines = [json.dumps({"type": "custom-title", "sessionId": session_id, "customTitle": self.sentence(3, 6)})]
        for n in range(turns):
            lines.extend(self.turn(base, n, cwd))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def turn(self, base: dict, n: int, cwd: str) -> list[str]:
        prompt = {**base, "type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": self.sentence(6, 30)}}
        content: list[dict] = [{"type": "text", "text": self.sentence(40, 160)}]
        if self.rng.random() < 0.4:
            tool = self.rng.choice(["Read", "Edit", "Write"])
            content.append(
                {
                    "type": "tool_use",
                    "id": f"t{n}",
                    "name": tool,
                    "input": {"file_path": f"{cwd}/{self.rng.choice(self.paths)}"},
                }
            )
        answer = {
            **base,
            "type": "assistant",
            "uuid": f"a{n}",
            "message": {"id": f"m{n}", "role": "assistant", "content": content},
        }
        return [json.dumps(prompt), json.dumps(answer)]


def build_store(work: Path, turns: int, seed: int = 7) -> tuple[Path, list[Path], Writer, float]:
    """Generate transcripts for `turns` turns and ingest them; returns home, transcripts, writer, seconds."""
    rng = random.Random(seed)
    words, weights = vocabulary()
    writer = Writer(rng, words, weights)
    projects = work / "projects"
    paths = []
    for n in range(max(1, turns // TURNS_PER_SESSION)):
        project = n % PROJECTS
        folder = projects / f"-home-bench-project{project}"
        folder.mkdir(parents=True, exist_ok=True)
        paths.append(writer.session(folder, f"/home/bench/project{project}", TURNS_PER_SESSION))
    home = work / "home"
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    started = time.perf_counter()
    index_transcripts(conn, config, discover({"claude": [projects]}))
    seconds = time.perf_counter() - started
    conn.close()
    return home, paths, writer, seconds


def run_hook(event: str, payload: dict, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    result = subprocess.run(
        [str(MEMEX), "hook", event], input=json.dumps(payload).encode(), capture_output=True, env=env
    )
    elapsed = (time.perf_counter() - started) * 1000
    if result.returncode != 0:
        raise SystemExit(f"{event} exited {result.returncode}: {result.stderr.decode()}")
    return elapsed, result.stdout


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


def last_runs(home: Path, count: int) -> list[dict]:
    from memex.hooks.log import recent

    return recent(home, count)


def bench_stop(
    home: Path, paths: list[Path], writer: Writer, runs: int, env: dict[str, str]
) -> tuple[list[float], list[float]]:
    """A one-turn append to a 100-turn session, then its Stop hook (a new process), `runs` times."""
    timings = []
    for n in range(runs):
        path = paths[n % len(paths)]
        base = {"sessionId": path.stem, "cwd": "/home/bench/x", "timestamp": STAMP, "isSidechain": False}
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(writer.turn(base, 10_000 + n, "/home/bench/x")) + "\n")
        payload = {
            "session_id": path.stem,
            "transcript_path": str(path),
            "cwd": "/home/bench/x",
            "hook_event_name": "Stop",
        }
        elapsed, out = run_hook("Stop", payload, env)
        assert out == b""
        timings.append(elapsed)
    logged = last_runs(home, runs)
    errors = [r for r in logged if r.get("status") != "ok" or r.get("files") != 1]
    if errors:
        raise SystemExit(f"Stop hook failures: {errors[:3]}")
    return timings, [r["ms"] for r in logged]


def prompts(home: Path, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(asking session, prompt) pairs: words taken from a random stored prompt, asked from another session."""
    config = load_config({"MEMEX_HOME": str(home)})
    conn = connect(config.db_path)
    rows = conn.execute(
        "SELECT session_id, prompt_text FROM turns WHERE kind = 'prompt' ORDER BY random() LIMIT ?", (count * 2,)
    ).fetchall()
    sessions = [r[0] for r in conn.execute("SELECT session_id FROM sessions LIMIT 200")]
    conn.close()
    chosen = []
    for session_id, text in rows[:count]:
        words = text.split()
        start = rng.randrange(max(1, len(words) - 8))
        prompt = " ".join(words[start : start + rng.randint(6, 12)])
        asking = rng.choice([s for s in sessions if s != session_id])
        chosen.append((asking, prompt))
    return chosen


def bench_prompts(home: Path, cases: list[tuple[str, str]], envs: dict[str, dict[str, str]]) -> dict[str, dict]:
    """Each prompt through each path in turn (cold, then warm), so both see the same machine load."""
    results = {path: {"timings": [], "injected": 0, "inner": []} for path in envs}
    for asking, prompt in cases:
        payload = {"session_id": asking, "cwd": "/home/bench/project3", "hook_event_name": "UserPromptSubmit"}
        for path, env in envs.items():
            elapsed, out = run_hook("UserPromptSubmit", {**payload, "prompt": prompt}, env)
            logged = last_runs(home, 1)[-1]
            if logged.get("status") == "error" or logged.get("path") != path:
                raise SystemExit(f"UserPromptSubmit did not take the {path} path: {logged}")
            results[path]["timings"].append(elapsed)
            results[path]["injected"] += bool(out)
            results[path]["inner"].append(logged["ms"])
    return results


def bench_pre_tool(home: Path, runs: int, env: dict[str, str]) -> list[float]:
    config = load_config({"MEMEX_HOME": str(home)})
    conn = connect(config.db_path)
    rows = conn.execute(
        "SELECT fm.file_path, s.project_dir FROM file_mentions fm JOIN sessions s USING (session_id) "
        "ORDER BY random() LIMIT ?",
        (runs,),
    ).fetchall()
    conn.close()
    timings = []
    for n, (file_path, project) in enumerate(rows):
        payload = {
            "session_id": f"bench-{n}",
            "cwd": project,
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{project}/{file_path}"},
        }
        timings.append(run_hook("PreToolUse", payload, env)[0])
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000, help="turns in the store (default 100,000)")
    parser.add_argument("--runs", type=int, default=60, help="runs per measure (default 60)")
    parser.add_argument("--keep", type=Path, help="build the store in this folder and keep it (reused if present)")
    args = parser.parse_args()
    precompile()  # as an installed package is: a hook process compiling edited modules costs it ~20 ms
    console = Console(width=150)
    temp = None
    if args.keep:
        work = args.keep
        work.mkdir(parents=True, exist_ok=True)
    else:
        temp = tempfile.TemporaryDirectory(prefix="memex-hooks-bench-")
        work = Path(temp.name)
    try:
        home = work / "home"
        if (home / "memex.db").exists():
            console.print(f"reusing the store in {home}", style="dim")
            rng = random.Random(7)
            writer = Writer(rng, *vocabulary())
            paths = sorted((work / "projects").rglob("*.jsonl"))
            build_seconds = None
        else:
            console.print(f"generating and ingesting {args.turns:,} turns …", style="dim")
            home, paths, writer, build_seconds = build_store(work, args.turns)
        config = load_config({"MEMEX_HOME": str(home)})
        conn = connect(config.db_path)
        stored_turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        stored_chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        conn.close()
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "CLAUDE_"))}
        base_env["MEMEX_HOME"] = str(home)
        # The store's vectors are not computed here (bench/search.py measures that): a Stop hook must not
        # start a background worker on a 100k-turn backlog in the middle of the measurement.
        base_env["MEMEX_INDEX_EMBEDS"] = "0"
        cold_env = {**base_env, "MEMEX_WARM_IDLE_SECONDS": "0"}
        warm_env = {**base_env, "MEMEX_WARM_IDLE_SECONDS": "300"}

        console.print("Stop after a one-turn append …", style="dim")
        stop, stop_inner = bench_stop(home, paths, writer, args.runs, cold_env)
        cases = prompts(home, args.runs, random.Random(11))
        console.print("UserPromptSubmit, cold (no warm server) and warm (through it), alternating …", style="dim")
        # The server gets the warm hooks' settings (a server started with others would answer them `stale`).
        warm_config = load_config(warm_env)
        warm.spawn(warm_config, warm_env)
        deadline = time.monotonic() + 30
        while warm.ask(warm_config, "ping", {}).answer is None:
            if time.monotonic() > deadline:
                raise SystemExit("the warm server did not start")
            time.sleep(0.1)
        run_hook("UserPromptSubmit", {"session_id": "w", "prompt": cases[0][1]}, warm_env)  # its first query
        try:
            prompt_runs = bench_prompts(home, cases, {"cold": cold_env, "warm": warm_env})
        finally:
            warm.ask(warm_config, "shutdown", {})
        console.print("PreToolUse (Read) …", style="dim")
        pre_tool = bench_pre_tool(home, args.runs, cold_env)
    finally:
        if temp is not None:
            temp.cleanup()

    table = Table(
        title=f"memex hooks benchmark — {stored_turns:,} turns, {stored_chunks:,} chunks, {args.runs} runs each"
    )
    table.add_column("hook (new process each run)")
    table.add_column("p50", justify="right")
    table.add_column("p95", justify="right")
    table.add_column("inside the hook p50", justify="right")
    table.add_column("target", justify="right")
    table.add_column("notes")

    def row(label: str, values: list[float], inner: list[float] | None, target: str, note: str) -> None:
        p50, p95 = percentiles(values)
        inner_p50 = f"{statistics.median(inner):.0f} ms" if inner else ""
        table.add_row(label, f"{p50:.0f} ms", f"{p95:.0f} ms", inner_p50, target, note)

    row("Stop, one turn appended", stop, stop_inner, "p95 < 150 ms", "ingests inline; never uses the warm server")
    for path, target in (("warm", "p95 < 300 ms"), ("cold", "")):
        result = prompt_runs[path]
        note = f"{result['injected']}/{len(cases)} prompts got context"
        row(f"UserPromptSubmit, {path}", result["timings"], result["inner"], target, note)
    row("PreToolUse (Read)", pre_tool, None, "", "file history lookup, no model")
    console.print(table)
    how = "synthetic transcripts ingested by memex's pipeline"
    if build_seconds is not None:
        how += f" in {build_seconds:.0f} s ({stored_turns / build_seconds:,.0f} turns/s)"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    console.print(
        f"store: {how}; {os.cpu_count()} CPUs, load average {load}; python {sys.version.split()[0]}", style="dim"
    )


if __name__ == "__main__":
    sys.exit(main())
