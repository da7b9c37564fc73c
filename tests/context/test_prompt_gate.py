"""The recall gate: what is not worth a search, in the languages users write in."""

from __future__ import annotations

import pytest

from memex.context.gate import content_units, gate

MIN_UNITS = 3


@pytest.mark.parametrize(
    ("prompt", "reason"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        ("/compact", "slash command"),
        ("/model opus", "slash command"),
        ("/memex:recall how did we fix the login bug", "slash command"),
        ("<command-name>/clear</command-name>", "harness message"),
        ("<task-notification>background task done</task-notification>", "harness message"),
        ("[Request interrupted by user]", "harness message"),
        ("yes", "acknowledgement"),
        ("Yes!", "acknowledgement"),
        ("ok, thanks", "acknowledgement"),
        ("keep going", "acknowledgement"),
        ("Sounds good, go ahead.", "acknowledgement"),
        ("lgtm 👍", "acknowledgement"),
        ("thank you so much", "acknowledgement"),
        ("继续", "acknowledgement"),
        ("好的", "acknowledgement"),
        ("好的，继续吧", "acknowledgement"),
        ("谢谢！", "acknowledgement"),
        ("はい", "acknowledgement"),
        ("続けて", "acknowledgement"),
        ("はい、お願いします", "acknowledgement"),
        ("네", "acknowledgement"),
        ("계속", "acknowledgement"),
        ("네, 계속해주세요", "acknowledgement"),
        ("oui", "acknowledgement"),
        ("d'accord, merci", "acknowledgement"),
        ("vas-y", "acknowledgement"),
        ("weiter", "acknowledgement"),
        ("ja, mach weiter", "acknowledgement"),
        ("sí", "acknowledgement"),
        ("vale, gracias", "acknowledgement"),
        ("fix it", "too short"),
        ("why?", "too short"),
        ("run tests", "too short"),
        ("修复一下", "too short"),
    ],
)
def test_no_recall(prompt: str, reason: str) -> None:
    verdict = gate(prompt, MIN_UNITS)
    assert not verdict.recall and verdict.reason == reason


@pytest.mark.parametrize(
    "prompt",
    [
        "why does the build fail",
        "yes, and rename parse_config to load_config",
        "fix the flaky login test",
        "/home/dev/shop/src/app.py crashes on start",  # a path, not a slash command
        "怎么删除一个 git worktree",
        "这个函数为什么会崩溃",
        "このバグを直してください",
        "로그인 버그를 어떻게 고쳤지?",
        "pourquoi le build échoue",
        "warum schlägt der Build fehl",
        "por qué falla la compilación",
    ],
)
def test_recall(prompt: str) -> None:
    verdict = gate(prompt, MIN_UNITS)
    assert verdict.recall, (prompt, verdict)


def test_content_units_count_cjk_by_pairs() -> None:
    assert content_units("修复登录错误") == 3  # six characters, no acknowledgement
    assert content_units("好的，修复登录错误") == 3  # 好的 removed
    assert content_units("fix the login error") == 4
    assert content_units("ok fix the login error please") == 4
