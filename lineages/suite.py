"""The naive suite as admission and the quality report see it: kernels, their problems, and card candidates.

`suite_kernels(folder)` lists `bench/suite/<name>/naive.cu` (or `bench/suite_ood/<operator>/<variant>.cu`) with
the problem file beside it. `card_candidates` turns every card match with a rewrite in a suite kernel into one
candidate (all of that card's fixes in the kernel, as `warpwise verify --skill` does). A card whose rewrite
launches the kernel differently in host code cannot edit a problem file's launch;
`warpwise.skills.launches.grid_factor` says how the problem's launch changes instead, so that such a rewrite is
measured the way it is meant to run (coarsening by 4 needs a quarter of the blocks, 16-byte vectors of 2-byte
elements an eighth).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.build import analyze_text
from warpwise.lineages.lineage import Expert, LineageError, load_expert
from warpwise.skills.launches import grid_factor
from warpwise.verify.launch import LaunchChange, shrink_grid


@dataclass(frozen=True)
class SuiteKernel:
    """One naive kernel of the suite with its resolved problem."""

    name: str
    expert: Expert

    @property
    def path(self) -> Path:
        """Return the kernel file."""
        return self.expert.path

    @property
    def kernel(self) -> str:
        """Return the kernel's name."""
        return self.expert.kernel


@dataclass(frozen=True)
class CardCandidate:
    """A suite kernel rewritten by every fix of one card."""

    card: str
    applicability: str
    kernel: SuiteKernel
    original: str
    candidate: str
    launch: tuple[LaunchChange, ...] = ()


def suite_kernels(folder: Path, only: set[str] | None = None) -> list[SuiteKernel]:
    """Return the naive kernels of a suite folder (those whose problem resolves), sorted by name.

    `<operator>/naive.cu` is named after its operator (bench/suite); any other `<operator>/<variant>.cu` with
    `<variant>.problem.py` beside it is named `<operator>/<variant>` (bench/suite_ood). `only` selects by name or
    by operator.
    """
    out = []
    for d in sorted(p for p in folder.iterdir() if p.is_dir()):
        for src in sorted(d.glob("*.cu")):
            name = d.name if src.stem == "naive" else f"{d.name}/{src.stem}"
            if only and name not in only and d.name not in only:
                continue
            prob = src.with_name(f"{src.stem}.problem.py")
            if not prob.is_file():
                continue
            try:
                out.append(SuiteKernel(name, load_expert(src, prob, operator=d.name)))
            except LineageError:
                continue
    return out


def card_candidates(
    kernel: SuiteKernel, text: str | None = None, cards: set[str] | None = None, library: Any = None
) -> list[CardCandidate]:
    """Return one candidate per card with a rewrite that matches the kernel (in the engine's order of matches)."""
    from warpwise.skills.engine import card_rewrites

    source = kernel.expert.text if text is None else text
    model = analyze_text(source.encode("utf-8", "surrogatepass"), str(kernel.path))
    out = []
    for (fn_name, card_id), (matches, rewritten) in card_rewrites(model, library).items():
        if fn_name != kernel.kernel or (cards is not None and card_id not in cards):
            continue
        new = rewritten.decode("utf-8", "surrogatepass")
        if new == source:
            continue
        # A rewrite that shrinks launches in host code cannot edit the problem file's: shrink it the same way.
        factor = grid_factor(card_id, matches)
        launch = shrink_grid(factor) if factor is not None and factor > 1 else ()
        applic = min((m.applicability.value for m in matches), key=lambda a: ("safe", "unsafe").index(a))
        out.append(CardCandidate(card_id, applic, kernel, source, new, launch))
    return out


def set_card_status(path: Path, status: str) -> bool:
    """Set the top-level `status:` of a card's YAML header in place; return whether the file changed."""
    text = path.read_text(encoding="utf-8")
    m = re.match(r"\A---[ \t]*\r?\n(.*?)\r?\n---", text, re.S)
    if m is None:
        raise ValueError(f"{path}: no YAML front matter")
    header = m.group(1)
    line = re.search(r"^status:[ \t]*(\S+)[ \t]*$", header, re.M)
    if line is not None:
        if line.group(1) == status:
            return False
        start = m.start(1) + line.start()
        new = text[:start] + f"status: {status}" + text[m.start(1) + line.end() :]
    else:
        intent = re.search(r"^intent:.*$", header, re.M)
        at = m.start(1) + (intent.end() if intent else len(header))
        new = text[:at] + f"\nstatus: {status}" + text[at:]
    path.write_text(new, encoding="utf-8")
    return True
