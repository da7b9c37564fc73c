"""Peak memory of `memex index` on a transcript holding one very long line.

    uv run python bench/long_line.py                  # a 50 MB line of each kind
    uv run python bench/long_line.py --size-mb 20 --kind prompt

Each run is a fresh `memex index FOLDER --no-embed --json` in its own process (so its peak resident set
is its own): the folder holds two short real sessions and one session with a line of the given kind and
size (a user prompt, a tool result, a pasted image, or a tool call whose input is a long list of small
values: JSON's worst case for memory). The table gives the peak RSS, the RSS of the
same run without the long line (the baseline), and whether the long line was indexed or skipped as over
`max_line_bytes`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude"
SMALL = [FIXTURES / "misc" / "tiny-conversation.jsonl", FIXTURES / "misc" / "short-conversation.jsonl"]
KINDS = ["prompt", "tool-result", "image", "structured"]
SID = "5a5a5a5a-1111-2222-3333-444444444444"
# Measures the peak RSS of the `memex index` it runs (ru_maxrss is in KiB on Linux).
_RUNNER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.write(done.stdout.decode())
sys.stderr.write(done.stderr.decode()[-2000:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
"""


def _record(kind: str, size: int) -> dict[str, object]:
    base = {"type": "user", "sessionId": SID, "uuid": "u-long", "timestamp": "2026-03-01T10:00:01.000Z", "cwd": "/p"}
    if kind == "prompt":
        words = ("the quick brown fox jumps over the lazy dog " * (size // 44 + 1))[:size]
        return {**base, "message": {"role": "user", "content": words}}
    if kind == "tool-result":
        output = ("x" * 79 + "\n") * (size // 80 + 1)
        block = {"type": "tool_result", "tool_use_id": "t1", "content": output[:size]}
        return {**base, "message": {"role": "user", "content": [block]}}
    if kind == "structured":  # a tool call whose input is a long list of small values (JSON's worst case)
        items = ["ab"] * (size // 5)
        call = {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/p/a.json", "items": items}}
        return {**base, "type": "assistant", "message": {"id": "m0", "role": "assistant", "content": [call]}}
    data = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    return {**base, "message": {"role": "user", "content": [{"type": "text", "text": "look"}, image]}}


def _corpus(folder: Path, kind: str | None, size: int) -> None:
    project = folder / "-p"
    project.mkdir(parents=True)
    for path in SMALL:
        shutil.copy(path, project / path.name)
    lines = [
        {
            "type": "user",
            "sessionId": SID,
            "uuid": "u0",
            "timestamp": "2026-03-01T10:00:00.000Z",
            "cwd": "/p",
            "message": {"role": "user", "content": "a short first question"},
        },
    ]
    if kind:
        lines.append(_record(kind, size))
    lines.append(
        {
            "type": "assistant",
            "sessionId": SID,
            "uuid": "a1",
            "timestamp": "2026-03-01T10:00:02.000Z",
            "cwd": "/p",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "an answer"}]},
        }
    )
    with (project / f"{SID}.jsonl").open("w") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


def _measure(kind: str | None, size: int) -> tuple[int, dict[str, object]]:
    """(peak RSS in MB, the index summary)."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _corpus(root / "projects", kind, size)
        env = {**os.environ, "MEMEX_HOME": str(root / "home"), "MEMEX_INDEX_EMBEDS": "0"}
        memex = str(Path(sys.executable).with_name("memex"))
        command = [memex, "index", str(root / "projects"), "--no-embed", "--json"]
        done = subprocess.run([sys.executable, "-c", _RUNNER, *command], capture_output=True, env=env, text=True)
        peak_kib = int(done.stderr.strip().splitlines()[-1])
        try:
            summary = json.loads(done.stdout)
        except json.JSONDecodeError:
            summary = {"error": done.stderr.strip().splitlines()[-2:]}
        return peak_kib // 1024, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--kind", choices=KINDS, action="append")
    args = parser.parse_args()
    size = args.size_mb * 1_000_000
    baseline, _ = _measure(None, 0)
    table = Table(title=f"memex index with one {args.size_mb} MB line (baseline: {baseline} MB peak RSS)")
    for column in ("line", "peak RSS (MB)", "over baseline (MB)", "bad lines", "turns", "exit"):
        table.add_column(column, justify="right" if column != "line" else "left")
    for kind in args.kind or KINDS:
        peak, summary = _measure(kind, size)
        table.add_row(
            kind,
            str(peak),
            str(peak - baseline),
            str(summary.get("bad_lines", "?")),
            str(summary.get("turns", "?")),
            "ok" if "error" not in summary else str(summary["error"])[:60],
        )
    Console().print(table)


if __name__ == "__main__":
    main()
