"""Render findings for people (compiler-style text grouped by kernel), for programs (JSON) and for code scanning
(SARIF 2.1.0, which GitHub code scanning reads)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from warpwise import __version__
from warpwise.analyzers.findings import RULES, Finding, Severity
from warpwise.analyzers.model import FunctionKind
from warpwise.analyzers.suppressions import UNUSED_RULE, UNUSED_SUMMARY
from warpwise.engine import FileReport, InputProblem

INFO_URI = "https://github.com/warpwise/warpwise"
_COLORS = {
    Severity.ERROR: "\033[1;31m",
    Severity.WARNING: "\033[1;33m",
    Severity.INFO: "\033[1;36m",
    Severity.HINT: "\033[2m",
}
_RESET = "\033[0m"


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What a report says about a rule id."""

    id: str
    summary: str
    severity: Severity
    help_uri: str


def rule_catalog() -> dict[str, RuleInfo]:
    """Return every rule id warpwise can report, with its summary."""
    out = {
        r.id: RuleInfo(r.id, r.summary, r.severity, f"{INFO_URI}/blob/main/docs/rules.md#{r.id}")
        for r in RULES.values()
    }
    out["syntax-error"] = RuleInfo(
        "syntax-error",
        "The parser could not read some of this file (once per file); analysis there is partial.",
        Severity.INFO,
        f"{INFO_URI}/blob/main/docs/rules.md#syntax-error",
    )
    out["analysis-budget"] = RuleInfo(
        "analysis-budget",
        "A function is too large to analyse within the budget; no findings are reported inside it.",
        Severity.INFO,
        f"{INFO_URI}/blob/main/docs/rules.md#analysis-budget",
    )
    out[UNUSED_RULE] = RuleInfo(
        UNUSED_RULE, UNUSED_SUMMARY, Severity.WARNING, f"{INFO_URI}/blob/main/docs/suppressions.md#unused-suppression"
    )
    from warpwise.skills.catalog import card_rules

    out.update({rid: RuleInfo(rid, summary, Severity(sev), uri) for rid, summary, sev, uri in card_rules()})
    return out


def _pos(report: FileReport, offset: int) -> tuple[int, int]:
    p = report.model.lines.position(offset)
    return p.line + 1, p.character + 1


class TextWriter:
    """Compiler-style text, written file by file as each report arrives (nothing is kept but the counts)."""

    def __init__(self, out: TextIO | None = None, color: bool = False, hints: bool = True) -> None:
        self.out = out or sys.stdout
        self.color = color
        self.hints = hints
        self.hidden = 0
        self.counts = {s: 0 for s in Severity}
        self.kernels_with = 0
        self.kernels_total = 0
        self.files = 0

    def file(self, report: FileReport) -> None:
        """Write one file's findings, grouped by kernel (hints only when the writer lists them)."""
        out, model = self.out, report.model
        self.files += 1
        lines = [report.path]
        by_fn: dict[str | None, list[Finding]] = {}
        for f in report.findings:
            if not self.hints and f.severity is Severity.HINT:
                self.hidden += 1
                continue
            by_fn.setdefault(f.function, []).append(f)
        listed: set[str | None] = set()
        for fn in model.functions:
            if fn.kind is not FunctionKind.KERNEL and fn.name not in by_fn:
                continue
            if fn.name in listed:
                continue
            listed.add(fn.name)
            found = by_fn.get(fn.name, [])
            line = model.lines.position(fn.base + fn.name_span[0]).line + 1
            label = "kernel" if fn.kind is FunctionKind.KERNEL else f"{fn.kind.value.replace('_', ' ')} function"
            if fn.kind is FunctionKind.KERNEL:
                self.kernels_total += 1
                self.kernels_with += bool(found)
            if not found:
                lines.append(f"  {label} `{fn.name}` (line {line}): nothing found")
                continue
            lines.append(f"  {label} `{fn.name}` (line {line}):")
            for f in found:
                _finding_lines(report, f, self.color, self.counts, lines)
        rest = [f for name, fs in by_fn.items() if name not in listed for f in fs]
        if rest:
            lines.append("  outside any kernel:")
            for f in rest:
                _finding_lines(report, f, self.color, self.counts, lines)
        lines.append("")
        out.write("\n".join(lines))
        out.flush()

    def problem(self, prob: InputProblem) -> None:
        """Write one input problem."""
        self.out.write(f"{prob.path}: error: {prob.message}\n")

    def finish(self) -> None:
        """Write the summary line."""
        counts, kw, kt, nf = self.counts, self.kernels_with, self.kernels_total, self.files
        total = sum(counts.values())
        parts = [f"{n} {s.value}{'s' if n != 1 and s is not Severity.INFO else ''}" for s, n in counts.items() if n]
        summary = (
            f"{total} finding{'s' if total != 1 else ''} in {kw} of {kt} kernel{'s' if kt != 1 else ''}, "
            f"{nf} file{'s' if nf != 1 else ''}"
        )
        hidden = (
            f" {self.hidden} hint{'s' if self.hidden != 1 else ''} not listed (`warpwise check --all` lists every "
            "finding at its declared severity)."
            if self.hidden
            else ""
        )
        self.out.write(summary + (f" ({', '.join(parts)})." if parts else ".") + hidden + "\n")
        self.out.flush()


