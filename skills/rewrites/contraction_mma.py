"""Tensor-core kernels for a recognised contraction: `mma.sync` fed by `ldmatrix` from a `cp.async` pipeline.

The untiled-contraction card recognises a naive matrix multiply (`skills/untiled-contraction/`); this module
generates, from what it recognised, a kernel body with the same name, signature and epilogue that computes the
products on tensor cores:

- a block computes a BM x BN tile of outputs with WM x WN warps (each a (BM / WM) x (BN / WN) warp tile of
  16 x 8 `mma.sync` tiles, accumulators in float registers);
- BK-deep tiles of A and B are copied global -> shared by `cp.async.cg` 16-byte copies in a pipeline of
  `stages` buffers (2: double buffering, 3 or 4: deeper), each operand in the orientation it has in global
  memory (k-contiguous or contiguous along its output coordinate) so that every copy is one 16-byte vector;
- a pipeline that needs more than the 48 KiB a block may declare statically (`SMEM_LIMIT`) keeps its stages in
  dynamic shared memory (one `extern __shared__` array), up to sm_90's 227 KiB per block (`SMEM_OPTIN`); each
  launch then passes the bytes and raises the kernel's limit first (`cudaFuncSetAttribute`), which the card's
  launch rewrite and a problem file's launch change (`smem`) both do;
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
TF32_TOLERANCE = (1e-2, 5e-2)
"""(rtol, atol) for the TF32 option, for operands of magnitude up to 1 and K up to 4096: each float operand is
rounded to TF32 (unit roundoff 2^-11), so each product is off by up to 2^-10 of itself (about 4e-4 RMS for
uniform rounding); summed with independent signs over K = 4096 terms of RMS 1/3 the error has an RMS of about
sqrt(4096) * 4e-4 / 3 = 8.5e-3, and its largest value over 16M outputs about 6 times that (5e-2)."""
SMEM_LIMIT = 48 * 1024
"""Static shared memory a block may declare without an opt-in attribute; larger pipelines use dynamic shared memory."""
SMEM_OPTIN = 227 * 1024
"""Dynamic shared memory one block may use on sm_90 after `cudaFuncSetAttribute(...,
cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)` (the device's `sharedMemPerBlockOptin`, 232,448 bytes)."""
SMEM_PER_SM = 228 * 1024
"""Shared memory of one sm_90 SM (`sharedMemPerMultiprocessor`); each resident block also reserves 1 KiB."""


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
    # > 0: blocks walk the output tiles in bands of `group` tile rows (all columns of a band before the next band),
    # so blocks running together share A and B tiles in L2; 0 keeps blockIdx.y / blockIdx.x as tile row / column.
    group: int = 0
    # Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a) instead of `mma.sync`: `wm` warpgroups of 128 threads
    # each compute 64 x BN outputs (`wn` is 1), reading both operands from 128-byte-swizzled shared tiles.
    wgmma: bool = False
    # TF32 wgmma only: the operand stored along its outputs is read from a padded shared tile into registers (the
    # instruction's register operand, which has no layout constraint), the other is read K-major by the tensor
    # cores, so no copy transposes anything. When that operand is B, the kernel computes the transposed product
    # (C^T = B^T A^T): its `wm` warpgroups split N (BN = 64 * wm) and one wgmma's N is BM.
    regs: bool = False

    @property
    def key(self) -> str:
        """Return the sizes as `mma128x128x32w2x4s2` (`tf32...` for the TF32 option, `xB` for launch bounds)."""
        if self.wgmma:
            kind = ("wgtf32r" if self.regs else "wgtf32") if self.tf32 else "wg"
        else:
            kind = "tf32" if self.tf32 else "mma"
        base = f"{kind}{self.bm}x{self.bn}x{self.bk}w{self.wm}x{self.wn}s{self.stages}"
        return base + (f"x{self.min_blocks}" if self.min_blocks else "") + (f"g{self.group}" if self.group else "")

    @property
    def threads(self) -> int:
        """Threads per block."""
        return (128 if self.wgmma else 32) * self.wm * self.wn

    @property
    def elem_bytes(self) -> int:
        """Bytes per operand element (2 for half and bfloat16, 4 for float under TF32)."""
        return 4 if self.tf32 else 2

    @property
    def kstep(self) -> int:
        """The k extent of one `mma.sync` (16 for half, 8 for TF32)."""
        return 8 if self.tf32 else 16

    def shape(self, rows: int, layout: str) -> tuple[int, int]:
        """Return (rows, columns with padding) of one stage of an operand tile of `rows` outputs, stored as in global.

        Half and bfloat16 tiles are XOR-swizzled (no padding); TF32 tiles are padded (see `_layout`).
        """
        ce = 16 // self.elem_bytes
        if self.wgmma and self.tf32:
            if self.regs and layout == "o":
                return self.bk, rows + 8  # read into registers: k rows, padded by 8 floats (see `_layout`)
            return rows, self.bk  # K-major for the tensor cores (wgmma transposes only 16-bit types)
        r, cols = (rows, self.bk) if layout == "k" else (self.bk, rows)
        if not self.tf32:
            return r, cols
        return r, cols + (ce if layout == "k" else 8)

    def smem_bytes(self, a_layout: str, b_layout: str) -> int:
        """Return the shared memory of both operands' pipelines (for wgmma, with 1 KiB to align the first stage to
        the 1024-byte period of the 128-byte swizzle)."""
        ra, ca = self.shape(self.bm, a_layout)
        rb, cb = self.shape(self.bn, b_layout)
        return self.stages * (ra * ca + rb * cb) * self.elem_bytes + (1024 if self.wgmma else 0)

    def dynamic(self, a_layout: str = "o", b_layout: str = "k") -> bool:
        """Return whether the pipeline needs more than `SMEM_LIMIT` bytes: then its tiles live in dynamic shared
        memory, and every launch passes `smem_bytes` and raises the kernel's limit first."""
        return self.wgmma or self.smem_bytes(a_layout, b_layout) > SMEM_LIMIT

    def problems(self, a_layout: str = "o", b_layout: str = "k") -> list[str]:
        """Return why these sizes cannot be generated for these operand layouts (empty when they can)."""
        if self.wgmma:
            return self._wgmma_problems(a_layout, b_layout)
        out = []
        ce = 16 // self.elem_bytes
        if self.bm % (16 * self.wm) or self.bn % (16 * self.wn):
            out.append("each warp tile must be a multiple of 16 x 16")
        if self.bk % self.kstep or self.bk % ce or (not self.tf32 and self.bk % 16):
            out.append(f"BK must be a multiple of {max(self.kstep, ce, 16)}")
        if not self.tf32 and any(x % 64 and x not in (16, 32) for x in (self.bm, self.bn)):
            out.append("BM and BN must be 16, 32 or multiples of 64 (whole swizzle rows)")
        if not 2 <= self.stages <= 8:
            out.append("2 to 8 pipeline stages")
        t = self.threads
        if t > 1024:
            out.append(f"{t} threads per block is more than 1024")
        for rows, layout in ((self.bm, a_layout), (self.bn, b_layout)):
            if (rows * self.bk // ce) % t or rows * self.bk // ce < t:
                out.append("each thread must copy whole 16-byte vectors of each tile")
            elif t % max(1, (self.bk if layout == "k" else rows) // ce):
                out.append("each thread must copy one 16-byte column of each tile")
        if a_layout not in ("k", "o") or b_layout not in ("k", "o"):
            out.append("an operand is contiguous along neither k nor its output coordinate")
        return out + self._smem_problems(a_layout, b_layout)

    def _smem_problems(self, a_layout: str, b_layout: str) -> list[str]:
        """Return why the pipeline's shared memory does not fit a block, or `min_blocks` blocks an SM."""
        smem = self.smem_bytes(a_layout, b_layout)
        if smem > SMEM_OPTIN:
            return [f"{smem} bytes of shared memory is more than a block may use (227 KiB)"]
        if self.min_blocks and self.min_blocks * (smem + 1024) > SMEM_PER_SM:
            return [f"{self.min_blocks} blocks of {smem} bytes of shared memory do not fit one SM"]
        return []

    def _wgmma_problems(self, a_layout: str, b_layout: str) -> list[str]:
        if self.regs:
            return self._wgmma_regs_problems(a_layout, b_layout)
        out = []
        if self.wn != 1 or self.bm != 64 * self.wm or self.wm not in (1, 2, 3, 4):
            out.append("BM must be 64 rows per warpgroup (1 to 4 warpgroups along M, wn = 1)")
        if self.bn % 64 or not 64 <= self.bn <= 256:
            out.append("BN must be 64, 128, 192 or 256 (whole 64-column swizzle atoms, one wgmma's N)")
        if self.bk != 128 // self.elem_bytes:
            out.append(f"BK must be {128 // self.elem_bytes} (one 128-byte swizzle row)")
        if not 2 <= self.stages <= 8:
            out.append("2 to 8 pipeline stages")
        if a_layout not in ("k", "o") or b_layout not in ("k", "o"):
            out.append("an operand is contiguous along neither k nor its output coordinate")
        t = self.threads
        ce = 16 // self.elem_bytes
        for rows, layout in ((self.bm, a_layout), (self.bn, b_layout)):
            if (rows * self.bk // ce) % t:
                out.append("each thread must copy whole 16-byte vectors of each tile")
            if self.tf32 and layout == "o" and (rows // 4) % (t // 32):
                out.append("each warp must transpose whole 16 x 8 blocks of a tile stored along its outputs")
        return out + self._smem_problems(a_layout, b_layout)

    def _wgmma_regs_problems(self, a_layout: str, b_layout: str) -> list[str]:
        out = []
        if not self.tf32:
            out.append("a register operand is built for TF32 only (16-bit types transpose in shared memory)")
        if sorted((a_layout, b_layout)) != ["k", "o"]:
            out.append("exactly one operand must be stored along its outputs (it goes to registers), the other along k")
            return out
        r_rows, s_rows = (self.bm, self.bn) if a_layout == "o" else (self.bn, self.bm)
        if self.wn != 1 or self.wm not in (1, 2, 3, 4) or r_rows != 64 * self.wm:
            out.append("the register operand's tile must be 64 outputs per warpgroup (1 to 4 warpgroups, wn = 1)")
        if s_rows % 64 or not 64 <= s_rows <= 256:
            out.append("the other operand's tile must be 64, 128, 192 or 256 outputs (one wgmma's N)")
        if self.bk != 32:
            out.append("BK must be 32 (one 128-byte swizzle row of floats)")
        if not 2 <= self.stages <= 8:
            out.append("2 to 8 pipeline stages")
        t = self.threads
        if (s_rows * 8) % t or t % (r_rows // 4) or (self.bk * r_rows // 4) % t:
            out.append("each thread must copy whole 16-byte vectors of each tile")
        return out + self._smem_problems(a_layout, b_layout)


def _vec_test(op: Any, which: str, ce: int) -> str:
    """Return the runtime test that an operand's 16-byte copies are aligned (its pointer and leading dimension)."""
    lead = f"ww_{which.lower()}_o" if op.layout == "k" else f"ww_{which.lower()}_k"
    return f"(reinterpret_cast<unsigned long long>({op.name}) % 16 == 0) && ({lead} % {ce} == 0)"


def _operands(c: Any, u: str, ce: int, poly_text: Callable[[Any], str]) -> str:
    """Return the declarations every tensor-core body starts with: the bounds, the operands' strides, the runtime
    16-byte alignment tests and the operands as words of `u`."""
    return (
        f"  const long long ww_M = {poly_text(c.m_bound)};\n"
        f"  const long long ww_N = {poly_text(c.n_bound)};\n"
        f"  const long long ww_K = {poly_text(c.k_bound)};\n"
        f"  const long long ww_a_o = {poly_text(c.a.outer)}, ww_a_k = {poly_text(c.a.inner)};\n"
        f"  const long long ww_b_o = {poly_text(c.b.outer)}, ww_b_k = {poly_text(c.b.inner)};\n"
        f"  const bool ww_vec_A = {_vec_test(c.a, 'A', ce)};\n"
        f"  const bool ww_vec_B = {_vec_test(c.b, 'B', ce)};\n"
        f"  const {u} *ww_pA = reinterpret_cast<const {u} *>({c.a.name});\n"
        f"  const {u} *ww_pB = reinterpret_cast<const {u} *>({c.b.name});\n"
    )


def _wg_prologue(t: MmaTiles, n_acc: int, ahead: int, decls: str, copies: str) -> str:
    """Return a warpgroup-MMA body's tile origin, zeroed accumulators, copy state and the copies of the first
    `ahead` stages."""
    return f"""{_tile_origin(t)}
  float ww_acc[{n_acc}];
#pragma unroll
  for (int ww_i = 0; ww_i < {n_acc}; ++ww_i) {{
    ww_acc[ww_i] = 0.0f;
  }}
{decls}  const int ww_T = (int)((ww_K + {t.bk - 1}) / {t.bk});
  int ww_st = 0, ww_rs = 0;
#pragma unroll
  for (int ww_s = 0; ww_s < {ahead}; ++ww_s) {{
    if (ww_s < ww_T) {{
      const long long ww_kt = (long long)ww_s * {t.bk};
{_ind(copies, "")}    }}
    asm volatile("cp.async.commit_group;\\n" ::);
    ww_st = ww_st + 1;
  }}
"""


def _wg_next_stage(t: MmaTiles, ahead: int, copies: str) -> str:
    """Return a warpgroup-MMA tile's copy of the tile `ahead` stages ahead into the next stage, and its commit."""
    return (
        f"    if (ww_t + {ahead} < ww_T) {{\n      const long long ww_kt = (long long)(ww_t + {ahead}) * {t.bk};\n"
        f"{_ind(copies, '')}    }}\n"
        '    asm volatile("cp.async.commit_group;\\n" ::);\n'
        f"    ww_st = ww_st == {t.stages - 1} ? 0 : ww_st + 1;\n"
    )


_WG_ROWS = (
    "      const long long ww_mi = ww_m0 + ww_wg * 64 + ww_wq * 16 + ww_g + (ww_e >> 1) * 8;\n"
    "      const long long ww_nj = ww_n0 + ww_i * 8 + ww_t4 * 2 + (ww_e & 1);\n"
)
"""The output of accumulator `4 ww_i + ww_e` of a warpgroup-MMA thread (warp `ww_wq` of warpgroup `ww_wg`, lane
(`ww_g`, `ww_t4`)): wgmma's m64nN accumulator layout, rows along M."""


def _wg_epilogue(c: Any, n_acc: int, coords: str) -> str:
    """Return the loop that runs the user's epilogue (guard and store as written) for every accumulator in range;
    `coords` sets the output row `ww_mi` and column `ww_nj` of accumulator `4 ww_i + ww_e`."""
    lin_type, lin_name, lin_value = getattr(c, "linear", ("", "", ""))
    linear = f"\n      {lin_type} {lin_name} = ({lin_type})({lin_value});" if lin_name else ""
    return f"""#pragma unroll
  for (int ww_i = 0; ww_i < {n_acc // 4}; ++ww_i) {{
#pragma unroll
    for (int ww_e = 0; ww_e < 4; ++ww_e) {{
{coords}      if (ww_mi >= ww_M || ww_nj >= ww_N) continue;
      {c.i_type} {c.i} = ({c.i_type})ww_mi;
      {c.j_type} {c.j} = ({c.j_type})ww_nj;{linear}
      {c.acc_type} {c.acc} = ww_acc[ww_i * 4 + ww_e];
      if ({c.guard or "true"}) {{
        {c.store}
      }}
    }}
  }}
"""


def _tile_origin(t: MmaTiles) -> str:
    """Return the statements that set the block's first output row `ww_m0` and column `ww_n0`.

    With `t.group`, the block's linear index walks bands of `group` tile rows: within a band, consecutive blocks take
    consecutive tile rows, then the next tile column. The map is a bijection of the grid onto the output tiles for
    any grid (the last band holds the remaining rows), so every tile is computed once, by the same code: only
    which block computes it changes, never a result.
    """
    if not t.group:
        return (
            f"  const long long ww_m0 = (long long)blockIdx.y * {t.bm};\n"
            f"  const long long ww_n0 = (long long)blockIdx.x * {t.bn};"
        )
    g = t.group
    return (
        "  const unsigned ww_bid = blockIdx.y * gridDim.x + blockIdx.x;\n"
        f"  const unsigned ww_band = {g}u * gridDim.x;\n"
        f"  const unsigned ww_row0 = ww_bid / ww_band * {g}u;\n"
        f"  const unsigned ww_rows = min(gridDim.y - ww_row0, {g}u);\n"
        "  const unsigned ww_in = ww_bid % ww_band;\n"
        f"  const long long ww_m0 = (long long)(ww_row0 + ww_in % ww_rows) * {t.bm};\n"
        f"  const long long ww_n0 = (long long)(ww_in / ww_rows) * {t.bn};"
    )


MMA_CHOICES = (
    MmaTiles(128, 256, 64, 2, 1, 4, 1, wgmma=True),
    MmaTiles(128, 128, 64, 2, 1, 3, 2, wgmma=True),
    MmaTiles(128, 256, 64, 2, 1, 3, 1, wgmma=True),
    MmaTiles(128, 128, 64, 2, 1, 4, 1, wgmma=True),
    MmaTiles(64, 256, 64, 1, 1, 4, 1, wgmma=True),  # one warpgroup: for M of 64 (not yet timed at 4096^3)
    MmaTiles(128, 128, 32, 2, 2, 3, 2),
    MmaTiles(128, 256, 64, 2, 4, 3, 1),
    MmaTiles(256, 128, 32, 4, 2, 3, 1),
    MmaTiles(128, 256, 32, 2, 4, 3, 1),
    MmaTiles(128, 128, 64, 2, 2, 3, 2),
    MmaTiles(128, 128, 32, 2, 2, 4, 2),
    MmaTiles(128, 128, 32, 2, 2, 3, 2, group=8),
    MmaTiles(64, 128, 32, 2, 2, 4, 3),
    MmaTiles(128, 128, 32, 2, 4, 3, 2),
    MmaTiles(128, 128, 16, 2, 4, 6, 2),
    MmaTiles(128, 128, 32, 2, 4, 3, 1),
    MmaTiles(128, 256, 32, 2, 4, 2, 1),
    MmaTiles(256, 128, 32, 4, 2, 2, 1),
    MmaTiles(128, 128, 32, 2, 4, 2, 2),
)
"""Half/bfloat16 tensor-core shapes a search may choose from, in the order it tries them (the prior), as timed by
the gate on the H200 for `hgemm_nn` at 4096^3 (bench/results/contraction_wgmma-2026-12-03-s7.md): Hopper's
warpgroup MMA first (sm_90a only; on another GPU they do not build and the search moves on), fastest first (0.265,
0.306, 0.325, 0.328 ms; the 64-row shape not yet timed); then `mma.sync`, led by the 48 KiB static-shared-memory
shape that builds and runs on every GPU with tensor cores (0.377 ms; the default quick fix of
`contraction-without-tensor-cores`), then the rest fastest first (0.374 to 0.548 ms: deeper k tiles, deeper
pipelines and 8-warp tiles past 48 KiB change less than 1%)."""
TF32_CHOICES = (
    # Hopper's warpgroup MMA (sm_90a) with the operand stored along its outputs read into registers: 0.502 ms on
    # `matmul_naive` (B in registers, BM 256 = one wgmma's N) and 0.542 ms on `sgemm_kt_while` (A in registers, BN
    # 256); each fits one of the two orientations.
    MmaTiles(256, 128, 32, 2, 1, 4, 1, tf32=True, wgmma=True, regs=True),
    MmaTiles(128, 256, 32, 2, 1, 4, 1, tf32=True, wgmma=True, regs=True),
    MmaTiles(128, 128, 32, 2, 1, 3, 2, tf32=True, wgmma=True, regs=True),
    MmaTiles(128, 128, 32, 2, 1, 4, 1, tf32=True, wgmma=True, regs=True),
    # For outputs of 64 rows or 64 columns (B in registers; not yet timed at 4096^3): one wgmma's N of 64 rows
    # with four warpgroups along N, or one warpgroup of 64 columns with a wgmma's N of 256 rows.
    MmaTiles(64, 256, 32, 4, 1, 4, 1, tf32=True, wgmma=True, regs=True),
    MmaTiles(256, 64, 32, 1, 1, 4, 1, tf32=True, wgmma=True, regs=True),
    # `mma.sync` m16n8k8 (any GPU with TF32 tensor cores), padded shared tiles.
    MmaTiles(128, 128, 32, 2, 2, 3, 2, tf32=True),
    MmaTiles(128, 128, 16, 2, 2, 4, 2, tf32=True),
    MmaTiles(128, 256, 16, 2, 4, 4, 1, tf32=True),
    MmaTiles(128, 128, 16, 2, 2, 2, 2, tf32=True),
    MmaTiles(128, 64, 16, 2, 2, 3, tf32=True),
    MmaTiles(128, 128, 16, 2, 4, 2, 2, tf32=True),
    MmaTiles(128, 128, 16, 2, 4, 2, tf32=True),
    MmaTiles(128, 128, 16, 2, 4, 2, tf32=True, group=8),
    # Warpgroup MMA with both operands K-major in shared memory: the transposing copies of an operand stored along
    # its outputs cost most (1.54-2.74 ms); the only wgmma form when both operands are stored along their outputs.
    MmaTiles(128, 128, 32, 2, 1, 3, 2, tf32=True, wgmma=True),
    MmaTiles(128, 128, 32, 2, 1, 4, 1, tf32=True, wgmma=True),
    MmaTiles(128, 256, 32, 2, 1, 4, 1, tf32=True, wgmma=True),
)
"""TF32 shapes (float operands; offered only when the problem's tolerance admits `TF32_TOLERANCE`), fastest first,
as timed by the gate on the H200 at 4096^3 (bench/results/contraction_tf32-2026-12-03-s8.md; cuBLAS TF32 0.346 ms):
`matmul_naive` 0.502, 0.589 and 0.676 ms with the register operand, then `mma.sync` 0.892, 0.949, 0.979, 1.096,
1.270, 1.373, 2.008 and 2.037 ms, then the transposing wgmma shapes 1.542, 2.745 and 2.578 ms."""


@dataclass(frozen=True)
class _Layout:
    """One operand's shared tile: `rows` x `cols` elements per stage (+ padding), 16-byte chunks of `ce` elements.

    Half and bfloat16 tiles are unpadded and XOR-swizzled by chunk: the chunk index is XORed with bits of the row
    (`row & 7` for rows of 8 or more chunks, `(row >> 1) & 3` for 4, `(row >> 2) & 1` for 2), so the eight
    16-byte row reads of an `ldmatrix` phase fall in eight distinct bank groups. TF32 tiles are padded instead.
    """

    rows: int
    cols: int
    pcols: int
    ce: int
    swizzle: bool

    @property
    def cpr(self) -> int:
        """16-byte chunks per row."""
        return self.cols // self.ce

    @property
    def elems(self) -> int:
        """Elements per stage (padding included)."""
        return self.rows * self.pcols

    def off(self, row: str, chunk: str) -> str:
        """Return the element offset within a stage of chunk `chunk` of row `row` (C expressions)."""
        if not self.swizzle:
            return f"({row}) * {self.pcols} + ({chunk}) * {self.ce}"
        bits = {1: "0", 2: f"((({row}) >> 2) & 1)", 4: f"((({row}) >> 1) & 3)"}.get(self.cpr, f"(({row}) & 7)")
        return f"({row}) * {self.cols} + ((({chunk}) ^ {bits}) * {self.ce})"


@dataclass(frozen=True)
class _AtomLayout(_Layout):
    """An MN-major operand tile in wgmma's 128-byte-swizzle atoms: `rows` k rows of `cols` output elements, stored
    as `cols / 64` atoms of rows x 64 elements one after the other (each k row 128 bytes, the 16-byte chunk index
    XORed with `row & 7`), so 8 k rows of one atom are 1024 contiguous bytes (the stride-dimension offset) and the
    atoms are `rows * 128` bytes apart (the leading-dimension offset). `pcols` is 64: one k row of one atom."""

    @property
    def elems(self) -> int:
        """Elements per stage."""
        return self.rows * self.cols

    def off(self, row: str, chunk: str) -> str:
        """Return the element offset within a stage of chunk `chunk` (along the output coordinate) of k row `row`."""
        return f"((({chunk}) >> 3) * {self.rows * 64} + ({row}) * 64 + (((({chunk}) & 7) ^ (({row}) & 7)) * 8))"


def _layout(t: MmaTiles, rows: int, layout: str) -> _Layout:
    r, pc = t.shape(rows, layout)
    cols = rows if layout == "o" else t.bk
    if t.wgmma and t.tf32 and t.regs and layout == "o":
        # Read into registers with 32-bit loads: k rows of `rows` floats padded by 8, so the 32 lanes' reads of
        # one fragment register (k = lane & 3, output = lane >> 2 + a multiple of 8) fall in 32 distinct banks.
        return _Layout(t.bk, rows, rows + 8, 4, False)
    if t.wgmma and t.tf32:
        return _Layout(rows, t.bk, t.bk, 4, True)  # K-major for the tensor cores
    if t.wgmma and layout == "o":
        return _AtomLayout(r, cols, 64, 8, True)
    return _Layout(r, cols, pc, 16 // t.elem_bytes, not t.tf32)


def _ind(text: str, extra: str = "  ") -> str:
    return "".join(extra + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


def _copy(op: Any, which: str, t: MmaTiles, lay: _Layout) -> tuple[str, str]:
    """Return (declarations, copy of the next stage) of one operand's tile.

    A thread copies `per` 16-byte chunks per stage: one chunk column (`ww_cX`) of rows `ww_rX + v * rstep`. Its
    state is one global pointer (advanced by a tile per copy), a bit mask of the chunk rows in range and one
    bound, so the copy costs few registers. The 16-byte path is `cp.async` with the in-range byte count (the rest
    is zero-filled; a chunk outside the tile's range reads 0 bytes from its address, which is not dereferenced);
    the scalar path loads each element (0 outside) and stores the chunk to shared memory at once, so nothing is
    held in registers across the arithmetic.
    """
    w = which.lower()
    ce, eb = lay.ce, t.elem_bytes
    rstep = t.threads // lay.cpr
    per = lay.rows // rstep
    o0, ob = ("ww_m0", "ww_M") if which == "A" else ("ww_n0", "ww_N")
    so, sk = f"ww_{w}_o", f"ww_{w}_k"
    ptr, vec, sbase = f"ww_p{which}", f"ww_vec_{which}", f"ww_s{which}"
    g, c, r, rows, msk, lft, dst = (f"ww_{x}{which}" for x in ("g", "c", "r", "rows", "m", "l", "d"))
    u = "unsigned int" if t.tf32 else "unsigned short"
    decl = [
        f"  const int {c} = ww_tid % {lay.cpr}, {r} = ww_tid / {lay.cpr};\n",
        f"  const long long ww_step{which} = {t.bk} * {sk};\n",
    ]
    if op.layout == "k":  # rows are outputs, the contiguous side is k
        decl.append(
            f"  const {u} *{g} = {ptr} + ({o0} + {r}) * {so} + {c} * {ce};\n"
            f"  const long long {rows} = {rstep} * {so};\n"
            f"  const long long {lft} = ww_K - {c} * {ce};\n"
            f"  unsigned {msk} = 0;\n"
            f"#pragma unroll\n  for (int ww_v = 0; ww_v < {per}; ++ww_v) {{\n"
            f"    if ({o0} + {r} + ww_v * {rstep} < {ob}) {msk} |= 1u << ww_v;\n  }}\n"
        )
        head = (
            f"      {{\n        const long long ww_left = {lft} - ww_kt;\n"
            f"        const int ww_n = ww_left <= 0 ? 0 : (ww_left >= {ce} ? {ce} : (int)ww_left);\n"
        )

        def count(v: int) -> str:
            return f"(({msk} >> {v}) & 1u) ? ww_n : 0"

    else:  # rows are k, the contiguous side is the output coordinate
        decl.append(
            f"  const {u} *{g} = {ptr} + (long long){r} * {sk} + {o0} + {c} * {ce};\n"
            f"  const long long {rows} = {rstep} * {sk};\n"
            f"  const long long {lft} = ww_K - {r};\n"
            f"  const long long ww_f{which} = {ob} - ({o0} + {c} * {ce});\n"
            f"  const int ww_n{which} = ww_f{which} <= 0 ? 0 : (ww_f{which} >= {ce} ? {ce} : (int)ww_f{which});\n"
        )
        head = f"      {{\n        const long long ww_left = {lft} - ww_kt;\n"

        def count(v: int) -> str:
            return f"{v * rstep} < ww_left ? ww_n{which} : 0"

    invariant = not lay.swizzle or rstep % 8 == 0 or lay.cpr == 1
    if invariant:
        decl.append(f"  const unsigned {dst} = (unsigned)(({lay.off(r, c)}) * {eb});\n")
    else:
        for v in range(per):
            decl.append(f"  const unsigned {dst}{v} = (unsigned)(({lay.off(f'{r} + {v * rstep}', c)}) * {eb});\n")
    stage = f"ww_st * {lay.elems * eb}"
    asyncs, loads = [], []
    for v in range(per):
        d = f"{dst} + {v * rstep * lay.pcols * eb}" if invariant else f"{dst}{v}"
        src = f"{g} + {v} * {rows}" if v else g
        asyncs.append(
            f"          {{\n            const int ww_b = {count(v)};\n"
            f'            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: '
            f'"r"({sbase} + {stage} + {d}), "l"({src}), "r"(ww_b * {eb}));\n          }}\n'
        )
        elems = "".join(f"            ww_e[{e}] = ww_b > {e} ? ({src})[{e}] : 0;\n" for e in range(ce))
        if t.tf32:
            words = [f"ww_e[{e}]" for e in range(4)]
        else:
            words = [f"((unsigned)ww_e[{2 * e}] | ((unsigned)ww_e[{2 * e + 1}] << 16))" for e in range(4)]
        loads.append(
            f"          {{\n            const int ww_b = {count(v)};\n            {u} ww_e[{ce}];\n{elems}"
            f'            asm volatile("st.shared.v4.b32 [%0], {{%1, %2, %3, %4}};\\n" :: '
            f'"r"({sbase} + {stage} + {d}), ' + ", ".join(f'"r"({x})' for x in words) + ");\n          }\n"
        )
    body = (
        f"{head}        if ({vec}) {{\n{''.join(asyncs)}        }} else {{\n{''.join(loads)}        }}\n"
        f"        {g} += ww_step{which};\n      }}\n"
    )
    return "".join(decl), body


_LDM = (
    'asm volatile("ldmatrix.sync.aligned.m8n8.x4{tr}.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n" : '
    '"=r"({r}[0]), "=r"({r}[1]), "=r"({r}[2]), "=r"({r}[3]) : "r"({addr}));\n'
)


def _fragments_half(
    c: Any, t: MmaTiles, la: _Layout, lb: _Layout, mi_n: int, ni_n: int, wtm: int, wtn: int, ks: int, b: int
) -> tuple[str, str]:
    """Return the `ldmatrix` loads (of k offset `ks` into fragment buffer `b`) and the `mma.sync`s of buffer `b`."""
    kind = "bf16" if "bfloat16" in c.convert else "f16"
    out = []
    sa, sb = f"ww_sA + ww_rs * {la.elems * 2}", f"ww_sB + ww_rs * {lb.elems * 2}"
    for mi in range(mi_n):
        if c.a.layout == "k":  # [m][k]: rows m, chunks along k
            off = la.off(f"ww_wm * {wtm} + {mi * 16} + (ww_lane & 15)", f"{ks >> 3} + (ww_lane >> 4)")
            tr = ""
        else:  # [k][m], transposed on load
            off = la.off(
                f"{ks} + (ww_lane & 7) + (ww_lane >> 4) * 8", f"ww_wm * {wtm // 8} + {mi * 2} + ((ww_lane >> 3) & 1)"
            )
            tr = ".trans"
        out.append("        " + _LDM.format(tr=tr, r=f"ww_fa{b}[{mi}]", addr=f"{sa} + ({off}) * 2"))
    for p in range(ni_n // 2):
        if c.b.layout == "k":  # [n][k]
            off = lb.off(
                f"ww_wn * {wtn} + {p * 16} + (ww_lane & 7) + (ww_lane >> 4) * 8", f"{ks >> 3} + ((ww_lane >> 3) & 1)"
            )
            tr = ""
        else:  # [k][n], transposed on load
            off = lb.off(
                f"{ks} + (ww_lane & 7) + ((ww_lane >> 3) & 1) * 8", f"ww_wn * {wtn // 8} + {p * 2} + (ww_lane >> 4)"
            )
            tr = ".trans"
        out.append("        " + _LDM.format(tr=tr, r=f"ww_fb{b}[{p}]", addr=f"{sb} + ({off}) * 2"))
    loads, out = "".join(out), []
    for mi in range(mi_n):
        for ni in range(ni_n):
            p, q = ni // 2, (ni % 2) * 2
            out.append(
                f'        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%0, %1, %2, %3}}, '
                '{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" : '
                + ", ".join(f'"+f"(ww_acc[{mi}][{ni}][{e}])' for e in range(4))
                + " : "
                + ", ".join(f'"r"(ww_fa{b}[{mi}][{e}])' for e in range(4))
                + f', "r"(ww_fb{b}[{p}][{q}]), "r"(ww_fb{b}[{p}][{q + 1}]));\n'
            )
    return loads, "".join(out)


def _fragments_tf32(
    c: Any, t: MmaTiles, la: _Layout, lb: _Layout, mi_n: int, ni_n: int, wtm: int, wtn: int, ks: int, b: int
) -> tuple[str, str]:
    """Return the 32-bit fragment reads with TF32 conversions (k offset `ks`, buffer `b`) and buffer `b`'s mmas."""
    out = []

    def at(lay: _Layout, arr: str, o: str, k: str, k_major: bool) -> str:
        row, col = (o, k) if k_major else (k, o)
        return f"{arr}[ww_rs * {lay.elems} + ({row}) * {lay.pcols} + {col}]"

    cvt = 'asm("cvt.rna.tf32.f32 %0, %1;\\n" : "=r"({d}) : "f"(__uint_as_float({s})));\n'
    for mi in range(mi_n):
        for e, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 4), (8, 4))):
            src = at(la, "ww_As", f"ww_wm * {wtm} + {mi * 16 + dr} + ww_g", f"{ks + dk} + ww_t4", c.a.layout == "k")
            out.append("        " + cvt.format(d=f"ww_fa{b}[{mi}][{e}]", s=src))
    for ni in range(ni_n):
        for e, dk in enumerate((0, 4)):
            src = at(lb, "ww_Bs", f"ww_wn * {wtn} + {ni * 8} + ww_g", f"{ks + dk} + ww_t4", c.b.layout == "k")
            out.append("        " + cvt.format(d=f"ww_fb{b}[{ni}][{e}]", s=src))
    loads, out = "".join(out), []
    for mi in range(mi_n):
        for ni in range(ni_n):
            out.append(
                '        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, '
                '{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n" : '
                + ", ".join(f'"+f"(ww_acc[{mi}][{ni}][{e}])' for e in range(4))
                + " : "
                + ", ".join(f'"r"(ww_fa{b}[{mi}][{e}])' for e in range(4))
                + f', "r"(ww_fb{b}[{ni}][0]), "r"(ww_fb{b}[{ni}][1]));\n'
            )
    return loads, "".join(out)


def generate_mma_body(c: Any, t: MmaTiles, poly_text: Callable[[Any], str]) -> str | None:
    """Return the tensor-core kernel body (with braces) for a recognised contraction, or None when not offered.

    Half and bfloat16 operands (converted to float in the naive loop) take `mma.sync` m16n8k16; float operands
    only the TF32 option (`t.tf32`). Layouts must be contiguous along k or the output coordinate.
    """
    if t.tf32 != (not c.convert) or t.problems(c.a.layout, c.b.layout):
        return None
    if t.wgmma:
        return _generate_wgmma_body(c, t, poly_text)
    wtm, wtn = t.bm // t.wm, t.bn // t.wn
    mi_n, ni_n = wtm // 16, wtn // 8
    ce = 16 // t.elem_bytes
    u = "unsigned int" if t.tf32 else "unsigned short"
    la, lb = _layout(t, t.bm, c.a.layout), _layout(t, t.bn, c.b.layout)
    a_decl, a_copy = _copy(c.a, "A", t, la)
    b_decl, b_copy = _copy(c.b, "B", t, lb)

    smem = t.smem_bytes(c.a.layout, c.b.layout)
    if t.dynamic(c.a.layout, c.b.layout):
        # Past 48 KiB a block's shared memory must be dynamic: one extern array of 16-byte words (so 16-byte
        # aligned), A's stages then B's (B's byte offset, stages * BM * BK elements, is a multiple of 16, as
        # `cp.async` and `ldmatrix` need).
        smem_decl = (
            "  extern __shared__ uint4 ww_dsmem[];\n"
            f"  {u} *const ww_As = reinterpret_cast<{u} *>(ww_dsmem);\n"
            f"  {u} *const ww_Bs = ww_As + {t.stages * la.elems};\n"
        )
        launched = f", {smem} bytes of dynamic shared memory (after cudaFuncSetAttribute)"
    else:
        smem_decl = (
            f"  __shared__ alignas(128) {u} ww_As[{t.stages * la.elems}];\n"
            f"  __shared__ alignas(128) {u} ww_Bs[{t.stages * lb.elems}];\n"
        )
        launched = ""
    frag_fn = _fragments_tf32 if t.tf32 else _fragments_half
    if t.tf32:
        frag_decl = f"unsigned ww_fa0[{mi_n}][4], ww_fb0[{ni_n}][2], ww_fa1[{mi_n}][4], ww_fb1[{ni_n}][2];"
        what = "TF32 mma.sync m16n8k8 (operands rounded to TF32, float accumulation), padded shared tiles"
    else:
        frag_decl = f"unsigned ww_fa0[{mi_n}][4], ww_fb0[{ni_n // 2}][4], ww_fa1[{mi_n}][4], ww_fb1[{ni_n // 2}][4];"
        what = "mma.sync m16n8k16 with float accumulation, ldmatrix from XOR-swizzled shared tiles"
    steps = t.bk // t.kstep
    first_loads, _ = frag_fn(c, t, la, lb, mi_n, ni_n, wtm, wtn, 0, 0)
    # One tile's steps: fragments of the next k step are read (into the other buffer) before this step's mmas;
    # before the last step the next tile's stage is awaited, so its first fragments overlap the last mmas.
    tile = []
    for s_ in range(steps):
        b, nb = s_ % 2, (s_ + 1) % 2
        nxt = (s_ + 1) * t.kstep if s_ + 1 < steps else 0
        loads, _ = frag_fn(c, t, la, lb, mi_n, ni_n, wtm, wtn, nxt, nb)
        _, mmas = frag_fn(c, t, la, lb, mi_n, ni_n, wtm, wtn, s_ * t.kstep, b)
        part = []
        if s_ == 0:
            # The copy of the tile `stages - 1` ahead goes to the stage every thread finished reading before
            # the last barrier; with one step per tile it comes before this tile's barrier for the same reason.
            part.append(
                f"      if (ww_t + {t.stages - 1} < ww_T) {{\n"
                f"        const long long ww_kt = (long long)(ww_t + {t.stages - 1}) * {t.bk};\n"
                f"{_ind(a_copy + b_copy, '')}      }}\n"
                '      asm volatile("cp.async.commit_group;\\n" ::);\n'
                f"      ww_st = ww_st == {t.stages - 1} ? 0 : ww_st + 1;\n"
            )
        if s_ == steps - 1:
            part.append(
                f'      asm volatile("cp.async.wait_group {t.stages - 2};\\n" ::: "memory");\n'
                "      __syncthreads();\n"
                f"      ww_rs = ww_rs == {t.stages - 1} ? 0 : ww_rs + 1;\n"
            )
        part.append(loads)
        part.append(mmas)
        tile.append("".join(part))
    if steps % 2:
        # An odd number of steps leaves the next tile's first fragments in buffer 1: move them to buffer 0.
        fb_n, fb_w = (ni_n, 2) if t.tf32 else (ni_n // 2, 4)
        moves = [f"ww_fa0[{i}][{e}] = ww_fa1[{i}][{e}];" for i in range(mi_n) for e in range(4)]
        moves += [f"ww_fb0[{i}][{e}] = ww_fb1[{i}][{e}];" for i in range(fb_n) for e in range(fb_w)]
        tile.append("".join(f"      {m}\n" for m in moves))
    main_loop = "".join(tile)
    epi_guard = c.guard or "true"
    lin_type, lin_name, lin_value = getattr(c, "linear", ("", "", ""))
    linear = f"\n        {lin_type} {lin_name} = ({lin_type})({lin_value});" if lin_name else ""
    return f"""{{
  // warpwise untiled-contraction (tensor cores): {t.bm}x{t.bn} output tiles, {t.bk}-deep stages in a
  // {t.stages}-stage cp.async pipeline, {t.wm}x{t.wn} warps, {what};
  // launched as <<<dim3(ceil(N / {t.bn}), ceil(M / {t.bm})), {t.threads}>>>{launched}.
{_operands(c, u, ce, poly_text)}{smem_decl}  const unsigned ww_sA = (unsigned)__cvta_generic_to_shared(ww_As);
  const unsigned ww_sB = (unsigned)__cvta_generic_to_shared(ww_Bs);
  const int ww_tid = threadIdx.x;
  const int ww_lane = ww_tid & 31, ww_warp = ww_tid >> 5;
  const int ww_wm = ww_warp / {t.wn}, ww_wn = ww_warp % {t.wn};
  const int ww_g = ww_lane >> 2, ww_t4 = ww_lane & 3;
{_tile_origin(t)}
  float ww_acc[{mi_n}][{ni_n}][4];
#pragma unroll
  for (int ww_i = 0; ww_i < {mi_n}; ++ww_i) {{
#pragma unroll
    for (int ww_j = 0; ww_j < {ni_n}; ++ww_j) {{
#pragma unroll
      for (int ww_e = 0; ww_e < 4; ++ww_e) {{
        ww_acc[ww_i][ww_j][ww_e] = 0.0f;
      }}
    }}
  }}
{a_decl}{b_decl}  const int ww_T = (int)((ww_K + {t.bk - 1}) / {t.bk});
  int ww_st = 0, ww_rs = 0;
#pragma unroll
  for (int ww_s = 0; ww_s < {t.stages - 1}; ++ww_s) {{
    if (ww_s < ww_T) {{
      const long long ww_kt = (long long)ww_s * {t.bk};
{_ind(a_copy + b_copy, "")}    }}
    asm volatile("cp.async.commit_group;\\n" ::);
    ww_st = ww_st + 1;
  }}
  asm volatile("cp.async.wait_group {t.stages - 2};\\n" ::: "memory");
  __syncthreads();
  {frag_decl}
{first_loads}  for (int ww_t = 0; ww_t < ww_T; ++ww_t) {{
{main_loop}  }}
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
        {c.j_type} {c.j} = ({c.j_type})ww_nj;{linear}
        {c.acc_type} {c.acc} = ww_acc[ww_i][ww_j][ww_e];
        if ({epi_guard}) {{
          {c.store}
        }}
      }}
    }}
  }}
}}"""


def _copy_transposed(which: str, t: MmaTiles, lay: _Layout) -> tuple[str, str]:
    """Return (declarations, copy of the next stage) of a float operand stored along its output coordinate
    (global [k][rows]) into a K-major shared tile (`lay`: rows of BK floats, 128-byte swizzle), for TF32 wgmma.

    A warp moves 16 k x 8 outputs per step: lane `l` takes k row `l & 15` and the 4 outputs of chunk `l >> 4`, one
    16-byte load when the pointer is aligned, the leading dimension a multiple of 4 and the chunk in range, else
    guarded scalar loads (0 outside), so each k row's 32 bytes are one sector; the four floats go to four
    K-major places with 32-bit shared stores, which for 16 k rows and two chunks fall in 32 distinct banks.
    """
    o0, ob = ("ww_m0", "ww_M") if which == "A" else ("ww_n0", "ww_N")
    sk = f"ww_{which.lower()}_k"
    warps = t.threads // 32
    per = (lay.rows // 4) // warps
    stage = f"ww_st * {lay.elems * 4}"
    body = f"""      {{
#pragma unroll
        for (int ww_v = 0; ww_v < {per}; ++ww_v) {{
          const int ww_u = (ww_tid >> 5) + ww_v * {warps};
          const int ww_k = (ww_u & 1) * 16 + (ww_lane & 15);
          const int ww_c = (ww_u >> 1) * 2 + (ww_lane >> 4);
          const long long ww_gk = ww_kt + ww_k, ww_go = {o0} + ww_c * 4;
          float ww_q[4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
          if (ww_gk < ww_K) {{
            const float *ww_src = reinterpret_cast<const float *>(ww_p{which}) + ww_gk * {sk} + ww_go;
            if (ww_vec_{which} && ww_go + 3 < {ob}) {{
              const float4 ww_f = *reinterpret_cast<const float4 *>(ww_src);
              ww_q[0] = ww_f.x; ww_q[1] = ww_f.y; ww_q[2] = ww_f.z; ww_q[3] = ww_f.w;
            }} else {{
#pragma unroll
              for (int ww_e = 0; ww_e < 4; ++ww_e) {{
                if (ww_go + ww_e < {ob}) ww_q[ww_e] = ww_src[ww_e];
              }}
            }}
          }}
#pragma unroll
          for (int ww_e = 0; ww_e < 4; ++ww_e) {{
            const int ww_n = ww_c * 4 + ww_e;
            const unsigned ww_d = (unsigned)(({lay.off("ww_n", "(ww_k >> 2)")} + (ww_k & 3)) * 4);
            asm volatile("st.shared.b32 [%0], %1;\\n" :: "r"(ww_s{which} + {stage} + ww_d),
                         "r"(__float_as_uint(ww_q[ww_e])));
          }}
        }}
      }}
"""
    return "", body


def _descriptor_bits(lbo: int, sbo: int) -> int:
    """Return the constant bits of a wgmma shared-memory descriptor: the leading- and stride-dimension byte offsets
    (each >> 4, bits 16-29 and 32-45) and the 128-byte swizzle mode (1 in bits 62-63); base offset 0, as every
    stage starts on a 1024-byte boundary."""
    return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)


def _generate_wgmma_body(c: Any, t: MmaTiles, poly_text: Callable[[Any], str]) -> str:
    """Return the warpgroup-MMA kernel body: `wgmma.mma_async` m64nBNk16 on 128-byte-swizzled shared tiles.

    Each of the `wm` warpgroups computes 64 x BN outputs. A k-contiguous operand's tile is rows of 64 halves (128
    bytes) with 16-byte chunks XORed by `row & 7` (wgmma's K-major 128-byte swizzle: 8 rows 1024 bytes apart, the
    descriptor advancing 32 bytes per k16 step); a tile contiguous along its output coordinate is stored in
    64-element atoms (`_AtomLayout`, MN-major, the transpose flag set, advancing 2048 bytes per k16 step). The
    pipeline: at each tile the thread waits for its own `cp.async` copies of the tile, fences them to the async
    proxy (`fence.proxy.async`, which wgmma reads through), and all threads meet at a barrier; the copy of the tile
    `stages - 1` ahead then goes to the stage the previous tile's wgmmas read (all of them finished: each
    warpgroup waited for its group before that barrier), and the tile's four wgmmas are issued, committed and
    awaited (with 4 or more stages, awaited only after the next tile's are issued: the copies then go two tiles
    behind, `stages - 2` ahead). Products are exact in float and summed by the tensor core in its own order, as
    with `mma.sync`: `MMA_TOLERANCE`. Built for sm_90a (the builder picks the architecture-specific target for
    `wgmma`).

    Float operands (the TF32 option): wgmma m64nBNk8 .tf32 reads both operands K-major (it transposes only 16-bit
    types), so an operand stored along its outputs is transposed on its way to shared memory (`_copy_transposed`).
    No operand is converted: the tensor core ignores the 13 low mantissa bits, i.e. truncates to TF32 (relative
    error below 2^-10, mean 2^-11, toward zero, where `cvt.rna` rounds to within 2^-11). The mean error of a sum is
    then about 1e-3 of the sum itself, inside `TF32_TOLERANCE`'s rtol, and its random part has the RMS that
    tolerance was derived for (the spread of each operand's error is the same, 2^-10 / sqrt(12)).
    """
    if t.regs:
        return _generate_wgmma_regs_body(c, t, poly_text)
    kind = "tf32" if t.tf32 else ("bf16" if "bfloat16" in c.convert else "f16")
    u = "unsigned int" if t.tf32 else "unsigned short"
    eb = t.elem_bytes
    ce = 16 // eb
    ks_n = t.bk // t.kstep
    la, lb = _layout(t, t.bm, c.a.layout), _layout(t, t.bn, c.b.layout)
    if t.tf32 and c.a.layout == "o":
        a_decl, a_copy = _copy_transposed("A", t, la)
    else:
        a_decl, a_copy = _copy(c.a, "A", t, la)
    if t.tf32 and c.b.layout == "o":
        b_decl, b_copy = _copy_transposed("B", t, lb)
    else:
        b_decl, b_copy = _copy(c.b, "B", t, lb)
    a_stage, b_stage = la.elems * eb, lb.elems * eb
    smem = t.smem_bytes(c.a.layout, c.b.layout)
    n_acc = t.bn // 2
    # With 4 or more stages one group of wgmmas stays in flight across the next tile's barrier (the copies then
    # run `stages - 2` tiles ahead, into the stage read two tiles back); with 3 or fewer each tile's group is
    # awaited before the next barrier and the copies run `stages - 1` ahead.
    flight = 1 if t.stages >= 4 else 0
    ahead = t.stages - 1 - flight

    # Per operand: the byte offset of the warpgroup's part, the step per k step, the descriptor's constant bits
    # (TF32 tiles are K-major whatever the global layout: the copy transposes them).
    if c.a.layout == "k" or t.tf32:
        a_wg, a_ks, a_bits, tr_a = 64 * 128, 32, _descriptor_bits(16, 1024), 0
    else:
        a_wg, a_ks, a_bits, tr_a = t.bk * 128, 2048, _descriptor_bits(t.bk * 128, 1024), 1
    if c.b.layout == "k" or t.tf32:
        b_ks, b_bits, tr_b = 32, _descriptor_bits(16, 1024), 0
    else:
        b_ks, b_bits, tr_b = 2048, _descriptor_bits(t.bk * 128, 1024), 1
    regs = ", ".join(f"%{i}" for i in range(n_acc))
    outs = ", ".join(f'"+f"(ww_acc[{i}])' for i in range(n_acc))
    mmas = []
    trans = "" if t.tf32 else f", {tr_a}, {tr_b}"  # wgmma transposes only 16-bit types
    for ks in range(ks_n):
        mmas.append(
            f"      {{\n"
            f"        const unsigned long long ww_da = (unsigned long long)(((ww_a0 + {ks * a_ks}u) & 0x3FFFFu) >> 4)"
            f" | {a_bits}ull;\n"
            f"        const unsigned long long ww_db = (unsigned long long)(((ww_b0 + {ks * b_ks}u) & 0x3FFFFu) >> 4)"
            f" | {b_bits}ull;\n"
            f'        asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{n_acc + 2}, 0;\\n'
            f"wgmma.mma_async.sync.aligned.m64n{t.bn}k{t.kstep}.f32.{kind}.{kind} {{{regs}}}, %{n_acc}, "
            f'%{n_acc + 1}, p, 1, 1{trans};\\n}}\\n" : {outs} : "l"(ww_da), "l"(ww_db), "r"(1));\n'
            f"      }}\n"
        )
    # The next stage's copies: `cp.async` ones are issued before the tile's wgmmas; copies staged through registers
    # (the TF32 transposes wait for their loads) after them, so the tensor cores work while the loads are in flight.
    # Either way the stage they write was read by a group already awaited (see above).
    staged = t.tf32 and "o" in (c.a.layout, c.b.layout)
    copies = _wg_next_stage(t, ahead, a_copy + b_copy)
    return f"""{{
  // warpwise untiled-contraction (warpgroup tensor cores): {t.bm}x{t.bn} output tiles, {t.bk}-deep stages in a
  // {t.stages}-stage pipeline, {t.wm} warpgroups of wgmma.mma_async m64n{t.bn}k{t.kstep} {kind} with float
  // accumulation on 128-byte-swizzled shared tiles (sm_90a); launched as
  // <<<dim3(ceil(N / {t.bn}), ceil(M / {t.bm})), {t.threads}>>>, {smem} bytes of dynamic shared memory (after
  // cudaFuncSetAttribute).
{_operands(c, u, ce, poly_text)}  extern __shared__ uint4 ww_dsmem[];
  const unsigned ww_sA = ((unsigned)__cvta_generic_to_shared(ww_dsmem) + 1023u) & ~1023u;
  const unsigned ww_sB = ww_sA + {t.stages * a_stage}u;
  const int ww_tid = threadIdx.x;
  const int ww_lane = ww_tid & 31, ww_wg = ww_tid >> 7, ww_wq = (ww_tid >> 5) & 3;
  const int ww_g = ww_lane >> 2, ww_t4 = ww_lane & 3;
{_wg_prologue(t, n_acc, ahead, a_decl + b_decl, a_copy + b_copy)}  for (int ww_t = 0; ww_t < ww_T; ++ww_t) {{
    asm volatile("cp.async.wait_group {ahead - 1};\\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
{copies if not staged else ""}    const unsigned ww_a0 = ww_sA + ww_rs * {a_stage}u + ww_wg * {a_wg}u;
    const unsigned ww_b0 = ww_sB + ww_rs * {b_stage}u;
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
{"".join(mmas)}    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
{copies if staged else ""}    asm volatile("wgmma.wait_group.sync.aligned {flight};\\n" ::: "memory");
    ww_rs = ww_rs == {t.stages - 1} ? 0 : ww_rs + 1;
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\\n" ::: "memory");
{_wg_epilogue(c, n_acc, _WG_ROWS)}}}"""


def _generate_wgmma_regs_body(c: Any, t: MmaTiles, poly_text: Callable[[Any], str]) -> str:
    """Return the TF32 warpgroup-MMA body whose operand stored along its outputs (R) is a register operand.

    wgmma's .tf32 form reads a shared-memory operand only K-major, but its A operand may come from registers,
    whose layout is free. The operand stored along its outputs (R: `[k][outputs]` in global) is copied by
    `cp.async` as it lies into padded k rows, and each thread reads its fragment (for warp `q` of warpgroup `w`,
    lane (g, t): outputs `64 w + 16 q + g (+ 8)`, k `t (+ 4)` of each k8 step) with 32-bit loads in 32 distinct
    banks, rounding each to TF32 (`cvt.rna`); the other operand (S, k-contiguous) is copied into a 128-byte-swizzled
    K-major tile that the tensor cores read through a descriptor (truncating to TF32, as the K-major TF32 path
    does). When R is A the product is computed as written (warpgroups split M); when R is B the kernel computes
    C^T = B^T A^T (the same sums of the same products, each output's terms in the tensor core's own order): the
    warpgroups split N and each accumulator (row, column) of the wgmma is the output (column, row). Nothing but the
    order of each output's sum and the TF32 rounding of operands changes: `TF32_TOLERANCE`, as for the other TF32
    shapes. A fragment register must not change while a wgmma that reads it is in flight: with one group kept in
    flight (4 or more stages) it runs across the next tile's barrier and copies, and is awaited before the
    registers are read into again.
    """
    r_is_a = c.a.layout == "o"
    rop, sop = (c.a, c.b) if r_is_a else (c.b, c.a)
    rw, sw = ("A", "B") if r_is_a else ("B", "A")
    r_rows, s_rows = (t.bm, t.bn) if r_is_a else (t.bn, t.bm)
    lr, ls = _layout(t, r_rows, "o"), _layout(t, s_rows, "k")
    r_decl, r_copy = _copy(rop, rw, t, lr)
    s_decl, s_copy = _copy(sop, sw, t, ls)
    a_decl, a_copy, b_decl, b_copy = (r_decl, r_copy, s_decl, s_copy) if r_is_a else (s_decl, s_copy, r_decl, r_copy)
    s_stage = ls.elems * 4
    smem = t.smem_bytes(c.a.layout, c.b.layout)
    n_acc = s_rows // 2
    flight = 1 if t.stages >= 4 else 0
    ahead = t.stages - 1 - flight

    s_bits = _descriptor_bits(16, 1024)
    regs = ", ".join(f"%{i}" for i in range(n_acc))
    outs = ", ".join(f'"+f"(ww_acc[{i}])' for i in range(n_acc))
    cvt = 'asm("cvt.rna.tf32.f32 %0, %1;\\n" : "=r"({d}) : "f"({s}));\n'

    def tile() -> str:
        loads = []
        for ks in range(t.bk // 8):
            for e, (do, dk) in enumerate(((0, 0), (8, 0), (0, 4), (8, 4))):
                src = f"ww_rt[{(ks * 8 + dk) * lr.pcols + do}]"
                loads.append("    " + cvt.format(d=f"ww_fr[{ks * 4 + e}]", s=src))
        mmas = []
        for ks in range(t.bk // 8):
            a_in = ", ".join(f"%{n_acc + i}" for i in range(4))
            mmas.append(
                f"    {{\n"
                f"      const unsigned long long ww_ds = (unsigned long long)(((ww_s0 + {ks * 32}u) & 0x3FFFFu) >> 4)"
                f" | {s_bits}ull;\n"
                f'      asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{n_acc + 5}, 0;\\n'
                f"wgmma.mma_async.sync.aligned.m64n{s_rows}k8.f32.tf32.tf32 {{{regs}}}, {{{a_in}}}, "
                f'%{n_acc + 4}, p, 1, 1;\\n}}\\n" : {outs} : '
                + ", ".join(f'"r"(ww_fr[{ks * 4 + i}])' for i in range(4))
                + ', "l"(ww_ds), "r"(1));\n    }\n'
            )
        copies = _wg_next_stage(t, ahead, a_copy + b_copy)
        # With one group kept in flight, the previous tile's group is awaited only after this tile's barrier and
        # copies, just before the fragment registers it read are written again: it runs across the barrier.
        wait = '    asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");\n'
        return (
            f'    asm volatile("cp.async.wait_group {ahead - 1};\\n" ::: "memory");\n'
            '    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");\n'
            "    __syncthreads();\n"
            f"{copies}"
            f"{wait if flight else ''}"
            f"    const float *ww_rt = ww_Rs + ww_rs * {lr.elems} + ww_rbase;\n"
            f"{''.join(loads)}"
            f"    const unsigned ww_s0 = ww_sS + ww_rs * {s_stage}u;\n"
            '    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");\n'
            f"{''.join(mmas)}"
            '    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");\n'
            f"{'' if flight else wait}"
            f"    ww_rs = ww_rs == {t.stages - 1} ? 0 : ww_rs + 1;\n"
        )

    loop = "  for (int ww_t = 0; ww_t < ww_T; ++ww_t) {\n" + tile() + "  }\n"
    frag_decl = "unsigned ww_fr[16];"
    o_m, o_n = ("ww_o", "ww_s") if r_is_a else ("ww_s", "ww_o")
    coords = (
        "      const long long ww_o = ww_wg * 64 + ww_wq * 16 + ww_g + (ww_e >> 1) * 8;\n"
        "      const long long ww_s = ww_i * 8 + ww_t4 * 2 + (ww_e & 1);\n"
        f"      const long long ww_mi = ww_m0 + {o_m}, ww_nj = ww_n0 + {o_n};\n"
    )
    what = "C = A B" if r_is_a else "C^T = B^T A^T"
    return f"""{{
  // warpwise untiled-contraction (warpgroup tensor cores, TF32): {t.bm}x{t.bn} output tiles, {t.bk}-deep stages in a
  // {t.stages}-stage cp.async pipeline, {t.wm} warpgroups of wgmma.mma_async m64n{s_rows}k8 tf32 ({what}) with
  // {rw} read into registers from padded shared rows and {sw} read K-major by the tensor cores from a
  // 128-byte-swizzled tile, float accumulation (sm_90a); launched as
  // <<<dim3(ceil(N / {t.bn}), ceil(M / {t.bm})), {t.threads}>>>, {smem} bytes of dynamic shared memory (after
  // cudaFuncSetAttribute).
{_operands(c, "unsigned int", 4, poly_text)}  extern __shared__ uint4 ww_dsmem[];
  const unsigned ww_sbase = (unsigned)__cvta_generic_to_shared(ww_dsmem);
  const unsigned ww_sS = (ww_sbase + 1023u) & ~1023u;
  const unsigned ww_sR = ww_sS + {t.stages * s_stage}u;
  const unsigned ww_s{sw} = ww_sS, ww_s{rw} = ww_sR;
  const float *const ww_Rs =
      reinterpret_cast<const float *>(reinterpret_cast<const char *>(ww_dsmem) + (ww_sR - ww_sbase));
  const int ww_tid = threadIdx.x;
  const int ww_lane = ww_tid & 31, ww_wg = ww_tid >> 7, ww_wq = (ww_tid >> 5) & 3;
  const int ww_g = ww_lane >> 2, ww_t4 = ww_lane & 3;
  const int ww_rbase = ww_t4 * {lr.pcols} + ww_wg * 64 + ww_wq * 16 + ww_g;
{_wg_prologue(t, n_acc, ahead, a_decl + b_decl, a_copy + b_copy)}  {frag_decl}
{loop}  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\\n" ::: "memory");
{_wg_epilogue(c, n_acc, coords)}}}"""


__all__ = [
    "MMA_CHOICES",
    "MMA_TOLERANCE",
    "SMEM_LIMIT",
    "SMEM_OPTIN",
    "SMEM_PER_SM",
    "TF32_CHOICES",
    "TF32_TOLERANCE",
    "MmaTiles",
    "generate_mma_body",
]
