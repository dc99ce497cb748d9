"""Problem: y = A x for a row-major rows x cols float32 matrix A (kernel `gemv_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192, as in the corpus) or a small
preset for CPU tests and tail checks. The entries are multiples of 1/32 in [-1, 1], so every float32 dot
product is exact in any summation order and the kernel must match the float64 reference exactly.
"""

import math
from typing import Any

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, SIZES, launch).
problem_extends = "../../../lineages/corpus/gemv/expert.problem.py"
kernel = "gemv_naive"
SIZES = {"full": (8192, 8192), "tiny": (64, 256), "odd": (13, 1001)}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, in blocks of 256."""
    return (math.ceil(int(inputs["rows"]) / 256), 1, 1), (256, 1, 1)