def render_text(
    reports: list[FileReport], problems: list[InputProblem], out: TextIO | None = None, color: bool = False
) -> None:
    """Print findings grouped by file and kernel, in the style of a compiler."""
    writer = TextWriter(out, color)
    for report in reports:
        writer.file(report)
    for prob in problems:
        writer.problem(prob)
    writer.finish()


def _finding_lines(report: FileReport, f: Finding, color: bool, counts: dict[Severity, int], lines: list[str]) -> None:
    line, col = _pos(report, f.span[0])
    sev = f.severity.value
    if color:
        sev = f"{_COLORS[f.severity]}{sev}{_RESET}"
    lines.append(f"    {report.path}:{line}:{col}: {sev}: {f.message} [{f.rule}]")
    for rel in f.related:
        rline, rcol = _pos(report, rel.span[0])
        lines.append(f"      {report.path}:{rline}:{rcol}: note: {rel.message}")
    match = report.match_for(f)
    if match is not None:
        for v in match.verdicts:
            lines.append(f"      {v.status.value:8} {v.axis.value}/{v.id}: {v.reason}")
        if match.has_rewrite:
            from warpwise.skills.engine import compute_fix

            if compute_fix(report.model, match) is not None:
                lines.append(f"      fix ({match.applicability.value}): {match.fix_title}")
            else:
                lines.append("      no fix: the rewrite does not handle this code exactly")
    counts[f.severity] += 1


def finding_json(report: FileReport, f: Finding) -> dict[str, Any]:
    """Return one finding as a JSON-ready dict (0-based LSP range and 1-based line/column)."""
    rng = report.model.lines.range(*f.span)
    return {
        "path": report.path,
        "rule": f.rule,
        "severity": f.severity.value,
        "message": f.message,
        "function": f.function,
        "line": rng.start.line + 1,
        "column": rng.start.character + 1,
        "range": {
            "start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character},
        },
        "related": [{"message": r.message, "line": report.model.lines.position(r.span[0]).line + 1} for r in f.related],
        "data": {k: v for k, v in f.data.items() if isinstance(v, (str, int, float, bool, list, type(None)))},
        **_card_json(report, f),
    }


def _card_json(report: FileReport, f: Finding) -> dict[str, Any]:
    match = report.match_for(f)
    if match is None:
        return {}
    return {
        "card": {
            "id": match.card_id,
            "status": match.card.header.status.value,
            "applicability": match.applicability.value,
            "fix_title": match.fix_title if match.has_rewrite else None,
            "preconditions": [
                {"id": v.id, "axis": v.axis.value, "verdict": v.status.value, "reason": v.reason, "text": v.text}
                for v in match.verdicts
            ],
        }
    }


def _file_json(r: FileReport) -> dict[str, Any]:
    return {
        "path": r.path,
        "kernels": [fn.name for fn in r.model.kernels],
        "findings": [finding_json(r, f) for f in r.findings],
    }


def _nested(value: Any, depth: int) -> str:
    """Return `value` as `json.dump(..., indent=2)` writes it at nesting `depth` (without the first indent)."""
    return json.dumps(value, indent=2).replace("\n", "\n" + "  " * depth)


class JsonWriter:
    """The JSON document, written file by file: byte for byte what `json.dump(doc, indent=2)` would write."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.files = 0
        self.problems: list[InputProblem] = []
        self.out.write(f'{{\n  "version": {json.dumps(__version__)},\n  "files": [')

    def file(self, report: FileReport) -> None:
        """Write one file's entry."""
        self.out.write(("," if self.files else "") + "\n    " + _nested(_file_json(report), 2))
        self.files += 1
        self.out.flush()

    def problem(self, prob: InputProblem) -> None:
        """Keep an input problem for the document's `problems` list."""
        self.problems.append(prob)

    def finish(self) -> None:
        """Write the problems and close the document."""
        problems = [{"path": p.path, "message": p.message} for p in self.problems]
        self.out.write(("\n  ]" if self.files else "]") + ',\n  "problems": ' + _nested(problems, 1) + "\n}\n")
        self.out.flush()


