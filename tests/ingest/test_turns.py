"""Turns: prompt n + assistant work n + user message n+1, on real and generated transcripts."""

from __future__ import annotations

from pathlib import Path

from corpus import MISC, SLAY
from memex.ingest.turns import TurnBuilder
from memex.sources import claude
from memex.sources.model import Entry
from transcripts import ClaudeSession, simple_turn, text, thinking, tool_use


def build(path: Path) -> tuple[TurnBuilder, list]:
    builder = TurnBuilder()
    for _, parsed in claude.read_entries(path):
        if isinstance(parsed, Entry):
            builder.add(parsed)
    return builder, builder.finish()


def test_turn_spans_tool_lines_and_holds_next_prompt() -> None:
    _, turns = build(MISC / "representative_messages.jsonl")
    assert [t.kind for t in turns] == ["prompt"] * 4
    second = turns[1]
    # The answer after the Edit tool result belongs to the same turn, and the next prompt is its reaction.
    assert "parameterized decorator" in second.response_text
    assert second.reaction_text == "Can you run that example to show the output?"
    assert second.tool_counts["Edit"] == 1
    assert [t.provisional for t in turns] == [False, False, False, True]


def test_thinking_is_not_turn_text_and_snapshots_open_the_next_turn() -> None:
    builder, turns = build(SLAY)
    assert len(turns) == 2
    assert "Welcome! Great question" in turns[0].full_text()
    # Lines 8-9 (a system record, then the file-history-snapshot) come between the first answer and the
    # second prompt (line 10): they open the second turn.
    assert turns[1].line_index == 8
    assert builder.resume_line_index is None  # finish() was called; nothing is pending


def test_compaction_summary_is_its_own_turn(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "c1")
    simple_turn(session, "add a cart page", "Added cart.tsx")
    session.write(session.compact_boundary(), session.compact_summary("We built a cart page."))
    session.write(session.assistant(text("Continuing with checkout.")))
    simple_turn(session, "now the checkout", "Checkout done")
    builder, turns = build(session.path)
    assert [t.kind for t in turns] == ["prompt", "compaction", "prompt"]
    assert turns[0].reaction_text == ""  # a compaction is not the user's reaction
    assert "Continuing with checkout." in turns[1].full_text()
    assert turns[1].full_text().startswith("Compaction summary: This session is being continued")
    assert builder.compact_lines == [2]


def test_lines_of_one_message_are_merged_once(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "m1")
    session.write(session.prompt("explain"))
    # Some versions repeat earlier blocks of a message on its later lines.
    session.write(session.assistant(thinking("hmm"), message_id="msg_A"))
    session.write(session.assistant(text("Part one."), message_id="msg_A"))
    session.write(session.assistant(text("Part one."), tool_use("t1", "Bash", command="ls -la"), message_id="msg_A"))
    _, (turn,) = build(session.path)
    assert turn.response_text == "Part one."
    assert turn.tool_counts["Bash"] == 1 and turn.commands == ["ls -la"]


def test_tool_summary_and_files_relative_to_project(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "f1", cwd="/home/dev/shop")
    session.write(session.prompt("look at @src/cart.py and @docs/ please, mail me at a@b.com"))
    session.write(
        session.assistant(
            tool_use("t1", "Read", file_path="/home/dev/shop/src/cart.py"),
            tool_use("t2", "Grep", pattern="TODO", path="/home/dev/shop/src"),
            tool_use("t3", "Write", file_path="/etc/hosts", content="x"),
        )
    )
    _, (turn,) = build(session.path)
    files = turn.files("/home/dev/shop")
    assert ("src/cart.py", "at_mention") in files and ("docs", "at_mention") in files
    assert ("src/cart.py", "Read") in files and ("src", "Grep") in files and ("/etc/hosts", "Write") in files
    assert not any("b.com" in path for path, _ in files)
    summary = turn.tool_summary("/home/dev/shop")
    assert "Read ×1" in summary and "Files: src/cart.py, docs, src, /etc/hosts" in summary


def test_at_mentions_are_paths_not_npm_packages(tmp_path: Path) -> None:
    """`@scope/name` (lowercase, no extension) is an npm package, in an install command or pasted output;
    a path keeps its extension, its folder's `/`, its `./`, `~/` or `/`, or a capital npm forbids."""
    session = ClaudeSession(tmp_path / "s.jsonl", "f1", cwd="/home/dev/shop")
    session.write(
        session.prompt(
            "npm i -D @biomejs/biome @types/node@20 and pnpm add @socket.io/redis-adapter, then fix "
            "@typescript-eslint/no-explicit-any in @src/app.ts, @README.md, @docs/, @./x, @~/notes/todo, "
            "@/etc/hosts, @components/Button and @.github/workflows"
        )
    )
    _, (turn,) = build(session.path)
    mentioned = [path for path, tool in turn.files("/home/dev/shop") if tool == "at_mention"]
    assert mentioned == [
        "src/app.ts",
        "README.md",
        "docs",
        "x",
        "~/notes/todo",
        "/etc/hosts",
        "components/Button",
        ".github/workflows",
    ]


def test_a_lowercase_two_part_mention_is_a_file_unless_the_prompt_speaks_of_packages(tmp_path: Path) -> None:
    """`@bin/setup` (a script: no extension) is a file in a prompt that names no package manager; a version
    (`@types/node@20`) makes a package anywhere."""
    session = ClaudeSession(tmp_path / "s.jsonl", "f2", cwd="/home/dev/shop")
    session.write(session.prompt("run @bin/setup then @script/server, and look at @types/node@20"))
    _, (turn,) = build(session.path)
    assert [path for path, tool in turn.files("/home/dev/shop") if tool == "at_mention"] == [
        "bin/setup",
        "script/server",
    ]


def test_a_mention_in_a_usual_source_folder_is_a_file_though_the_prompt_speaks_of_packages(tmp_path: Path) -> None:
    """`@src/utils`, `@lib/db`, `@scripts/release` are the project's files beside `npm install`; a package
    named so is one with its version (`@app/cli@2`), and another scope stays a package."""
    session = ClaudeSession(tmp_path / "s.jsonl", "f3", cwd="/home/dev/shop")
    session.write(
        session.prompt(
            "after npm install, @src/utils and @lib/db fail; run @scripts/release, not @app/cli@2 or @acme/ui"
        )
    )
    _, (turn,) = build(session.path)
    assert [path for path, tool in turn.files("/home/dev/shop") if tool == "at_mention"] == [
        "src/utils",
        "lib/db",
        "scripts/release",
    ]


def test_packages_in_a_real_pasted_tool_output_are_not_mentions() -> None:
    """A real prompt pasting `knip` and `npx prisma` output: `@prisma/client@latest`, `@prisma/analytics`,
    `@biomejs/biome`, `@evilmartians/lefthook` are packages, and the turns mention no file."""
    _, turns = build(MISC / "large-conversation.jsonl")
    prompts = "\n".join(turn.prompt_text for turn in turns)
    for package in ("@prisma/client@latest", "@prisma/analytics", "@biomejs/biome", "@evilmartians/lefthook"):
        assert package in prompts
    assert [path for turn in turns for path, tool in turn.files(None) if tool == "at_mention"] == []
