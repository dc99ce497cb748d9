"""Generate a kernel from a description: an LLM writes a problem file and a first kernel; the gate checks them.

`generate(description, name, folder, config)` asks the configured LLM for two fenced blocks: a problem file in
the gate's format (`kernel = NAME`, `make_inputs(seed)`, `reference(inputs)`, `launch(inputs)`; see
docs/verification.md) and a CUDA kernel `__global__ void NAME(...)`. Both are checked before anything runs: the
problem file must parse, define those names and pass a static screen (it is Python the gate's worker executes:
only `torch`, `math`, `numpy` and `typing` may be imported, and no file, process or `exec`-like calls are
allowed); the kernel must define `NAME`. The files are written next to each other (`NAME.cu`,
`NAME.problem.py`, never over existing files unless `overwrite`), then the kernel is checked against the
problem's `reference()` through the gate. A kernel that fails (build, launch, wrong results) is sent back with
the gate's message, up to `attempts` times. With a GPU the result is a kernel that matched the reference on
every seed; compile-only, one that builds. `optimize` may then search from it as from any kernel.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise.search.evaluate import Verifier
from warpwise.search.llm import LLMClient, LLMError
from warpwise.search.report import summary
from warpwise.verify.types import Options, Status, VerificationResult

AUTHOR = (
    "You write CUDA kernels and their test harnesses. Given a description, write (1) a problem file, Python with "
    'torch, that defines: `kernel = "{name}"`; `make_inputs(seed)` returning a dict keyed by the kernel\'s '
    "parameter names (a tensor on the GPU for every pointer, outputs included, and a Python number for every "
    "scalar; use a torch.Generator seeded with `seed`); `reference(inputs)` returning a dict of the expected "
    "outputs keyed by parameter name; `launch(inputs)` returning (grid, block) or (grid, block, shared_bytes); "
    "and (2) the CUDA kernel `__global__ void {name}(...)` that computes the outputs. Sizes should take a few "
    "milliseconds on a large GPU. Only import torch, math, numpy and typing.\n"
    "Answer format: one ```python block (the problem file), then one ```cuda block (the kernel)."
)
ALLOWED_IMPORTS = frozenset({"torch", "math", "numpy", "typing", "__future__"})
FORBIDDEN_CALLS = frozenset({"exec", "eval", "compile", "open", "__import__", "input", "breakpoint", "globals"})
FORBIDDEN_ATTRS = frozenset({"system", "popen", "remove", "unlink", "rmtree", "spawn", "fork", "kill", "load"})

_FENCE = re.compile(r"```[ \t]*([A-Za-z+]*)[^\n]*\n(.*?)```", re.S)


class GenerateError(ValueError):
    """The request cannot be carried out (bad name, files in the way)."""


@dataclass
class GenerateReport:
    """What generation produced: the files, each attempt's outcome, and the final gate result."""

    name: str
    kernel_path: str
    problem_path: str
    status: str
    message: str
    attempts: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    optimized: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Return whether the kernel matched the reference (or, compile-only, built)."""
        return self.status in ("checked", "built")

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON."""
        return {
            "name": self.name,
            "kernel_path": self.kernel_path,
            "problem_path": self.problem_path,
            "status": self.status,
            "message": self.message,
            "attempts": self.attempts,
            "result": self.result,
            "optimized": self.optimized,
        }


def blocks(answer: str) -> tuple[str | None, str | None]:
    """Return the answer's Python and CUDA blocks (by language tag, else by content)."""
    python = cuda = None
    for m in _FENCE.finditer(answer):
        lang, code = m.group(1).lower(), m.group(2)
        if python is None and (lang in ("python", "py") or (not lang and "def make_inputs" in code)):
            python = code
        elif cuda is None and (lang in ("cuda", "cpp", "c++", "cu", "c") or (not lang and "__global__" in code)):
            cuda = code
    return python, cuda


