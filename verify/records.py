"""Validation of result records that come from outside (`warpwise cache import`): every field, strictly.

An imported line is hostile until proven otherwise. `check_record` walks the record against the dataclasses of
`warpwise.verify.types` (field names, JSON types, known statuses and enum values, finite numbers, sizes) and then
checks what the types cannot say: hash formats, ranges (positive times, quartiles in order, speedup bounds
around the median), and that the key's GPU, driver and toolkit are the result's device. It returns the problems
as short phrases naming the field; an empty list means the record may be stored (as an imported, unverified
record: validation says the line is well formed, never that it is true).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import types as _types
import typing
from enum import StrEnum
from typing import Any

from warpwise.verify import types as vtypes
from warpwise.verify.types import Status, VerificationResult

HEX64 = re.compile(r"[0-9a-f]{64}")
MAX_TEXT = 1 << 20
MAX_ITEMS = 10_000
KEY_FIELDS = ("original_hash", "candidate_hash", "spec_hash", "gpu", "driver", "toolkit")


def _check_value(tp: Any, value: Any, where: str, out: list[str]) -> None:
    """Append the problems of one JSON value against its annotated type."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, _types.UnionType):
        if value is None and type(None) in args:
            return
        options = [a for a in args if a is not type(None)]
        trials: list[list[str]] = []
        for a in options:
            sub: list[str] = []
            _check_value(a, value, where, sub)
            if not sub:
                return
            trials.append(sub)
        out.extend(trials[0] if trials else [f"{where}: unexpected value"])
        return
    if value is None:
        out.append(f"{where}: null is not allowed")
        return
    if origin is tuple:
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            out.append(f"{where}: expected a list")
            return
        if len(args) == 2 and args[1] is Ellipsis:
            for i, v in enumerate(value):
                _check_value(args[0], v, f"{where}[{i}]", out)
        elif len(value) != len(args):
            out.append(f"{where}: expected {len(args)} items, got {len(value)}")
        else:
            for i, (a, v) in enumerate(zip(args, value, strict=True)):
                _check_value(a, v, f"{where}[{i}]", out)
        return
    if origin is dict:
        if not isinstance(value, dict) or len(value) > MAX_ITEMS:
            out.append(f"{where}: expected an object")
            return
        for k, v in value.items():
            _check_value(args[1], v, f"{where}.{k}", out)
        return
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        _check_dataclass(tp, value, where, out)
        return
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        if not isinstance(value, str) or value not in {m.value for m in tp}:
            out.append(f"{where}: {str(value)[:40]!r} is not one of {', '.join(m.value for m in tp)}")
        return
    if tp is bool:
        if not isinstance(value, bool):
            out.append(f"{where}: expected true or false")
        return
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**63:
            out.append(f"{where}: expected an integer")
        return
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            out.append(f"{where}: expected a finite number")
        return
    if tp is str:
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            out.append(f"{where}: expected a string")
        return
    if tp is bytes:
        ok = isinstance(value, dict) and set(value) == {"__b64__"} and isinstance(value["__b64__"], str)
        if not ok:
            out.append(f"{where}: expected base64 bytes")
        return
    out.append(f"{where}: unsupported field type")


def _check_dataclass(cls: Any, value: Any, where: str, out: list[str]) -> None:
    """Append the problems of a JSON object against a dataclass of `warpwise.verify.types`."""
    if not isinstance(value, dict):
        out.append(f"{where}: expected an object")
        return
    hints = typing.get_type_hints(cls, vars(vtypes))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in value:
        if name not in fields:
            out.append(f"{where}.{name}: unknown field")
    for name, f in fields.items():
        if name not in value:
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required:
                out.append(f"{where}.{name}: missing")
            continue
        _check_value(hints[name], value[name], f"{where}.{name}", out)


def _check_ranges(r: VerificationResult, rec: dict[str, Any], out: list[str]) -> None:
    """Append the problems that the types cannot express."""
    for name in ("original_timing", "candidate_timing", "control_timing"):
        t = getattr(r, name)
        if t is None:
            continue
        if not (0 < t.q1_ms <= t.median_ms <= t.q3_ms) or t.reps < 1:
            out.append(f"result.{name}: times must be positive with q1 <= median <= q3, reps >= 1")
    s = r.speedup
    if s is not None and (not (0 < s.low <= s.median <= s.high) or s.noise < 0):
        out.append("result.speedup: needs 0 < low <= median <= high and noise >= 0")
    if r.created < 0 or r.created > time.time() + 86400:
        out.append("result.created: not a plausible time")
    if r.provenance is not None and (r.provenance.measured_at < 0 or r.provenance.measured_at > time.time() + 86400):
        out.append("result.provenance.measured_at: not a plausible time")
    if r.signature and not HEX64.fullmatch(r.signature):
        out.append("result.signature: expected 64 lowercase hex digits")
    measured = r.device is not None and not r.device.compile_only and r.speedup and r.original_timing
    if r.status in (Status.VERIFIED, Status.NOT_FASTER) and not measured:
        out.append(f"result.status: `{r.status.value}` needs a GPU device, timings and a speedup")
    if r.status is Status.REPORTED or r.reported_status or r.reported_by:
        out.append("result.status: `reported` is set by the machine that reads a result, never imported")
    if r.device is not None:
        for k, have in (("gpu", r.device.gpu), ("driver", r.device.driver), ("toolkit", r.device.toolkit)):
            if rec.get(k) != have:
                out.append(f"{k}: the key says {str(rec.get(k))[:40]!r}, the result's device {have[:40]!r}")


def check_record(rec: Any) -> tuple[VerificationResult | None, list[str]]:
    """Return the result of an exported record and no problems, or None and every problem found."""
    if not isinstance(rec, dict):
        return None, ["expected a JSON object"]
    out: list[str] = []
    for k in ("result", *KEY_FIELDS):
        if k not in rec:
            out.append(f"{k}: missing")
    for k in set(rec) - {"result", *KEY_FIELDS}:
        out.append(f"{k}: unknown field")
    for k in KEY_FIELDS[:3]:
        if k in rec and not (isinstance(rec[k], str) and HEX64.fullmatch(rec[k])):
            out.append(f"{k}: expected a SHA-256 hash (64 lowercase hex digits)")
    for k in KEY_FIELDS[3:]:
        if k in rec and not (isinstance(rec[k], str) and 0 < len(rec[k]) <= 200):
            out.append(f"{k}: expected a non-empty string of at most 200 characters")
    if "result" in rec:
        _check_dataclass(VerificationResult, rec["result"], "result", out)
    if out:
        return None, out
    try:
        result = VerificationResult.from_dict(rec["result"])
    except (TypeError, ValueError, KeyError) as exc:
        return None, [f"result: {type(exc).__name__}: {exc}"]
    _check_ranges(result, rec, out)
    return (None, out) if out else (result, [])
