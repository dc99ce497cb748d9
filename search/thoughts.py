"""OptiML-G: LLM-proposed kernels by a mixture of thoughts, an aggregation step, and a judge of verified gains.

One LLM action asks each role for a complete new version of the kernel:

- the **architect** reasons about the parallel decomposition (what a thread, a warp and a block compute, the
  grid, coarsening, occupancy);
- the **memory specialist** about the memory traffic (coalescing, vector widths, shared memory and registers,
  bank conflicts, bytes moved per output);
- the **experimenter** about what was measured so far in this search: it proposes the next change most likely
  to pay off, or an untried alternative.

The **aggregator** then merges the proposals into one kernel; when it fails, the first usable proposal stands in.
The candidate goes through the static guardrails and the gate like every other version. The **judge** reviews a
verified gain of an LLM-written version for signs of a false gain (work skipped, results cached across calls,
stream or launch tricks, reading the outputs of an earlier run) and its verdict, with its reasons, is kept on the
node; a version it flags is not proposed.

Answers are parsed strictly: the kernel is the first fenced code block that defines `__global__ ... NAME(`; an
answer without one is asked again once with the reason, then the role is dropped. Nothing of the LLM's prose is
executed or trusted: only the gate's statuses say "verified".
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from warpwise.search.actions import Action, ActionKind
from warpwise.search.context import SearchContext
from warpwise.search.llm import LLMClient, LLMError
from warpwise.search.version import Version

log = logging.getLogger(__name__)

LLM_PRIOR = 0.5
MAX_FILE_CHARS = 16000

ROLES: dict[str, str] = {
    "architect": (
        "You are a CUDA performance architect. Reason about the parallel decomposition of the kernel: what each "
        "thread, warp and block computes, how the work maps onto the GPU's multiprocessors, coarsening, occupancy, "
        "and the launch the kernel is given. Propose a faster kernel that computes exactly the same outputs."
    ),
    "memory": (
        "You are a GPU memory-system specialist. Reason about the kernel's memory traffic: coalescing, vector "
        "widths, reuse through shared memory and registers, bank conflicts, the L2, and the bytes moved per output "
        "against the bandwidth. Propose a faster kernel that computes exactly the same outputs."
    ),
    "experimenter": (
        "You are a careful experimenter optimizing a CUDA kernel. Read what has been measured so far in this "
        "search and propose the single change most likely to pay off next, or a promising alternative that has "
        "not been tried. Propose a faster kernel that computes exactly the same outputs."
    ),
}

AGGREGATOR = (
    "You merge kernel proposals from several CUDA experts into one kernel. Keep the ideas that are most likely to "
    "be both correct and faster; when proposals conflict, prefer the one you are more certain computes exactly "
    "the same outputs. Output one complete kernel."
)

JUDGE = (
    "You review a CUDA kernel that a verification gate measured as faster than the original, looking for signs "
    "of a false gain: work skipped (part of the output not computed, loops cut short, inputs assumed), results "
    "cached across calls (device-global or static state, reading an output an earlier run left in memory), or "
    "stream and launch tricks (work handed to another stream or launch that the timing does not see). Outputs are "
    "poisoned before every run and checked on several random inputs, so a kernel that merely leaves outputs "
    'alone fails anyway. Answer with one JSON object: {"verdict": "ok" or "suspicious", "reasons": "..."}.'
)

RULES = (
    "Rules: keep the kernel's name `{kernel}` and its parameters (same order, same types; you may add const and "
    "__restrict__). It is launched with the same grid and block as now ({launch}), and must give the same "
    "outputs for every input the original accepts. Device code only: no host code, no streams, no dynamic "
    "parallelism, no global or static state that lasts between calls. You may add __device__ helper functions "
    "and #defines before the kernel.\n"
    "Answer format: one ```cuda code block holding the complete new kernel (with any helpers it needs), then one "
    "line starting with `Rationale:`."
)


@dataclass(frozen=True, slots=True)
class Proposal:
    """One role's answer: the kernel code and its rationale."""

    role: str
    code: str
    rationale: str


