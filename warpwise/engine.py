"""The engine's entry points shared by the command line, the server and the tests.

`analyze_path` reads one file and returns its model and findings; `collect_sources` expands the paths a user
gave into CUDA files. Expected problems with input (a missing path, an unreadable or oversized file) are
returned as `InputProblem` values, never raised, so that one bad file does not stop a run over a project.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.embedded import mask_python
from warpwise.analyzers.findings import RULES, Finding, check_model
from warpwise.analyzers.model import FileModel
from warpwise.analyzers.parse import CudaDocument
from warpwise.analyzers.suppressions import UNUSED_RULE, apply_suppressions
from warpwise.skills.engine import Match, match_file, superseded
from warpwise.skills.rewrite import Edit, Fix

CUDA_SUFFIXES = (".cu", ".cuh", ".cuda")
PYTHON_SUFFIX = ".py"
"""Python files are analysed for the CUDA sources of their `load_inline(...)` calls (`analyzers.embedded`)."""
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
    gone = superseded(matches)
    merged = [f for f in findings if (f.rule, f.span) not in gone]
    merged.extend(m.finding() for m in matches)
    merged.sort(key=lambda f: (f.span[0], f.rule))
    return merged


def known_rule_ids() -> set[str]:
    """Return every id a finding can carry: model rules, `syntax-error`, `unused-suppression` and the cards."""
    from warpwise.skills.library import builtin_library

    return {*RULES, "syntax-error", UNUSED_RULE, *(c.skill_id for c in builtin_library())}


def suppress(model: FileModel, findings: list[Finding], select: set[str] | None = None) -> list[Finding]:
    """Drop the findings that NOLINT comments suppress and add the `unused-suppression` findings, sorted."""
    tree = model.tree if b"NOLINT" in model.text else None
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
                if (name.endswith(CUDA_SUFFIXES) or (name.endswith(PYTHON_SUFFIX) and _embeds_cuda(Path(root) / name)))
                and not any(part.startswith(".") for part in Path(root).parts[1:])
            )
            if not found:
                problems.append(InputProblem(raw, "no CUDA files (*.cu, *.cuh) in this folder"))
            files.extend(found)
        elif p.is_file() or p.exists():
            # Special files (FIFOs, devices) are named here and refused by `read_source`, with a reason.
            files.append(str(p))
        else:
            problems.append(InputProblem(raw, "no such file or folder"))
    seen: set[str] = set()
    unique = [f for f in files if not (f in seen or seen.add(f))]  # type: ignore[func-returns-value]
    return unique, problems


def _embeds_cuda(path: Path) -> bool:
    """Return whether a Python file passes CUDA sources to `load_inline` (a cheap test before parsing)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(DEFAULT_MAX_FILE_BYTES)
    except OSError:
        return False
    return b"load_inline" in head and b"__global__" in head


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def read_source(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes | InputProblem:
    """Read a regular file of at most `max_bytes`, or say why not (FIFOs, devices and oversized files are skipped).

    The file is opened without blocking (a FIFO with no writer would otherwise hang), checked on the open
    descriptor (a symlink to `/dev/zero` is a character device there, and nothing can be swapped in between), and
    read up to one byte past the limit, so a file that grows while it is read stays bounded too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return InputProblem(path, f"cannot read the file: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            return InputProblem(path, f"skipped: {kind}, not a regular file")
        if st.st_size > max_bytes:
            return InputProblem(path, _too_big(st.st_size, max_bytes))
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            return InputProblem(path, _too_big(total, max_bytes))
        return b"".join(chunks)
    except OSError as exc:
        return InputProblem(path, f"cannot read the file: {exc.strerror or exc}")
    finally:
        os.close(fd)


def _too_big(size: int, max_bytes: int) -> str:
    """Return the message for a file over the size limit."""
    return f"skipped: the file is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:g} MiB limit"


def analyze_path(
    path: str, select: set[str] | None = None, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> FileReport | InputProblem:
    """Analyse one file from disk."""
    data = read_source(path, max_bytes)
    if isinstance(data, InputProblem):
        return data
    if path.endswith(PYTHON_SUFFIX) and mask_python(data) is None:
        return InputProblem(path, "no CUDA source: the file passes no string to load_inline(cuda_sources=...)")
    return analyze_model(parsed_model(data, path), select)


def parsed_model(data: bytes, path: str) -> FileModel:
    """Parse and analyse a text once (the model holds the syntax tree the card engine reads).

    A Python file is analysed as its `load_inline` CUDA strings, at their own offsets (`analyzers.embedded`).
    """
    if path.endswith(PYTHON_SUFFIX):
        data = mask_python(data) or b" " * len(data)
    return analyze_document(CudaDocument(path, data))


@dataclass(slots=True)
class FixOutcome:
    """What `fix_text` did: the new text and the fixes applied, round by round."""

    original: bytes
    text: bytes
    applied: list[Fix] = field(default_factory=list)
    rounds: int = 0
    held_back: list[tuple[Fix, str]] = field(default_factory=list)
    """Safe fixes not applied because their build adds spills or local memory (or none confirms it), with why."""


def fix_text(
    data: bytes, path: str, include_unsafe: bool = False, select: set[str] | None = None, max_rounds: int = 8
) -> FixOutcome:
    """Apply the fixes of every matching card until none is left (or `max_rounds`), like ruff's fix loop.

    Only `safe` fixes are applied unless `include_unsafe`; a safe fix of a card with a resource guard is applied
    only when its build adds no spills or local memory (`warpwise.skills.guard`). Display-only cards never change
    the text. Each round re-analyses the new text, so fixes always apply to the version they were computed on.
    """
    from warpwise.skills.engine import compute_fix, merge_fixes
    from warpwise.skills.guard import unsafe_for_resources
    from warpwise.skills.model import Applicability
    from warpwise.skills.rewrite import apply_edits

    outcome = FixOutcome(data, data)
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if include_unsafe else set())
    for _ in range(max_rounds):
        model = parsed_model(outcome.text, path)
        fixes = []
        matches = match_file(model, enabled=select)
        if b"NOLINT" in outcome.text:
            matches, _ = apply_suppressions(model, matches, key=lambda m: (m.card_id, m.span), tree=model.tree)
        for m in matches:
            if not m.has_rewrite or m.applicability not in allowed:
                continue
            fix = compute_fix(model, m)
            if fix is None:
                continue
            if not include_unsafe:
                why = unsafe_for_resources(model, m, fix)
                if why is not None:
                    # A safe fix whose build adds spills (or that no build confirms) is unsafe for bulk fixing.
                    outcome.held_back.append((fix, why))
                    continue
            fixes.append(fix)
        edits = merge_fixes(fixes)
        if not edits:
            break
        taken = [f for f in fixes if all(_made(e, edits) for e in f.edits)]
        outcome.text = apply_edits(outcome.text, edits)
        outcome.applied.extend(taken)
        outcome.rounds += 1
    return outcome


def _made(edit: Edit, edits: list[Edit]) -> bool:
    """Return whether a fix's edit is among the merged edits (or joined into an insertion at its place)."""
    if edit in edits:
        return True
    return edit.start == edit.end and any(e.start == e.end == edit.start and edit.text in e.text for e in edits)
