"""Template kernel instances a project's own macros make: dispatch switches and instance tables.

Two shapes of host code hide a kernel's template arguments in a macro, and neither is visible to a syntax tree:

- a project's dispatch macro (apex's `DISPATCH_FLOAT_AND_HALF(TYPE, LEVEL, NAME, ...)`) is a `switch` whose
  cases each declare `using scalar_t_##LEVEL = float;` and then paste the launch given as the macro's arguments:

      DISPATCH_FLOAT_AND_HALF(x.scalar_type(), 0, "op", using acc_t = at::acc_type<scalar_t_0, true>;
          op_kernel<scalar_t_0, acc_t><<<grid, block>>>(...););

  `dispatch_bindings` expands the macro's body with its arguments and returns one binding per case (each case's
  `using` aliases, then the aliases the arguments declare before the launch);
- an instance table (exllamav2's `#define kernel_instance(bpw) if (b == bpw) return rms_norm_kernel<bpw>`, then
  `kernel_instance(1); kernel_instance(2); ...`): `table_instances` expands every call of a macro whose body names
  the kernel with template arguments.
"""

from __future__ import annotations

import re

from warpwise.verify.hostlocals import bind
from warpwise.verify.instances import template_args_at

_USING = re.compile(r"\busing\s+(\w+)\s*=\s*([^;]+);")
_MAX_CASES = 8
_MAX_CALLS = 32


def _expand(params: list[str], body: str, args: list[str]) -> str:
    """Return a macro's body with its parameters bound to the call's arguments (`##` pasted, `__VA_ARGS__` too)."""
    named = [p for p in params if p != "..."]
    env = dict(zip(named, args, strict=False))
    if "..." in params:
        env["__VA_ARGS__"] = ", ".join(args[len(named) :])
    body = re.sub(r"\s*##\s*", "##", body)
    body = re.sub(r"(?<!#)#(?!#)\s*(\w+)", lambda m: f'"{m.group(1)}"' if m.group(1) in env else m.group(0), body)
    return re.sub(r"\b\w+\b", lambda m: env.get(m.group(0), m.group(0)), body).replace("##", "")


def dispatch_bindings(
    text: str, offset: int, lower: int, macros: dict[str, tuple[list[str], str]]
) -> list[dict[str, str]] | None:
    """Return one binding per case of the project's dispatch macro whose call holds `text[offset]`, or None.

    The call is found in the text, from `lower` (the host function's start) on: its arguments hold statements
    (`using acc_t = ...;`), which no syntax tree reads as a call.
    """
    from warpwise.analyzers.expr import cexpr

    names = [n for n, (params, body) in macros.items() if "..." in params and re.search(r"\busing\b", body)]
    if not names:
        return None
    calls = re.finditer(r"\b(" + "|".join(map(re.escape, names)) + r")\s*\(", text[lower:offset])
    for m in reversed(list(calls)):
        open_at = lower + m.end() - 1
        close = _matching_paren(text, open_at)
        if close is None or close < offset:
            continue
        params, body = macros[m.group(1)]
        args = [a.strip() for a in cexpr.split_top(text[open_at + 1 : close])]
        expanded = _expand(params, body, args)
        cases = [c for c in re.split(r"\bcase\b|\bdefault\s*:", expanded) if _USING.search(c)]
        if not cases:
            return None
        before = text[open_at:offset]
        local = {u.group(1): " ".join(u.group(2).split()) for u in _USING.finditer(before)}
        out = []
        for case in cases[:_MAX_CASES]:
            env = {u.group(1): " ".join(u.group(2).split()) for u in _USING.finditer(case)}
            out.append({**{k: bind([v], env)[0] for k, v in local.items()}, **env})
        return out
    return None


def table_instances(text: str, kernel: str, macros: dict[str, tuple[list[str], str]]) -> list[tuple[str, ...]]:
    """Return the template arguments the calls of macros that name `kernel<...>` give it.

    The macro's body names the kernel (`return rms_norm_kernel<bpw>`), or the call passes the kernel as an
    argument the body instantiates (`CALL_KERNEL(sum_kernel, Fp16)` with `Kernel<Precision, 160><<<...>>>`).
    """
    from warpwise.analyzers.expr import cexpr

    out: list[tuple[str, ...]] = []
    for name, (params, body) in macros.items():
        named = [p for p in params if p != "..."]
        takes_kernel = any(re.search(rf"\b{re.escape(p)}\s*<", body) for p in named)
        if not takes_kernel and not re.search(rf"\b{re.escape(kernel)}\s*<", body):
            continue
        for m in list(re.finditer(rf"(?<![\w#])\b{re.escape(name)}\s*\(", text))[:_MAX_CALLS]:
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start : m.start()].lstrip().startswith("#"):
                continue
            close = _matching_paren(text, m.end() - 1)
            if close is None:
                continue
            args = [a.strip() for a in cexpr.split_top(text[m.end() : close])]
            expanded = _expand(params, body, args)
            for ref in re.finditer(rf"\b{re.escape(kernel)}\s*(?=<)", expanded):
                found = template_args_at(expanded, ref.end())
                if found is not None:
                    out.append(tuple(" ".join(a.split()) for a in found[0]))
    return list(dict.fromkeys(out))


def _matching_paren(text: str, start: int) -> int | None:
    """Return the index of the `)` closing the `(` at `text[start]`."""
    depth = 0
    for i in range(start, min(len(text), start + 20_000)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
