"""Suppression comments in the C++ convention (clang-tidy's NOLINT family), read from tree-sitter comment nodes.

    x[i] = y[i];            // NOLINT(warpwise-scalar-global-access)
    // NOLINTNEXTLINE(warpwise-missing-restrict, warpwise-int32-index-overflow)
    // NOLINTBEGIN(warpwise-precise-math-call)  ...  // NOLINTEND(warpwise-precise-math-call)
    // NOLINTFILE(warpwise-double-literal-promotion)   (anywhere in the file: the whole file)

A finding is suppressed when its first line is covered by a comment that names its rule or card id with the
`warpwise-` prefix (`warpwise-*` globs are allowed). Ids of other tools in the same list (`bugprone-*`) are left
to them; a bare `NOLINT` without a list suppresses every warpwise finding on its line, as in clang-tidy. A
suppression that suppresses nothing, an unknown id and a `NOLINTBEGIN` without its `NOLINTEND` (or the reverse)
are reported as `unused-suppression` findings, like ruff's RUF100, so stale comments do not pile up.

`apply_suppressions` is the one place that filters a file's findings: the command line (`warpwise.engine`), the
fix loop and the language server (`collect_items`) all call it on what they produced for the file.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from warpwise.analyzers.findings import Finding, Severity
from warpwise.analyzers.model import FileModel, Span
from warpwise.analyzers.parse import SourceFile, captures, query

PREFIX = "warpwise-"
UNUSED_RULE = "unused-suppression"
UNUSED_SUMMARY = "A suppression comment (NOLINT...) that suppresses no warpwise finding, or names an unknown id."
_MARKER = re.compile(rb"\bNOLINT(NEXTLINE|BEGIN|END|FILE)?\b(?:\(([^)]*)\))?")
_KINDS = {None: "line", b"NEXTLINE": "next-line", b"BEGIN": "begin", b"END": "end", b"FILE": "file"}

T = TypeVar("T")


@dataclass(slots=True)
class Suppression:
    """One suppression comment: which rule patterns (None: every rule) it covers on which 0-based lines."""

    kind: str
    patterns: tuple[str, ...] | None
    first_line: int
    last_line: int
    span: Span
    marker: str
    used: set[str] = field(default_factory=set)

    def covers(self, rule: str, line: int) -> str | None:
        """Return the pattern that suppresses `rule` on `line`, or None."""
        if not self.first_line <= line <= self.last_line:
            return None
        if self.patterns is None:
            return "*"
        return next((p for p in self.patterns if fnmatch.fnmatchcase(rule, p)), None)


@dataclass(slots=True)
class Suppressions:
    """The suppression comments of one file, and the malformed ones (reported, suppressing nothing)."""

    entries: list[Suppression] = field(default_factory=list)
    malformed: list[tuple[Span, str]] = field(default_factory=list)

    def suppressed_by(self, rule: str, line: int) -> Suppression | None:
        """Return the first suppression that covers `rule` on `line` (and mark it used), or None."""
        for s in self.entries:
            pattern = s.covers(rule, line)
            if pattern is not None:
                s.used.add(pattern)
                return s
        return None


def _patterns(raw: bytes | None) -> tuple[str, ...] | bool | None:
    """Return the warpwise patterns of a NOLINT list, None for a bare NOLINT, False when it names only others."""
    if raw is None:
        return None
    ids = [p.strip() for p in raw.decode("utf-8", "replace").split(",") if p.strip()]
    ours = tuple(p[len(PREFIX) :] for p in ids if p.startswith(PREFIX) and len(p) > len(PREFIX))
    if not ours:
        return None if not ids else False
    return ours


def read_suppressions(model: FileModel, tree: Any = None) -> Suppressions:
    """Read every NOLINT comment of a file from its comment nodes (`tree`: the model's syntax tree, if at hand)."""
    out = Suppressions()
    text = model.text
    if b"NOLINT" not in text:
        return out
    if tree is None:
        tree = SourceFile.parse(text).tree
    nodes = sorted(captures(query("(comment) @c"), tree.root_node).get("c", []), key=lambda n: n.start_byte)
    open_blocks: list[Suppression] = []
    last = max(model.lines.line_count - 1, 0)
    for node in nodes:
        body = text[node.start_byte : node.end_byte]
        for m in _MARKER.finditer(body):
            patterns = _patterns(m.group(2))
            if patterns is False:
                continue
            pats = patterns if isinstance(patterns, tuple) else None
            kind = _KINDS[m.group(1)]
            span = (node.start_byte + m.start(), node.start_byte + m.end())
            marker = m.group(0).decode("utf-8", "replace")
            start_line = model.lines.position(node.start_byte).line
            end_line = model.lines.position(node.end_byte).line
            if kind == "line":
                out.entries.append(Suppression(kind, pats, start_line, start_line, span, marker))
            elif kind == "next-line":
                out.entries.append(Suppression(kind, pats, end_line + 1, end_line + 1, span, marker))
            elif kind == "file":
                out.entries.append(Suppression(kind, pats, 0, last, span, marker))
            elif kind == "begin":
                block = Suppression(kind, pats, start_line, last, span, marker)
                open_blocks.append(block)
            else:
                opener = next((b for b in reversed(open_blocks) if b.patterns == pats), None)
                if opener is None:
                    out.malformed.append((span, f"`{marker}` closes no `NOLINTBEGIN` with the same ids"))
                    continue
                open_blocks.remove(opener)
                opener.last_line = end_line
                out.entries.append(opener)
    for block in open_blocks:
        out.malformed.append((block.span, f"`{block.marker}` has no matching `NOLINTEND`; it suppresses nothing"))
    return out


def apply_suppressions(
    model: FileModel,
    items: Sequence[T],
    key: Callable[[T], tuple[str, Span]],
    tree: Any = None,
    reported: Callable[[str], bool] | None = None,
    known: Iterable[str] | None = None,
) -> tuple[list[T], list[Finding]]:
    """Drop the items a comment suppresses; return the rest and the `unused-suppression` findings.

    `key` gives an item's rule id and span; `reported(rule)` says whether a rule is enabled (a suppression of a
    disabled rule is never unused); `known` lists every rule id, to report suppressions of ids that do not exist.
    """
    sup = read_suppressions(model, tree)
    if not sup.entries and not sup.malformed:
        return list(items), []
    kept = [i for i in items if sup.suppressed_by(key(i)[0], model.lines.position(key(i)[1][0]).line) is None]
    known_ids = set(known) if known is not None else None
    unused: list[Finding] = []

    def report(span: Span, message: str) -> None:
        fn = model.function_at(span[0])
        unused.append(Finding(UNUSED_RULE, Severity.WARNING, message, span, fn.name if fn is not None else None))

    for span, message in sup.malformed:
        report(span, message)
    for s in sup.entries:
        if s.patterns is None:
            continue  # A bare NOLINT may be meant for another tool (clang-tidy); it is never reported.
        for p in s.patterns:
            if p in s.used:
                continue
            if known_ids is not None and not any(fnmatch.fnmatchcase(r, p) for r in known_ids):
                report(
                    s.span, f"`{PREFIX}{p}` in `{s.marker}` is not a warpwise rule or card id (see `warpwise rules`)"
                )
            elif reported is None or any(reported(r) for r in (known_ids or {p}) if fnmatch.fnmatchcase(r, p)):
                where = f"line {s.first_line + 1}" if s.first_line == s.last_line else _lines(s)
                report(s.span, f"`{PREFIX}{p}` in `{s.marker}` suppresses nothing: no `{p}` finding on {where}")
    if reported is not None and not reported(UNUSED_RULE):
        return kept, []
    unused = [f for f in unused if sup.suppressed_by(f.rule, model.lines.position(f.span[0]).line) is None]
    return kept, unused


def _lines(s: Suppression) -> str:
    if s.kind == "file":
        return "any line of the file"
    return f"lines {s.first_line + 1}-{s.last_line + 1}"


def suppression_edit(model: FileModel, rule: str, line: int) -> tuple[Span, str]:
    """Return the edit that suppresses `rule` on 0-based `line`: a `// NOLINTNEXTLINE(...)` above it.

    When the line above already is a `NOLINTNEXTLINE` comment with warpwise ids, the id is added to its list.
    """
    start = model.lines.line_start(line)
    if line > 0:
        prev_start = model.lines.line_start(line - 1)
        prev = model.text[prev_start:start]
        m = re.search(rb"//\s*NOLINTNEXTLINE\(([^)]*)\)", prev)
        if m is not None and PREFIX.encode() in m.group(1):
            at = prev_start + m.end(1)
            return (at, at), f", {PREFIX}{rule}"
    body = model.text[start:]
    indent = body[: len(body) - len(body.lstrip(b" \t"))].decode("utf-8", "replace")
    return (start, start), f"{indent}// NOLINTNEXTLINE({PREFIX}{rule})\n"
