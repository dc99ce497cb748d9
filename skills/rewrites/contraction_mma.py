"""Tensor-core kernels for a recognised contraction: `mma.sync` fed by `ldmatrix` from a `cp.async` pipeline.

The untiled-contraction card recognises a naive matrix multiply (`skills/untiled-contraction/`); this module
generates, from what it recognised, a kernel body with the same name, signature and epilogue that computes the
products on tensor cores:

- a block computes a BM x BN tile of outputs with WM x WN warps (each a (BM / WM) x (BN / WN) warp tile of
  16 x 8 `mma.sync` tiles, accumulators in float registers);
- BK-deep tiles of A and B are copied global -> shared by `cp.async.cg` 16-byte copies in a pipeline of
  `stages` buffers (2: double buffering, 3 or 4: deeper), each operand in the orientation it has in global
  memory (k-contiguous or contiguous along its output coordinate) so that every copy is one 16-byte vector;
- shared rows are padded by 16 bytes (8 halves; 4 floats on the k-contiguous side of TF32, 8 on the other),
  which keeps every row 16-byte aligned and makes the eight row addresses of each `ldmatrix` phase (and the
  32-bit fragment reads of TF32) fall in distinct banks;
- half and bfloat16 operands: `ldmatrix.x4` (`.trans` for the operand whose shared tile is stored the other way)
  and `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`; float32 operands (the TF32 option):
  32-bit fragment reads, `cvt.rna.tf32.f32` and `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`;
- edges: a copy of a row outside the tile's range or past the contiguous bound reads 0 bytes or only the bytes
  in range (`cp.async`'s source size zero-fills the rest), so any M, N and K work; the 16-byte path is taken
  only when a runtime test shows the pointer 16-byte aligned and the leading dimension a multiple of the vector
  width, otherwise each element is loaded on its own (guarded, zero outside) into registers one tile ahead and
  stored to shared memory after the tile's arithmetic (the same values, the same pipeline order);
- the epilogue is the user's store statement as written, run for each output in range under the user's guard,
  with the user's names for the output coordinates and the accumulator.

Exactness: a product of two halves (or bfloat16s) is exact in float, but a tensor core sums the products of its
k-slice in an order (and with an internal alignment) of its own, so results differ from the naive loop's
sequential float sum by rounding: the stated tolerance is `MMA_TOLERANCE`, relative to sum |a * b| over k. TF32
rounds each float operand to 10 mantissa bits first: `TF32_TOLERANCE`, offered only when the problem's own
tolerance is at least that loose. Both are therefore `unsafe` rewrites that the gate checks on every problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MMA_TOLERANCE = (1e-3, 1e-3)
"""(rtol, atol) within which a float-accumulated half/bfloat16 tensor-core result may differ from the naive
loop's before the epilogue: a sum of K exact products in another order differs by at most about
K * 2^-24 * sum |a * b|, far below a half output's own rounding (2^-11 relative)."""
TF32_TOLERANCE = (5e-3, 5e-3)
"""(rtol, atol) for the TF32 option: each float operand is rounded to TF32 (2^-11 relative), so each product
is off by up to about 2^-10 relative; summed with random signs over K the error is about sqrt(K) * 2^-10 of
the typical product (a few 1e-3 of the result at K = 4096 for inputs of one sign scale)."""
SMEM_LIMIT = 48 * 1024
"""Static shared memory a block may declare without an opt-in attribute."""


