"""Function-like view macros of a file (`HALF2(x)`, `LDST128BITS(x)`) are expanded in the model's accesses."""

from __future__ import annotations

from pathlib import Path

from tree_sitter import Node

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import check_model
from warpwise.analyzers.macros import expression_macros, function_macro_defs
from warpwise.analyzers.model import AccessKind
from warpwise.analyzers.parse import SourceFile

_MACROS = """
#include <cuda_fp16.h>
#define HALF2(x) (reinterpret_cast<half2 *>(&(x))[0])
#define LDST128BITS(value) (reinterpret_cast<float4*>(&(value))[0])
#define CFLOAT4(p) (* (const float4 *) (&(p)))  // a trailing comment is not part of the body
#define SQUARE(x) ((x) * (x))
"""


def _accesses(src: str, kernel: str) -> list:
    fn = analyze_text(src).function(kernel)
    assert fn is not None
    return list(fn.accesses)


def test_stores_and_loads_through_view_macros_are_what_the_expansion_does() -> None:
    src = (
        _MACROS
        + """
    __global__ void add(half* a, half* b, half* c, int n) {
      int idx = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
      if (idx < n) {
        half2 x = HALF2(a[idx]);
        HALF2(c[idx]) = __hadd2(x, HALF2(b[idx]));
      }
    }
    """
    )
    got = {a.base: a for a in _accesses(src, "add")}
    assert got["c"].kind is AccessKind.WRITE and got["a"].kind is AccessKind.READ and got["b"].kind is AccessKind.READ
    assert all(a.view_macro == "HALF2" and a.view_type == "half2" and a.vector_cast for a in got.values())
    assert got["c"].element_type == "half" and got["c"].width == 2


def test_const_views_and_plain_function_macros() -> None:
    src = (
        _MACROS
        + """
    __global__ void k(const float* a, float* b, float* c) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      float4 v = CFLOAT4(a[4 * i]);
      c[i] = SQUARE(b[i]) + v.x;
    }
    """
    )
    got = {a.base: a for a in _accesses(src, "k")}
    assert got["a"].view_macro == "CFLOAT4" and got["a"].view_type == "const float4"
    # `SQUARE` is not a view: its argument is a plain read of a float.
    assert got["b"].view_macro is None and not got["b"].vector_cast and got["b"].kind is AccessKind.READ


def test_contiguous_vectors_through_macros_are_coalesced_and_wider_strides_are_not() -> None:
    src = (
        _MACROS
        + """
    __global__ void copy(half* a, half* b, float* f, float* g, int n) {
      int t = blockIdx.x * blockDim.x + threadIdx.x;
      LDST128BITS(b[8 * t]) = LDST128BITS(a[8 * t]);
      HALF2(b[2 * t]) = HALF2(a[2 * t]);
      LDST128BITS(g[8 * t]) = LDST128BITS(f[4 * t]);
    }
    """
    )
    found = [f for f in check_model(analyze_text(src)) if f.rule == "uncoalesced-global-access"]
    # Only `g[8 * t]`: 16-byte vectors 32 bytes apart leave half of every sector unused.
    assert [f.data["array"] for f in found] == ["g"]


def test_spec_role_inference_sees_outputs_stored_through_macros() -> None:
    from warpwise.verify.spec import param_role

    src = (
        _MACROS
        + """
    __global__ void relu(half* x, half* y, int n) {
      int idx = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
      if (idx < n) HALF2(y[idx]) = __hmax2(HALF2(x[idx]), __float2half2_rn(0.0f));
    }
    """
    )
    fn = analyze_text(src).function("relu")
    assert fn is not None
    roles = {p.name: param_role(fn, p) for p in fn.params if p.is_pointer}
    assert roles == {"x": "in", "y": "out"}


