"""Verification latency and throughput on one GPU, against building the same pairs with `load_inline`.

Pairs are generated: pair k is an elementwise kernel `op<k>` (out = a*x + c_k*y over 2^22 floats) whose original
walks memory with a stride (uncoalesced) and whose candidate is coalesced, so every pair is distinct text and
should verify. Measured, from job submission to result, through the real queue, local backend and cache:

- cold: the very first job, including the worker's start (importing torch, creating the CUDA context);
- uncached: distinct pairs one at a time on a warm worker (median);
- cached: the same pairs submitted again (median);
- throughput: distinct pairs submitted at once (pairs per minute, wall clock);
- `torch.utils.cpp_extension.load_inline`: the path most PyTorch users would take: compile each pair as an
  extension, check it on 3 seeds, time it with `triton.testing.do_bench`; the first few pairs only (each build
  takes tens of seconds), reported per pair next to the gate's per-pair time.

Run on the GPU machine: `python bench/verify_throughput.py [--pairs 50] [--inline-pairs 2]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result

from warpwise.verify.backends import LocalBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.jobqueue import VerificationQueue
from warpwise.verify.types import Options, Status

N = 1 << 22


def pair(k: int, n: int = N) -> tuple[str, str]:
    """Return the original and candidate source of pair k."""
    c = f"{1 + k % 97}.0f"
    original = f"""// warpwise: n={n} a=2.0 x:in[n] y:in[n] out:out[n] grid=(n+255)/256 block=256
__global__ void op{k}(int n, float a, const float* x, const float* y, float* out) {{
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int i = (t % 32) * (n / 32) + t / 32;
  out[i] = a * x[i] + {c} * y[i];
}}
"""
    candidate = f"""__global__ void op{k}(int n, float a, const float* __restrict__ x, const float* __restrict__ y,
                       float* __restrict__ out) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + {c} * y[i];
}}
"""
    return original, candidate


def candidate_of(k: int) -> Candidate:
    """Return the gate's request for pair k."""
    original, cand = pair(k)
    return Candidate(f"pair{k}.cu", original, f"op{k}", cand, f"pair{k}_candidate.cu")


def submit_and_wait(queue: VerificationQueue, k: int, options: Options) -> tuple[float, Status]:
    """Submit one pair and return seconds from submission to result, and the status."""
    t0 = time.perf_counter()
    h = queue.submit(candidate_of(k), options)
    res = h.wait()
    assert res is not None
    return time.perf_counter() - t0, res.status


def inline_pair(k: int, build_dir: str) -> dict[str, float | bool]:
    """Build, check and time pair k with torch.utils.cpp_extension.load_inline; return the seconds taken."""
    import torch
    import triton.testing
    from torch.utils.cpp_extension import load_inline

    original, cand = pair(k)
    t0 = time.perf_counter()
    body = original.split("\n", 1)[1].replace(f"op{k}(", f"op{k}_orig(") + cand.replace(f"op{k}(", f"op{k}_cand(")
    launchers = ""
    for side in ("orig", "cand"):
        launchers += f"""
void run_{side}(torch::Tensor x, torch::Tensor y, torch::Tensor out, double a) {{
  int n = x.numel();
  op{k}_{side}<<<(n + 255) / 256, 256>>>(n, (float)a, x.data_ptr<float>(), y.data_ptr<float>(),
                                        out.data_ptr<float>());
}}
"""
    cpp = "void run_orig(torch::Tensor, torch::Tensor, torch::Tensor, double);\n"
    cpp += "void run_cand(torch::Tensor, torch::Tensor, torch::Tensor, double);\n"
    folder = Path(build_dir) / f"pair{k}"
    folder.mkdir(parents=True, exist_ok=True)
    mod = load_inline(
        name=f"warpwise_pair{k}",
        cpp_sources=cpp,
        cuda_sources="#include <torch/extension.h>\n" + body + launchers,
        functions=["run_orig", "run_cand"],
        extra_cuda_cflags=["-O3"],
        build_directory=str(folder),
        verbose=False,
    )
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    ok = True
    for seed in range(3):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.rand(N, device="cuda", generator=g) * 2 - 1
        y = torch.rand(N, device="cuda", generator=g) * 2 - 1
        ref = torch.full_like(x, float("nan"))
        out = torch.full_like(x, float("nan"))
        mod.run_orig(x, y, ref, 2.0)
        mod.run_cand(x, y, out, 2.0)
        torch.cuda.synchronize()
        ok = ok and bool(torch.allclose(out, ref, rtol=1e-4, atol=1e-5))
    check_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    out = torch.empty_like(x)
    t_orig = triton.testing.do_bench(lambda: mod.run_orig(x, y, out, 2.0), warmup=25, rep=100)
    t_cand = triton.testing.do_bench(lambda: mod.run_cand(x, y, out, 2.0), warmup=25, rep=100)
    time_s = time.perf_counter() - t2
    return {
        "total_s": time.perf_counter() - t0,
        "build_s": build_s,
        "check_s": check_s,
        "time_s": time_s,
        "correct": ok,
        "speedup": t_orig / t_cand,
    }


