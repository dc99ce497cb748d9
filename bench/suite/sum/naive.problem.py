"""Problem: the sum of n float32 values (kernel `sum_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `inout` names the
outputs whose starting values come from make_inputs (here the kernel adds into out[0], which starts at 0).
`bytes_moved`, `flops`, `roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes
the operator must move, its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 2^28 values, as in the corpus) or a small
preset for CPU tests and tail checks. The values are uniform in [0, 1) and the reference sums in float64.
"""

import math
from typing import Any

# The inputs, reference, eager baseline, sizes and roofline are the corpus problem's; this file names the naive
# kernel and what differs for it (kernel, launch).
problem_extends = "../../../lineages/corpus/reduce_sum/expert.problem.py"
kernel = "sum_naive"


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per value, in blocks of 256 (the kernel's shared array holds 256)."""
    return (math.ceil(int(inputs["n"]) / 256), 1, 1), (256, 1, 1)
