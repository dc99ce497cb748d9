"""The server's settings: one typed schema, with a default for every key, validated on every change.

Settings arrive as raw JSON from two places, the `initializationOptions` of `initialize` and
`workspace/didChangeConfiguration` (or, when that carries nothing, a `workspace/configuration` pull of the
`warpwise` section). Raw values go through `parse_settings`, which returns a frozen `Settings` plus one
`SettingProblem` per value it could not use; an invalid value is replaced by its default and the problem is
shown to the user, never raised. Keys may be nested (`{"gpu": {"backend": "off"}}`) or dotted
(`{"gpu.backend": "off"}`), with or without a top-level `warpwise` section.

`Settings` is the single source of truth: `settings_schema()` derives the JSON Schema that is committed at
`server/settings.schema.json` (regenerate it with `warpwise serve --settings-schema > server/settings.schema.json`)
and from which the VS Code extension generates its `package.json` settings, so the two never drift.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SECTION = "warpwise"
"""The configuration section; keys in the schema are `warpwise.<key>`."""


def _setting(
    key: str,
    default: Any,
    description: str,
    *,
    kind: str,
    enum: tuple[str, ...] | None = None,
    enum_descriptions: tuple[str, ...] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    pattern: str | None = None,
    pattern_help: str | None = None,
) -> Any:
    meta = {
        "key": key,
        "kind": kind,
        "description": description,
        "enum": enum,
        "enum_descriptions": enum_descriptions,
        "minimum": minimum,
        "maximum": maximum,
        "exclusive_minimum": exclusive_minimum,
        "pattern": pattern,
        "pattern_help": pattern_help,
    }
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting the server reads, with its default."""

    gpu_backend: str = _setting(
        "gpu.backend",
        "auto",
        "Where kernels run for verification and profiling.",
        kind="string",
        enum=("auto", "local", "cluster", "off"),
        enum_descriptions=(
            "Use a local GPU when one is found, otherwise compile-only reports.",
            "Use the GPU of this machine.",
            "Send jobs to the Dask scheduler at `warpwise.gpu.clusterAddress`.",
            "Never run kernels; profiling falls back to the compile-only resource report.",
        ),
    )
    gpu_cluster_address: str = _setting(
        "gpu.clusterAddress",
        "",
        "Address of the Dask scheduler GPU workers join (for example `tcp://gpu-head:8786`); used when "
        "`warpwise.gpu.backend` is `cluster`.",
        kind="string",
        pattern=r"^$|^(tcp|tls|ucx|ws|wss)://[^\s/]+:\d+$",
        pattern_help="write it as scheme://host:port, for example tcp://gpu-head:8786",
    )
    verification_trigger: str = _setting(
        "verification.trigger",
        "onSave",
        "When candidate rewrites are verified on the GPU.",
        kind="string",
        enum=("onType", "onSave", "manual"),
        enum_descriptions=(
            "Queue verification as you type (debounced; superseded jobs are cancelled).",
            "Queue verification when the file is saved.",
            "Only when you run `warpwise.verifyKernel`.",
        ),
    )
    verification_gpu_time_budget_seconds: float = _setting(
        "verification.gpuTimeBudgetSeconds",
        120.0,
        "GPU time (seconds) verification and profiling may use per hour of editing; jobs past it wait.",
        kind="number",
        minimum=0,
        maximum=86400,
    )
    verification_rtol: float = _setting(
        "verification.rtol",
        1e-4,
        "Relative tolerance when a rewritten kernel's float32 output is compared with the original's (float16 and "
        "bfloat16 keep at least their wider defaults; a problem file's tolerances take precedence).",
        kind="number",
        exclusive_minimum=0,
        maximum=1,
    )
    verification_atol: float = _setting(
        "verification.atol",
        1e-5,
        "Absolute tolerance for the same comparison.",
        kind="number",
        minimum=0,
        maximum=1,
    )
    verification_trusted_workspace: bool = _setting(
        "verification.trustedWorkspace",
        True,
        "Whether code from this workspace may run on a GPU. The VS Code extension sends `false` in Restricted "
        "Mode; compile-only reports still run, since they do not execute the code.",
        kind="boolean",
    )
    profile_on_save: bool = _setting(
        "profile.onSave",
        True,
        "Profile the file's kernels when it is saved (with a GPU: time, bandwidth, occupancy; without one: the "
        "compile-only resource report).",
        kind="boolean",
    )
    compiler_nvcc: str = _setting(
        "compiler.nvcc",
        "nvcc",
        "The `nvcc` executable used for compile-only resource reports (a name on PATH or an absolute path).",
        kind="string",
    )
    compiler_arch: str = _setting(
        "compiler.arch",
        "sm_90",
        "The GPU architecture kernels are compiled for in resource reports.",
        kind="string",
        pattern=r"^sm_\d{2,3}[a-z]?$",
        pattern_help="write it as sm_<number>, for example sm_90 or sm_80",
    )
    compiler_flags: tuple[str, ...] = _setting(
        "compiler.flags",
        (),
        "Extra `nvcc` flags for resource reports, for example `-I include` or `-DN=1024`.",
        kind="array",
    )
    compiler_timeout_seconds: float = _setting(
        "compiler.timeoutSeconds",
        120.0,
        "Time limit for one compile-only build; a build past it is stopped and reported as timed out.",
        kind="number",
        exclusive_minimum=0,
        maximum=3600,
    )
    build_include_dirs: tuple[str, ...] = _setting(
        "build.includeDirs",
        (),
        "Include folders kernels are built with (relative ones against the file's folder), as `include-dirs` of "
        "`[tool.warpwise]`; added after the project configuration's.",
        kind="array",
    )
    build_defines: tuple[str, ...] = _setting(
        "build.defines",
        (),
        "Macros kernels are built with (`NAME` or `NAME=VALUE`), as `defines` of `[tool.warpwise]`.",
        kind="array",
    )
    build_std: str = _setting(
        "build.std",
        "",
        "The C++ standard kernels are built with (`c++17`), as `std` of `[tool.warpwise]`; empty leaves the project's.",
        kind="string",
        pattern=r"^(c\+\+\d\d)?$",
        pattern_help="write it as c++<two digits>, for example c++17, or leave it empty",
    )
    build_nvrtc_flags: tuple[str, ...] = _setting(
        "build.nvrtcFlags",
        (),
        "Extra NVRTC options for the verification gate's builds, as `nvrtc-flags` of `[tool.warpwise]`.",
        kind="array",
    )
    build_nvcc_flags: tuple[str, ...] = _setting(
        "build.nvccFlags",
        (),
        "Extra `nvcc` options for the gate's fallback builds, as `nvcc-flags` of `[tool.warpwise]`.",
        kind="array",
    )
    build_arch: str = _setting(
        "build.arch",
        "",
        "The architecture the gate builds for (`sm_90`), as `arch` of `[tool.warpwise]`; empty leaves the "
        "project's or the GPU's.",
        kind="string",
        pattern=r"^(sm_\d{2,3}[a-z]?)?$",
        pattern_help="write it as sm_<number>, for example sm_90, or leave it empty",
    )
    diagnostics_show_all: bool = _setting(
        "diagnostics.showAll",
        False,
        "Show every finding at its declared severity. By default (the quiet default) only correctness problems and "
        "findings with an expected gain (a predicted speedup of at least 1.1x with a 50% chance to verify, or a "
        "verified one, or an uncoalesced global access that moves at least 4x the DRAM sectors of a coalesced one) "
        "are drawn as warnings; the others are hints, shown in the hover and the code lens.",
        kind="boolean",
    )
    cards_enabled: tuple[str, ...] = _setting(
        "cards.enabled",
        (),
        "Only these skill cards and rules report (ids, as shown in diagnostics); empty means all.",
        kind="array",
    )
    cards_disabled: tuple[str, ...] = _setting(
        "cards.disabled",
        (),
        "Skill cards and rules that never report (ids, as shown in diagnostics).",
        kind="array",
    )
    llm_endpoint: str = _setting(
        "llm.endpoint",
        "",
        "OpenAI-compatible endpoint used by `warpwise.optimizeKernel` for LLM-proposed edits and by "
        "`warpwise.generateKernel` to write a kernel from a description; empty means no LLM (nothing leaves the "
        "machine).",
        kind="string",
        pattern=r"^$|^https?://\S+$",
        pattern_help="write it as an http(s) URL, for example http://localhost:8000/v1",
    )
    llm_model: str = _setting(
        "llm.model",
        "",
        "Model name sent to `warpwise.llm.endpoint`.",
        kind="string",
    )
    analysis_max_file_size_mib: float = _setting(
        "analysis.maxFileSizeMiB",
        8.0,
        "Files larger than this are not analysed (the editor stays responsive on generated sources).",
        kind="number",
        exclusive_minimum=0,
        maximum=1024,
    )
    log_level: str = _setting(
        "log.level",
        "warning",
        "How much the server writes to its log (the editor's output panel).",
        kind="string",
        enum=("error", "warning", "info", "debug"),
    )
    verification_team_key_file: str = _setting(
        "verification.teamKeyFile",
        "",
        "A file holding this team's key, readable by its owner only (`chmod 600`): results measured here are signed "
        "with it, and results signed with it elsewhere keep their status here. Empty: `$WARPWISE_TEAM_KEY_FILE`, else "
        "no key. The key itself is never logged, shown or exported.",
        kind="string",
    )

    def rule_enabled(self, rule_id: str) -> bool:
        """Return whether a rule or card id reports under these settings."""
        if rule_id in self.cards_disabled:
            return False
        return not self.cards_enabled or rule_id in self.cards_enabled

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a flat `{dotted key: value}` mapping."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.metadata["key"]] = list(value) if isinstance(value, tuple) else value
        return out


