"""Problem: a 3x3 Gaussian blur ([1 2 1] x [1 2 1] / 16) of a height x width float32 image with clamped edges
(kernel `blur3x3_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES, as (height, width): `full` (the default, 8192 x 8192, as in the
corpus) or a small preset for CPU tests and tail checks.
"""

import math
from typing import Any

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, SIZES, launch, flops).
problem_extends = "../../../lineages/corpus/blur3x3/expert.problem.py"
kernel = "blur3x3_naive"
SIZES = {"full": (8192, 8192), "tiny": (40, 256), "odd": (37, 203)}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per pixel, in 16 x 16 blocks."""
    height, width = int(inputs["height"]), int(inputs["width"])
    return (math.ceil(width / 16), math.ceil(height / 16), 1), (16, 16, 1)


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: nine multiplies and nine adds per pixel."""
    return 18 * int(inputs["height"]) * int(inputs["width"])