@dataclass(frozen=True)
class MmaTiles:
    """Tensor-core tile sizes: BM x BN outputs per block, BK-deep stages, WM x WN warps, a pipeline of stages."""

    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 2
    wn: int = 4
    stages: int = 2
    min_blocks: int = 1  # > 0: add `__launch_bounds__(threads, min_blocks)`
    tf32: bool = False

    @property
    def key(self) -> str:
        """Return the sizes as `mma128x128x32w2x4s2` (`tf32...` for the TF32 option, `xB` for launch bounds)."""
        base = f"{'tf32' if self.tf32 else 'mma'}{self.bm}x{self.bn}x{self.bk}w{self.wm}x{self.wn}s{self.stages}"
        return base + (f"x{self.min_blocks}" if self.min_blocks else "")

    @property
    def threads(self) -> int:
        """Threads per block."""
        return 32 * self.wm * self.wn

    @property
    def elem_bytes(self) -> int:
        """Bytes per operand element (2 for half and bfloat16, 4 for float under TF32)."""
        return 4 if self.tf32 else 2

    @property
    def kstep(self) -> int:
        """The k extent of one `mma.sync` (16 for half, 8 for TF32)."""
        return 8 if self.tf32 else 16

    def shape(self, rows: int, layout: str) -> tuple[int, int]:
        """Return (rows, padded columns) of one stage of an operand tile of `rows` outputs, stored as in global."""
        ce = 16 // self.elem_bytes
        if layout == "k":
            return rows, self.bk + ce
        return self.bk, rows + 8

    def smem_bytes(self, a_layout: str, b_layout: str) -> int:
        """Return the static shared memory of both operands' pipelines."""
        ra, ca = self.shape(self.bm, a_layout)
        rb, cb = self.shape(self.bn, b_layout)
        return self.stages * (ra * ca + rb * cb) * self.elem_bytes

    def problems(self, a_layout: str = "o", b_layout: str = "k") -> list[str]:
        """Return why these sizes cannot be generated for these operand layouts (empty when they can)."""
        out = []
        ce = 16 // self.elem_bytes
        if self.bm % (16 * self.wm) or self.bn % (16 * self.wn):
            out.append("each warp tile must be a multiple of 16 x 16")
        if self.bk % self.kstep or self.bk % ce:
            out.append(f"BK must be a multiple of {max(self.kstep, ce)}")
        if not 2 <= self.stages <= 4:
            out.append("2 to 4 pipeline stages")
        t = self.threads
        if t > 1024:
            out.append(f"{t} threads per block is more than 1024")
        for rows in (self.bm, self.bn):
            if (rows * self.bk // ce) % t or rows * self.bk // ce < t:
                out.append("each thread must copy whole 16-byte vectors of each tile")
        if a_layout not in ("k", "o") or b_layout not in ("k", "o"):
            out.append("an operand is contiguous along neither k nor its output coordinate")
        if self.smem_bytes(a_layout, b_layout) > SMEM_LIMIT:
            out.append(f"{self.smem_bytes(a_layout, b_layout)} bytes of shared memory is more than 48 KiB")
        return out


MMA_CHOICES = (
    MmaTiles(128, 128, 32, 2, 4, 2),
    MmaTiles(128, 128, 16, 2, 4, 3),
    MmaTiles(128, 64, 32, 2, 2, 3),
    MmaTiles(64, 128, 32, 2, 2, 3),
    MmaTiles(128, 128, 16, 2, 4, 4),
)
"""Half/bfloat16 tensor-core shapes a search may choose from, in the order it tries them."""
TF32_CHOICES = (
    MmaTiles(128, 128, 16, 2, 4, 2, tf32=True),
    MmaTiles(128, 64, 16, 2, 2, 3, tf32=True),
)
"""TF32 shapes (float operands; offered only when the problem's tolerance admits `TF32_TOLERANCE`)."""


def _copy(c: Any, op: Any, which: str, t: MmaTiles) -> tuple[str, str, str, str]:
    """Return (register declaration, direct copy, register fetch, register store) of one operand's stage.

    The direct copy is `cp.async` (16-byte path) or scalar loads stored at once (prologue); in the main loop the
    scalar path fetches into registers before the arithmetic and stores after it.
    """
    outer = t.bm if which == "A" else t.bn
    ce = 16 // t.elem_bytes
    rows, _cols = t.shape(outer, op.layout)
    cols_used = outer if op.layout == "o" else t.bk
    cpr = cols_used // ce  # 16-byte chunks per stored row
    per = rows * cols_used // ce // t.threads
    o0 = "ww_m0" if which == "A" else "ww_n0"
    ob = "ww_M" if which == "A" else "ww_N"
    w = which.lower()
    so, sk = f"ww_{w}_o", f"ww_{w}_k"
    sm, ptr, reg, vec = f"ww_{which}s", f"ww_p{which}", f"ww_r{w}", f"ww_vec_{which}"
    u = "unsigned int" if t.tf32 else "unsigned short"
    decl = f"  {u} {reg}[{per}][{ce}];\n"
    direct, fetch, store = [], [], []
    for v in range(per):
        q = f"(ww_tid + {v * t.threads})"
        r, cc = f"({q} / {cpr})", f"({q} % {cpr}) * {ce}"
        if op.layout == "k":  # stored [outer][k]: rows are outputs, the contiguous side is k
            coords = f"const long long ww_o = {o0} + {r}, ww_kk = ww_kt + {cc};\n"
            row_ok, left = f"ww_o < {ob}", "ww_K - ww_kk"
        else:  # stored [k][outer]
            coords = f"const long long ww_kk = ww_kt + {r}, ww_o = {o0} + {cc};\n"
            row_ok, left = "ww_kk < ww_K", f"{ob} - ww_o"
        head = (
            f"      {{\n        {coords}"
            f"        const long long ww_at = ww_o * {so} + ww_kk * {sk};\n"
            f"        const long long ww_left = ({row_ok}) ? ({left}) : 0;\n"
        )
        dst = f"&{sm}[ww_st][{r}][{cc}]"
        asyncp = (
            f"        const int ww_n = ww_left <= 0 ? 0 : (ww_left >= {ce} ? {ce} : (int)ww_left);\n"
            f"        const unsigned ww_d = (unsigned)__cvta_generic_to_shared({dst});\n"
            f"        const {u} *ww_src = ww_n > 0 ? {ptr} + ww_at : {ptr};\n"
            f'        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: "r"(ww_d), '
            f'"l"(ww_src), "r"(ww_n * {t.elem_bytes}));\n'
        )
        loads = "".join(f"        {reg}[{v}][{e}] = ww_left > {e} ? {ptr}[ww_at + {e}] : 0;\n" for e in range(ce))
        if t.tf32:
            words = [f"{reg}[{v}][{e}]" for e in range(4)]
        else:
            words = [f"((unsigned){reg}[{v}][{2 * e}] | ((unsigned){reg}[{v}][{2 * e + 1}] << 16))" for e in range(4)]
        put = f"        *reinterpret_cast<uint4 *>({dst}) = make_uint4({', '.join(words)});\n"
        direct.append(
            f"{head}        if ({vec}) {{\n{_ind(asyncp)}        }} else {{\n{_ind(loads)}{_ind(put)}"
            "        }\n      }\n"
        )
        fetch.append(
            f"{head}        if ({vec}) {{\n{_ind(asyncp)}        }} else {{\n{_ind(loads)}        }}\n      }}\n"
        )
        store.append(f"      {{\n        const int ww_q = {q};\n" + put.replace(q, "ww_q") + "      }\n")
    return decl, "".join(direct), "".join(fetch), "".join(store)


def _ind(text: str, extra: str = "  ") -> str:
    return "".join(extra + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


def _fragments_half(c: Any, t: MmaTiles, mi_n: int, ni_n: int, wtm: int, wtn: int) -> str:
    """Return the `ldmatrix` loads and `mma.sync`s of one k16 step (half or bfloat16 operands)."""
    kind = "bf16" if "bfloat16" in c.convert else "f16"
    out = []
    ldm = (
        'asm volatile("ldmatrix.sync.aligned.m8n8.x4{tr}.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n" : '
        '"=r"({r}[0]), "=r"({r}[1]), "=r"({r}[2]), "=r"({r}[3]) : "r"(ww_addr));\n'
    )
    for mi in range(mi_n):
        if c.a.layout == "k":
            addr = f"&ww_As[ww_rs][ww_wm * {wtm} + {mi * 16} + (ww_lane & 15)][ww_ks + (ww_lane >> 4) * 8]"
            tr = ""
        else:
            addr = (
                "&ww_As[ww_rs][ww_ks + (ww_lane & 7) + (ww_lane >> 4) * 8]"
                f"[ww_wm * {wtm} + {mi * 16} + ((ww_lane >> 3) & 1) * 8]"
            )
            tr = ".trans"
        out.append(
            f"        {{\n          const unsigned ww_addr = (unsigned)__cvta_generic_to_shared({addr});\n"
            f"          {ldm.format(tr=tr, r=f'ww_fa[{mi}]')}        }}\n"
        )
    for p in range(ni_n // 2):
        if c.b.layout == "k":
            addr = (
                f"&ww_Bs[ww_rs][ww_wn * {wtn} + {p * 16} + (ww_lane & 7) + (ww_lane >> 4) * 8]"
                "[ww_ks + ((ww_lane >> 3) & 1) * 8]"
            )
            tr = ""
        else:
            addr = (
                "&ww_Bs[ww_rs][ww_ks + (ww_lane & 7) + ((ww_lane >> 3) & 1) * 8]"
                f"[ww_wn * {wtn} + {p * 16} + (ww_lane >> 4) * 8]"
            )
            tr = ".trans"
        out.append(
            f"        {{\n          const unsigned ww_addr = (unsigned)__cvta_generic_to_shared({addr});\n"
            f"          {ldm.format(tr=tr, r=f'ww_fb[{p}]')}        }}\n"
        )
    mma = (
        f'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%0, %1, %2, %3}}, '
        '{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" : "+f"(ww_acc[MI][NI][0]), "+f"(ww_acc[MI][NI][1]), '
        '"+f"(ww_acc[MI][NI][2]), "+f"(ww_acc[MI][NI][3]) : "r"(ww_fa[MI][0]), "r"(ww_fa[MI][1]), '
        '"r"(ww_fa[MI][2]), "r"(ww_fa[MI][3]), "r"(ww_fb[P][Q]), "r"(ww_fb[P][Q1]));\n'
    )
    for mi in range(mi_n):
        for ni in range(ni_n):
            p, q = ni // 2, (ni % 2) * 2
            out.append(
                "        "
                + mma.replace("MI", str(mi))
                .replace("NI", str(ni))
                .replace("[P]", f"[{p}]")
                .replace("[Q1]", f"[{q + 1}]")
                .replace("[Q]", f"[{q}]")
            )
    return "".join(out)


def _fragments_tf32(c: Any, t: MmaTiles, mi_n: int, ni_n: int, wtm: int, wtn: int) -> str:
    """Return the 32-bit fragment reads, TF32 conversions and `mma.sync`s of one k8 step (float operands)."""
    out = []

    def a_at(mi: int, dr: int, dk: int) -> str:
        m = f"ww_wm * {wtm} + {mi * 16 + dr} + ww_g"
        k = f"ww_ks + {dk} + ww_t4"
        return f"ww_As[ww_rs][{m}][{k}]" if c.a.layout == "k" else f"ww_As[ww_rs][{k}][{m}]"

    def b_at(ni: int, dk: int) -> str:
        n = f"ww_wn * {wtn} + {ni * 8} + ww_g"
        k = f"ww_ks + {dk} + ww_t4"
        return f"ww_Bs[ww_rs][{n}][{k}]" if c.b.layout == "k" else f"ww_Bs[ww_rs][{k}][{n}]"

    cvt = 'asm("cvt.rna.tf32.f32 %0, %1;\\n" : "=r"({d}) : "f"(__uint_as_float({s})));\n'
    for mi in range(mi_n):
        for e, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 4), (8, 4))):
            out.append("        " + cvt.format(d=f"ww_fa[{mi}][{e}]", s=a_at(mi, dr, dk)))
    for ni in range(ni_n):
        for e, dk in enumerate((0, 4)):
            out.append("        " + cvt.format(d=f"ww_fb[{ni}][{e}]", s=b_at(ni, dk)))
    for mi in range(mi_n):
        for ni in range(ni_n):
            out.append(
                '        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, '
                '{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" : '
                f'"+f"(ww_acc[{mi}][{ni}][0]), "+f"(ww_acc[{mi}][{ni}][1]), "+f"(ww_acc[{mi}][{ni}][2]), '
                f'"+f"(ww_acc[{mi}][{ni}][3]) : "r"(ww_fa[{mi}][0]), "r"(ww_fa[{mi}][1]), "r"(ww_fa[{mi}][2]), '
                f'"r"(ww_fa[{mi}][3]), "r"(ww_fb[{ni}][0]), "r"(ww_fb[{ni}][1]));\n'
            )
    return "".join(out)


