"""What the search knows about the kernel it optimizes: the file, the kernel, its spec, and each version's model.

Action sources read versions through one `SearchContext`, which analyses each version once (the analyzers are
fast, but a search lists actions for every node it expands) and knows where the launch geometry lives: in a
problem file's `launch(inputs)`, in the kernel's `// warpwise:` annotation, or at a launch site of the host code.
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FileModel, Function
from warpwise.search.version import Version
from warpwise.verify.spec import ProblemSpec, kernel_function

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def strip_comments(text: str) -> str:
    """Return C/C++ text with comments blanked out (lengths kept)."""
    return _COMMENTS.sub(lambda m: " " * len(m.group(0)), text)


def _dim3(node: ast.expr) -> tuple[int, int, int] | None:
    """Return a literal launch dimension (an int or a tuple of ints), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return (node.value, 1, 1)
    if isinstance(node, ast.Tuple) and 1 <= len(node.elts) <= 3:
        vals = []
        for e in node.elts:
            if not (isinstance(e, ast.Constant) and isinstance(e.value, int)):
                return None
            vals.append(int(e.value))
        vals += [1] * (3 - len(vals))
        return (vals[0], vals[1], vals[2])
    return None


def literal_block(problem_source: str, function: str = "launch") -> tuple[int, int, int] | None:
    """Return the block a problem file's `launch(inputs)` always returns, when it is written as a literal."""
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        return None
    # The last definition is the one Python binds (a problem file that extends another overrides its `launch`).
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    if not defs:
        return None
    fn = defs[-1]
    blocks = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Return):
            if not isinstance(node.value, ast.Tuple) or len(node.value.elts) < 2:
                return None
            block = _dim3(node.value.elts[1])
            if block is None:
                return None
            blocks.add(block)
    return blocks.pop() if len(blocks) == 1 else None


@dataclass
class SearchContext:
    """The kernel being optimized and the analyses of its versions."""

    path: str
    kernel: str
    spec: ProblemSpec | None
    target_sm: int = 90
    library: Any = None
    ranking: Any = None
    _models: OrderedDict[str, FileModel] = field(default_factory=OrderedDict)

    @property
    def spec_source(self) -> str:
        """Return where the kernel's launch geometry comes from: problem_file, annotation, inferred or none."""
        return self.spec.source if self.spec is not None else "none"

    @property
    def problem_source(self) -> str:
        """Return the problem file's text (empty without one)."""
        if self.spec is None or self.spec.source != "problem_file":
            return ""
        return self.spec.run.problem_source or ""

    def model(self, version: Version) -> FileModel:
        """Return the analysis of a version (kept for the last 64 versions)."""
        key = version.key
        model = self._models.get(key)
        if model is None:
            model = analyze_text(version.text.encode("utf-8", "surrogatepass"), self.path)
            self._models[key] = model
            if len(self._models) > 64:
                self._models.popitem(last=False)
        else:
            self._models.move_to_end(key)
        return model

    def function(self, version: Version) -> tuple[FileModel, Function | None]:
        """Return a version's model and its kernel."""
        model = self.model(version)
        return model, kernel_function(model, self.kernel)

    def launch_model(self, version: Version) -> tuple[FileModel, Function | None, int]:
        """Return a model in which the kernel has a launch site, and the length of the version's own text.

        A kernel whose geometry is a problem file's `launch(inputs)` has no launch site in its file, so the cards
        that read the block size (tiling, launch bounds) cannot apply. When the block is known exactly, a virtual
        host function launching the kernel with that block (and an opaque grid) is appended for the analysis;
        edits that land in it are not part of any fix the search takes.
        """
        model, fn = self.function(version)
        limit = len(model.text)
        if fn is None or self.spec_source != "problem_file" or model.launches_of(self.kernel) or fn.template_params:
            return model, fn, limit
        block = self.block_of(version)
        if block is None:
            return model, fn, limit
        args = ", ".join(p.name for p in fn.params)
        tail = (
            "\n\n// warpwise search: a virtual launch site with the problem file's block (not part of any edit)\n"
            f"static void warpwise_virtual_launch() {{\n"
            f"  {self.kernel}<<<dim3(warpwise_grid_x, warpwise_grid_y, warpwise_grid_z), "
            f"dim3({block[0]}, {block[1]}, {block[2]})>>>({args});\n}}\n"
        )
        virtual = Version(version.text + tail)
        vmodel, vfn = self.function(virtual)
        return vmodel, vfn, limit

    def block_of(self, version: Version) -> tuple[int, int, int] | None:
        """Return the version's block when it is known exactly from the problem file, annotation or launch site."""
        if version.block is not None:
            return version.block
        if version.launch is not None and any(t.kind != "grid_div" for t in version.launch.transforms):
            return None
        if self.spec_source == "problem_file":
            return literal_block(self.problem_source)
        model, fn = self.function(version)
        if fn is None:
            return None
        if self.spec_source == "annotation":
            from warpwise.verify import annotation

            ann = annotation.find(model, fn)
            if ann is None:
                return None
            parsed = annotation.resolve(model, fn, ann)
            return parsed.run.original_geometry.block if isinstance(parsed, ProblemSpec) else None
        launches = model.launches_of(self.kernel)
        values = {launch.block_value for _, launch in launches}
        if len(values) == 1:
            (value,) = values
            if value:
                dims = [*value, 1, 1, 1][:3]
                return (dims[0], dims[1], dims[2])
        return None
