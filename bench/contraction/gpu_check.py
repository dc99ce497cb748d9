"""GPU check of the untiled-contraction rewrite: bit-identity with the naive kernel, error against float64, timing.

Reads the manifest of `bench/contraction/prep.py` (naive kernels and their rewrites for several tile sizes),
compiles each with NVRTC through CuPy, and for each style and size:

- runs the naive kernel and the rewritten one on the same random normal inputs and compares the outputs bit for
  bit (the rewrite sums each output's products in the naive kernel's order, so they must be identical);
- compares both with torch's float64 product (max |error| over max |reference|);
- times the rewrite (CUDA events, median of repeated launches after warm-ups) against torch.mm with TF32 off
  (cuBLAS fp32) at 4096^3 and at the odd and tall-skinny sizes.

Usage (on the GPU machine): python3 bench/contraction/gpu_check.py MANIFEST OUT_JSON
With a third argument `ncu STYLE KEY M N K`, it instead launches that one kernel once (for Nsight Compute).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time

import cupy as cp
import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def _median_ms(fn, warm: int = 3, reps: int = 15) -> tuple[float, float]:
    """Return the median and the relative spread (max-min over median) of fn's time in ms, by CUDA events."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    med = statistics.median(times)
    return med, (max(times) - min(times)) / med


def _cp(t: torch.Tensor) -> cp.ndarray:
    return cp.from_dlpack(t.detach())


class Style:
    """How to build the arguments of one naive style for (M, N, K), and its math."""

    def __init__(self, name: str, entry: dict) -> None:
        self.name = name
        self.entry = entry
        self.kernel = entry["kernel"]

    # Each returns (args for the kernel, output tensor, reference float64 tensor of the output, naive launch).
    def build(self, m: int, n: int, k: int, gen: torch.Generator, misaligned: bool = False):
        dev = "cuda"

        def rnd(*shape):
            return torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32)

        i32, u32, f32 = np.int32, np.uint32, np.float32
        blk = (16, 16, 1)
        grid_nm = (math.ceil(n / 16), math.ceil(m / 16), 1)
        s = self.name
        if s in ("suite_matmul_naive", "nn_basic"):
            a, b = rnd(m, k), rnd(k, n)
            c = torch.zeros(m, n, device=dev)
            return [_cp(a), _cp(b), _cp(c), i32(m), i32(n), i32(k)], c, a.double() @ b.double(), (grid_nm, blk)
        if s == "restyled_macros":
            a, b = rnd(m, k), rnd(k, n)
            c = torch.zeros(m, n, device=dev)
            return [_cp(a), _cp(b), _cp(c)], c, a.double() @ b.double(), (grid_nm, blk)
        if s == "uint_typedef":
            lda = k + (1 if misaligned else 0)
            ldb = n + (3 if misaligned else 0)
            ldc = n + 1
            a_store, b_store = rnd(m, lda), rnd(k, ldb)
            c_store = torch.zeros(m, ldc, device=dev)
            a, b = a_store[:, :k], b_store[:, :n]
            args = [u32(m), u32(n), u32(k), _cp(a_store), u32(lda), _cp(b_store), u32(ldb), _cp(c_store), u32(ldc)]
            if misaligned:  # also offset the base pointer of A by one element
                a_flat = rnd(m * lda + 1)
                args[3] = _cp(a_flat)[1:]
                a = a_flat[1:].view(m, lda)[:, :k]
            return args, c_store, a.double() @ b.double(), (grid_nm, blk), (slice(None), slice(0, n))
        if s == "swapped_roles":
            a, b = rnd(m, k), rnd(k, n)
            c = torch.zeros(m, n, device=dev)
            return (
                [_cp(a), _cp(b), _cp(c), i32(m), i32(n), i32(k)],
                c,
                a.double() @ b.double(),
                ((math.ceil(m / 16), math.ceil(n / 16), 1), blk),
            )
        if s == "transposed_b":
            a, bt = rnd(m, k), rnd(n, k)
            c = torch.zeros(m, n, device=dev)
            return [_cp(a), _cp(bt), _cp(c), i32(m), i32(n), i32(k)], c, a.double() @ bt.double().T, (grid_nm, blk)
        if s == "alpha_beta_tn":
            lda, ldb, ldc = m, n, n
            at, b = rnd(k, lda), rnd(k, ldb)
            c0 = rnd(m, ldc)
            c = c0.clone()
            alpha, beta = 1.5, -0.75
            ref = alpha * (at.double().T @ b.double()) + beta * c0.double()
            args = [
                i32(m),
                i32(n),
                i32(k),
                f32(alpha),
                _cp(at),
                i32(lda),
                _cp(b),
                i32(ldb),
                f32(beta),
                _cp(c),
                i32(ldc),
            ]
            return args, c, ref, (grid_nm, blk), None, c0
        if s == "while_tt":
            at, bt = rnd(k, m), rnd(n, k)
            c = torch.zeros(m, n, device=dev)
            return [_cp(at), _cp(bt), _cp(c), i32(m), i32(n), i32(k)], c, at.double().T @ bt.double().T, (grid_nm, blk)
        raise KeyError(s)


