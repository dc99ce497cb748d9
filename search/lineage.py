"""Lineage-guided plans: when the kernel computes an operator of the expert corpus, propose the expert's steps.

The expert corpus (`lineages/corpus/<operator>/`) holds a tuned kernel per operator with its problem file;
lineage building (issue 7) walks each expert backwards into a chain of simpler, verified kernels. Forward, that
chain is a plan: from a naive kernel of the same operator, each step is a more optimized kernel, ending at the
expert. This module

1. **recognises** the operator: the kernel must take the same parameters as the expert (same count; pointers
   where the expert has pointers, with the same element types; scalars of the same kind), and the kernel's name,
   file name or problem file must name the operator (`softmax`, `gemm`/`matmul`, `transpose`, ...). Recognition
   is a cheap filter: every step is still verified by the gate on the user's own problem, so a wrong guess costs
   one gate job and is recorded as a rejected branch;
2. **adapts** each step to the kernel: the step's kernel is renamed to the user's kernel and replaces its
   definition in the user's file; its launch geometry is the expert problem file's own `launch(inputs)`, run on
   the user's inputs (renamed position by position), so grids follow the user's shapes;
3. **plans**: from a version at plan position `k`, the next step `k+1` and the final (expert) step are offered.

Lineage steps come from the lineages `warpwise lineage build` writes beside the corpus
(`lineages/results/<operator>/lineage.json`: kernels K0 .. Kn with their launch changes); without one
the plan is the expert kernel alone.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import Function
from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.context import SearchContext, literal_block
from warpwise.search.version import LaunchOverride, Transform, Version
from warpwise.verify.spec import element_type, kernel_function, problem_kernel, read_problem, scalar_ctype

log = logging.getLogger(__name__)


def corpus_dir() -> Path:
    """Return the expert corpus: `$WARPWISE_CORPUS`, else the one inside the installed lineages package."""
    import warpwise.lineages

    override = os.environ.get("WARPWISE_CORPUS")
    if override:
        return Path(override)
    return Path(warpwise.lineages.__file__).resolve().parent / "corpus"


STEP_PRIOR = 0.9
EXPERT_PRIOR = 0.85

ALIASES: dict[str, tuple[str, ...]] = {
    "reduce_sum": ("sum", "reduce", "reduction"),
    "softmax_rows": ("softmax",),
    "layernorm": ("layernorm", "layer_norm"),
    "transpose": ("transpose",),
    "sgemm": ("sgemm", "gemm", "matmul", "mm"),
    "gemv": ("gemv", "matvec"),
    "histogram": ("histogram", "hist", "bincount"),
    "blur3x3": ("blur", "stencil"),
    "scan": ("scan", "cumsum", "prefix"),
    "bias_gelu": ("gelu",),
    "rmsnorm_f16": ("rmsnorm", "rms_norm"),
}
"""Words that name each corpus operator (besides its folder name)."""

EXCLUDE: dict[str, tuple[str, ...]] = {"gemv": ("colmajor", "col", "column"), "sgemm": ("batched",)}
"""Words that say a kernel is another variant than the corpus's (the corpus's GEMV is row-major)."""


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One kernel of a lineage, forward: its title, its full translation unit, its kernel name and card."""

    title: str
    text: str
    kernel: str
    card: str | None = None
    launch_code: str | None = None
    block: tuple[int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """The forward steps of one operator's lineage and the expert problem file's launch code."""

    operator: str
    steps: tuple[PlanStep, ...]
    launch_code: str
    rename: tuple[tuple[str, str], ...]
    block: tuple[int, int, int] | None


def _words(text: str) -> set[str]:
    """Return the lower-case words of identifiers and file names (split at `_`, digits and case changes)."""
    parts = re.findall(r"[A-Za-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text))
    return {p.lower() for p in parts}


def _signature(fn: Function) -> list[tuple[str, str]]:
    """Return each parameter as (kind, type): pointers by element type, scalars as int or float."""
    out = []
    for p in fn.params:
        if p.is_pointer:
            et = element_type(p.base_type)
            out.append(("ptr", et[0] if et else p.base_type))
        else:
            c = scalar_ctype(p) or p.type
            out.append(("scalar", "float" if c in ("float", "double") else "int"))
    return out


def launch_source(problem: str) -> str:
    """Return the parts of a problem file that its `launch(inputs)` needs: imports, constants, helpers, launch."""
    tree = ast.parse(problem)
    keep: list[ast.stmt] = []
    for node in tree.body:
        constant = isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.isupper() for t in node.targets
        )
        helper = isinstance(node, ast.FunctionDef) and (node.name == "launch" or node.name.startswith("_"))
        if isinstance(node, ast.Import | ast.ImportFrom) or constant or helper:
            keep.append(node)
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) + "\n"


