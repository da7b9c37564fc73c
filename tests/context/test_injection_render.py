"""Compact rendering within a token budget and Claude Code's character cap."""

from __future__ import annotations

from memex.context.render import head_tokens, render_compacted, render_recall, tail_tokens, turn_block, turn_parts
from memex.search.recall import Recalled
from memex.textutil import estimate_tokens


def turn(n: int = 1, answer_words: int = 20, **extra) -> dict:
    answer = " ".join(f"word{i}" for i in range(answer_words)) + " the conclusion."
    return {
        "session_id": f"abcdef{n:02d}-0000",
        "agent_id": "",
        "kind": "prompt",
        "prompt_text": f"question {n} about the ingress",
        "full_text": f"User: question {n} about the ingress\n\nAssistant: {answer}\n\nUser (next): that fixed it",
        "tool_summary": "Tools: Edit ×1\nFiles: deploy/ingress.yaml\nCommands: `kubectl apply`",
        "started_at": "2026-03-01T10:00:00.000Z",
        "project_dir": "/home/dev/shop",
        "title": "Ingress 502",
        **extra,
    }


def test_head_and_tail_tokens() -> None:
    assert head_tokens("one two  three\nfour", 2) == "one two …"
    assert head_tokens("one two", 5) == "one two"
    assert tail_tokens("one two three four", 2) == "… three four"


def test_turn_parts() -> None:
    assert turn_parts(turn()) == (
        "question 1 about the ingress",
        " ".join(f"word{i}" for i in range(20)) + " the conclusion.",
        "that fixed it",
    )
    assert turn_parts({"full_text": "Compaction summary: x", "prompt_text": "x"}) == ("x", "", "")


def test_turn_block_shows_header_end_of_answer_reaction_and_files() -> None:
    block = turn_block(turn(answer_words=500, agent_id="a9"), 120)
    lines = block.splitlines()
    assert lines[0] == '- 2026-03-01 · shop · "Ingress 502" · session abcdef01 [Subagent: a9]'
    assert lines[1] == "  User: question 1 about the ingress"
    assert lines[2].startswith("  Assistant: … ") and lines[2].endswith("the conclusion.")
    assert lines[3] == "  User then: that fixed it" and lines[4] == "  Files: deploy/ingress.yaml"
    assert estimate_tokens(block) <= 130


def test_recall_fits_the_budget_and_the_character_cap() -> None:
    hits = [Recalled(turn(n, answer_words=400), 1.0, 1.0) for n in range(5)]
    for budget in (150, 400, 1000):
        text = render_recall(hits, budget, 8000, 300)
        assert estimate_tokens(text) <= budget
    capped = render_recall(hits, 100_000, 1500, 100_000)
    assert 0 < len(capped) <= 1500
    assert render_recall([], 1000, 8000, 300) == ""
    assert render_recall(hits, 10, 8000, 300) == ""  # not even one turn fits


def test_compacted_turns_are_in_order_newest_kept() -> None:
    turns = [turn(n) for n in (5, 4, 3, 2, 1)]  # newest first, as queried
    text = render_compacted(turns, 200, 8000, 8)
    assert text.index("question 4") < text.index("question 5")
    assert "question 1 " not in text  # the oldest did not fit
    assert render_compacted([], 200, 8000, 8) == ""


def test_injected_turns_carry_no_secret_whatever_the_cut() -> None:
    """What a hook injects goes to the asking session's model provider: every secret format of the corpus,
    in a prompt, an answer, a reaction or a title, is redacted before the turn is cut to its budget."""
    from secret_corpus import CORPUS

    for secret in CORPUS:
        for place in ("prompt", "answer", "reaction", "title"):
            prompt = secret.text if place == "prompt" else "how do I deploy the ingress"
            answer = (secret.text if place == "answer" else "applied the manifest") + " and the conclusion."
            reaction = secret.text if place == "reaction" else "ok"
            stored = turn(
                prompt_text=prompt,
                full_text=f"User: {prompt}\n\nAssistant: {answer}\n\nUser (next): {reaction}",
                title=secret.text if place == "title" else "Ingress 502",
            )
            for budget in (60, 400, 4000):
                block = turn_block(stored, budget)
                assert secret.leaked_in(block) is None, (secret.name, place, budget, block)


def test_file_history_and_files_lines_carry_no_secret() -> None:
    """The PreToolUse injection for a file shows the start of each earlier turn's prompt, and a recalled
    turn its files line: both go to the asking session's model provider, redacted before their cut."""
    from memex.context.render import render_file_history
    from secret_corpus import CORPUS

    for secret in CORPUS:
        for place in ("start", "middle"):
            prompt = secret.text if place == "start" else f"change the ingress, the key is {secret.text} ok"
            row = turn(prompt_text=prompt, title=secret.text, tools=["changed"])
            text = render_file_history("deploy/ingress.yaml", [row], 400, 8000)
            assert text and secret.leaked_in(text) is None, (secret.name, place, text)
        files = turn(tool_summary=f"Tools: Bash ×1\nFiles: deploy/ingress.yaml {secret.text}")
        block = turn_block(files, 400)
        assert secret.leaked_in(block) is None, (secret.name, block)
