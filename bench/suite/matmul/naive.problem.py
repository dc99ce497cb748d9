"""Problem: C = A B in float32, A M x K and B K x N row-major (kernel `matmul_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES, as (M, N, K): `full` (the default, 4096^3, as in the corpus) or a
small preset for CPU tests and tail checks. The entries are multiples of 1/32 in [-1, 1], so float32 sums are
exact in any order and the kernel must match the float64 reference exactly.
"""

import math
from typing import Any

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, SIZES, launch).
problem_extends = "../../../lineages/corpus/sgemm/expert.problem.py"
kernel = "matmul_naive"
SIZES = {"full": (4096, 4096, 4096), "tiny": (64, 64, 32), "odd": (67, 45, 37)}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element of C, in 16 x 16 blocks."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return (math.ceil(n / 16), math.ceil(m / 16), 1), (16, 16, 1)
