"""The viewer in a real browser: Playwright driving the system's Chromium (never a downloaded one), one
screenshot per page, what a person sees and clicks. Skipped where no `chromium` is installed (CI installs
Debian's: .ci/run)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from webtools import HOSTILE_SHOWN, LONG_SESSION, MARKDOWN_SESSION, MIRRORED, SUBAGENT_SESSION, Browser

CODEX_ID = "019a802a-aab1-7c31-9831-d2510c7a74a2"  # a MoonMind rollout: long spec paths
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (CI installs Debian's)"),
]


@pytest.fixture
def browser_page(web: Browser, tmp_path: Path) -> Iterator[tuple[object, str, Path]]:
    from playwright.sync_api import sync_playwright

    screens = Path(os.environ.get("MEMEX_SCREENSHOTS") or tmp_path / "screens")
    screens.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = chromium.new_page(viewport={"width": 1200, "height": 900})
            dialogs: list[str] = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            yield page, f"http://127.0.0.1:{web.server.port}", screens
            assert dialogs == []  # the hostile title never ran as script
        finally:
            chromium.close()


def shot(page, screens: Path, name: str) -> None:
    path = screens / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1_000


def test_every_page_in_a_browser(browser_page) -> None:
    page, base, screens = browser_page
    page.goto(base + "/")
    assert page.title() == "Sessions · memex"
    assert page.locator("tr.mirror").count() == 1 and "laptop" in page.locator("tr.mirror").inner_text()
    assert page.get_by_text(HOSTILE_SHOWN, exact=True).count() == 1  # shown as text, not run as markup
    shot(page, screens, "sessions")

    page.fill("input[name=agent]", "codex")
    page.click("form.filters button[type=submit]")
    assert "agent=codex" in page.url and page.locator("tbody tr").count() == 1
    shot(page, screens, "sessions-codex")

    page.goto(base + "/")
    page.click(f'a.title[href="/s/{SUBAGENT_SESSION}"]')
    assert page.locator("h1").inner_text().startswith("MOCK-READ /home/dev/proj/notes.md")
    assert page.locator("article.message.user").count() >= 2
    assert "Subagents (1)" in page.locator("section.subagents").inner_text()
    shot(page, screens, "conversation")

    page.click("text=Turns, tools and subagents")
    sub = page.locator("article.turn.subagent")
    assert sub.count() == 1 and "SUBAGENT-TASK" in sub.inner_text()
    tools = page.locator("details.tools").first
    assert not tools.locator("pre").is_visible()
    tools.locator("summary").click()
    assert tools.locator("pre").is_visible() and "Read ×1" in tools.locator("pre").inner_text()
    shot(page, screens, "turns")

    page.goto(f"{base}/s/{LONG_SESSION}")
    assert not page.get_by_text("TAIL-MARKER").is_visible()
    page.locator("details.more summary").first.click()
    assert page.get_by_text("TAIL-MARKER").is_visible()
    shot(page, screens, "folded")

    page.goto(base + "/search")
    page.fill("input.q", "zebra rotation")
    page.select_option("select[name=mode]", "lexical")
    page.click("form.filters button[type=submit]")
    marks = page.locator("ol.hits mark").all_inner_texts()
    assert {"zebra", "rotation"} <= {m.lower() for m in marks}
    shot(page, screens, "search")

    page.goto(f"{base}/s/{SUBAGENT_SESSION}/related")
    assert "memex find-related sessions" in page.locator("main").inner_text()
    shot(page, screens, "related")

    page.goto(f"{base}/s/{MIRRORED}")
    assert page.locator("h1").inner_text() == HOSTILE_SHOWN
    shot(page, screens, "mirror")


def test_markdown_in_a_browser(browser_page) -> None:
    """An answer's Markdown as a reader sees it: a heading, a list, a table; its code block keeps its lines
    and, on a phone, scrolls sideways within the message while the page does not; its script attempts show
    as text (the fixture fails on any dialog)."""
    page, base, screens = browser_page
    page.goto(f"{base}/s/{MARKDOWN_SESSION}")
    answer = page.locator("article.message.assistant")
    assert answer.locator("h5", has_text="Plan MD-HEADING").is_visible()
    assert answer.locator("li", has_text="first MD-ITEM").is_visible()
    assert answer.locator("td", has_text="MD-CELL").is_visible()
    assert answer.get_by_text('<script>alert("md-xss")</script>', exact=False).is_visible()
    code = answer.locator("pre code.language-python")
    assert code.evaluate("e => getComputedStyle(e.parentElement).whiteSpace") == "pre"
    shot(page, screens, "markdown")
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{base}/s/{MARKDOWN_SESSION}")
    assert code.evaluate("e => e.parentElement.scrollWidth > e.parentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    shot(page, screens, "phone-markdown")


def luminance(css_colour: str) -> float:
    """The relative luminance (WCAG) of a computed `rgb(r, g, b)` colour."""
    channels = [int(c) / 255 for c in re.findall(r"\d+", css_colour)[:3]]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(page, selector: str, background_of: str | None = None) -> float:
    """The contrast ratio of `selector`'s text against its background (or `background_of`'s)."""
    fg = page.locator(selector).first.evaluate("e => getComputedStyle(e).color")
    bg = page.locator(background_of or selector).first.evaluate("e => getComputedStyle(e).backgroundColor")
    light, dark = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_dark_mode_follows_the_system(browser_page) -> None:
    """Light by default; with the system's dark scheme the page is dark and its text light, and what sits on
    it (links, highlights, code blocks, the subagent and tool markers) still reads at 4.5:1 or more."""
    page, base, screens = browser_page
    page.goto(f"{base}/s/{MARKDOWN_SESSION}")
    body = page.locator("body")
    assert luminance(body.evaluate("e => getComputedStyle(e).backgroundColor")) > 0.9
    assert luminance(body.evaluate("e => getComputedStyle(e).color")) < 0.05

    dark = page.context.browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme="dark")
    dialogs: list[str] = []
    dark.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    dark.goto(f"{base}/s/{MARKDOWN_SESSION}")
    body = dark.locator("body")
    assert luminance(body.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.02
    assert luminance(body.evaluate("e => getComputedStyle(e).color")) > 0.6
    assert contrast(dark, "body") >= 4.5
    assert contrast(dark, "article.message.assistant a", "article.message.assistant") >= 4.5  # a link
    assert contrast(dark, "article.message.assistant pre code", "article.message.assistant pre") >= 4.5
    assert luminance(dark.locator("pre").first.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.05
    shot(dark, screens, "dark-markdown")
    dark.goto(f"{base}/s/{SUBAGENT_SESSION}?turns=1")
    assert contrast(dark, "article.turn.subagent .badge.sub") >= 4.5
    assert contrast(dark, "article.turn.subagent h3", "article.turn.subagent") >= 4.5
    shot(dark, screens, "dark-turns")
    dark.goto(f"{base}/search?q=zebra+rotation&mode=lexical")
    assert contrast(dark, "ol.hits mark") >= 4.5
    shot(dark, screens, "dark-search")
    dark.goto(f"{base}/search?q=alwaysThinkingEnabled&in=tools")
    assert contrast(dark, "li.hit.tool .badge") >= 4.5  # the tool output's marker
    dark.goto(f"{base}/")
    assert contrast(dark, "tr.mirror a.title", "tr.mirror") >= 4.5
    shot(dark, screens, "dark-sessions")
    assert dialogs == []


def test_forget_in_a_browser(browser_page) -> None:
    page, base, screens = browser_page
    page.goto(f"{base}/s/{LONG_SESSION}")
    page.click("text=Forget…")
    assert page.locator("h1").inner_text() == "Forget for good?"
    shot(page, screens, "forget-confirm")
    page.click("button.danger")
    assert page.locator("h1").inner_text() == "Forgotten"
    assert "Forgot 1 session" in page.locator("main").inner_text()
    shot(page, screens, "forgotten")
    page.goto(base + "/")
    assert page.locator(f'a.title[href="/s/{LONG_SESSION}"]').count() == 0


def test_a_phone_scrolls_only_down(browser_page) -> None:
    """At 375 px (a phone) no page is wider than the screen: the header's search box and the sessions table
    (its titles, the column a reader came for) fit, the rows stacked, rather than hide to the right."""
    page, base, screens = browser_page
    page.set_viewport_size({"width": 375, "height": 800})
    for name, path in [
        ("phone-sessions", "/"),
        ("phone-conversation", f"/s/{SUBAGENT_SESSION}"),
        ("phone-turns", f"/s/{SUBAGENT_SESSION}?turns=1"),
        ("phone-search", "/search?q=zebra+rotation"),
    ]:
        page.goto(base + path)
        shot(page, screens, name)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
    page.goto(base + "/")
    title = page.locator("a.title").first.bounding_box()
    assert title is not None and title["x"] + title["width"] <= 375


def test_a_phone_reads_long_paths(browser_page) -> None:
    """A Codex session's files (`specs/005-orchestrator-architecture/contracts/orchestrator.openapi.yaml`),
    opened on a phone, wrap within the screen rather than widen the page."""
    page, base, screens = browser_page
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{base}/s/{CODEX_ID}?turns=1")
    page.locator("details.files summary").click()
    assert page.locator("details.files code").count() > 3
    shot(page, screens, "phone-files")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