_FENCE = re.compile(r"```[ \t]*([A-Za-z+#]*)[^\n]*\n(.*?)```", re.S)


def extract_code(answer: str, kernel: str) -> str | None:
    """Return the first fenced code block that defines `__global__ ... kernel(`, or None."""
    for m in _FENCE.finditer(answer):
        code = m.group(2)
        if re.search(r"__global__", code) and re.search(rf"\b{re.escape(kernel)}\s*\(", code):
            return code.strip("\n") + "\n"
    return None


def rationale_of(answer: str) -> str:
    """Return the answer's `Rationale:` line (or its prose outside code blocks, shortened)."""
    m = re.search(r"^\s*Rationale:\s*(.+)$", answer, re.M)
    if m:
        return m.group(1).strip()[:400]
    prose = _FENCE.sub("", answer).strip()
    return " ".join(prose.split())[:400]


def splice(ctx: SearchContext, version: Version, code: str) -> str | None:
    """Return the version's file with the kernel's definition replaced by `code` (None without the kernel)."""
    model, fn = ctx.function(version)
    if fn is None:
        return None
    data = model.text
    begin = data.rfind(b"\n", 0, fn.base) + 1
    if data[begin : fn.base].strip():
        begin = fn.base
    # A `template <...>` line directly above belongs to the definition being replaced.
    prev = data.rfind(b"\n", 0, max(begin - 1, 0)) + 1
    if begin > 0 and data[prev:begin].strip().startswith(b"template"):
        begin = prev
    return (data[:begin] + code.encode("utf-8") + data[fn.base + fn.length :]).decode("utf-8", "surrogateescape")


def parse_verdict(answer: str) -> dict[str, str]:
    """Return the judge's verdict and reasons from its answer (`unknown` when it does not read)."""
    candidates = [m.group(2) for m in _FENCE.finditer(answer)] + [answer]
    for text in candidates:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            doc = json.loads(text[start : end + 1])
        except ValueError:
            continue
        verdict = str(doc.get("verdict", "")).strip().lower()
        if verdict in ("ok", "suspicious"):
            return {"verdict": verdict, "reasons": str(doc.get("reasons", ""))[:1000]}
    return {"verdict": "unknown", "reasons": "the judge's answer did not hold a JSON verdict: " + answer[:200]}


class Thoughts:
    """Runs the roles, the aggregation and the judge against one client."""

    def __init__(self, client: LLMClient, roles: tuple[str, ...] = tuple(ROLES), retries: int = 1) -> None:
        self.client = client
        self.roles = roles
        self.retries = retries
        self.log: list[dict[str, Any]] = []

    def _ask(self, role: str, system: str, user: str, kernel: str) -> Proposal | None:
        """Ask one role; re-ask once with the reason when the answer holds no usable kernel."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for attempt in range(self.retries + 1):
            try:
                answer = self.client.chat(role, messages)
            except LLMError as exc:
                self.log.append({"role": role, "attempt": attempt, "outcome": str(exc)})
                return None
            code = extract_code(answer, kernel)
            if code is not None:
                self.log.append({"role": role, "attempt": attempt, "outcome": "kernel"})
                return Proposal(role, code, rationale_of(answer))
            self.log.append({"role": role, "attempt": attempt, "outcome": "no kernel in the answer"})
            messages += [
                {"role": "assistant", "content": answer},
                {
                    "role": "user",
                    "content": f"Your answer has no ```cuda code block defining `__global__ void {kernel}(...)`. "
                    "Answer again in the required format.",
                },
            ]
        return None

    def propose(self, context: str, kernel: str) -> tuple[Proposal | None, list[Proposal]]:
        """Return the aggregated proposal (or the first usable one) and every role's proposal."""
        proposals = [p for p in (self._ask(r, ROLES[r], context, kernel) for r in self.roles) if p is not None]
        if not proposals:
            return None, []
        if len(proposals) == 1:
            return proposals[0], proposals
        parts = [context, "", "Proposals:"]
        for p in proposals:
            parts += [f"--- {p.role} (rationale: {p.rationale}) ---", "```cuda", p.code.rstrip(), "```"]
        merged = self._ask("aggregator", AGGREGATOR, "\n".join(parts), kernel)
        return (merged or proposals[0]), proposals

    def judge(self, kernel: str, before: str, after: str, result: str) -> dict[str, str]:
        """Return the judge's verdict on a verified gain."""
        user = (
            f"Kernel `{kernel}`. The gate measured: {result}\n\nOriginal:\n```cuda\n{before}\n```\n\n"
            f"Faster version:\n```cuda\n{after}\n```"
        )
        try:
            answer = self.client.chat(
                "judge", [{"role": "system", "content": JUDGE}, {"role": "user", "content": user}]
            )
        except LLMError as exc:
            return {"verdict": "unknown", "reasons": f"the judge could not be asked: {exc}"}
        return parse_verdict(answer)


