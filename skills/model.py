"""The skill card: what to change, when the change is sound, the risk, and the evidence.

A card is a folder, `skills/<skill_id>/`, whose `card.md` is Markdown with a YAML header. The header is validated into
`CardHeader` (pydantic, unknown keys forbidden), which is also the source of the committed JSON Schema
(`skills/card.schema.json`); the loader then compiles it into a `SkillCard` with its matcher, checks and
rewrite resolved. Cards written by the KLineage tools (`SKILL.md`: front matter with `skill_id`, `intent`,
`preconditions`, `scope`) load through `KLineageHeader` as display-only cards.
"""

from __future__ import annotations

import datetime as _dt
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Status(StrEnum):
    """Where a card is in its life: `preview` until admitted by a held-out roundtrip."""

    PREVIEW = "preview"
    ADMITTED = "admitted"
    DEPRECATED = "deprecated"


class Applicability(StrEnum):
    """How safe a card's fix is (ruff's scale)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class Axis(StrEnum):
    """The five axes preconditions are grouped on."""

    DATA_TYPES = "data_types"
    LAYOUT = "layout"
    STORAGE = "storage"
    PIPELINE = "pipeline"
    HARDWARE = "hardware"


class AnchorKind(StrEnum):
    """The kind of code region a card binds to."""

    ACCESS = "access"
    LOOP = "loop"
    KERNEL = "kernel"
    CALL = "call"
    SHARED = "shared"
    BRANCH = "branch"
    EXPRESSION = "expression"
    PARAM = "param"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class CheckRef(_Strict):
    """A machine check: a registered check name and its arguments."""

    name: str = Field(description="name of a check registered in warpwise.skills.checks")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments passed to the check")


class Precondition(_Strict):
    """One condition under which the card's change is sound or pays off."""

    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$", description="short id, unique within the card")
    text: str = Field(min_length=8, description="the condition in prose, for people")
    check: CheckRef | str | None = Field(
        default=None, description="a machine check over analyzer facts (omit when it cannot be checked)"
    )
    kind: str = Field(
        default="soundness",
        pattern=r"^(soundness|benefit)$",
        description="soundness: violating it changes results; benefit: violating it makes the change useless",
    )

    @property
    def check_ref(self) -> CheckRef | None:
        """Return the check as a `CheckRef` (a bare string is a check without arguments)."""
        if self.check is None:
            return None
        if isinstance(self.check, str):
            return CheckRef(name=self.check)
        return self.check


class Preconditions(_Strict):
    """Preconditions grouped on the five axes."""

    data_types: list[Precondition] = Field(default_factory=list)
    layout: list[Precondition] = Field(default_factory=list)
    storage: list[Precondition] = Field(default_factory=list)
    pipeline: list[Precondition] = Field(default_factory=list)
    hardware: list[Precondition] = Field(default_factory=list)

    def items(self) -> list[tuple[Axis, Precondition]]:
        """Return every precondition with its axis, in declaration order."""
        return [(axis, p) for axis in Axis for p in getattr(self, axis.value)]


class Scope(_Strict):
    """Where the card applies."""

    operators: list[str] = Field(default_factory=list, description="operator families, e.g. elementwise, gemm")
    languages: list[str] = Field(default_factory=lambda: ["cuda"])
    platforms: list[str] = Field(default_factory=lambda: ["sm_70+"], description="e.g. sm_70+, sm_80+, sm_90")

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, v: list[str]) -> list[str]:
        for p in v:
            if not re.fullmatch(r"sm_\d{2,3}[a-z]?\+?", p):
                raise ValueError(f"platform {p!r} should look like 'sm_80+' or 'sm_90'")
        return v


class Anchor(_Strict):
    """Which code regions the card binds to, and the matcher that finds them."""

    kind: AnchorKind
    matcher: str = Field(description="name of a matcher registered in warpwise.skills.matchers")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments passed to the matcher")
    description: str = Field(min_length=8)


class Risk(_Strict):
    """What breaks when a precondition is violated, and how we know."""

    summary: str = Field(min_length=8)
    failure_modes: list[str] = Field(default_factory=list)
    evidence: str | None = Field(default=None, description="where the failure was seen or why it follows")


class EvidenceRecord(_Strict):
    """One measured effect of the card's change."""

    kernel: str
    operator: str | None = None
    gpu: str
    toolkit: str
    baseline_ms: float = Field(gt=0)
    candidate_ms: float = Field(gt=0)
    speedup: float = Field(gt=0)
    spread: float | None = Field(default=None, ge=0, description="relative run-to-run spread of the speedup")
    date: _dt.date
    source: str = Field(description="what produced it: verification, lineage, admission, with the result file")
    context: dict[str, Any] = Field(default_factory=dict)


class Reference(_Strict):
    """A document that supports the card."""

    title: str
    url: str | None = None


class CardHeader(_Strict):
    """The YAML header of a warpwise skill card."""

    skill_id: str = Field(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", description="kebab-case id naming the pattern")
    title: str = Field(min_length=4, description="short title of the change, used for the quick fix")
    intent: str = Field(min_length=12, description="one sentence: what the change does")
    status: Status = Status.PREVIEW
    scope: Scope = Field(default_factory=Scope)
    severity: str = Field(default="info", pattern=r"^(error|warning|info|hint)$")
    concern: str = Field(
        default="performance",
        pattern=r"^(performance|correctness)$",
        description="what the finding is about: a correctness problem keeps its severity in the quiet default; "
        "a performance finding is a warning there only when a gain is expected or verified",
    )
    anchor: Anchor
    message: str = Field(min_length=8, description="the finding's message; {fields} come from the region")
    fix_title: str | None = Field(default=None, description="the quick fix title; {fields} come from the region")
    preconditions: Preconditions = Field(default_factory=Preconditions)
    supersedes: list[str] = Field(
        default_factory=list, description="model-level rule ids this card replaces where both bind to the same span"
    )
    requires: list[str] = Field(default_factory=list)
    provides: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    rewrite: str | None = Field(
        default=None,
        description="the rewrite: a function of the card's rules module (function or rules:function), "
        "a shared package.module:function, or null",
    )
    applicability: Applicability
    resource_guard: bool = Field(
        default=False,
        description="the fix changes code generation (unrolling, register blocking): a safe fix is applied in bulk "
        "only when a compile-only build shows it adds no spills or local memory",
    )
    risk: Risk
    evidence: list[EvidenceRecord] = Field(default_factory=list)
    references: list[Reference] = Field(min_length=1)

    @field_validator("rewrite")
    @classmethod
    def _rewrite(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"(?:(?:rules|[A-Za-z_][\w.]*):)?[A-Za-z_]\w*", v):
            raise ValueError(
                "write the rewrite as 'function' (of the card's rules module) or 'package.module:function'"
            )
        return v


class KLineagePrecondition(BaseModel):
    """A precondition as the KLineage tools write it (prose, optionally keyed by axis)."""

    model_config = ConfigDict(extra="allow")

    text: str | None = None
    axis: str | None = None


class KLineageHeader(BaseModel):
    """The front matter of a KLineage `SKILL.md` (display-only in warpwise)."""

    model_config = ConfigDict(extra="allow")

    skill_id: str
    intent: str
    preconditions: list[str] | dict[str, list[str]] | list[KLineagePrecondition] = Field(default_factory=list)
    scope: dict[str, Any] | list[str] | str | None = None
