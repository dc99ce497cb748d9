"""Render findings for people (compiler-style text grouped by kernel), for programs (JSON) and for code scanning
(SARIF 2.1.0, which GitHub code scanning reads)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from warpwise import __version__
from warpwise.analyzers.findings import RULES, Finding, Severity
from warpwise.analyzers.model import FunctionKind
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
    try:
        from warpwise.skills.catalog import card_rules
    except ImportError:
        return out
    out.update({rid: RuleInfo(rid, summary, Severity(sev), uri) for rid, summary, sev, uri in card_rules()})
    return out


def _pos(report: FileReport, offset: int) -> tuple[int, int]:
    p = report.model.lines.position(offset)
    return p.line + 1, p.character + 1


def render_text(
    reports: list[FileReport], problems: list[InputProblem], out: TextIO | None = None, color: bool = False
) -> None:
    """Print findings grouped by file and kernel, in the style of a compiler."""
    out = out or sys.stdout
    counts = {s: 0 for s in Severity}
    kernels_with = 0
    kernels_total = 0
    for report in reports:
        model = report.model
        print(report.path, file=out)
        by_fn: dict[str | None, list[Finding]] = {}
        for f in report.findings:
            by_fn.setdefault(f.function, []).append(f)
        listed: set[str | None] = set()
        for fn in model.functions:
            if fn.kind is FunctionKind.HOST and fn.name not in by_fn:
                continue
            if fn.kind is not FunctionKind.KERNEL and fn.name not in by_fn:
                continue
            if fn.name in listed:
                continue
            listed.add(fn.name)
            found = by_fn.get(fn.name, [])
            line = model.lines.position(fn.base + fn.name_span[0]).line + 1
            label = "kernel" if fn.kind is FunctionKind.KERNEL else f"{fn.kind.value.replace('_', ' ')} function"
            if fn.kind is FunctionKind.KERNEL:
                kernels_total += 1
                kernels_with += bool(found)
            if not found:
                print(f"  {label} `{fn.name}` (line {line}): nothing found", file=out)
                continue
            print(f"  {label} `{fn.name}` (line {line}):", file=out)
            for f in found:
                _print_finding(report, f, out, color, counts)
        rest = [f for name, fs in by_fn.items() if name not in listed for f in fs]
        if rest:
            print("  outside any kernel:", file=out)
            for f in rest:
                _print_finding(report, f, out, color, counts)
    for prob in problems:
        print(f"{prob.path}: error: {prob.message}", file=out)
    total = sum(counts.values())
    parts = [f"{n} {s.value}{'s' if n != 1 and s is not Severity.INFO else ''}" for s, n in counts.items() if n]
    summary = (
        f"{total} finding{'s' if total != 1 else ''} in {kernels_with} of {kernels_total} kernel"
        f"{'s' if kernels_total != 1 else ''}, {len(reports)} file{'s' if len(reports) != 1 else ''}"
    )
    print(summary + (f" ({', '.join(parts)})." if parts else "."), file=out)


def _print_finding(report: FileReport, f: Finding, out: TextIO, color: bool, counts: dict[Severity, int]) -> None:
    line, col = _pos(report, f.span[0])
    sev = f.severity.value
    if color:
        sev = f"{_COLORS[f.severity]}{sev}{_RESET}"
    print(f"    {report.path}:{line}:{col}: {sev}: {f.message} [{f.rule}]", file=out)
    for rel in f.related:
        rline, rcol = _pos(report, rel.span[0])
        print(f"      {report.path}:{rline}:{rcol}: note: {rel.message}", file=out)
    match = report.match_for(f)
    if match is not None:
        for v in match.verdicts:
            print(f"      {v.status.value:8} {v.axis.value}/{v.id}: {v.reason}", file=out)
        if match.has_rewrite:
            from warpwise.skills.engine import compute_fix

            if compute_fix(report.model, match) is not None:
                print(f"      fix ({match.applicability.value}): {match.fix_title}", file=out)
            else:
                print("      no fix: the rewrite does not handle this code exactly", file=out)
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


def render_json(reports: list[FileReport], problems: list[InputProblem], out: TextIO | None = None) -> None:
    """Print a JSON document with every finding and every input problem."""
    out = out or sys.stdout
    doc = {
        "version": __version__,
        "files": [
            {
                "path": r.path,
                "kernels": [fn.name for fn in r.model.kernels],
                "findings": [finding_json(r, f) for f in r.findings],
            }
            for r in reports
        ],
        "problems": [{"path": p.path, "message": p.message} for p in problems],
    }
    json.dump(doc, out, indent=2)
    out.write("\n")


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


def render_sarif(reports: list[FileReport], problems: list[InputProblem], out: TextIO | None = None) -> None:
    """Print a SARIF 2.1.0 log."""
    out = out or sys.stdout
    catalog = rule_catalog()
    used = sorted({f.rule for r in reports for f in r.findings} | set(catalog))
    index = {rid: i for i, rid in enumerate(used)}
    rules = []
    for rid in used:
        info = catalog.get(rid) or RuleInfo(rid, rid, Severity.WARNING, INFO_URI)
        rules.append(
            {
                "id": rid,
                "name": rid,
                "shortDescription": {"text": info.summary},
                "helpUri": info.help_uri,
                "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
            }
        )
    results = []
    for r in reports:
        for f in r.findings:
            rng = r.model.lines.range(*f.span)
            results.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": index[f.rule],
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
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "warpwise",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": results,
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
    json.dump(log, out, indent=2)
    out.write("\n")


def count_findings(reports: Iterable[FileReport]) -> int:
    """Return the number of findings across reports."""
    return sum(len(r.findings) for r in reports)
