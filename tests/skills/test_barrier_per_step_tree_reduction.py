"""The barrier-per-step-tree-reduction card (skills/barrier-per-step-tree-reduction/): a tree run, not a shape.

The card's fixtures run through tests/skills/test_cards.py like every card's; here: which trees of the naive suites
the recogniser proves (by running them) and with which addressing, that near misses say why, that the rewrites
of every suite kernel compile, and (on a GPU) that the gate finds them correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nvcc import compile_many
from tests.skills.cardtest import matches, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library

FIXTURES = BUILTIN_CARDS / "barrier-per-step-tree-reduction" / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
CARD = "barrier-per-step-tree-reduction"
_card = builtin_library().get(CARD)
assert _card is not None and _card.rules is not None
tr = _card.rules

# kernel file -> the trees found: (op, addressing, block sizes for which the loop is a full tree)
SUITE_TREES = {
    "bench/suite/sum/naive.cu": [("sum", "interleaved", (32, 64, 128, 256))],
    "bench/suite/softmax/naive.cu": [
        ("max", "sequential", (32, 64, 128, 256)),
        ("sum", "sequential", (32, 64, 128, 256)),
    ],
    "bench/suite_ood/reduce_sum/interleaved_partials.cu": [("sum", "interleaved", (32, 64, 128, 256, 512, 1024))],
    "bench/suite_ood/reduce_sum/sequential_two_loads.cu": [("sum", "sequential", (32, 64, 128, 256))],
    "bench/suite_ood/reduce_sum/strided_index_atomic.cu": [("sum", "strided index", (512,))],
    "bench/suite_ood/softmax/block_row_while.cu": [("max", "sequential", (128,)), ("sum", "sequential", (128,))],
    "bench/suite_ood/masked_softmax/causal_block_interleaved.cu": [
        ("max", "interleaved", (32, 64, 128, 256)),
        ("sum", "interleaved", (32, 64, 128, 256)),
    ],
}


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    return model, next(f for f in model.functions if f.kind is FunctionKind.KERNEL)


@pytest.mark.parametrize("rel", sorted(SUITE_TREES))
def test_runs_the_tree_of_each_textbook_form(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    found, why = tr.recognise_all(model, fn)
    assert [(t.op, t.form, t.blocks) for t in found] == SUITE_TREES[rel], why


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    found, why = tr.recognise_all(model, fn)
    assert found == []
    expected = path.read_text().splitlines()[0].split("expect:", 1)[1].strip()
    assert expected in why, why


def test_a_tree_over_fewer_elements_than_the_array_keeps_its_meaning() -> None:
    model, fn = _kernel(FIXTURES / "pos_partial_tree_constants.cu")
    (t,) = tr.recognise_all(model, fn)[0]
    assert t.fixed == 128 and "m[0..128)" not in tr.generate(t) and "s[0..128)" in tr.generate(t)


def test_rewrites_of_the_suites_compile() -> None:
    sources = [rewrite_all(CARD, (ROOT / rel).read_bytes()) for rel in SUITE_TREES]
    assert all(b"__shfl_down_sync" in s for s in sources)
    bad = [log for ok, log in compile_many(sources) if not ok]
    assert not bad, bad[0]


GPU_CASES = [
    "bench/suite_ood/reduce_sum/interleaved_partials.cu",
    "bench/suite_ood/reduce_sum/strided_index_atomic.cu",
    "bench/suite_ood/softmax/block_row_while.cu",
]


@pytest.mark.gpu
@pytest.mark.parametrize("rel", GPU_CASES)
def test_gate_finds_the_rewrite_correct(rel: str) -> None:
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    assert matches(CARD, original)
    _, fn = _kernel(path)
    cand = rewrite_all(CARD, original.encode()).decode()
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, fn.name, cand, str(path)), Options(seeds=(0, 1, 2), time_limit_s=60.0)
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)


def test_the_evaluator_reads_each_expression_once_and_follows_every_environment() -> None:
    """The simulation calls the same expressions with many environments: a closure read once must give C's value
    for each of them (truncating division and C remainder on negatives, short-circuit `&&`, locals through their
    one definition), and an expression it cannot read stays unknown whatever the environment."""
    src = """
__global__ void k(float* a, int n) {
  int tid = threadIdx.x;
  int idx = 2 * s * tid - 7;
  int bad = 1;
  bad = 2;
  a[(tid % (2 * s) == 0 && idx / 3 + s < blockDim.x) + idx % 4 + bad];
}
"""
    model = analyze_text(src, "/tmp/eval.cu")
    fn = next(f for f in model.functions if f.name == "k")
    node = tr.function_node(model, fn)
    body = node.child_by_field_name("body")
    ev = tr._Eval(model, fn, body)
    sub = next(n for n in tr._walk(body) if n.type == "subscript_expression")
    plus = tr.unparen(sub.child_by_field_name("indices").named_children[0])  # (...) + idx % 4 + bad
    known = plus.child_by_field_name("left")  # (guard) + idx % 4

    def c_div(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    for s in (1, 2, 4):
        for t in range(-3, 40):
            env = {"s": s, "threadIdx.x": t, "tid": t, "blockDim.x": 32}
            idx = 2 * s * t - 7
            guard = int(t - c_div(t, 2 * s) * 2 * s == 0 and c_div(idx, 3) + s < 32)
            want = guard + (idx - c_div(idx, 4) * 4)
            assert ev.value(known, env) == want, (s, t)
            with pytest.raises(tr._Unknown):
                ev.value(plus, env)  # `bad` is assigned twice: no single value
