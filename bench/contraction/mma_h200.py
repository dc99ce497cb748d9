"""The contraction card's tensor-core and TF32 rewrites through the verification gate on one GPU (one batch).

Runs on the GPU machine with warpwise installed, from a folder holding the repository tree (`src/`). Every
status, time and speedup comes from the gate (build, check against the problem's reference, interleaved timing
with the L2 flushed, A/A control), except cuBLAS, which this script times last the same way (CUDA events around
each call, 256 MiB written before each, 5 warm-ups, median of 30, `torch.randn` inputs). Steps, each bounded by
the time left (`--steps` picks them, in this order):

- `perf`: every half/bfloat16 tensor-core shape of the card on the OOD suite's `hgemm_nn` (NN, half output) at
  4096^3, the first shapes on `hgemm_tn_ab` (TN, alpha/beta reading C) and `bgemm_nt` (NT, bfloat16, float
  output) at 4096^3, and the TF32 shapes on our `matmul_naive` at 4096^3 (tolerance `TF32_TOLERANCE`, passed to
  the gate: the problem file sets none);
- `odd`: every shape at 1025 x 1023 x 259 on each of those kernels (one seed, short timing: correctness), then the
  first shapes at 4095 x 4097 x 1023, 16384 x 64 x 1024 and 64 x 16384 x 1024 with the gate's full timing;
- `search`: `warpwise optimize` from `hgemm_nn` at 4096^3 (lineage plans off, screening on);
- `cublas`: torch.mm in float16 and bfloat16 (NN) and float32 with TF32 on, at the sizes above.

Usage: python3 src/bench/contraction/mma_h200.py --root . --out $OUT [--deadline-s 170] [--steps perf,odd,cublas]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

T0 = time.time()
LOG: list[str] = []


def log(*parts: Any) -> None:
    """Print a line and keep it for the log file."""
    line = " ".join(str(p) for p in parts)
    print(f"[{time.time() - T0:6.1f}s] {line}", flush=True)
    LOG.append(line)


def cublas_ms(m: int, n: int, k: int, dtype: str, reps: int = 30) -> dict[str, Any]:
    """Return the median time of torch.mm at (m, n, k) in a dtype (`tf32`: float32 with TF32 on), L2 flushed."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    dt = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        torch.mm(a, b)
    times = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.mm(a, b)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    med = times[len(times) // 2]
    return {
        "M": m,
        "N": n,
        "K": k,
        "dtype": dtype,
        "median_ms": med,
        "q1_ms": times[len(times) // 4],
        "q3_ms": times[(3 * len(times)) // 4],
        "reps": reps,
        "tflops": 2 * m * n * k / med / 1e9,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, required=True, help="the folder holding src/ (the repository)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=170.0)
    ap.add_argument("--steps", default="perf,odd,cublas")
    ap.add_argument("--budget-s", type=float, default=40.0)
    ap.add_argument("--candidates", type=int, default=30)
    ap.add_argument("--backend", default="local", help="local (the GPU) or compile-only (a dry run here)")
    args = ap.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    src = args.root / "src"
    sys.path.insert(0, str(src / "bench" / "contraction"))
    from gate_h200 import Runner, result_row  # noqa: F401  (the same gate driver as the SIMT rows)

    out: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": {}}
    meta = args.root / "meta.json"
    if meta.is_file():
        out["meta"] = json.loads(meta.read_text())

    def left() -> float:
        return args.deadline_s - (time.time() - T0)

    def save() -> None:
        out["wall_s"] = time.time() - T0
        (args.out / "contraction_mma.json").write_text(json.dumps(out, indent=1, default=str))
        (args.out / "contraction_mma.log").write_text("\n".join(LOG) + "\n")

    runner = Runner(args.root, args.backend)
    rules = runner.rules
    hn = (src / "bench/suite_ood/hgemm/nn_float_acc.cu", "hgemm_nn")
    htn = (src / "bench/suite_ood/hgemm/tn_alpha_beta.cu", "hgemm_tn_ab")
    bnt = (src / "bench/contraction/problems/bgemm_nt_cast.cu", "bgemm_nt")
    ours = (src / "bench/suite/matmul/naive.cu", "matmul_naive")
    mma, tf32 = rules.MMA_CHOICES, rules.TF32_CHOICES
    full = (4096, 4096, 4096)

    def job(step: str, target: tuple[Path, str], tiles: Any, sizes: Any, **opts: Any) -> None:
        if left() < 10:
            return
        path, kernel = target
        if tiles.tf32:
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
            row.get("message", "")[:120],
        )
        save()

    quick = {"seeds": (0,), "warmup_ms": 0.0, "rep_ms": 0.0, "min_reps": 3}
    try:
        for step in steps:
            if step == "perf":
                for t in mma:
                    job("perf", hn, t, full)
                for t in mma[:2]:
                    job("perf", htn, t, full)
                job("perf", bnt, mma[0], full)  # its naive kernel takes 275 ms at 4096^3: one shape
                for t in tf32:
                    job("perf", ours, t, full)
            elif step == "odd":
                for target in (hn, htn, bnt):
                    for t in mma:
                        job("odd", target, t, (1025, 1023, 259), **quick)
                for t in tf32:
                    job("odd", ours, t, (1025, 1023, 259), **quick)
                for sizes in ((4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                    for target in (hn, htn, bnt):
                        job("odd", target, mma[0], sizes)
                    job("odd", ours, tf32[0], sizes)
            elif step == "search" and left() > 30:
                runner.gate.backend.close()
                from warpwise.search.optimize import OptimizeOptions, optimize

                t0 = time.time()
                rep = optimize(
                    str(hn[0]),
                    hn[1],
                    OptimizeOptions(budget_s=args.budget_s, candidates=args.candidates, lineage=False),
                    backend="local",
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
        if "cublas" in steps:
            import torch

            out["gpu"] = torch.cuda.get_device_name(0)
            out["torch"] = torch.__version__
            rows = []
            for m, n, k in (full, (4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)):
                for dt in ("f16", "bf16", "tf32", "f32"):
                    rows.append(cublas_ms(m, n, k, dt))
                    log("cuBLAS", dt, m, n, k, f"{rows[-1]['median_ms']:.4f} ms")
            out["steps"]["cublas"] = rows
            save()
    finally:
        runner.gate.backend.close()
        save()


if __name__ == "__main__":
    main()