def generate_mma_body(c: Any, t: MmaTiles, poly_text: Callable[[Any], str]) -> str | None:
    """Return the tensor-core kernel body (with braces) for a recognised contraction, or None when not offered.

    Half and bfloat16 operands (converted to float in the naive loop) take `mma.sync` m16n8k16; float operands
    only the TF32 option (`t.tf32`). Layouts must be contiguous along k or the output coordinate.
    """
    if t.tf32 != (not c.convert) or t.problems(c.a.layout, c.b.layout):
        return None
    wtm, wtn = t.bm // t.wm, t.bn // t.wn
    mi_n, ni_n = wtm // 16, wtn // 8
    ce = 16 // t.elem_bytes
    u = "unsigned int" if t.tf32 else "unsigned short"
    ra, ca = t.shape(t.bm, c.a.layout)
    rb, cb = t.shape(t.bn, c.b.layout)
    a_decl, a_direct, a_fetch, a_store = _copy(c, c.a, "A", t)
    b_decl, b_direct, b_fetch, b_store = _copy(c, c.b, "B", t)

    def vec_test(op: Any, which: str) -> str:
        lead = f"ww_{which.lower()}_o" if op.layout == "k" else f"ww_{which.lower()}_k"
        return f"(reinterpret_cast<unsigned long long>({op.name}) % 16 == 0) && ({lead} % {ce} == 0)"

    if t.tf32:
        frags = _fragments_tf32(c, t, mi_n, ni_n, wtm, wtn)
        frag_decl = f"unsigned ww_fa[{mi_n}][4], ww_fb[{ni_n}][2];"
        what = "TF32 mma.sync m16n8k8 (operands rounded to TF32, float accumulation)"
    else:
        frags = _fragments_half(c, t, mi_n, ni_n, wtm, wtn)
        frag_decl = f"unsigned ww_fa[{mi_n}][4], ww_fb[{ni_n // 2}][4];"
        what = "mma.sync m16n8k16 with float accumulation, ldmatrix from padded shared tiles"
    epi_guard = c.guard or "true"
    return f"""{{
  // warpwise untiled-contraction (tensor cores): {t.bm}x{t.bn} output tiles, {t.bk}-deep stages in a
  // {t.stages}-stage cp.async pipeline, {t.wm}x{t.wn} warps, {what};
  // launched as <<<dim3(ceil(N / {t.bn}), ceil(M / {t.bm})), {t.threads}>>>.
  const long long ww_M = {poly_text(c.m_bound)};
  const long long ww_N = {poly_text(c.n_bound)};
  const long long ww_K = {poly_text(c.k_bound)};
  const long long ww_a_o = {poly_text(c.a.outer)}, ww_a_k = {poly_text(c.a.inner)};
  const long long ww_b_o = {poly_text(c.b.outer)}, ww_b_k = {poly_text(c.b.inner)};
  const bool ww_vec_A = {vec_test(c.a, "A")};
  const bool ww_vec_B = {vec_test(c.b, "B")};
  const {u} *ww_pA = reinterpret_cast<const {u} *>({c.a.name});
  const {u} *ww_pB = reinterpret_cast<const {u} *>({c.b.name});
  __shared__ alignas(16) {u} ww_As[{t.stages}][{ra}][{ca}];
  __shared__ alignas(16) {u} ww_Bs[{t.stages}][{rb}][{cb}];
  const int ww_tid = threadIdx.x;
  const int ww_lane = ww_tid & 31, ww_warp = ww_tid >> 5;
  const int ww_wm = ww_warp / {t.wn}, ww_wn = ww_warp % {t.wn};
  const int ww_g = ww_lane >> 2, ww_t4 = ww_lane & 3;
  (void)ww_g; (void)ww_t4;
  const long long ww_m0 = (long long)blockIdx.y * {t.bm};
  const long long ww_n0 = (long long)blockIdx.x * {t.bn};
  float ww_acc[{mi_n}][{ni_n}][4];
#pragma unroll
  for (int ww_i = 0; ww_i < {mi_n}; ++ww_i)
#pragma unroll
    for (int ww_j = 0; ww_j < {ni_n}; ++ww_j)
#pragma unroll
      for (int ww_e = 0; ww_e < 4; ++ww_e) ww_acc[ww_i][ww_j][ww_e] = 0.0f;
{a_decl}{b_decl}  const long long ww_T = (ww_K + {t.bk - 1}) / {t.bk};
  for (int ww_s = 0; ww_s < {t.stages - 1}; ++ww_s) {{
    if (ww_s < ww_T) {{
      const long long ww_kt = (long long)ww_s * {t.bk};
      const int ww_st = ww_s;
{_ind(a_direct + b_direct, "")}    }}
    asm volatile("cp.async.commit_group;\\n" ::);
  }}
  for (long long ww_t = 0; ww_t < ww_T; ++ww_t) {{
    asm volatile("cp.async.wait_group {t.stages - 2};\\n" ::: "memory");
    __syncthreads();
    const long long ww_nt = ww_t + {t.stages - 1};
    const int ww_st = (int)(ww_nt % {t.stages});
    const int ww_rs = (int)(ww_t % {t.stages});
    if (ww_nt < ww_T) {{
      const long long ww_kt = ww_nt * {t.bk};
{_ind(a_fetch + b_fetch, "")}    }}
    asm volatile("cp.async.commit_group;\\n" ::);
#pragma unroll
    for (int ww_ks = 0; ww_ks < {t.bk}; ww_ks += {t.kstep}) {{
      {frag_decl}
{frags}    }}
    if (ww_nt < ww_T) {{
      if (!ww_vec_A) {{
{_ind(a_store, "  ")}      }}
      if (!ww_vec_B) {{
{_ind(b_store, "  ")}      }}
    }}
  }}
  asm volatile("cp.async.wait_group 0;\\n" ::: "memory");
#pragma unroll
  for (int ww_i = 0; ww_i < {mi_n}; ++ww_i) {{
#pragma unroll
    for (int ww_j = 0; ww_j < {ni_n}; ++ww_j) {{
#pragma unroll
      for (int ww_e = 0; ww_e < 4; ++ww_e) {{
        const long long ww_mi = ww_m0 + ww_wm * {wtm} + ww_i * 16 + ww_g + (ww_e >> 1) * 8;
        const long long ww_nj = ww_n0 + ww_wn * {wtn} + ww_j * 8 + ww_t4 * 2 + (ww_e & 1);
        if (ww_mi >= ww_M || ww_nj >= ww_N) continue;
        {c.i_type} {c.i} = ({c.i_type})ww_mi;
        {c.j_type} {c.j} = ({c.j_type})ww_nj;
        {c.acc_type} {c.acc} = ww_acc[ww_i][ww_j][ww_e];
        if ({epi_guard}) {{
          {c.store}
        }}
      }}
    }}
  }}
}}"""


__all__ = [
    "MMA_CHOICES",
    "MMA_TOLERANCE",
    "SMEM_LIMIT",
    "TF32_CHOICES",
    "TF32_TOLERANCE",
    "MmaTiles",
    "generate_mma_body",
]