DEFAULTS = Settings()


@dataclass(frozen=True, slots=True)
class SettingProblem:
    """A setting that could not be used, in the user's terms."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"`{SECTION}.{self.key}`: {self.message}"


_FIELDS = {f.metadata["key"]: f for f in dataclasses.fields(Settings)}
_TRUST = "verification_trusted_workspace"


def _flatten(raw: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested objects into dotted keys, stopping at keys the schema knows."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        key = f"{prefix}{k}"
        if key in _FIELDS or not isinstance(v, Mapping):
            out[key] = v
        else:
            out.update(_flatten(v, key + "."))
    return out


def _default_of(f: dataclasses.Field) -> Any:
    return f.default


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(f: dataclasses.Field, value: Any) -> tuple[Any, str | None]:
    """Return the value converted to the field's type, or an explanation of why it cannot be used."""
    meta = f.metadata
    kind = meta["kind"]
    if kind == "boolean":
        if isinstance(value, bool):
            return value, None
        return None, f"{_shown(value)} is not true or false"
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return None, f"{_shown(value)} is not a number"
        if meta["minimum"] is not None and value < meta["minimum"]:
            return None, f"{_shown(value)} is below the minimum {meta['minimum']}"
        if meta["exclusive_minimum"] is not None and value <= meta["exclusive_minimum"]:
            return None, f"{_shown(value)} must be greater than {meta['exclusive_minimum']}"
        if meta["maximum"] is not None and value > meta["maximum"]:
            return None, f"{_shown(value)} is above the maximum {meta['maximum']}"
        return float(value), None
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, f"{_shown(value)} is not a list of strings"
        return tuple(value), None
    if not isinstance(value, str):
        return None, f"{_shown(value)} is not a string"
    if meta["enum"] is not None and value not in meta["enum"]:
        return None, f"{_shown(value)} is not one of {', '.join(meta['enum'])}"
    if meta["pattern"] is not None and not re.fullmatch(meta["pattern"], value):
        return None, f"{_shown(value)} is not valid ({meta['pattern_help']})"
    return value, None


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[SettingProblem]]:
    """Validate raw settings; invalid or unknown values are reported, and invalid ones replaced by defaults.

    Keys not given keep their value from `base` (the defaults when `base` is None), so a partial change (a client
    that sends only `{"log.level": "info"}`) changes only what it names. Trust is special: it changes only when
    a message names it with a boolean; `null` keeps the current value, and an invalid value makes the workspace
    untrusted (the default would raise trust on bad input).
    """
    problems: list[SettingProblem] = []
    values = dataclasses.asdict(base) if base is not None else {}
    if raw is None:
        return (base or DEFAULTS), problems
    if not isinstance(raw, Mapping):
        problems.append(SettingProblem("", f"expected an object of settings, got {_shown(raw)}; using defaults"))
        return (base or DEFAULTS), problems
    if isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    for key, value in sorted(_flatten(raw).items()):
        key = key.removeprefix(f"{SECTION}.")
        f = _FIELDS.get(key)
        if f is None:
            problems.append(SettingProblem(key, "unknown setting (ignored)"))
            continue
        if f.name == _TRUST:
            if value is None:
                continue
            if not isinstance(value, bool):
                problems.append(
                    SettingProblem(key, f"{_shown(value)} is not true or false; the workspace is untrusted")
                )
                values[f.name] = False
                continue
        if value is None:
            values[f.name] = _default_of(f)
            continue
        converted, error = _check(f, value)
        if error is not None:
            default = _default_of(f)
            problems.append(SettingProblem(key, f"{error}; using the default {_shown(default)}"))
            values[f.name] = default
        else:
            values[f.name] = converted
    settings = Settings(**values)
    if settings.gpu_backend == "cluster" and not settings.gpu_cluster_address:
        problems.append(
            SettingProblem(
                "gpu.clusterAddress",
                "`warpwise.gpu.backend` is `cluster` but no cluster address is set; set it to the Dask "
                "scheduler's address (tcp://host:port)",
            )
        )
    return settings, problems


