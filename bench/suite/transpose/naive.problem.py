"""Problem: the transpose of a rows x cols float32 matrix (kernel `transpose_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192, as in the corpus) or a small
preset for CPU tests and tail checks.
"""

import math
from typing import Any

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, SIZES, launch).
problem_extends = "../../../lineages/corpus/transpose/expert.problem.py"
kernel = "transpose_naive"
SIZES = {"full": (8192, 8192), "tiny": (64, 128), "odd": (67, 45)}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element, in 16 x 16 blocks."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return (math.ceil(cols / 16), math.ceil(rows / 16), 1), (16, 16, 1)