def main() -> int:
    """Run the benchmark and write the dated result files."""
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=50, help="distinct pairs for the throughput run")
    p.add_argument("--latency-pairs", type=int, default=10, help="pairs for the uncached / cached latency")
    p.add_argument("--inline-pairs", type=int, default=2, help="pairs built with load_inline for comparison")
    p.add_argument("--out", default=os.environ.get("OUT"), help="also copy the result files here")
    args = p.parse_args()
    import torch

    gpu = torch.cuda.get_device_name(0)
    tmp = tempfile.mkdtemp(prefix="warpwise-bench-")
    os.environ["WARPWISE_CACHE_DIR"] = tmp
    cache = ResultCache(Path(tmp) / "results.sqlite3")
    backend = LocalBackend(gpus=1, cache=cache)
    queue = VerificationQueue(Gate(backend, cache))
    options = Options()
    cold_s, cold_status = submit_and_wait(queue, 0, options)
    uncached = [submit_and_wait(queue, k, options) for k in range(1, 1 + args.latency_pairs)]
    cached = [submit_and_wait(queue, k, options) for k in range(1, 1 + args.latency_pairs)]
    start = 1000
    t0 = time.perf_counter()
    handles = [queue.submit(candidate_of(k), options) for k in range(start, start + args.pairs)]
    results = [h.wait() for h in handles]
    wall = time.perf_counter() - t0
    statuses: dict[str, int] = {}
    for r in results:
        assert r is not None
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    durations = [r.durations for r in results if r is not None]
    queue.close()
    backend.close()
    per_pair_gate = wall / args.pairs
    inline: list[dict[str, float | bool]] = []
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
    for k in range(5000, 5000 + args.inline_pairs):
        inline.append(inline_pair(k, tmp))
    inline_per_pair = statistics.median(float(r["total_s"]) for r in inline) if inline else float("nan")
    data = {
        "gpu": gpu,
        "elements": N,
        "cold_first_job_s": round(cold_s, 3),
        "cold_status": cold_status.value,
        "uncached_median_s": round(statistics.median(s for s, _ in uncached), 4),
        "uncached_statuses": sorted({st.value for _, st in uncached}),
        "cached_median_ms": round(1000 * statistics.median(s for s, _ in cached), 3),
        "throughput_pairs": args.pairs,
        "throughput_wall_s": round(wall, 2),
        "pairs_per_minute": round(60 * args.pairs / wall, 1),
        "throughput_statuses": statuses,
        "stage_medians_s": {
            "build": round(statistics.median(d.build_s for d in durations), 4),
            "check": round(statistics.median(d.check_s for d in durations), 4),
            "time": round(statistics.median(d.time_s for d in durations), 4),
        },
        "load_inline_pairs": args.inline_pairs,
        "load_inline": inline,
        "load_inline_per_pair_s": round(inline_per_pair, 2),
        "gate_per_pair_s": round(per_pair_gate, 3),
        "ratio_load_inline_over_gate": round(inline_per_pair / per_pair_gate, 1) if inline else None,
        "targets": {"uncached_median_s": 1.5, "cached_ms": 10, "pairs_per_minute": 60},
    }
    md = [
        f"GPU: {gpu}; pairs of elementwise kernels over {N} floats (original strided, candidate coalesced).",
        "",
        "| measure | value | target |",
        "| --- | --- | --- |",
        f"| first job, cold worker (s) | {data['cold_first_job_s']} | |",
        f"| uncached, warm worker, median of {args.latency_pairs} (s) | {data['uncached_median_s']} | <= 1.5 |",
        f"| cached, median of {args.latency_pairs} (ms) | {data['cached_median_ms']} | <= 10 |",
        f"| throughput, {args.pairs} distinct pairs (pairs/min) | {data['pairs_per_minute']} | >= 60 |",
        f"| gate per pair, from the throughput run (s) | {data['gate_per_pair_s']} | |",
        f"| load_inline per pair, median of {args.inline_pairs} (s) | {data['load_inline_per_pair_s']} | |",
        f"| ratio load_inline / gate | {data['ratio_load_inline_over_gate']} | |",
        "",
        f"Statuses in the throughput run: {statuses}. Stage medians: {data['stage_medians_s']}.",
    ]
    out = write_result("verify_throughput", data, "\n".join(md))
    if args.out:
        import shutil

        for f in (out, out.with_suffix(".md")):
            shutil.copy(f, Path(args.out) / f.name)
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