def test_addresses_handed_to_copies_are_not_element_accesses() -> None:
    src = """
    #define CP_ASYNC_CG(dst, src, bytes) asm volatile("cp.async.cg.shared.global [%0], [%1], %2;\\n" ::"r"(dst), "l"(src), "n"(bytes))
    __global__ void stage(const float* a, float* out, int k) {
      __shared__ float tile[64][32];
      int t = threadIdx.x;
      unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&tile[t / 8][(t % 8) * 4]));
      CP_ASYNC_CG(dst, &a[(blockIdx.x * 64 + t / 8) * k + (t % 8) * 4], 16);
      asm volatile("cp.async.wait_all;\\n" ::);
      __syncthreads();
      out[t] = tile[t / 32][t % 32];
    }
    """
    rules = {f.rule for f in check_model(analyze_text(src))}
    assert "uncoalesced-global-access" not in rules and "shared-bank-conflict" not in rules


def _walk_function_macros(root: Node) -> list[Node]:
    """Return every function-like `#define` by a walk of the whole tree (the reference the fast scan must equal)."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "preproc_function_def":
            out.append(node)
        else:
            stack.extend(reversed(node.named_children))
    return out


_NESTED_MACROS = """
#define TOP(a, b) ((a) + (b))
#define OBJECT 4
// #define IN_A_COMMENT(x) (x)
const char* s = "#define IN_A_STRING(x) (x)";
#if defined(FOO)
  #  define INSIDE_IF(i, j) ((i) * 16 + (j))
#endif
__global__ void k(float* x) {
#define IN_BODY(i) x[(i)]
  IN_BODY(threadIdx.x) = TOP(1, 2) + INSIDE_IF(0, 1);
#undef IN_BODY
}
namespace n {
#define IN_NAMESPACE(p) (*(p))
}
#define HALF_TYPED(x
"""


def test_function_macro_defs_equals_a_walk_of_the_whole_tree() -> None:
    files = [_NESTED_MACROS, _MACROS]
    root_dir = Path(__file__).resolve().parents[2]
    files += [p.read_text(errors="replace") for p in sorted((root_dir / "bench" / "suite").rglob("*.cu"))]
    found = 0
    for text in files:
        source = SourceFile.parse(text)
        root = source.tree.root_node
        fast = [(n.start_byte, n.end_byte) for n in function_macro_defs(root, source.text)]
        assert fast == [(n.start_byte, n.end_byte) for n in _walk_function_macros(root)]
        found += len(fast)
    nested = SourceFile.parse(_NESTED_MACROS)
    names = {
        nested.text[n.start_byte : n.end_byte].split(b"(")[0].split()[-1]
        for n in function_macro_defs(nested.tree.root_node, nested.text)
    }
    assert {b"TOP", b"INSIDE_IF", b"IN_BODY", b"IN_NAMESPACE"} <= names
    assert not names & {b"OBJECT", b"IN_A_COMMENT", b"IN_A_STRING"}
    assert found > 4


def test_expression_macros_follow_each_version_of_a_body() -> None:
    def bodies(text: str) -> dict[str, str]:
        source = SourceFile.parse(text)
        found = expression_macros(function_macro_defs(source.tree.root_node, source.text), source.text)
        # The expression is the wrapped body, `(` body `\n)`.
        return {k: m.source[m.expr.start_byte + 1 : m.expr.end_byte - 2].decode() for k, m in found.items()}

    first = "#define AT(i, j) ((i) * 16 + (j))\n#define BAD(i) ((i) +\n__global__ void k() {}\n"
    assert bodies(first) == {"AT": "((i) * 16 + (j))"}
    # The same body parsed again (a keystroke elsewhere) answers alike; an edited body is read anew.
    assert bodies("// moved\n" + first) == {"AT": "((i) * 16 + (j))"}
    assert bodies(first.replace("16", "32")) == {"AT": "((i) * 32 + (j))"}
    assert bodies(first.replace("((i) +\n", "((i) + 1)\n")) == {"AT": "((i) * 16 + (j))", "BAD": "((i) + 1)"}