def kernel_text(ctx: SearchContext, version: Version) -> str:
    """Return the kernel's source to show the LLM: the whole file when short, else the kernel alone."""
    if len(version.text) <= MAX_FILE_CHARS:
        return version.text
    model, fn = ctx.function(version)
    if fn is None:
        return version.text[:MAX_FILE_CHARS]
    return model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")


def context_prompt(ctx: SearchContext, version: Version, history: list[str], hints: list[str], gpu: str) -> str:
    """Return the user message every role gets: the code, the rules, the findings and the measurements so far."""
    block = ctx.block_of(version)
    launch = f"block {block[0]}x{block[1]}x{block[2]}" if block else "the launch given by the problem file"
    if version.launch is not None and version.launch.transforms:
        launch += f"; {version.launch.summary}"
    parts = [
        f"Optimize the CUDA kernel `{ctx.kernel}` for {gpu}.",
        "",
        "```cuda",
        kernel_text(ctx, version).rstrip(),
        "```",
        "",
        RULES.format(kernel=ctx.kernel, launch=launch),
    ]
    if hints:
        parts += ["", "Findings of the static analysis:"] + [f"- {h}" for h in hints[:12]]
    if history:
        parts += ["", "Measured so far (speedup over the starting kernel):"] + [f"- {h}" for h in history[-12:]]
    return "\n".join(parts)


class LLMActions:
    """Lists one LLM action per node, up to `rounds` LLM actions in the whole search."""

    def __init__(
        self,
        thoughts: Thoughts,
        *,
        rounds: int = 3,
        gpu: str = "an NVIDIA H200 (sm_90)",
        history: Callable[[], list[str]] | None = None,
    ) -> None:
        self.thoughts = thoughts
        self.rounds = rounds
        self.gpu = gpu
        self.history = history or (lambda: [])
        self.offered = 0
        self.proposals: list[dict[str, Any]] = []

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return one LLM action for a version while rounds remain."""
        if self.offered >= self.rounds:
            return []
        self.offered += 1
        n = self.offered

        def produce() -> Version | None:
            hints = _hints(ctx, version)
            prompt = context_prompt(ctx, version, self.history(), hints, self.gpu)
            chosen, every = self.thoughts.propose(prompt, ctx.kernel)
            self.proposals.append(
                {"round": n, "roles": [p.role for p in every], "chosen": chosen.role if chosen else None}
            )
            if chosen is None:
                return None
            text = splice(ctx, version, chosen.code)
            return version.derive(text) if text is not None else None

        why = f"mixture of thoughts ({', '.join(self.thoughts.roles)}) then aggregation"
        return [Action(ActionKind.LLM, f"llm:{n}", f"LLM edit (round {n})", LLM_PRIOR, why, produce)]


def _hints(ctx: SearchContext, version: Version) -> list[str]:
    """Return the card findings on the kernel, as one line each."""
    from warpwise.skills.engine import match_file

    model, fn = ctx.function(version)
    if fn is None:
        return []
    return [m.message for m in match_file(model, ctx.library) if m.function == ctx.kernel]