def _unpack(built):
    args, out, ref, naive_launch = built[:4]
    view = built[4] if len(built) > 4 and built[4] is not None else None
    c0 = built[5] if len(built) > 5 else None
    return args, out, ref, naive_launch, view, c0


def main(manifest_path: str, out_path: str) -> None:
    t_start = time.time()
    with open(manifest_path) as fh:
        manifest = json.load(fh)
    props = torch.cuda.get_device_properties(0)
    result = {
        "gpu": props.name,
        "torch": torch.__version__,
        "cupy": cp.__version__,
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "nvrtc": cp.cuda.nvrtc.getVersion(),
        "prep_commit": manifest["commit"],
        "tf32": False,
        "checks": [],
        "timings": [],
        "errors": [],
    }
    kernels: dict[tuple[str, str], cp.RawKernel] = {}

    def kern(style: str, key: str) -> cp.RawKernel:
        if (style, key) not in kernels:
            e = manifest["styles"][style]
            src = e["naive"] if key == "naive" else e["generated"][key]["source"]
            kernels[(style, key)] = cp.RawModule(
                code=src, options=("-std=c++17",), name_expressions=[e["kernel"]]
            ).get_function(e["kernel"])
        return kernels[(style, key)]

    def launch_gen(style: str, key: str, args, m: int, n: int):
        bm, bn = (int(x) for x in key.split("x")[:2])
        threads = manifest["styles"][style]["generated"][key]["threads"]
        kern(style, key)((math.ceil(n / bn), math.ceil(m / bm), 1), (threads, 1, 1), tuple(args))

    default = "128x128x8x8x8"
    gen = torch.Generator(device="cuda")

    def check(style: str, m: int, n: int, k: int, keys: list[str], misaligned: bool = False, seed: int = 1) -> None:
        st = Style(style, manifest["styles"][style])
        try:
            gen.manual_seed(seed)
            args, out, ref, (ngrid, nblk), view, c0 = _unpack(st.build(m, n, k, gen, misaligned))
            t0 = time.time()
            kern(style, "naive")(ngrid, nblk, tuple(args))
            torch.cuda.synchronize()
            naive_s = time.time() - t0
            naive_out = out.clone()
            for key in keys:
                if c0 is not None:
                    out.copy_(c0)
                else:
                    out.zero_()
                launch_gen(style, key, args, m, n)
                torch.cuda.synchronize()
                got = out if view is None else out[view]
                base = naive_out if view is None else naive_out[view]
                same = bool(torch.equal(got.view(torch.int32), base.view(torch.int32)))
                if view is not None:  # the padding columns of C must be untouched (still zero)
                    same = same and bool(torch.count_nonzero(out[:, n:]).item() == 0)
                scale = ref.abs().max().item() or 1.0
                err = (got.double() - ref).abs().max().item() / scale
                err_naive = (base.double() - ref).abs().max().item() / scale
                result["checks"].append(
                    {
                        "style": style,
                        "kernel": st.kernel,
                        "layout": manifest["styles"][style]["layout"],
                        "tiles": key,
                        "M": m,
                        "N": n,
                        "K": k,
                        "misaligned": misaligned,
                        "bit_identical_to_naive": same,
                        "max_rel_err_vs_fp64": err,
                        "naive_max_rel_err_vs_fp64": err_naive,
                        "naive_wall_s": round(naive_s, 4),
                    }
                )
                print(
                    style,
                    key,
                    m,
                    n,
                    k,
                    "misaligned" if misaligned else "",
                    "same" if same else "DIFFERENT",
                    err,
                    flush=True,
                )
        except Exception as exc:
            result["errors"].append(f"{style} {m}x{n}x{k}: {type(exc).__name__}: {exc}")
            print("ERROR", style, m, n, k, exc, flush=True)

    def timing(style: str, m: int, n: int, k: int, key: str) -> None:
        try:
            _timing(style, m, n, k, key)
        except Exception as exc:
            result["errors"].append(f"timing {style} {key} {m}x{n}x{k}: {type(exc).__name__}: {exc}")
            print("ERROR timing", style, key, exc, flush=True)

    def _timing(style: str, m: int, n: int, k: int, key: str) -> None:
        st = Style(style, manifest["styles"][style])
        gen.manual_seed(7)
        args = _unpack(st.build(m, n, k, gen))[0]
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        ours, ours_spread = _median_ms(lambda: launch_gen(style, key, args, m, n))
        cublas, cublas_spread = _median_ms(lambda: torch.mm(a, b))
        flops = 2.0 * m * n * k
        rec = {
            "style": style,
            "kernel": st.kernel,
            "tiles": key,
            "M": m,
            "N": n,
            "K": k,
            "ours_ms": ours,
            "ours_spread": ours_spread,
            "cublas_fp32_ms": cublas,
            "cublas_spread": cublas_spread,
            "fraction_of_cublas": cublas / ours,
            "ours_tflops": flops / ours / 1e9,
            "cublas_tflops": flops / cublas / 1e9,
        }
        result["timings"].append(rec)
        print("TIME", style, key, m, n, k, f"{ours:.3f} ms vs cuBLAS {cublas:.3f} ms = {cublas / ours:.1%}", flush=True)

    keys = list(manifest["styles"]["suite_matmul_naive"]["generated"])
    # 1. The suite's naive matmul at 4096^3: every tile configuration, bit for bit against the naive kernel.
    check("suite_matmul_naive", 4096, 4096, 4096, keys)
    for key in keys:
        timing("suite_matmul_naive", 4096, 4096, 4096, key)
    full = [t for t in result["timings"] if t["M"] == 4096 and t["N"] == 4096 and t["K"] == 4096]
    best = min(full, key=lambda t: t["ours_ms"])["tiles"] if full else default
    result["best_tiles_4096"] = best
    # 2. Odd and tall-skinny sizes, every style, the default and the best tiles.
    ks = sorted({default, best})
    shapes = [
        (4095, 4097, 1023),
        (16384, 64, 2048),
        (64, 16384, 2048),
        (127, 129, 9),
        (1, 1, 1),
        (5, 3, 0),
        (33, 65, 4097),
    ]
    for style in manifest["styles"]:
        if style == "restyled_macros":
            check(style, 1000, 777, 333, ks)
            continue
        for m, n, k in shapes:
            if style in ("swapped_roles", "while_tt") and m * n * k > 2**33:
                m, n, k = 2047, 2049, 511  # uncoalesced naive styles: keep the naive run short
            check(style, m, n, k, ks)
    check("uint_typedef", 4095, 4097, 1023, ks, misaligned=True)
    check("uint_typedef", 129, 67, 33, ks, misaligned=True)
    # 3. Timing at the odd and tall-skinny sizes with the best tiles.
    for m, n, k in [(4095, 4097, 1023), (16384, 64, 2048), (64, 16384, 2048), (8192, 8192, 1024)]:
        for key in keys:
            timing("suite_matmul_naive", m, n, k, key)
    for style in ("transposed_b", "alpha_beta_tn", "while_tt", "uint_typedef"):
        timing(style, 4096, 4096, 4096, best)
    result["wall_s"] = round(time.time() - t_start, 1)
    result["all_bit_identical"] = all(c["bit_identical_to_naive"] for c in result["checks"])
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1)
    print(
        "done in",
        result["wall_s"],
        "s; all bit-identical:",
        result["all_bit_identical"],
        "errors:",
        len(result["errors"]),
    )


def ncu_one(manifest_path: str, style: str, key: str, m: int, n: int, k: int) -> None:
    """Launch one kernel (the naive one when key is `naive`) once at the given size, for a profiler."""
    with open(manifest_path) as fh:
        manifest = json.load(fh)
    e = manifest["styles"][style]
    src = e["naive"] if key == "naive" else e["generated"][key]["source"]
    fn = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=[e["kernel"]]).get_function(e["kernel"])
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    args, _, _, (ngrid, nblk), _, _ = _unpack(Style(style, e).build(m, n, k, gen))
    if key == "naive":
        fn(ngrid, nblk, tuple(args))
    else:
        bm, bn = (int(x) for x in key.split("x")[:2])
        fn((math.ceil(n / bn), math.ceil(m / bm), 1), (e["generated"][key]["threads"], 1, 1), tuple(args))
    torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[3] == "ncu":
        ncu_one(sys.argv[1], sys.argv[4], sys.argv[5], *(int(x) for x in sys.argv[6:9]))
    else:
        main(sys.argv[1], sys.argv[2])
