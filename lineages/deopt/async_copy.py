"""Remove async copies: `cp.async` global-to-shared copies become plain loads and stores through registers.

Handled forms, each replaced exactly:
- inline PTX `cp.async.{ca,cg}.shared.global [%0], [%1], SIZE[, %2];` whose operands are the shared destination
  (`__cvta_generic_to_shared(p)`, or a one-line device function that returns it), the global source and,
  optionally, the number of source bytes (the rest is zero-filled): `ww_copy_sync<SIZE>(dst, src, bytes)`;
- `__pipeline_memcpy_async(dst, src, SIZE[, zfill])`: `ww_copy_sync<SIZE>(dst, src, SIZE - zfill)`;
- the group operations (`cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`,
  `__pipeline_commit()`, `__pipeline_wait_prior(N)`) become no-ops: a synchronous copy has landed when the
  thread moves on, and the barriers the kernel already has order it for the other threads.

The forward rewrite is the card `synchronous-global-to-shared-copy`. Any other asynchronous copy in the file
(bulk copies, `cuda::memcpy_async`) leaves the kernel without a candidate.
"""

from __future__ import annotations

import re

from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, unparen
from warpwise.skills.rewrite import Edit

_COPY = re.compile(r"^cp\.async\.(?:ca|cg)\.shared\.global(?:\.L2::\d+B)?\s+\[%0\],\s*\[%1\],\s*(\d+)(,\s*%2)?;$")
_GROUP = re.compile(r"^cp\.async\.(commit_group|wait_group\s+%?\w+|wait_all);$")

HELPER_COMMENT = (
    "// warpwise lineage (remove async copies): a global-to-shared copy through registers; bytes past\n"
    "// `src_bytes` are zero-filled, as cp.async does."
)
HELPERS = [
    "template <int BYTES>\n"
    "__device__ __forceinline__ void ww_copy_sync(void* dst, const void* src, int src_bytes) {\n"
    "  if (BYTES == 16 && src_bytes == 16) {\n"
    "    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);\n"
    "  } else if (BYTES == 8 && src_bytes == 8) {\n"
    "    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);\n"
    "  } else if (BYTES == 4 && src_bytes == 4) {\n"
    "    *reinterpret_cast<unsigned int*>(dst) = *reinterpret_cast<const unsigned int*>(src);\n"
    "  } else {\n"
    "    unsigned char* d = reinterpret_cast<unsigned char*>(dst);\n"
    "    const unsigned char* s = reinterpret_cast<const unsigned char*>(src);\n"
    "    for (int i = 0; i < BYTES; ++i) d[i] = i < src_bytes ? s[i] : (unsigned char)0;\n"
    "  }\n"
    "}",
]


def _asm_string(src: KernelSource, asm: Node) -> str | None:
    """Return the instruction text of an asm statement (escapes and the trailing newline removed)."""
    lit = next((c for c in asm.named_children if c.type == "string_literal"), None)
    if lit is None:
        return None
    text = src.text_of(lit)[1:-1].replace("\\n", "").replace("\\t", " ")
    return " ".join(text.split())


def _operands(asm: Node) -> list[Node]:
    """Return the expressions of an asm statement's input operands."""
    lists = [c for c in asm.named_children if c.type == "gnu_asm_input_operand_list"]
    out = []
    for lst in lists:
        for op in lst.named_children:
            if op.type == "gnu_asm_input_operand":
                expr = next((c for c in op.named_children if c.type != "string_literal"), None)
                if expr is not None:
                    out.append(expr)
    return out


def _shared_pointer(src: KernelSource, node: Node) -> str | None:
    """Return the generic pointer behind a shared-address operand (`__cvta_generic_to_shared(p)` or a wrapper)."""
    node = unparen(node)
    while node.type == "cast_expression":
        node = unparen(node.child_by_field_name("value"))
    if node.type != "call_expression":
        return None
    callee = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if callee is None or args is None or args.named_child_count != 1:
        return None
    name = src.text_of(callee)
    if name == "__cvta_generic_to_shared":
        return src.text_of(args.named_children[0])
    wrapper = next((f for f in src.device_functions() if f.name == name), None)
    if wrapper is None or len(wrapper.params) != 1:
        return None
    body = src.span_text(wrapper.base, wrapper.base + wrapper.length)
    if not re.search(rf"return\s*(\(\s*[\w\s]+\)\s*)?__cvta_generic_to_shared\(\s*{wrapper.params[0].name}\s*\)", body):
        return None
    return src.text_of(args.named_children[0])


def _statement(asm: Node) -> Node | None:
    """Return the expression statement that holds an asm expression."""
    stmt = asm.parent
    return stmt if stmt is not None and stmt.type == "expression_statement" else None


def remove_async_copies(src: KernelSource) -> list[Deopt]:
    """Return the candidate that makes every asynchronous global-to-shared copy synchronous."""
    edits: list[Edit] = []
    copies = 0
    for asm in src.nodes(None, ("gnu_asm_expression",)):
        instr = _asm_string(src, asm)
        if instr is None or "cp.async" not in instr:
            continue
        stmt = _statement(asm)
        if stmt is None:
            return []
        if _GROUP.match(instr):
            edits.append(Edit(stmt.start_byte, stmt.end_byte, "(void)0;"))
            continue
        m = _COPY.match(instr)
        ops = _operands(asm)
        if m is None or len(ops) != (3 if m.group(2) else 2):
            return []
        dst = _shared_pointer(src, ops[0])
        if dst is None:
            return []
        size = int(m.group(1))
        nbytes = src.text_of(ops[2]) if m.group(2) else str(size)
        call = f"ww_copy_sync<{size}>({dst}, {src.text_of(ops[1])}, {nbytes});"
        edits.append(Edit(stmt.start_byte, stmt.end_byte, call))
        copies += 1
    for call in src.calls(None, ("__pipeline_memcpy_async", "__pipeline_commit", "__pipeline_wait_prior")):
        name = src.text_of(call.child_by_field_name("function"))
        args = call.child_by_field_name("arguments")
        parts = args.named_children if args is not None else []
        if name != "__pipeline_memcpy_async":
            edits.append(Edit(call.start_byte, call.end_byte, "(void)0"))
            continue
        if len(parts) not in (3, 4) or parts[2].type != "number_literal":
            return []
        size = src.text_of(parts[2]).rstrip("uUlL")
        nbytes = size if len(parts) == 3 else f"{size} - ({src.text_of(parts[3])})"
        edits.append(
            Edit(
                call.start_byte,
                call.end_byte,
                f"ww_copy_sync<{size}>({src.text_of(parts[0])}, {src.text_of(parts[1])}, {nbytes})",
            )
        )
        copies += 1
    if not copies or src.code_matches(r"(?<!_)memcpy_async\s*\(|cuda::pipeline"):
        return []
    return [
        Deopt(
            "async-copy",
            "cp-async",
            f"copy global to shared memory through registers instead of `cp.async` ({copies} copy sites)",
            tuple(src.insert_helpers(HELPER_COMMENT, HELPERS) + edits),
            "synchronous-global-to-shared-copy",
        )
    ]
