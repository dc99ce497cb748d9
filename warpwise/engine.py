"""The engine's entry points shared by the command line, the server and the tests.

`analyze_path` reads one file and returns its model and findings; `collect_sources` expands the paths a user
gave into CUDA files. Expected problems with input (a missing path, an unreadable or oversized file) are
returned as `InputProblem` values, never raised, so that one bad file does not stop a run over a project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.findings import RULES, Finding, check_model
from warpwise.analyzers.model import FileModel
from warpwise.analyzers.parse import CudaDocument
from warpwise.analyzers.suppressions import UNUSED_RULE, apply_suppressions
from warpwise.skills.engine import Match, match_file
from warpwise.skills.facts import set_tree, tree_of
from warpwise.skills.rewrite import Fix

CUDA_SUFFIXES = (".cu", ".cuh", ".cuda")
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A path that could not be analysed, with the reason in the user's terms."""

    path: str
    message: str


@dataclass(slots=True)
class FileReport:
    """The analysis of one file: its model, the card matches, and every finding (cards included)."""

    path: str
    model: FileModel
    findings: list[Finding] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)

    def match_for(self, finding: Finding) -> Match | None:
        """Return the card match behind a finding, if it came from a card."""
        for m in self.matches:
            if m.card_id == finding.rule and m.span == finding.span:
                return m
        return None


def combine(model: FileModel, findings: list[Finding], matches: list[Match]) -> list[Finding]:
    """Merge model-level findings and card matches; a card supersedes a model rule on the same span."""
    superseded = {(rule, m.span) for m in matches for rule in m.card.header.supersedes}
    merged = [f for f in findings if (f.rule, f.span) not in superseded]
    merged.extend(m.finding() for m in matches)
    merged.sort(key=lambda f: (f.span[0], f.rule))
    return merged


def known_rule_ids() -> set[str]:
    """Return every id a finding can carry: model rules, `syntax-error`, `unused-suppression` and the cards."""
    from warpwise.skills.library import builtin_library

    return {*RULES, "syntax-error", UNUSED_RULE, *(c.skill_id for c in builtin_library())}


def suppress(model: FileModel, findings: list[Finding], select: set[str] | None = None) -> list[Finding]:
    """Drop the findings that NOLINT comments suppress and add the `unused-suppression` findings, sorted."""
    tree = tree_of(model) if b"NOLINT" in model.text else None
    kept, unused = apply_suppressions(
        model,
        findings,
        key=lambda f: (f.rule, f.span),
        tree=tree,
        reported=None if select is None else select.__contains__,
        known=known_rule_ids(),
    )
    if not unused:
        return kept
    return sorted([*kept, *unused], key=lambda f: (f.span[0], f.rule))


def analyze_model(model: FileModel, select: set[str] | None = None, target_sm: int = 90) -> FileReport:
    """Return the report of an analysed file: model findings plus card matches, less what comments suppress."""
    matches = match_file(model, enabled=select, target_sm=target_sm)
    findings = suppress(model, combine(model, check_model(model, select), matches), select)
    return FileReport(model.path, model, findings, matches)


def collect_sources(paths: list[str]) -> tuple[list[str], list[InputProblem]]:
    """Expand files and folders into CUDA source files (sorted, without duplicates)."""
    files: list[str] = []
    problems: list[InputProblem] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                str(Path(root) / name)
                for root, dirs, names in os.walk(p)
                for name in names
                if name.endswith(CUDA_SUFFIXES) and not any(part.startswith(".") for part in Path(root).parts[1:])
            )
            if not found:
                problems.append(InputProblem(raw, "no CUDA files (*.cu, *.cuh) in this folder"))
            files.extend(found)
        elif p.is_file():
            files.append(str(p))
        else:
            problems.append(InputProblem(raw, "no such file or folder"))
    seen: set[str] = set()
    unique = [f for f in files if not (f in seen or seen.add(f))]  # type: ignore[func-returns-value]
    return unique, problems


def analyze_path(
    path: str, select: set[str] | None = None, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> FileReport | InputProblem:
    """Analyse one file from disk."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            return InputProblem(
                path,
                f"skipped: the file is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit",
            )
        data = Path(path).read_bytes()
    except OSError as exc:
        return InputProblem(path, f"cannot read the file: {exc.strerror or exc}")
    return analyze_model(parsed_model(data, path), select)


def parsed_model(data: bytes, path: str) -> FileModel:
    """Analyse a text once and hand its syntax tree to the card engine, which would otherwise parse it again."""
    doc = CudaDocument(path, data)
    model = analyze_document(doc)
    set_tree(model, doc.tree)
    return model


@dataclass(slots=True)
class FixOutcome:
    """What `fix_text` did: the new text and the fixes applied, round by round."""

    original: bytes
    text: bytes
    applied: list[Fix] = field(default_factory=list)
    rounds: int = 0


def fix_text(
    data: bytes, path: str, include_unsafe: bool = False, select: set[str] | None = None, max_rounds: int = 8
) -> FixOutcome:
    """Apply the fixes of every matching card until none is left (or `max_rounds`), like ruff's fix loop.

    Only `safe` fixes are applied unless `include_unsafe`; display-only cards never change the text. Each round
    re-analyses the new text, so fixes always apply to the version they were computed on.
    """
    from warpwise.skills.engine import compute_fix, merge_fixes
    from warpwise.skills.model import Applicability
    from warpwise.skills.rewrite import apply_edits

    outcome = FixOutcome(data, data)
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if include_unsafe else set())
    for _ in range(max_rounds):
        model = parsed_model(outcome.text, path)
        fixes = []
        matches = match_file(model, enabled=select)
        if b"NOLINT" in outcome.text:
            matches, _ = apply_suppressions(model, matches, key=lambda m: (m.card_id, m.span), tree=tree_of(model))
        for m in matches:
            if not m.has_rewrite or m.applicability not in allowed:
                continue
            fix = compute_fix(model, m)
            if fix is not None:
                fixes.append(fix)
        edits = merge_fixes(fixes)
        if not edits:
            break
        taken = [f for f in fixes if set(f.edits) <= set(edits)]
        outcome.text = apply_edits(outcome.text, edits)
        outcome.applied.extend(taken)
        outcome.rounds += 1
    return outcome
