"""The card table in README.md, generated from the library so the two never drift.

`python -m warpwise.skills.readme` rewrites the table between the `cards:begin` and `cards:end` markers;
`--check` exits 1 when the committed table is out of date (a test runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from warpwise.skills.library import builtin_library

_BLOCK = re.compile(r"(<!-- cards:begin[^\n]*-->\n)(.*?)(<!-- cards:end -->)", re.S)


def table() -> str:
    """Return the Markdown table of the built-in cards."""
    rows = ["| card | status | fix | intent |", "| --- | --- | --- | --- |"]
    for c in sorted(builtin_library(), key=lambda c: c.skill_id):
        fix = c.applicability.value if c.has_rewrite else "display-only"
        # A card in its own folder (interim, issue 20) links to skills/<card-id>/card.md.
        link = f"skills/{c.skill_id}/card.md" if c.path.endswith("/card.md") else f"skills/cards/{c.skill_id}.md"
        rows.append(f"| [`{c.skill_id}`]({link}) | {c.header.status.value} | {fix} | {c.header.intent} |")
    return "\n".join(rows) + "\n"


def updated(text: str) -> str:
    """Return README text with the card table regenerated."""
    if not _BLOCK.search(text):
        raise ValueError("README.md has no `<!-- cards:begin -->` ... `<!-- cards:end -->` block")
    return _BLOCK.sub(lambda m: m.group(1) + table() + m.group(3), text, count=1)


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or, with --check, check) the card table of a README."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    paths = [a for a in args if a != "--check"] or ["README.md"]
    path = Path(paths[0])
    text = path.read_text(encoding="utf-8")
    new = updated(text)
    if check:
        if new != text:
            print(f"{path}: the card table is out of date; run `make readme`", file=sys.stderr)
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
