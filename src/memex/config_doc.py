"""The README's table of settings, generated from `memex.config`: one table per section, each setting with
its default and the reason for its value (the comment above it in `config.py`). `scripts/settings-table`
prints it, and a test keeps the README equal to it.

    uv run python -m memex.config_doc          # print the tables
    uv run python -m memex.config_doc --write  # replace them in README.md
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from pathlib import Path

from memex.config import SECTIONS, Config

BEGIN = "<!-- settings: generated from src/memex/config.py by scripts/settings-table; edit them there -->"
END = "<!-- /settings -->"
_FIELD = re.compile(r"^    (\w+): [^=]+=")
_COMMENT = re.compile(r"^    # ?(.*)$")


def reasons(section: type) -> list[tuple[list[str], str]]:
    """The section's settings in groups sharing one reason: [(names, reason)], in source order."""
    groups: list[tuple[list[str], str]] = []
    comment: list[str] = []
    for line in inspect.getsource(section).splitlines():
        found = _COMMENT.match(line)
        if found:
            comment.append(found.group(1))
            continue
        field = _FIELD.match(line)
        if not field:
            continue
        if comment or not groups:
            groups.append(([field.group(1)], " ".join(comment)))
            comment = []
        else:
            groups[-1][0].append(field.group(1))
    return groups


def default_text(name: str) -> str:
    """A setting's default as the table shows it."""
    field = next(f for f in dataclasses.fields(Config) if f.name == name)
    if field.default is dataclasses.MISSING:
        return "hostname" if name == "computer" else "—"
    value = field.default
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, Path):
        return f"`{value}`"
    return str(value)


def markdown() -> str:
    """Every section's table."""
    parts = []
    for key, section in SECTIONS.items():
        doc = (section.__doc__ or "").strip()
        rows = ["| setting | default | why |", "| --- | --- | --- |"]
        for names, reason in reasons(section):
            shown = " / ".join(f"`{n}`" for n in names)
            defaults = " / ".join(default_text(n) for n in names)
            escaped = reason.replace("|", "\\|")
            rows.append(f"| {shown} | {defaults} | {escaped} |")
        parts.append(f"**`[{key}]`**: {doc}\n\n" + "\n".join(rows))
    return "\n\n".join(parts)


def replaced(readme: str) -> str:
    """`readme` with the generated tables between the markers."""
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest:
        raise ValueError(f"README.md has no {BEGIN!r} marker")
    return f"{head}{BEGIN}\n\n{markdown()}\n\n{END}{tail}"


def main(argv: list[str]) -> int:
    if argv[1:] == ["--write"]:
        readme = Path(__file__).resolve().parents[2] / "README.md"
        readme.write_text(replaced(readme.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    print(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
