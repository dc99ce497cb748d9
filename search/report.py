"""The outcome of a search: one edit to the kernel, the path that led to it, and every rejected branch.

The edit replaces the smallest byte range in which the start and the best version differ (the server turns it
into a workspace edit; the command line can write it). When the best version launches differently and the launch
lives in a problem file, a second edit appends the new `launch` to the problem file. Only a node the gate marked
`verified` (and, for LLM-written versions, the judge did not flag) becomes the edit; a compile-only search
never proposes one.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise.search.tree import Node, Rejected, Search
from warpwise.verify.types import VerificationResult


@dataclass(frozen=True, slots=True)
class FileEdit:
    """Replace bytes `start..end` of the file at `path` (as the search read it) with `text`."""

    path: str
    start: int
    end: int
    text: str


def minimal_edit(path: str, before: str, after: str) -> FileEdit | None:
    """Return one edit that turns `before` into `after` (None when they are equal)."""
    a = before.encode("utf-8", "surrogatepass")
    b = after.encode("utf-8", "surrogatepass")
    if a == b:
        return None
    i = 0
    n = min(len(a), len(b))
    while i < n and a[i] == b[i]:
        i += 1
    j = 0
    while j < n - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    # Keep the edit on whole UTF-8 characters: never start or end inside a multi-byte sequence.
    while 0 < i < len(a) and (a[i] & 0xC0) == 0x80:
        i -= 1
    while 0 < j < len(a) and (a[len(a) - j] & 0xC0) == 0x80:
        j -= 1
    return FileEdit(path, i, len(a) - j, b[i : len(b) - j].decode("utf-8", "surrogateescape"))


def _unified(path: str, before: str, after: str) -> str:
    """Return a unified diff of one file."""
    name = Path(path).name
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def summary(result: VerificationResult | None) -> dict[str, Any]:
    """Return the parts of a gate result a report shows."""
    if result is None:
        return {}
    out: dict[str, Any] = {
        "status": result.status.value,
        "message": result.message.splitlines()[0] if result.message else "",
    }
    if result.speedup is not None:
        s = result.speedup
        out["speedup"] = {
            "median": round(s.median, 4),
            "low": round(s.low, 4),
            "high": round(s.high, 4),
            "noise": round(s.noise, 4),
        }
    if result.original_timing is not None and result.candidate_timing is not None:
        out["start_ms"] = round(result.original_timing.median_ms, 5)
        out["ms"] = round(result.candidate_timing.median_ms, 5)
    b = result.candidate_build
    if b is not None:
        out["build"] = {
            "ok": b.ok,
            "registers": b.registers,
            "spill_stores": b.spill_stores,
            "spill_loads": b.spill_loads,
            "shared_bytes": b.shared_bytes,
        }
        if not b.ok:
            out["build"]["log"] = b.log[-2000:]
    if result.mismatch is not None:
        m = result.mismatch
        out["mismatch"] = f"`{m.buffer}` seed {m.seed}: {m.bad_elements}/{m.total_elements} bad, {m.reason}"
    if result.device is not None:
        out["device"] = result.device.label
    p = result.candidate_profile
    if p is not None:
        out["profile"] = {"bottleneck": p.bottleneck, "dram_pct": p.dram_pct, "sm_pct": p.sm_pct}
    return out


def node_summary(node: Node) -> dict[str, Any]:
    """Return one node as JSON."""
    ev = node.evaluation
    a = node.action
    out: dict[str, Any] = {
        "id": node.id,
        "parent": node.parent.id if node.parent is not None else None,
        "depth": node.depth,
        "action": a.name if a is not None else "start",
        "title": a.title if a is not None else "starting kernel",
        "kind": a.kind.value if a is not None else "start",
        "card": a.card if a is not None else None,
        "prior": round(a.prior, 3) if a is not None else None,
        "why": a.why if a is not None else "",
        "reward": round(node.reward.value, 4) if node.reward is not None else None,
        "visits": node.visits,
        "gpu_seconds": round(ev.cost_s, 3) if ev is not None else 0.0,
        "cached": ev.cached if ev is not None else False,
        **summary(ev.result if ev is not None else None),
    }
    if ev is not None and ev.screened:
        # A reduced problem's result ranks candidates; only the user's size verifies, so it never says "verified".
        out["status"] = _screened_status(ev.result)
        out["screened_at"] = ev.scale
    if node.screening is not None:
        out["screening"] = {"at": node.screening.scale, **summary(node.screening.result)}
        out["screening"]["status"] = _screened_status(node.screening.result)
    if node.version.launch is not None and node.version.launch.transforms:
        out["launch"] = node.version.launch.summary
    if node.judge is not None:
        out["judge"] = node.judge
    return out


def _screened_status(result: VerificationResult) -> str:
    """Return a screening result's status: `screened_faster` when its timing cleared the spread, else the gate's."""
    from warpwise.search.reward import measured_faster

    return "screened_faster" if measured_faster(result) else f"screened_{result.status.value}"


def rejected_summary(r: Rejected) -> dict[str, Any]:
    """Return one rejected action as JSON."""
    return {
        "action": r.action.name,
        "title": r.action.title,
        "from": r.parent,
        "status": "not evaluated",
        "reason": r.reason,
    }


@dataclass
class SearchReport:
    """What a search did and what it proposes."""

    file: str
    kernel: str
    strategy: str
    mode: str
    stop_reason: str
    budget: dict[str, Any]
    start: dict[str, Any]
    best: dict[str, Any] | None
    path: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    edits: list[FileEdit] = field(default_factory=list)
    best_text: str | None = None
    trajectory: list[tuple[float, float]] = field(default_factory=list)
    plans: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    search: Any = field(default=None, repr=False, compare=False)
    start_text: str | None = field(default=None, repr=False)

    def diff(self) -> str:
        """Return the proposed edits as a unified diff (empty without a proposal)."""
        if self.best_text is None or self.start_text is None:
            return ""
        out = _unified(self.file, self.start_text, self.best_text)
        for e in self.edits[1:]:
            try:
                old = Path(e.path).read_text(encoding="utf-8")
            except OSError:
                continue
            data = old.encode("utf-8", "surrogatepass")
            new = (data[: e.start] + e.text.encode("utf-8", "surrogatepass") + data[e.end :]).decode("utf-8")
            out += _unified(e.path, old, new)
        return out

    @property
    def speedup(self) -> float | None:
        """Return the proposed version's verified median speedup over the start."""
        if self.best is None:
            return None
        sp = self.best.get("speedup")
        return float(sp["median"]) if sp else None

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON (the proposed text is included; the edits as byte ranges)."""
        return {
            "file": self.file,
            "kernel": self.kernel,
            "strategy": self.strategy,
            "mode": self.mode,
            "stop_reason": self.stop_reason,
            "budget": self.budget,
            "start": self.start,
            "best": self.best,
            "path": self.path,
            "nodes": self.nodes,
            "rejected": self.rejected,
            "edits": [{"path": e.path, "start": e.start, "end": e.end, "text": e.text} for e in self.edits],
            "trajectory": [[round(s, 3), round(x, 4)] for s, x in self.trajectory],
            "plans": self.plans,
            "notes": self.notes,
        }

    def markdown(self) -> str:
        """Return the report as Markdown: verdict, path taken (the new kernel's lineage), rejected branches."""
        out = [f"# Optimize `{self.kernel}` ({Path(self.file).name})", ""]
        b = self.budget
        device = next((n["device"] for n in self.nodes if n.get("device")), None)
        where = f"{self.mode} on {device}" if device else self.mode
        out.append(
            f"Strategy **{self.strategy}** ({where}); {b.get('nodes', 0)} versions evaluated, "
            f"{b.get('candidates', 0)} gate jobs charged, {b.get('gpu_seconds', 0.0):.1f} GPU-seconds "
            f"({b.get('new', 0)} new, {b.get('cached', 0)} from the cache); stopped: {self.stop_reason}."
        )
        out.append("")
        if self.best is not None and self.speedup is not None:
            sp = self.best["speedup"]
            out.append(
                f"**Verified {sp['median']:.2f}x** over the start (spread {sp['low']:.2f}x..{sp['high']:.2f}x, "
                f"A/A noise {100 * sp['noise']:.1f}%) on {self.best.get('device', 'the GPU')}."
            )
        elif self.mode == "compile-only":
            out.append("Compile-only: every candidate was built, none was run or timed; no speedup is claimed.")
        else:
            out.append("No version was verified faster than the start; no edit is proposed.")
        out += ["", "## Path taken", ""]
        for i, n in enumerate(self.path):
            sp = n.get("speedup")
            spt = f"{sp['median']:.2f}x" if sp else "-"
            launch = f" (launch: {n['launch']})" if n.get("launch") else ""
            scr = n.get("screening")
            at = f" (screened {scr['speedup']['median']:.2f}x at a reduced size)" if scr and scr.get("speedup") else ""
            out.append(f"{i}. {n['title']}{launch}: {n.get('status', '')} {spt}{at}")
        if not self.path:
            out.append("(nothing)")
        if self.mode == "compile-only":
            out += ["", "## Candidates built (compile-only: not run, not timed)", ""]
            for n in self.nodes:
                b = n.get("build") or {}
                res = (
                    f"{b.get('registers')} registers, spills {b.get('spill_stores')}/{b.get('spill_loads')} B, "
                    f"{b.get('shared_bytes')} B shared"
                    if b.get("ok")
                    else "build failed"
                )
                launch = f" (launch: {n['launch']})" if n.get("launch") else ""
                out.append(f"- {n['title']}{launch} (node {n['id']}): {n.get('status')}: {res}")
        losers = [
            n
            for n in self.nodes
            if n.get("status") not in ("verified", "no_gpu", "screened_faster") and n["action"] != "start"
        ]
        out += ["", "## Rejected branches", ""]
        if not losers and not self.rejected:
            out.append("(none)")
        for n in losers:
            sp = n.get("speedup")
            spt = f" {sp['median']:.2f}x" if sp else ""
            detail = n.get("mismatch") or (n.get("message") or "")[:160]
            out.append(f"- {n['title']} (from node {n['parent']}): **{n.get('status')}**{spt}: {detail}")
        for r in self.rejected:
            out.append(f"- {r['title']} (from node {r['from']}): not evaluated: {r['reason']}")
        diff = self.diff()
        if diff:
            out += ["", "## Proposed edit", "", "```diff", diff.rstrip("\n"), "```"]
        if self.notes:
            out += ["", "## Notes", ""] + [f"- {note}" for note in self.notes]
        return "\n".join(out) + "\n"


def build_report(
    search: Search,
    file: str,
    kernel: str,
    mode: str,
    best: Node | None,
    problem_path: str | None = None,
    problem_text: str | None = None,
    notes: list[str] | None = None,
    plans: list[dict[str, Any]] | None = None,
) -> SearchReport:
    """Return the report of a finished search, with the edit of its best node."""
    budget = search.evaluator.budget
    edits: list[FileEdit] = []
    best_text = None
    if best is not None:
        best_text = best.version.text
        e = minimal_edit(file, search.root.version.text, best.version.text)
        if e is not None:
            edits.append(e)
        launch = best.version.launch
        if launch is not None and launch.transforms and problem_path and problem_text is not None:
            at = len(problem_text.encode("utf-8", "surrogatepass"))
            edits.append(FileEdit(problem_path, at, at, launch.problem_file_edit(kernel)))
    root_ev = search.root.evaluation
    return SearchReport(
        file=file,
        kernel=kernel,
        strategy=search.name,
        mode=mode,
        stop_reason=search.stop_reason,
        budget={
            "nodes": len(search.nodes),
            "candidates": budget.charged,
            "gpu_seconds": round(budget.spent_s, 3),
            "new": budget.new,
            "new_gpu_seconds": round(budget.new_s, 3),
            "cached": budget.cached,
            "limit_gpu_seconds": budget.gpu_seconds,
            "limit_candidates": budget.candidates,
        },
        start=summary(root_ev.result if root_ev is not None else None),
        best=node_summary(best) if best is not None else None,
        path=[node_summary(n) for n in best.path()] if best is not None else [],
        nodes=[node_summary(n) for n in search.nodes],
        rejected=[rejected_summary(r) for r in search.rejected],
        edits=edits,
        best_text=best_text,
        trajectory=list(search.trajectory),
        plans=plans or [],
        notes=notes or [],
        search=search,
        start_text=search.root.version.text,
    )