def _lineage_steps(folder: Path, expert_kernel: str, expert_launch: str, block: Any) -> list[PlanStep]:
    """Return the forward steps K1 .. Kn-1 of the lineage built from this expert (none when none was built).

    Lineages are read from `results/<operator>/lineage.json` beside the corpus (`warpwise lineage build`). A
    kernel of the walk launches with the expert's geometry and its recorded launch changes applied
    (`warpwise.lineages.launch`); a step whose changes cannot be rebuilt is left out.
    """
    path = folder.parent.parent / "results" / folder.name / "lineage.json"
    if not path.is_file():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        kernels = list(doc.get("kernels") or [])
        by_target = {int(s["to"]): s for s in doc.get("steps") or [] if "to" in s}
        name = str(doc.get("kernel") or expert_kernel)
    except (OSError, ValueError, TypeError, KeyError):
        log.info("%s does not read as a lineage", path)
        return []
    out = []
    for k in kernels[1:-1]:
        try:
            index, source, changes = int(k["index"]), str(k["source"]), list(k.get("launch_changes") or [])
        except (KeyError, TypeError, ValueError):
            continue
        code, step_block = expert_launch, block
        if changes:
            from warpwise.verify.launch import LaunchChange, problem_source

            parsed = tuple(LaunchChange.from_dict(c) for c in changes)
            code = problem_source(expert_launch, parsed, parsed)
            step_block = None if any(c.part == "block" for c in parsed) else block
        step = by_target.get(index, {})
        what = step.get("card") or step.get("pass") or "step"
        title = f"{what}: {step.get('label', '')}".rstrip(": ") + f" (K{index})"
        out.append(PlanStep(title, source, name, step.get("card"), code, step_block))
    return out


def plans_for(ctx: SearchContext, version: Version, corpus: Path | None = None) -> list[Plan]:
    """Return the plans of every corpus operator the kernel is recognised as (usually none or one)."""
    corpus = corpus or corpus_dir()
    _, fn = ctx.function(version)
    if fn is None or fn.template_params or not corpus.is_dir():
        return []
    words = _words(ctx.kernel) | _words(Path(ctx.path).stem) | _words(Path(ctx.path).parent.name)
    if ctx.spec is not None and ctx.spec.source == "problem_file":
        doc = ast.get_docstring(ast.parse(ctx.problem_source)) if ctx.problem_source else None
        words |= _words((doc or "").split("\n")[0])
    mine = _signature(fn)
    out = []
    for folder in sorted(p for p in corpus.iterdir() if (p / "expert.cu").is_file()):
        names = set(ALIASES.get(folder.name, ())) | {folder.name}
        if not any(set(n.split("_")) <= words for n in names) or words & set(EXCLUDE.get(folder.name, ())):
            continue
        problem_path = folder / "expert.problem.py"
        text = (folder / "expert.cu").read_text(encoding="utf-8")
        problem = read_problem(problem_path) if problem_path.is_file() else ""
        named = problem_kernel(problem)
        expert_model = analyze_text(text, str(folder / "expert.cu"))
        expert_fn = kernel_function(expert_model, named) if named else None
        if expert_fn is None and len(expert_model.kernels) == 1:
            expert_fn = expert_model.kernels[0]
        if expert_fn is None or _signature(expert_fn) != mine or "def launch" not in problem:
            continue
        launch = launch_source(problem)
        block = literal_block(problem)
        steps = _lineage_steps(folder, expert_fn.name, launch, block)
        steps.append(PlanStep(f"expert kernel of {folder.name}", text, expert_fn.name, None, launch, block))
        rename = tuple((theirs.name, ours.name) for theirs, ours in zip(expert_fn.params, fn.params, strict=True))
        out.append(Plan(folder.name, tuple(steps), launch, rename, block))
    return out


