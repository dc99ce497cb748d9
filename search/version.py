"""A kernel version: the file's text, and how its launch differs from the starting kernel's.

The state of the search is one version of the user's file. Most actions only change the text (a card rewrite, an
unroll factor, an LLM edit). Some also change the launch geometry; where the geometry lives in the file itself
(an annotation or the host code's launch site) the text edit carries it, but a problem file's geometry is Python
(`launch(inputs)`), so a version carries a `LaunchOverride`: transforms applied on top of the problem file's own
`launch`, which the gate runs as the candidate's `launch_candidate(inputs)`. The same transforms, written as a
replacement `launch`, become the edit to the problem file when the version is adopted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from warpwise.verify.launch import LaunchChange, apply_lines, set_block, shrink_grid


@dataclass(frozen=True, slots=True)
class Transform:
    """One change of the launch geometry, applied to the geometry before it.

    `kind` is `block` (set the block to `block`; along each dimension in `scale`, keep the number of threads by
    scaling the grid), `grid_div` (divide the grid's x dimension by `factor`, rounding up: each thread now covers
    `factor` elements), `python` (replace the geometry by `code`'s `launch(inputs)`, with the inputs renamed by
    `rename`: a lineage step brings the expert's own launch) or `changes` (apply `launch_changes` as they are: a
    transformation whose new grid depends on the whole old block, such as threads covered by a 2-D block).
    """

    kind: str
    block: tuple[int, int, int] = (0, 0, 0)
    scale: tuple[bool, bool, bool] = (False, False, False)
    factor: int = 1
    code: str = ""
    rename: tuple[tuple[str, str], ...] = ()
    label: str = ""
    launch_changes: tuple[LaunchChange, ...] = ()

    @property
    def changes(self) -> tuple[LaunchChange, ...] | None:
        """Return the transform as launch changes (`warpwise.verify.launch`); None for a `python` transform."""
        if self.kind == "grid_div":
            return shrink_grid(self.factor)
        if self.kind == "block":
            return set_block(self.block, self.scale)
        if self.kind == "changes":
            return self.launch_changes
        return None


@dataclass(frozen=True, slots=True)
class LaunchOverride:
    """The transforms from the problem file's `launch(inputs)` to this version's geometry, in order."""

    transforms: tuple[Transform, ...] = ()

    def then(self, t: Transform) -> LaunchOverride:
        """Return this override followed by one more transform (a `python` one replaces everything before)."""
        if t.kind == "python":
            return LaunchOverride((t,))
        return LaunchOverride((*self.transforms, t))

    def changes(self) -> tuple[LaunchChange, ...] | None:
        """Return the transforms as launch changes, or None when one replaces the whole launch (`python`)."""
        out: list[LaunchChange] = []
        for t in self.transforms:
            changes = t.changes
            if changes is None:
                return None
            out += changes
        return tuple(out)

    @property
    def summary(self) -> str:
        """Return the transforms in words."""
        return "; ".join(t.label or t.kind for t in self.transforms)

    def source(self, name: str = "launch_candidate", base: str = "launch") -> str:
        """Return Python that defines `name(inputs)`: `base(inputs)` with the transforms applied."""
        lines = [
            "",
            "",
            f"def {name}(inputs):",
            f'    """Return the launch geometry of the optimized kernel: {self.summary or "unchanged"}."""',
        ]
        start = 0
        for i, t in enumerate(self.transforms):
            if t.kind == "python":
                start = i
        first = self.transforms[start] if self.transforms else None
        if first is not None and first.kind == "python":
            lines += [
                "    import math as _math",
                "    _ns = {'__name__': 'warpwise_lineage_launch'}",
                f"    exec(compile({first.code!r}, 'lineage_launch.py', 'exec'), _ns)",
                "    _renamed = dict(inputs)",
            ]
            for theirs, ours in first.rename:
                lines.append(f"    _renamed[{theirs!r}] = inputs[{ours!r}]")
            lines.append("    _g = _ns['launch'](_renamed)")
            rest = self.transforms[start + 1 :]
        else:
            lines += ["    import math as _math", f"    _g = {base}(inputs)"]
            rest = self.transforms
        lines += [
            "    _grid, _block = _warpwise_dim3(_g[0]), _warpwise_dim3(_g[1])",
            "    _smem = int(_g[2]) if len(_g) > 2 else 0",
        ]
        for t in rest:
            lines += apply_lines(t.changes or ())
        lines += [
            "    return tuple(_grid), tuple(_block), _smem",
            "",
            "",
            "def _warpwise_dim3(v):",
            '    """Return a launch dimension as a list of three ints."""',
            "    if isinstance(v, int):",
            "        return [int(v), 1, 1]",
            "    v = [int(x) for x in v]",
            "    return v + [1] * (3 - len(v))",
            "",
        ]
        return "\n".join(lines)

    def problem_file_edit(self, kernel: str) -> str:
        """Return Python to append to the problem file so that its `launch` gives this version's geometry."""
        head = (
            f"\n\n# warpwise optimize: the optimized `{kernel}` launches with a new geometry "
            f"({self.summary}); the problem file's earlier `launch` is kept as `_launch_before_optimize`.\n"
            "_launch_before_optimize = launch\n"
        )
        return head + self.source("launch", "_launch_before_optimize").lstrip("\n") + "\n"


@dataclass(frozen=True, slots=True)
class Version:
    """One version of the user's file, with its launch override (problem-file specs only)."""

    text: str
    launch: LaunchOverride | None = None
    block: tuple[int, int, int] | None = field(default=None, compare=False)
    plan: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def derive(
        self, text: str, launch: LaunchOverride | str | None = "same", block: tuple[int, int, int] | str | None = "same"
    ) -> Version:
        """Return a child version: new text, and the launch and block given (else this version's), same plan."""
        return Version(
            text,
            self.launch if isinstance(launch, str) else launch,
            self.block if isinstance(block, str) else block,
            self.plan,
        )

    @property
    def key(self) -> str:
        """Return a hash of what decides the version's result: its text and its launch override."""
        h = hashlib.sha256(self.text.encode("utf-8", "surrogatepass"))
        if self.launch is not None and self.launch.transforms:
            h.update(b"\0")
            h.update(self.launch.source().encode())
        return h.hexdigest()
