"""The engine's entry points shared by the command line, the server and the tests.

`analyze_path` reads one file and returns its model and findings; `collect_sources` expands the paths a user
gave into CUDA files. Expected problems with input (a missing path, an unreadable or oversized file) are
returned as `InputProblem` values, never raised, so that one bad file does not stop a run over a project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import Finding, check_model
from warpwise.analyzers.model import FileModel

CUDA_SUFFIXES = (".cu", ".cuh", ".cuda")
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A path that could not be analysed, with the reason in the user's terms."""

    path: str
    message: str


@dataclass(slots=True)
class FileReport:
    """The analysis of one file."""

    path: str
    model: FileModel
    findings: list[Finding] = field(default_factory=list)


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
    model = analyze_text(data, path)
    return FileReport(path, model, check_model(model, select))
