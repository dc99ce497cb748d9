"""Problem: a 256-bin histogram of n bytes (kernel `histogram_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.
`inout` names the outputs whose starting values come from make_inputs (the kernel adds into bins, which start
at 0).

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 1 GiB of bytes, as in the corpus) or a small
preset for CPU tests and tail checks.
"""

import math
from typing import Any

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, launch).
problem_extends = "../../../lineages/corpus/histogram/expert.problem.py"
kernel = "histogram_naive"


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per byte, in blocks of 256."""
    return (math.ceil(int(inputs["n"]) / 256), 1, 1), (256, 1, 1)