def render_json(reports: list[FileReport], problems: list[InputProblem], out: TextIO | None = None) -> None:
    """Print a JSON document with every finding and every input problem."""
    writer = JsonWriter(out)
    for r in reports:
        writer.file(r)
    for p in problems:
        writer.problem(p)
    writer.finish()


_SARIF_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return Path(os.path.relpath(p)).as_posix()


def _sarif_region(report: FileReport, start: int, end: int) -> dict[str, int]:
    rng = report.model.lines.range(start, end)
    return {
        "startLine": rng.start.line + 1,
        "startColumn": rng.start.character + 1,
        "endLine": rng.end.line + 1,
        "endColumn": rng.end.character + 1,
    }


def _fingerprint(report: FileReport, f: Finding, seen: dict[str, int]) -> str:
    """Return a key that survives edits elsewhere in the file: rule, file, function and the flagged line's text.

    Line numbers are left out so that a finding keeps its identity when code above it moves; identical keys in one
    file are told apart by their order (`:<n>`), as GitHub's own line hashes are.
    """
    lines = report.model.lines
    line = lines.position(f.span[0]).line
    text = report.model.text[lines.line_start(line) : lines.line_start(line + 1)]
    key = "\0".join(
        (f.rule, Path(report.path).as_posix(), f.function or "", " ".join(text.decode("utf-8", "replace").split()))
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    seen[digest] = seen.get(digest, 0) + 1
    return f"{digest}:{seen[digest]}"


def _sarif_message(report: FileReport, f: Finding) -> str:
    """Return the finding's message and, for a card, each precondition's verdict and the fix's applicability."""
    match = report.match_for(f)
    if match is None:
        return f.message
    lines = [f.message, "", "Preconditions checked against this code:"]
    lines += [f"- {v.status.value} {v.axis.value}/{v.id}: {v.reason}" for v in match.verdicts]
    if match.has_rewrite:
        lines += ["", f"Fix ({match.applicability.value}): {match.fix_title}"]
    return "\n".join(lines)


def _sarif_fixes(report: FileReport, f: Finding) -> list[dict[str, Any]]:
    """Return the SARIF `fixes` of a finding: its card's fix when the fix is `safe` and applies exactly here."""
    from warpwise.skills.engine import compute_fix
    from warpwise.skills.model import Applicability

    match = report.match_for(f)
    if match is None or not match.has_rewrite or match.applicability is not Applicability.SAFE:
        return []
    fix = compute_fix(report.model, match)
    if fix is None or fix.applicability is not Applicability.SAFE or not fix.edits:
        return []
    return [
        {
            "description": {"text": fix.title},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": _uri(report.path)},
                    "replacements": [
                        {
                            "deletedRegion": _sarif_region(report, e.start, e.end),
                            **({"insertedContent": {"text": e.text}} if e.text else {}),
                        }
                        for e in fix.edits
                    ],
                }
            ],
        }
    ]


def _sarif_rule(rid: str, info: RuleInfo, cards: dict[str, Any]) -> dict[str, Any]:
    """Return a SARIF reporting descriptor with its help: a card's Markdown body, or the rule's summary and link."""
    card = cards.get(rid)
    if card is not None:
        markdown = f"**{info.summary}**\n\n{card.body.strip()}\n\n[The card]({info.help_uri})"
    else:
        markdown = f"{info.summary}\n\n[Documentation]({info.help_uri})"
    return {
        "id": rid,
        "name": rid,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.summary},
        "help": {"text": f"{info.summary} See {info.help_uri}", "markdown": markdown},
        "helpUri": info.help_uri,
        "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
        "properties": {"tags": ["cuda", "performance", "skill-card" if card is not None else "rule"]},
    }


_SARIF_RESULTS = "\0warpwise-sarif-results\0"
"""Stands in the log for the results while the rest of it is formatted (no rule, path or message holds NUL)."""

_SARIF_SPILL_BYTES = 4 * 2**20
"""Results up to this size stay in memory; a larger log's results wait in a temporary file."""


def render_sarif(reports: Iterable[FileReport], problems: list[InputProblem], out: TextIO | None = None) -> None:
    """Print a SARIF 2.1.0 log: rules with help, results with fingerprints, verdicts and safe fixes.

    `reports` is read once, in order, and each report is reduced to its results before the next is read, so a
    generator keeps one file's model in memory at a time; `problems` is read after it (a generator may add to it).
    """
    out = out or sys.stdout
    catalog = rule_catalog()
    from warpwise.skills.library import builtin_library

    cards = {c.skill_id: c for c in builtin_library()}
    # Results are spilled to a temporary file as they come (one JSON line each), so memory stays flat in the
    # number of files; the rules, which come first in the log, are known only once every result is.
    with tempfile.SpooledTemporaryFile(max_size=_SARIF_SPILL_BYTES, mode="w+", encoding="utf-8") as spill:
        _write_sarif(reports, problems, out, catalog, cards, spill)


