"""The contraction card's second tensor-core generator through the gate, with Nsight Compute, in one GPU batch.

Runs on the GPU machine with warpwise installed, from a folder holding the repository tree (`src/`). Every
status, time and speedup comes from the gate (build, check against the problem's reference, interleaved timing
with the L2 flushed, A/A control); Nsight Compute runs through the gate's own profiling pass (`ncu --clock-control
none`, each side launched once) with this script's metric list (tensor pipe, throughputs, stall reasons), filtered
to the metrics the installed ncu knows. Steps, each bounded by the
time left (`--steps` picks them; cuBLAS and the peak last, when no gate worker is left: a CUDA context in this
process is another process on the GPU to the gate, which then withholds "verified"):

- `perf`: every half/bfloat16 shape of `MMA_CHOICES` on the OOD suite's `hgemm_nn` at 4096^3, then the fastest
  two on `hgemm_tn_ab` (TN, alpha/beta), the fastest on `bgemm_nt` (NT, bfloat16) and the TF32 shapes on our
  `matmul_naive` at 4096^3;
- `odd`: every shape at 1025 x 1023 x 259 and 65 x 70 x 61 on each kernel (one seed, short timing:
  correctness), then the fastest shape at 4095 x 4097 x 1023, 16384 x 64 x 1024 and 64 x 16384 x 1024 with
  full timing, and the SIMT steps (coalesced mapping, shared tiles) at 1025 x 1023 x 259;
- `tf32`: only the TF32 shapes of `perf`, then the register-operand TF32 shapes on `sgemm_kt_while` (A stored
  along its outputs) with the fastest `mma.sync` TF32 shape beside them;
- `oddlarge`: only the large odd and tall-skinny sizes of `odd`, with the first shape of the prior (or the fastest
  when `perf` ran first);
- `tn`: the TN alpha/beta kernel only, at 4096^3 (two fastest shapes of the prior) and the three large odd and
  tall-skinny sizes (the first shape; at 64 rows also the one-warpgroup 64-row shape);
- `probe`: the TN alpha/beta kernel and the NN kernel at 64 x 16384 x 1024 with the 64-row wgmma shape, profiled;
- `simt`: float32 without TF32: every exact SIMT register-tile shape on `matmul_naive` and the OOD suite's
  `sgemm_naive_nn` at 4096^3 (cuBLAS fp32 with TF32 off is in `cublas`);
- `lineage`: `hgemm_nn` at 4096^3 through shared tiles (16 x 16, one output per thread), the SIMT register
  tiles (4x4 and 8x8 per thread, 16-byte loads, padded shared tiles), tensor cores with double buffering, the
  portable three-stage 64 x 64-warp-tile shape and the fastest shape (wgmma on the H200), each profiled;
- `cublas` (last): torch.mm in float16, bfloat16 and TF32 at the sizes below, and float32 with TF32 off at 4096^3;
- `peak` (last): the H200's `mma.sync` m16n8k16 f32 rate from registers (independent chains, no memory), the
  ceiling of any kernel built on it;
- `search`: `warpwise optimize` from `hgemm_nn` at its problem size (lineage plans off, screening on).

Usage: python3 src/bench/contraction/mma2_h200.py --root . --out $OUT [--deadline-s 230] [--steps ...]
The carried `src/` needs bench/contraction, bench/suite_ood/hgemm, bench/suite/matmul and lineages/corpus/sgemm
(which bench/suite/matmul/naive.problem.py extends; without it the TF32 rows have no problem spec).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

T0 = time.time()
LOG: list[str] = []
NCU_METRICS = (
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.avg.per_cycle_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
)
PEAK_SRC = r"""
extern "C" __global__ void mma_peak(float *out, int iters) {
  unsigned a0 = threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 * 11u, b1 = a0 * 13u;
  float c[8][4];
  for (int i = 0; i < 8; ++i) for (int e = 0; e < 4; ++e) c[i][e] = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};\n" : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0.0f;
  for (int i = 0; i < 8; ++i) for (int e = 0; e < 4; ++e) s += c[i][e];
  if (s == 12345.0f) out[threadIdx.x] = s;
}
"""


def log(*parts: Any) -> None:
    """Print a line and keep it for the log file."""
    line = " ".join(str(p) for p in parts)
    print(f"[{time.time() - T0:6.1f}s] {line}", flush=True)
    LOG.append(line)


def known_metrics() -> tuple[str, ...]:
    """Return the metrics of NCU_METRICS the installed ncu knows on this GPU (by base name)."""
    try:
        out = subprocess.run(["ncu", "--query-metrics"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    names = {line.split()[0] for line in out.splitlines() if line.strip()}
    keep = []
    for m in NCU_METRICS:
        base = m.rsplit(".", 1)[0] if m.endswith(".ratio") else m.split(".", 1)[0]
        if base in names:
            keep.append(m)
    return tuple(keep)


def mma_peak() -> dict[str, Any]:
    """Return the rate of independent `mma.sync` m16n8k16 from registers over every SM (CUDA events, median)."""
    import cupy as cp

    k = cp.RawKernel(PEAK_SRC, "mma_peak", options=("--gpu-architecture=sm_90",))
    out = cp.zeros(1024, dtype=cp.float32)
    sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
    iters = 4096
    res = {}
    for warps in (4, 8, 16):
        blocks = sms * 4
        k((blocks,), (32 * warps,), (out, cp.int32(iters)))
        times = []
        for _ in range(9):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k((blocks,), (32 * warps,), (out, cp.int32(iters)))
            e.record()
            e.synchronize()
            times.append(cp.cuda.get_elapsed_time(s, e))
        times.sort()
        ms = times[len(times) // 2]
        flop = blocks * warps * iters * 8 * 2 * 16 * 8 * 16
        res[f"{warps}_warps_per_block"] = {"blocks": blocks, "median_ms": ms, "tflops": flop / ms / 1e9}
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, required=True, help="the folder holding src/ (the repository)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=230.0)
    ap.add_argument("--steps", default="perf,odd,lineage,peak,search,cublas")
    ap.add_argument("--budget-s", type=float, default=20.0)
    ap.add_argument("--candidates", type=int, default=12)
    ap.add_argument("--backend", default="local", help="local (the GPU) or compile-only (a dry run here)")
    args = ap.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    src = args.root / "src"
    sys.path.insert(0, str(src / "bench" / "contraction"))
    import gate_h200
    from gate_h200 import Runner
    from mma_h200 import cublas_ms

    plain_row = gate_h200.result_row

    def row_with_profiles(res: Any) -> dict[str, Any]:
        row = plain_row(res)
        for side in ("original", "candidate"):
            p = getattr(res, f"{side}_profile", None)
            if p is not None:
                row[f"{side}_profile"] = p.to_dict()
        if res.message and "ncu" in res.message:
            row["profile_message"] = res.message[-300:]
        return row

    gate_h200.result_row = row_with_profiles

    import warpwise.verify.profile as wprofile

    out: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": {}}
    meta = args.root / "meta.json"
    if meta.is_file():
        out["meta"] = json.loads(meta.read_text())
    extra = known_metrics() if args.backend == "local" else ()
    out["ncu_extra_metrics"] = list(extra)
    wprofile.METRICS = tuple(wprofile.METRICS) + extra

    def left() -> float:
        return args.deadline_s - (time.time() - T0)

    def save() -> None:
        out["wall_s"] = time.time() - T0
        (args.out / "contraction_mma2.json").write_text(json.dumps(out, indent=1, default=str))
        (args.out / "contraction_mma2.log").write_text("\n".join(LOG) + "\n")

    runner = Runner(args.root, args.backend)
    rules = runner.rules
    hn = (src / "bench/suite_ood/hgemm/nn_float_acc.cu", "hgemm_nn")
    htn = (src / "bench/suite_ood/hgemm/tn_alpha_beta.cu", "hgemm_tn_ab")
    bnt = (src / "bench/contraction/problems/bgemm_nt_cast.cu", "bgemm_nt")
    ours = (src / "bench/suite/matmul/naive.cu", "matmul_naive")
    kt = (src / "bench/contraction/problems/sgemm_kt_while.cu", "sgemm_kt_while")
    sgemm_nn = (src / "bench/suite_ood/sgemm/nn_swapped_alpha_beta.cu", "sgemm_naive_nn")
    mma, tf32 = list(rules.MMA_CHOICES), list(rules.TF32_CHOICES)
    full = (4096, 4096, 4096)

    def job(step: str, target: tuple[Path, str], tiles: Any, sizes: Any, need: float = 10, **opts: Any) -> Any:
        if left() < need:
            return None
        path, kernel = target
        if getattr(tiles, "tf32", False):
            opts = {**opts, "tolerance": rules.TF32_TOLERANCE}
        try:
            row = runner.verify(path, kernel, tiles, sizes, **opts)
        except Exception as exc:
            row = {"file": str(path), "kernel": kernel, "tiles": tiles.key, "status": "error", "message": repr(exc)}
            traceback.print_exc()
        row["sizes"] = list(sizes)
        out["steps"].setdefault(step, []).append(row)
        log(
            step,
            kernel,
            tiles.key,
            sizes,
            row.get("status"),
            row.get("speedup", {}).get("median"),
            row.get("candidate_ms", {}).get("median"),
            row.get("candidate_build"),
            row.get("message", "")[:120],
        )
        save()
        return row

    def fastest(rows: list[Any], shapes: list[Any]) -> list[Any]:
        timed = [r for r in rows if r and r["status"] in ("verified", "not_faster") and r.get("candidate_ms")]
        ms = {r["tiles"]: r["candidate_ms"]["median"] for r in timed if "correct" in r.get("message", "")}
        return sorted(shapes, key=lambda t: ms.get(t.key, 1e9))

    quick = {"seeds": (0,), "warmup_ms": 0.0, "rep_ms": 0.0, "min_reps": 3}
    best = mma
    best_tf32 = tf32
    try:
        for step in steps:
            if step == "perf":
                rows = [job("perf", hn, t, full) for t in mma]
                best = fastest(rows, mma)
                log("fastest shapes", [t.key for t in best])
                for t in best[:2]:
                    job("perf", htn, t, full)
                job("perf", bnt, best[0], full, need=30)  # its naive kernel takes 275 ms at 4096^3
                best_tf32 = fastest([job("perf", ours, t, full) for t in tf32], tf32)
            elif step == "odd":
                for small in ((1025, 1023, 259), (65, 70, 61)):
                    for target in (hn, htn, bnt):
                        for t in mma:
                            job("odd", target, t, small, need=5, **quick)
                    for t in tf32:
                        job("odd", ours, t, small, need=5, **quick)
                for sizes in ((4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                    for target in (hn, htn, bnt):
                        job("odd", target, best[0], sizes)
                    job("odd", ours, best_tf32[0], sizes)
                for target in (hn, htn, bnt, ours):
                    for t in rules.SIMT_STEPS[:2]:
                        job("odd", target, t, (1025, 1023, 259), need=5, **quick)
            elif step == "tf32":
                best_tf32 = fastest([job("tf32", ours, t, full) for t in tf32 if not t.problems("k", "o")], tf32)
                # A stored along its outputs, B along k: the register-operand shapes that fit that orientation,
                # and the fastest `mma.sync` TF32 shape on the same kernel.
                simt = [t for t in best_tf32 if not t.wgmma][:1]
                for t in [t for t in tf32 if t.regs and not t.problems("o", "k")] + simt:
                    job("tf32", kt, t, full)
            elif step == "oddlarge":
                # Only the large odd and tall-skinny sizes, with the prior's first shape of each kind (the fastest
                # at 4096^3 when `perf` ran first): the shape's correctness at every small odd size is the GPU tests'.
                def fitting(shapes: list[Any], sizes: Any, a: str, b: str) -> list[Any]:
                    # The first shape of the prior whose block tile the output fills (a 64-row or 64-column output
                    # leaves most of a 128 x 256 tile idle), when the first shape overall does not fit it.
                    ok = [t for t in shapes if not t.problems(a, b)]
                    if ok and ok[0].bm <= sizes[0] and ok[0].bn <= sizes[1]:
                        return []
                    return [t for t in ok if t.bm <= sizes[0] and t.bn <= sizes[1]][:1]

                for sizes in ((4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                    for target, lay in ((hn, ("k", "o")), (htn, ("o", "o")), (bnt, ("k", "k"))):
                        job("oddlarge", target, best[0], sizes)
                        for t in fitting(mma, sizes, *lay):
                            job("oddlarge", target, t, sizes)
                    job("oddlarge", ours, best_tf32[0], sizes)
                    for t in fitting(tf32, sizes, "k", "o"):
                        job("oddlarge", ours, t, sizes)
            elif step == "tn":
                # The TN alpha/beta kernel alone (its epilogue reads C): the two fastest shapes at 4096^3, the first
                # at the odd and tall-skinny sizes, and the one-warpgroup 64-row shape at 64 rows.
                for t in mma[:2]:
                    job("tn", htn, t, full)
                for sizes in ((4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                    job("tn", htn, mma[0], sizes)
                for t in [t for t in mma if t.wgmma and t.bm == 64][:1]:
                    job("tn", htn, t, (64, 16384, 1024))
            elif step == "probe":
                # The TN alpha/beta kernel at 64 rows (the one odd-size miss), profiled, with the 64-row shape.
                for t in [t for t in mma if t.wgmma and t.bm == 64][:1]:
                    job("probe", htn, t, (64, 16384, 1024), profile=True)
                    job("probe", hn, t, (64, 16384, 1024), profile=True)
            elif step == "simt":
                # float32 without TF32: the exact SIMT register-tile shapes on two naive SGEMMs of different styles.
                for target in (ours, sgemm_nn):
                    for t in rules.TILE_CHOICES:
                        job("simt", target, t, full, need=20)
            elif step == "lineage":
                steps_ = [
                    rules.SimtStep("shared", 16),
                    rules.Tiles(64, 64, 16, 4, 4, 0),
                    rules.Tiles(128, 128, 8, 8, 8, 2),
                    rules.MmaTiles(128, 128, 32, 2, 4, 2, 2),
                    rules.MmaTiles(128, 128, 32, 2, 2, 3, 2),
                    best[0],
                ]
                for t in steps_:
                    job("lineage", hn, t, full, need=20, profile=True)
            elif step == "search" and left() > 40:
                runner.gate.backend.close()
                from warpwise.search.optimize import OptimizeOptions, optimize

                t0 = time.time()
                rep = optimize(
                    str(hn[0]),
                    hn[1],
                    OptimizeOptions(budget_s=args.budget_s, candidates=args.candidates, lineage=False),
                    backend=args.backend,
                )
                d = rep.to_dict()
                d.pop("edits", None)
                d["wall_s"] = time.time() - t0
                out["steps"]["search"] = d
                (args.out / "optimize_hgemm_nn.md").write_text(rep.markdown())
                log("search", rep.budget, "best", rep.best and rep.best.get("speedup"))
                save()
                runner = Runner(args.root, args.backend)
        runner.gate.backend.close()
        # Last: a CUDA context in this process counts as another process on the GPU for the gate's timing.
        if "cublas" in steps and args.backend == "local":
            import torch

            out["gpu"] = torch.cuda.get_device_name(0)
            out["torch"] = torch.__version__
            rows = []
            for m, n, k in (full, (4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                for dt in ("f16", "bf16", "tf32") + (("f32",) if (m, n, k) == full else ()):
                    rows.append(cublas_ms(m, n, k, dt))
                    log("cuBLAS", dt, m, n, k, f"{rows[-1]['median_ms']:.4f} ms")
            out["steps"]["cublas"] = rows
            save()
        if "peak" in steps and args.backend == "local":
            try:
                out["steps"]["peak"] = mma_peak()
            except Exception as exc:
                out["steps"]["peak"] = {"error": repr(exc)}
            log("peak", out["steps"]["peak"])
            save()
    finally:
        runner.gate.backend.close()
        save()


if __name__ == "__main__":
    main()