def settings_schema() -> dict[str, Any]:
    """Return the JSON Schema of the settings, keyed by full setting name (`warpwise.gpu.backend`)."""
    props: dict[str, Any] = {}
    for f in dataclasses.fields(Settings):
        meta = f.metadata
        default = _default_of(f)
        prop: dict[str, Any] = {
            "type": meta["kind"],
            "default": list(default) if isinstance(default, tuple) else default,
            "description": meta["description"],
        }
        if meta["kind"] == "array":
            prop["items"] = {"type": "string"}
        for name, key in (
            ("enum", "enum"),
            ("enumDescriptions", "enum_descriptions"),
            ("minimum", "minimum"),
            ("maximum", "maximum"),
            ("exclusiveMinimum", "exclusive_minimum"),
            ("pattern", "pattern"),
        ):
            if meta[key] is not None:
                prop[name] = list(meta[key]) if isinstance(meta[key], tuple) else meta[key]
        if meta["pattern_help"]:
            prop["patternErrorMessage"] = meta["pattern_help"]
        props[f"{SECTION}.{meta['key']}"] = prop
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": "Generated by `warpwise serve --settings-schema` from server/settings.py; do not edit.",
        "title": "warpwise language server settings",
        "type": "object",
        "additionalProperties": False,
        "properties": props,
    }


def schema_json() -> str:
    """Return the schema as the committed file's text."""
    return json.dumps(settings_schema(), indent=2) + "\n"