def _write_sarif(
    reports: Iterable[FileReport],
    problems: list[InputProblem],
    out: TextIO,
    catalog: dict[str, RuleInfo],
    cards: dict[str, Any],
    spill: Any,
) -> None:
    used_ids: set[str] = set()
    for r in reports:
        seen: dict[str, int] = {}
        for f in r.findings:
            match = r.match_for(f)
            result: dict[str, Any] = {
                "ruleId": f.rule,
                "ruleIndex": -1,  # Set once every rule used is known (the reports are read only once).
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": _sarif_message(r, f)},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(r.path)},
                            "region": _sarif_region(r, *f.span),
                        },
                        **({"logicalLocations": [{"name": f.function, "kind": "function"}]} if f.function else {}),
                    }
                ],
                "partialFingerprints": {"warpwiseFindingHash/v1": _fingerprint(r, f, seen)},
                "relatedLocations": [
                    {
                        "id": i,
                        "message": {"text": rel.message},
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(r.path)},
                            "region": {"startLine": r.model.lines.position(rel.span[0]).line + 1},
                        },
                    }
                    for i, rel in enumerate(f.related)
                ],
            }
            fixes = _sarif_fixes(r, f)
            if fixes:
                result["fixes"] = fixes
            if match is not None:
                result["properties"] = {
                    "applicability": match.applicability.value,
                    "preconditions": [
                        {"id": v.id, "axis": v.axis.value, "verdict": v.status.value, "reason": v.reason}
                        for v in match.verdicts
                    ],
                }
            used_ids.add(f.rule)
            spill.write(json.dumps(result, separators=(",", ":")) + "\n")
    used = sorted(used_ids | set(catalog))
    index = {rid: i for i, rid in enumerate(used)}
    rules = [
        _sarif_rule(rid, catalog.get(rid) or RuleInfo(rid, rid, Severity.WARNING, INFO_URI), cards) for rid in used
    ]
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "warpwise",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": [_SARIF_RESULTS],
                "invocations": [
                    {
                        "executionSuccessful": not problems,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": f"{p.path}: {p.message}"}} for p in problems
                        ],
                    }
                ],
            }
        ],
    }
    # The log is written as `json.dump(log, indent=2)` would write it, with the results streamed in their place.
    text = json.dumps(log, indent=2)
    marker = json.dumps(_SARIF_RESULTS)
    at = text.index(marker)
    indent = text[text.rindex("\n", 0, at) + 1 : at]
    out.write(text[: at - len(indent) - 1])
    spill.seek(0)
    first = True
    for line in spill:
        res = json.loads(line)
        res["ruleIndex"] = index[res["ruleId"]]
        out.write(("\n" if first else ",\n") + indent + json.dumps(res, indent=2).replace("\n", "\n" + indent))
        first = False
    rest = text[at + len(marker) :]
    if first:  # No results: `[]`, as json.dump writes an empty list.
        rest = "]" + rest[rest.index("]") + 1 :]
    out.write(rest)
    out.write("\n")


def _sarif_results(reports: Iterable[FileReport]) -> list[dict[str, Any]]:
    """Return the SARIF results of every finding (rule indices are filled in by the caller)."""
    results: list[dict[str, Any]] = []
    for r in reports:
        for f in r.findings:
            rng = r.model.lines.range(*f.span)
            results.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": -1,
                    "level": _SARIF_LEVEL[f.severity],
                    "message": {"text": f.message},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(r.path)},
                                "region": {
                                    "startLine": rng.start.line + 1,
                                    "startColumn": rng.start.character + 1,
                                    "endLine": rng.end.line + 1,
                                    "endColumn": rng.end.character + 1,
                                },
                            },
                            **({"logicalLocations": [{"name": f.function, "kind": "function"}]} if f.function else {}),
                        }
                    ],
                    "relatedLocations": [
                        {
                            "id": i,
                            "message": {"text": rel.message},
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(r.path)},
                                "region": {"startLine": r.model.lines.position(rel.span[0]).line + 1},
                            },
                        }
                        for i, rel in enumerate(f.related)
                    ],
                }
            )
    return results


def count_findings(reports: Iterable[FileReport]) -> int:
    """Return the number of findings across reports."""
    return sum(len(r.findings) for r in reports)
