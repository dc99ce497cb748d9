"""The contraction rewrite through the verification gate on one GPU, and a search from a naive SGEMM (one batch).

Runs on the GPU machine with warpwise installed, from a folder holding the repository tree (`src/`) and the public
kernels that `bench/contraction/gate_prep.py` wrote (`public/`). Every figure in the output comes from the gate's
own results (build, check against the problem's reference on every seed, interleaved timing with the L2 flushed,
A/A control), except cuBLAS, which this script times the same way (CUDA events around each call, L2 flushed
before each, warm-up, median of many, fresh random inputs). Steps, in order, each bounded by the time left:

1. The card's rewrite (default tiles) verified at each problem's own size: our suite's naive matmul (4096^3), the
   OOD suite's naive SGEMMs and float16 GEMMs (2048^3) and the naive SGEMMs of the public lineages (4096^3).
2. `warpwise optimize` from our naive SGEMM with lineage plans off (screening on, 40 GPU-seconds, 40 candidates):
   every node with its mechanism, time and speedup.
3. Every tile shape of the card through the gate at odd and tall-skinny sizes (4095 x 4097 x 1023,
   16384 x 64 x 1024, 64 x 16384 x 1024 for ours; 1025 x 1023 x 259 for the OOD styles), one seed and a short
   timing: correctness is the point there.
4. cuBLAS, last (this process holds no CUDA context before, so the gate's worker has the GPU to itself): torch.mm
   in float32 with TF32 off and in float16, at the sizes the gate ran.

Usage: python3 src/bench/contraction/gate_h200.py --root . --out $OUT [--deadline-s 170]
"""

from __future__ import annotations

