"""The Gemini CLI source: legacy JSON documents, event-sourced JSONL, subagents, project recovery."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus import GEMINI, GEMINI_JSONL, GEMINI_LEGACY, GEMINI_SUBAGENT, WEBSHOP_HASH
from memex.sources import gemini
from memex.sources.model import BadLine, Entry
from transcripts import GeminiChat


def entries_of(path: Path) -> list[Entry | BadLine | None]:
    return [parsed for _, parsed in gemini.read_entries(path)]


def good(path: Path) -> list[Entry]:
    return [e for e in entries_of(path) if isinstance(e, Entry)]


def test_discover_sessions_and_subagents() -> None:
    found = gemini.discover([GEMINI])
    assert [(t.path.name, t.session_id, t.subagent_id) for t in found] == [
        (GEMINI_LEGACY.name, "abcd1234-7f3e-4c21-9b8a-5d6e0f1a2b3c", None),
        (GEMINI_JSONL.name, "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b", None),
        (GEMINI_SUBAGENT.name, "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "k3x9q2"),
    ]
    assert [t.subagent_id for t in gemini.subagent_transcripts(GEMINI_JSONL)] == ["k3x9q2"]
    assert gemini.subagent_transcripts(GEMINI_LEGACY) == []


def test_legacy_document() -> None:
    entries = good(GEMINI_LEGACY)
    assert [e.line_index for e in entries] == list(range(17))  # header, 15 messages, closing metadata
    header, closing = entries[0], entries[-1]
    assert header.timestamp == "2025-09-01T10:00:07.214Z" and header.extra["project_hash"] == WEBSHOP_HASH
    assert closing.kind == "summary" and closing.timestamp == "2025-09-01T10:08:03.411Z"
    assert closing.extra["title"] == "Fix cart total rounding with Decimal and add a regression test"
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert len(prompts) == 4 and prompts[1] == "请帮我把购物车的总价计算改成使用 Decimal，并保留两位小数。"
    # Thoughts are thinking blocks, never text; tool calls are tool uses with their arguments.
    first_answer = entries[2]
    # (The call's result rides along as a tool_result block: read for pull request links, never text.)
    assert [b.kind for b in first_answer.blocks] == ["thinking", "tool_use", "tool_result"]
    assert first_answer.text == ""
    tool = first_answer.blocks[1].tool
    assert tool.name == "read_file" and tool.input["absolute_path"].endswith("src/webshop/cart.py")
    # The CLI's own notices are kept as data, not conversation.
    assert [(e.entry_type, e.kind) for e in entries if e.entry_type in ("error", "info")] == [
        ("error", "other"),
        ("info", "other"),
    ]


def test_jsonl_replay_upserts_and_rewinds() -> None:
    entries = good(GEMINI_JSONL)
    texts = [e.text for e in entries]
    # 13 message ids are written; the rewind removes the cursor question and its answer.
    assert len(entries) == 2 + 11
    assert not any("cursor-based" in t for t in texts) and not any("`createdAt`" in t for t in texts)
    assert sum(t.startswith("`GET /items` now accepts `?page=` (default 1)") for t in texts) == 1
    # A message re-appended with the same id keeps its place and takes the later copy.
    assert [e.uuid for e in entries[1:4]] == [
        "1f3a5c7e-9b0d-4e2f-8a6c-4e1b7d9f0a23",
        "7c2e9a14-5d3b-4f80-b1e6-0a9c8d7f2e35",
        "a5d8c3f1-2e7b-4c90-9f14-6b0e3a8d5c72",
    ]
    assert entries[-1].extra["title"] == "Add validated page/limit pagination to GET /items"


def test_session_context_is_not_a_prompt_but_names_the_project() -> None:
    entries = good(GEMINI_JSONL)
    context = entries[1]
    assert context.kind == "user_meta" and context.text.startswith("<session_context>")
    assert entries[0].cwd == "/Users/bob/code/inventory-api"
    assert (
        gemini.project_hash("/Users/bob/code/inventory-api")
        == json.loads(GEMINI_JSONL.read_text().splitlines()[0])["projectHash"]
    )
    first_prompt = next(e.text for e in entries if e.kind == "prompt")
    assert first_prompt == "Add page/limit pagination to GET /items in src/routes/items.ts"


def test_subagent_chat() -> None:
    entries = good(GEMINI_SUBAGENT)
    assert entries[0].extra["kind"] == "subagent" and entries[0].cwd == "/Users/bob/code/inventory-api"
    assert entries[1].kind == "prompt" and entries[1].text.startswith("Your task is to do a deep investigation")
    names = [b.tool.name for e in entries for b in e.blocks if b.tool]
    assert names == ["grep_search", "read_file", "complete_task"]


def test_project_from_registry_and_marker(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    chats = home / "tmp" / "webshop" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI_LEGACY, chats / GEMINI_LEGACY.name)
    assert good(chats / GEMINI_LEGACY.name)[0].cwd is None  # nothing names the folder yet
    (home / "projects.json").write_text(json.dumps({"projects": {"/home/alice/projects/webshop": "webshop"}}))
    assert good(chats / GEMINI_LEGACY.name)[0].cwd == "/home/alice/projects/webshop"
    (home / "projects.json").unlink()
    (chats.parent / ".project_root").write_text("/srv/webshop\n")
    assert good(chats / GEMINI_LEGACY.name)[0].cwd == "/srv/webshop"


def test_project_from_the_hash_of_a_known_folder(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    chats = home / "tmp" / WEBSHOP_HASH / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI_LEGACY, chats / GEMINI_LEGACY.name)
    # Another project's registry entry does not match; the webshop's path does (by its SHA-256).
    projects = {"/home/alice/other": "other", "/home/alice/projects/webshop": "webshop"}
    (home / "projects.json").write_text(json.dumps({"projects": projects}))
    assert good(chats / GEMINI_LEGACY.name)[0].cwd == "/home/alice/projects/webshop"


def test_checkpoint_replaces_the_message_list(tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "chats" / "session-x.jsonl", "s1")
    chat.turn("first question about herons", "herons answer")
    kept = chat.user("the compressed history")
    chat.write({"$set": {"messages": [kept], "lastUpdated": "2026-03-01T00:00:00Z"}})
    chat.turn("after the checkpoint", "answer after")
    assert [e.text for e in good(chat.path) if e.kind == "prompt"] == ["the compressed history", "after the checkpoint"]


def test_rewind_to_an_unknown_id_clears_everything(tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "chats" / "session-x.jsonl", "s1")
    chat.turn("gone soon", "gone too")
    chat.write({"$rewindTo": "no-such-id"})
    chat.turn("fresh start", "fresh answer")
    assert [e.text for e in good(chat.path) if e.kind == "prompt"] == ["fresh start"]


def test_injected_parts_commands_and_compression(tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "chats" / "session-x.jsonl", "s1")
    with_file = chat.user("explain @src/a.py\n--- Content from referenced files ---\nContent from @src/a.py:\nx = 1")
    hooked = chat.user("fix it")
    hooked["content"].append({"text": "<hook_context>lint output</hook_context>"})
    typed = chat.user("long expanded text")
    typed["displayContent"] = [{"text": "what I typed"}]
    snapshot = chat.user("<state_snapshot>we fixed a.py</state_snapshot>")
    ack = chat.gemini("Got it. Thanks for the additional context!")
    chat.write(with_file, hooked, typed, chat.user("/compress"), snapshot, ack)
    entries = good(chat.path)[1:-1]
    assert [(e.kind, e.text) for e in entries] == [
        ("prompt", "explain @src/a.py"),
        ("prompt", "fix it"),
        ("prompt", "what I typed"),
        ("user_meta", "/compress"),
        ("compact_summary", "<state_snapshot>we fixed a.py</state_snapshot>"),
        ("assistant", ""),
    ]


def test_bad_lines_in_jsonl(tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "chats" / "session-x.jsonl", "s1")
    chat.turn("first good prompt about otters", "otters answer")
    with chat.path.open("ab") as handle:
        handle.write(b'{"id":"m9","type":"user","content":[{"te\n')  # truncated
        handle.write(b"not json\n")
        handle.write(b"[1, 2]\n")
        handle.write(b'{"something":"else"}\n')
        handle.write(b'{"id":"m10","timestamp":"x","type":"user","content":42}\n')  # content of the wrong type
        handle.write(b'{"id":"m11","timestamp":"x","content":"no type"}\n')
        handle.write(b'{"id":"m12","timestamp":"x","type":"user","content":"caf\xe9 prompt"}\n')
        handle.write(b'{"id":"m13","timestamp":"x","type":"gemini","content":"' + b"y" * (10 * 1024 * 1024) + b'"}\n')
    chat.turn("last prompt", "last answer")
    parsed = entries_of(chat.path)
    bad = [e for e in parsed if isinstance(e, BadLine)]
    assert len(bad) == 6 and all(b.reason for b in bad)
    prompts = [e.text for e in parsed if isinstance(e, Entry) and e.kind == "prompt"]
    assert prompts == ["first good prompt about otters", "caf\ufffd prompt", "last prompt"]


def test_truncated_legacy_document_keeps_its_complete_messages(tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / GEMINI_LEGACY.name
    raw = GEMINI_LEGACY.read_bytes()
    path.write_bytes(raw[: raw.index(b"Add a regression test for the 0.105 case")])
    parsed = entries_of(path)
    bad = [e for e in parsed if isinstance(e, BadLine)]
    assert len(bad) == 1 and "invalid JSON" in bad[0].reason
    entries = [e for e in parsed if isinstance(e, Entry)]
    assert len(entries) == 2 + 7 and entries[0].session_id == "abcd1234-7f3e-4c21-9b8a-5d6e0f1a2b3c"
    assert [e.kind for e in entries].count("prompt") == 2


def test_empty_and_odd_files(tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    (chats / "session-empty.json").touch()
    assert entries_of(chats / "session-empty.json") == []
    (chats / "session-list.json").write_text("[1, 2, 3]")
    assert [type(e) for e in entries_of(chats / "session-list.json")] == [BadLine]
    (chats / "session-garbage.json").write_text("{{{{")
    assert [type(e) for e in entries_of(chats / "session-garbage.json")] == [BadLine]


def test_one_file_per_session(tmp_path: Path) -> None:
    """A resumed legacy chat gets a `.jsonl` beside its `.json`; a migrated project folder is copied."""
    hashed = tmp_path / "tmp" / WEBSHOP_HASH / "chats"
    named = tmp_path / "tmp" / "webshop" / "chats"
    for folder in (hashed, named):
        folder.mkdir(parents=True)
        shutil.copy(GEMINI_LEGACY, folder / GEMINI_LEGACY.name)
    resumed = named / (GEMINI_LEGACY.stem + ".jsonl")
    document = json.loads(GEMINI_LEGACY.read_text())
    lines = [{k: v for k, v in document.items() if k != "messages"}, *document["messages"]]
    resumed.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (found,) = gemini.discover([tmp_path])
    assert found.path == resumed and len(found.aliases) == 2
    assert len([e for e in good(resumed) if e.kind == "prompt"]) == 4
