"""`memex export`: one conversation as Markdown, JSON or HTML, secrets redacted, HTML escaped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from corpus import SLAY
from transcripts import ClaudeSession, simple_turn, text

SESSION = "7b9e2c1a-0000-4000-8000-00000000e5e5"
KEY = "sk-ant-api03-" + "Q" * 93 + "AA"
MARKDOWN_ANSWER = (
    "## The fix\n\n- escape it\n- [docs](https://docs.python.org/3/library/html.html) and "
    "[not this](javascript:alert(1)) <img src=x onerror=alert(1)>\n\n"
    "```python\nprint(html.escape(s))\n```\n\n| before | after |\n| --- | --- |\n| `<b>` | `&lt;b&gt;` |\n"
)


@pytest.fixture
def shared(run, tmp_path: Path) -> str:
    folder = tmp_path / "claude-projects" / "-home-dev-shop"
    folder.mkdir(parents=True)
    session = ClaudeSession(folder / f"{SESSION}.jsonl", SESSION)
    simple_turn(session, "why does <script>alert(1)</script> render & break the page?", "Escape it: use html.escape.")
    session.write(session.prompt(f"my key is {KEY}, rotate it"))
    session.write(session.assistant(text("Rotated; never paste keys.")))
    session.write(session.prompt("thanks"))
    session.write(session.assistant(text(MARKDOWN_ANSWER)))
    assert run("index").exit_code == 0
    return SESSION


def test_markdown_is_the_conversation_with_secrets_redacted(run, shared: str) -> None:
    result = run("export", shared[:8])
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("# why does <script>") and f"_{SESSION} · claude · on testbox" in out
    assert out.count("\n## User") == 3 and out.count("\n## Assistant") == 3
    assert "Escape it: use html.escape." in out and KEY not in out and "rotate it" in out


def test_json_is_a_stable_document(run, shared: str) -> None:
    data = json.loads(run("export", shared[:8], "--format", "json").stdout)
    assert data["session_id"] == SESSION and data["agent"] == "claude" and data["computer"] == "testbox"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert data["redacted"] >= 1 and KEY not in json.dumps(data)
    raw = json.loads(run("export", shared[:8], "--format", "json", "--no-redact").stdout)
    assert any(KEY in m["text"] for m in raw["messages"]) and raw["redacted"] == 0


def test_html_escapes_the_transcript_and_runs_nothing(run, shared: str, tmp_path: Path) -> None:
    target = tmp_path / "out" / "conversation.html"
    target.parent.mkdir()
    result = run("export", shared[:8], "--format", "html", "-o", str(target))
    assert result.exit_code == 0 and str(target) in result.stderr
    page = target.read_text()
    assert target.stat().st_mode & 0o777 == 0o600
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page

    class Tags(HTMLParser):
        seen: set[str] = set()  # noqa: RUF012
        links: list[str] = []  # noqa: RUF012

        def handle_starttag(self, tag: str, attrs: list) -> None:
            self.seen.add(tag)
            assert not any(name.startswith("on") or name == "src" for name, _ in attrs)
            self.links += [value for name, value in attrs if name == "href"]

    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.seen and "img" not in parser.seen
    # The answer's Markdown is rendered as the viewer renders it: a heading, a list, a code block, a table,
    # and only the safe link (the javascript: one and the raw <img> stay text).
    assert {"h5", "li", "pre", "code", "table"} <= parser.seen
    assert parser.links == ["https://docs.python.org/3/library/html.html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "@media (prefers-color-scheme:dark)" in page  # light or dark as the reader's system is


def test_a_real_session_exports(run, tmp_path: Path) -> None:
    folder = tmp_path / "claude-projects" / "-Users-chloe-c-slay"
    folder.mkdir(parents=True)
    shutil.copy(SLAY, folder / SLAY.name)
    assert run("index").exit_code == 0
    for fmt in ("md", "json", "html"):
        result = run("export", SLAY.stem[:8], "--format", fmt)
        assert result.exit_code == 0 and len(result.stdout) > 500


@pytest.mark.parametrize(("args", "message"), [(["nosuch"], "no session matches"), (["x", "--format", "pdf"], "pdf")])
def test_mistakes_are_one_line(run, shared: str, args, message) -> None:
    result = run("export", *args)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("where", "message"), [("missing/x.md", "No such file"), ("/dev/full", "No space")])
def test_an_unwritable_output_is_one_line(run, shared: str, tmp_path: Path, where: str, message: str) -> None:
    """A missing folder or a full disk was an OSError's traceback."""
    result = run("export", shared, "-o", str(tmp_path / where))  # an absolute `where` stays itself
    assert result.exit_code == 2 and "cannot write" in result.stderr and message in result.stderr


HTML_WITHOUT_THE_VIEWER = """
import sys
from memex.export import Conversation, to_html
message = {"role": "assistant", "timestamp": None, "text": "**bold** and `code`"}
page = to_html(Conversation("s1", "t", "claude", "box", None, None, None, [message], 0))
assert "<strong>bold</strong>" in page and "<code>code</code>" in page, page
print(sorted(name for name in sys.modules if name.startswith("memex.web")))
"""


def test_html_export_renders_markdown_without_the_web_viewer() -> None:
    """The exported page renders Markdown as the viewer does, from a module of its own: exporting loads no
    part of the web viewer (its templates, routes and server)."""
    result = subprocess.run([sys.executable, "-c", HTML_WITHOUT_THE_VIEWER], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