def screen_problem(source: str, name: str) -> str | None:
    """Return why a generated problem file is refused, or None when it passes."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"the problem file does not parse: {exc.msg} (line {exc.lineno})"
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = {"make_inputs", "reference", "launch"} - defined
    if missing:
        return f"the problem file does not define {', '.join(sorted(missing))}"
    kernel = [
        n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "kernel" for t in n.targets)
        and isinstance(n.value, ast.Constant)
    ]
    if kernel != [name]:
        return f'the problem file must say `kernel = "{name}"`'
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for mod in mods:
                if mod.split(".")[0] not in ALLOWED_IMPORTS:
                    return f"the problem file imports `{mod}` (only torch, math, numpy and typing are allowed)"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            return f"the problem file calls `{node.func.id}`"
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            return f"the problem file uses `.{node.attr}`"
        elif isinstance(node, ast.Name) and node.id.startswith("__") and node.id not in ("__name__", "__file__"):
            return f"the problem file uses `{node.id}`"
    return None


def _feedback(result: VerificationResult) -> str:
    """Return the gate's verdict as a message for the author."""
    parts = [f"The gate's verdict: {result.status.value}: {result.message}"]
    if result.mismatch is not None:
        m = result.mismatch
        parts.append(
            f"Output `{m.buffer}` differs on seed {m.seed}: {m.bad_elements} of {m.total_elements} elements, "
            f"first at index {m.first_bad_index} (expected {m.expected}, got {m.got}); {m.reason}."
        )
    for b in (result.candidate_build, result.original_build):
        if b is not None and not b.ok:
            parts.append("Compiler log:\n" + b.log[-3000:])
            break
    parts.append("Fix the kernel (and the problem file if it is wrong). Answer in the same format.")
    return "\n".join(parts)


def generate(
    description: str,
    name: str,
    folder: str | Path,
    client: LLMClient,
    verifier: Verifier,
    *,
    compile_only: bool = False,
    attempts: int = 3,
    overwrite: bool = False,
    options: Options | None = None,
) -> GenerateReport:
    """Write a problem file and a first kernel for a description, checked by the gate (see the module doc)."""
    from warpwise.verify.gate import Candidate

    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise GenerateError(f"`{name}` is not a C identifier")
    out = Path(folder)
    cu, problem = out / f"{name}.cu", out / f"{name}.problem.py"
    if not overwrite and (cu.exists() or problem.exists()):
        raise GenerateError(f"{cu} or {problem} exists already (pass overwrite to replace them)")
    out.mkdir(parents=True, exist_ok=True)
    report = GenerateReport(name, str(cu), str(problem), "failed", "no attempt was made")
    messages = [
        {"role": "system", "content": AUTHOR.format(name=name)},
        {"role": "user", "content": f"Description: {description}\nKernel name: {name}"},
    ]
    options = options or Options(compile_only=compile_only)
    created = False
    for attempt in range(1, attempts + 1):
        try:
            answer = client.chat("author", messages)
        except LLMError as exc:
            report.attempts.append({"attempt": attempt, "outcome": str(exc)})
            report.message = str(exc)
            return report
        python, cuda = blocks(answer)
        problem_why = screen_problem(python, name) if python is not None else "the answer has no ```python block"
        kernel_why = None
        if cuda is None or not re.search(rf"__global__[\s\S]*\b{re.escape(name)}\s*\(", cuda):
            kernel_why = f"the answer has no ```cuda block defining `__global__ void {name}(...)`"
        why = problem_why or kernel_why
        if why is not None:
            report.attempts.append({"attempt": attempt, "outcome": f"refused: {why}"})
            report.message = why
            messages += [
                {"role": "assistant", "content": answer},
                {"role": "user", "content": f"That answer cannot be used: {why}. Answer again in the format asked."},
            ]
            continue
        assert python is not None and cuda is not None
        try:
            # The first attempt creates the files and never replaces one that appeared meanwhile; later attempts
            # rewrite the files this call created.
            mode = "w" if created or overwrite else "x"
            with problem.open(mode, encoding="utf-8") as f:
                f.write(python.strip("\n") + "\n")
            with cu.open(mode, encoding="utf-8") as f:
                f.write(cuda.strip("\n") + "\n")
        except FileExistsError as exc:
            report.attempts.append({"attempt": attempt, "outcome": f"not written: {exc.filename} exists"})
            report.message = f"{exc.filename} appeared while the LLM was answering; it was not replaced"
            return report
        created = True
        text = cu.read_text(encoding="utf-8")
        result = verifier.verify(Candidate(str(cu), text, name, text, str(cu)), options)
        if result is None:
            report.attempts.append({"attempt": attempt, "outcome": "the verifier refused the job"})
            report.message = "the verifier refused the job"
            return report
        report.result = summary(result)
        report.attempts.append({"attempt": attempt, "outcome": result.status.value, "message": result.message[:300]})
        if result.status in (Status.NOT_FASTER, Status.VERIFIED):
            report.status, report.message = "checked", "the kernel matched the problem's reference() on every seed"
            return report
        if result.status is Status.NO_GPU:
            report.status, report.message = "built", "compile-only: the kernel builds; it was not run"
            return report
        report.message = f"{result.status.value}: {result.message.splitlines()[0] if result.message else ''}"
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": _feedback(result)}]
    return report