import argparse
import dataclasses
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
    """Return the median time of torch.mm at (m, n, k) in a dtype (TF32 off), L2 flushed before each run."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
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


def result_row(res: Any) -> dict[str, Any]:
    """Return the parts of a gate result the output keeps."""
    out: dict[str, Any] = {"status": res.status.value, "message": res.message.splitlines()[0] if res.message else ""}
    if res.speedup is not None:
        out["speedup"] = {"median": res.speedup.median, "low": res.speedup.low, "high": res.speedup.high}
        out["noise"] = res.speedup.noise
    for side in ("original", "candidate", "control"):
        t = getattr(res, f"{side}_timing")
        if t is not None:
            out[f"{side}_ms"] = {"median": t.median_ms, "q1": t.q1_ms, "q3": t.q3_ms, "reps": t.reps}
    d = res.durations
    out["durations"] = {"build": d.build_s, "check": d.check_s, "time": d.time_s, "total": d.total_s}
    out["seeds"] = list(res.seeds_checked)
    b = res.candidate_build
    if b is not None:
        out["candidate_build"] = {"registers": b.registers, "spills": b.spill_stores, "shared": b.shared_bytes}
    if res.mismatch is not None:
        out["mismatch"] = res.mismatch.reason
    if res.device is not None:
        out["device"] = res.device.label
    return out


class Runner:
    """One gate on the local GPU and the card's rules, for every step."""

    def __init__(self, root: Path, backend: str = "local") -> None:
        from warpwise.search.optimize import gate_for
        from warpwise.skills.library import builtin_library

        self.root = root
        self.gate = gate_for(backend, None)
        card = builtin_library().get("untiled-contraction")
        assert card is not None and card.rules is not None
        self.rules = card.rules

    def rewrite(self, path: Path, kernel: str, tiles: Any) -> tuple[str | None, str, Any]:
        """Return (rewritten text or None, why not, the spec that launches it from the problem file)."""
        from warpwise.analyzers.build import analyze_text
        from warpwise.skills.launches import changed_problem_spec
        from warpwise.verify.spec import kernel_function

        text = path.read_text()
        model = analyze_text(text.encode(), str(path))
        fn = kernel_function(model, kernel)
        if fn is None:
            return None, f"no kernel {kernel}", None
        c, why = self.rules.recognise(model, fn)
        if c is None:
            return None, why, None
        new = self.rules.rewrite_source(model, kernel, tiles)
        if new is None:
            return None, "the rewrite declined (own launch bounds, or tiles not generable)", None
        changes = self.rules.launch_changes(c, fn, tiles)
        spec = changed_problem_spec(str(path), text, kernel, changes) if changes else None
        if spec is None:
            return None, "no problem-file launch to change", None
        return new.decode(), "", spec

    def verify(self, path: Path, kernel: str, tiles: Any, sizes: Any = None, **opts: Any) -> dict[str, Any]:
        """Verify the rewrite with these tiles at the problem's size (or `sizes`) and return the row."""
        from warpwise.verify.gate import Candidate
        from warpwise.verify.spec import problem_tolerance
        from warpwise.verify.types import Options

        row: dict[str, Any] = {"file": str(path.relative_to(self.root)), "kernel": kernel, "tiles": tiles.key}
        new, why, spec = self.rewrite(path, kernel, tiles)
        if new is None:
            row.update(status="not_rewritten", message=why)
            return row
        layout = self.rules.recognise(*self._model_fn(path, kernel))[0]
        row["layout"] = layout.layout
        row["operands"] = layout.convert or "float"
        if sizes is not None:
            extra = f"\n\nSIZES = dict(SIZES)\nSIZES['full'] = {tuple(sizes)!r}\n"
            spec = dataclasses.replace(
                spec, run=dataclasses.replace(spec.run, problem_source=spec.run.problem_source + extra)
            )
            row["sizes"] = list(sizes)
        tol = problem_tolerance(spec.run.problem_source or "")
        if tol is not None and "tolerance" not in opts:
            opts = {**opts, "tolerance": tol}
            row["tolerance"] = list(tol)
        t = time.time()
        res = self.gate.verify(
            Candidate(str(path), path.read_text(), kernel, new, str(path), spec=spec), Options(**opts)
        )
        row.update(result_row(res))
        row["wall_s"] = time.time() - t
        return row

    def _model_fn(self, path: Path, kernel: str) -> tuple[Any, Any]:
        from warpwise.analyzers.build import analyze_text
        from warpwise.verify.spec import kernel_function

        model = analyze_text(path.read_bytes(), str(path))
        return model, kernel_function(model, kernel)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, required=True, help="the folder holding src/ (the repository) and public/")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=170.0)
    ap.add_argument("--budget-s", type=float, default=40.0)
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--optimize", nargs=2, metavar=("FILE", "KERNEL"), help="search this kernel (default: ours)")
    ap.add_argument("--backend", default="local", help="local (the GPU) or compile-only (a dry run here)")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip (cublas,gate,optimize,tiles)")
    args = ap.parse_args()
    skip = set(args.skip.split(",")) - {""}
    src = args.root / "src"
    out: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": {}}
    meta = args.root / "meta.json"
    if meta.is_file():
        out["meta"] = json.loads(meta.read_text())

    def left() -> float:
        return args.deadline_s - (time.time() - T0)

    def save() -> None:
        out["wall_s"] = time.time() - T0
        (args.out / "contraction_gate.json").write_text(json.dumps(out, indent=1, default=str))
        (args.out / "contraction_gate.log").write_text("\n".join(LOG) + "\n")

    # This process touches the GPU only at the end (cuBLAS): a CUDA context here would be another process on the
    # GPU for the gate's worker, which then declines to call anything verified.
    runner = Runner(args.root, args.backend)
    from warpwise.skills.library import builtin_library

    rules = builtin_library().get("untiled-contraction").rules  # type: ignore[union-attr]
    default = rules.Tiles()
    ours = src / "bench" / "suite" / "matmul" / "naive.cu"
    ood = [
        (src / "bench/suite_ood/sgemm/nn_swapped_alpha_beta.cu", "sgemm_naive_nn"),
        (src / "bench/suite_ood/sgemm/nt_tile_macro.cu", "matmul_nt"),
        (src / "bench/suite_ood/sgemm/tn_one_d_typedef.cu", "gemm_tn"),
        (src / "bench/suite_ood/hgemm/nn_float_acc.cu", "hgemm_nn"),
        (src / "bench/suite_ood/hgemm/tn_alpha_beta.cu", "hgemm_tn_ab"),
        (src / "bench/suite_ood/hgemm/nt_half_accumulate_macro.cu", "hgemm_nt"),
    ]
    public = json.loads((args.root / "public.json").read_text()) if (args.root / "public.json").is_file() else []
    try:
        if "gate" not in skip:
            rows = []
            targets = [(ours, "matmul_naive", "ours")] + [(p, k, "ood") for p, k in ood]
            targets += [(args.root / e["path"], e["kernel"], f"public:{e['repo']}@{e['commit'][:12]}") for e in public]
            for path, kernel, origin in targets:
                if left() < 60:
                    log("skipping the rest of step 2: time")
                    break
                try:
                    row = runner.verify(path, kernel, default)
                except Exception as exc:
                    row = {"file": str(path), "kernel": kernel, "status": "error", "message": repr(exc)}
                    traceback.print_exc()
                row["origin"] = origin
                rows.append(row)
                log(
                    "gate",
                    kernel,
                    row.get("status"),
                    row.get("speedup", {}).get("median"),
                    row.get("message", "")[:100],
                )
                out["steps"]["gate"] = rows
                save()
        runner.gate.backend.close()
        if "optimize" not in skip and left() > 30:
            from warpwise.search.optimize import OptimizeOptions, optimize

            t = time.time()
            target, target_kernel = (args.root / args.optimize[0], args.optimize[1]) if args.optimize else (ours, "")
            target_kernel = target_kernel or "matmul_naive"
            rep = optimize(
                str(target),
                target_kernel,
                OptimizeOptions(budget_s=args.budget_s, candidates=args.candidates, lineage=False),
                backend="local",
            )
            d = rep.to_dict()
            d.pop("edits", None)
            d["wall_s"] = time.time() - t
            out["steps"]["optimize"] = d
            (args.out / f"optimize_{target_kernel}.md").write_text(rep.markdown())
            log("optimize", rep.budget, "best", rep.best and rep.best.get("speedup"))
            save()
        if "tiles" not in skip:
            runner = Runner(args.root, args.backend)
            rows = []
            shapes_ours = [(4095, 4097, 1023), (16384, 64, 1024), (64, 16384, 1024)]
            jobs = [(ours, "matmul_naive", s) for s in shapes_ours]
            jobs += [(p, k, (1025, 1023, 259)) for p, k in ood[:2] + ood[3:5]]
            quick = {"seeds": (0,), "warmup_ms": 0.0, "rep_ms": 0.0, "min_reps": 3}
            for path, kernel, sizes in jobs:
                for tiles in rules.TILE_CHOICES:
                    if left() < 8:
                        break
                    try:
                        row = runner.verify(path, kernel, tiles, sizes, **quick)
                    except Exception as exc:
                        row = {"file": str(path), "kernel": kernel, "status": "error", "message": repr(exc)}
                    rows.append(row)
                    log("tiles", kernel, tiles.key, sizes, row.get("status"))
                out["steps"]["tiles"] = rows
                save()
            runner.gate.backend.close()
        if "cublas" not in skip:
            import torch

            out["gpu"] = torch.cuda.get_device_name(0)
            out["torch"] = torch.__version__
            rows = []
            for m, n, k, dt in [(4096, 4096, 4096, "f32"), (2048, 2048, 2048, "f32"), (2048, 2048, 2048, "f16")]:
                rows.append(cublas_ms(m, n, k, dt))
                log("cuBLAS", dt, m, n, k, f"{rows[-1]['median_ms']:.3f} ms")
            out["steps"]["cublas"] = rows
            save()
    finally:
        runner.gate.backend.close()
        save()
    sys.exit(0)


if __name__ == "__main__":
    main()