def adapt(ctx: SearchContext, start: Version, plan: Plan, step: PlanStep) -> Version | None:
    """Return the user's file with the kernel replaced by one plan step, renamed, with the expert's launch."""
    model, fn = ctx.function(start)
    if fn is None:
        return None
    renamed = re.sub(rf"\b{re.escape(step.kernel)}\b", ctx.kernel, step.text)
    data = model.text
    begin = data.rfind(b"\n", 0, fn.base) + 1
    if data[begin : fn.base].strip():
        begin = fn.base
    text = (data[:begin] + renamed.encode() + data[fn.base + fn.length :]).decode("utf-8", "surrogateescape")
    launch = None
    if ctx.spec_source == "problem_file":
        code = step.launch_code or plan.launch_code
        label = f"launch of the {plan.operator} lineage"
        launch = LaunchOverride().then(Transform("python", code=code, rename=plan.rename, label=label))
    elif model.launches_of(ctx.kernel):
        return None
    return Version(text, launch, step.block if step.launch_code else plan.block)


class LineageActions:
    """Lists the next step and the final step of every recognised operator's plan."""

    def __init__(self, corpus: Path | None = None) -> None:
        self.corpus = corpus
        self._plans: dict[str, list[Plan]] = {}
        self._start: Version | None = None
        self._steps: set[str] = set()

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return lineage actions from a version (steps after the version's own position in the plan)."""
        if self._start is None:
            self._start = version
        key = self._start.key
        if version.key != key and version.key not in self._steps:
            return []  # A step replaces the whole kernel: offered from the start and from plan steps only.
        if key not in self._plans:
            self._plans[key] = plans_for(ctx, self._start, self.corpus)
        out = []
        position = _position(version)
        for plan in self._plans[key]:
            at = position.get(plan.operator, -1)
            for i in sorted({at + 1, len(plan.steps) - 1}):
                if i <= at or i >= len(plan.steps):
                    continue
                step = plan.steps[i]
                adapted = adapt(ctx, self._start, plan, step)
                if adapted is None:
                    continue
                reached = (*[(o, k) for o, k in version.plan if o != plan.operator], (plan.operator, i))
                child = Version(adapted.text, adapted.launch, adapted.block, reached)
                self._steps.add(child.key)
                final = i == len(plan.steps) - 1
                title = f"{plan.operator} lineage step {i + 1}/{len(plan.steps)}: {step.title}"
                why = f"`{ctx.kernel}` takes the parameters of the {plan.operator} expert and its name says so"
                prior = EXPERT_PRIOR if final else STEP_PRIOR
                name = f"lineage:{plan.operator}:{i}"
                out.append(Action(ActionKind.LINEAGE, name, title, prior, why, ready(child), step.card))
        return out


def _position(version: Version) -> dict[str, int]:
    """Return the plan positions a version has reached."""
    return dict(version.plan)


def describe(plans: list[Plan]) -> list[dict[str, Any]]:
    """Return plans as JSON for the report."""
    return [{"operator": p.operator, "steps": [s.title for s in p.steps]} for p in plans]
