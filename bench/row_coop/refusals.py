"""List why the row recognisers refuse the kernels issue 19 names, one line per card and kernel.

Usage: .venv/bin/python bench/row_coop/refusals.py
"""

from __future__ import annotations

from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library

ROOT = Path(__file__).resolve().parents[2]
CARDS = ("row-cooperative-reduction", "row-register-cache")
FILES = (
    "bench/suite_ood/layernorm/welford_stats.cu",
    "bench/suite_ood/gemv/transposed_2d_block.cu",
    "bench/suite_ood/batched_gemv_bias/shared_weight_2d.cu",
    "bench/suite_ood/softmax/online_macro_cols.cu",
    "bench/suite_ood/rmsnorm_residual/half_block_row.cu",
    "bench/suite_ood/reduce_sum/interleaved_partials.cu",
    "bench/suite_ood/reduce_sum/sequential_two_loads.cu",
    "bench/suite_ood/transpose/rect_block_strided_reads.cu",
    "bench/suite_ood/column_sums/atomic_per_element_2d.cu",
    "bench/suite_ood/column_sums/colmajor_mean.cu",
    "bench/suite_ood/column_sums/thread_per_col.cu",
    "bench/suite/gemv_colmajor/naive.cu",
    "bench/suite/scan_rows/naive.cu",
    "bench/suite/conv3x3/naive.cu",
)


def main() -> None:
    """Print `| card | file | kernel | verdict |` rows."""
    lib = builtin_library()
    for cid in CARDS:
        card = lib.get(cid)
        assert card is not None and card.rules is not None
        for rel in FILES:
            model = analyze_text((ROOT / rel).read_bytes(), rel)
            for fn in model.functions:
                if fn.kind is FunctionKind.KERNEL:
                    rk, why = card.rules.recognise(model, fn)
                    print(f"| {cid} | {rel} | `{fn.name}` | {'recognised' if rk is not None else why} |")


if __name__ == "__main__":
    main()
