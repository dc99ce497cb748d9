"""Problem: layer normalization forward over each row of a rows x cols float32 matrix, with per-column gamma and
beta (kernel `layernorm_naive` of naive.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192, as in the corpus) or a small
preset for CPU tests and tail checks.
"""

# The inputs, reference, eager baseline and roofline are the corpus problem's; this file names the naive kernel
# and what differs for it (kernel, SIZES).
problem_extends = "../../../lineages/corpus/layernorm/expert.problem.py"
kernel = "layernorm_naive"
SIZES = {"full": (8192, 8192), "tiny": (4, 1000), "odd": (5, 1003)}
