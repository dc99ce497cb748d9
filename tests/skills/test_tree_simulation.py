"""The barrier-per-step-tree-reduction card's tree run is exact: its fast simulation and its memo per loop shape
give what a plain simulation (each slot a multiset of inputs, every thread its own environment) gives, for
hundreds of generated loops: trees, near-trees that drop or repeat an element, races, and loops it cannot read.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import builtin_library

_card = builtin_library().get("barrier-per-step-tree-reduction")
assert _card is not None and _card.rules is not None
tr = _card.rules

INITS = ("blockDim.x / 2", "1", "blockDim.x >> 1", "64", "N / 2", "half")
CONDS = ("s > 0", "s < blockDim.x", "s >= 1", "s < N", "s > 1")
UPDATES = ("s >>= 1", "s *= 2", "s <<= 1", "s = s / 2", "s = s - 1")
GUARDS = (
    "tid < s",
    "tid % (2 * s) == 0",
    "tid + s < blockDim.x",
    "2 * s * tid < blockDim.x",
    "tid < s && tid % 2 == 0",
    "tid <= s",
    "lane < s",
    "(tid & (2 * s - 1)) == 0",
    "tid < s || tid == 0",
    "tid / s > 0",
)
INDICES = (
    ("tid", "tid + s"),
    ("2 * s * tid", "2 * s * tid + s"),
    ("tid", "tid + 1"),
    ("tid", "tid - s"),
    ("idx", "idx + s"),
    ("tid * 2", "tid * 2 + s"),
    ("tid", "s + tid"),
    ("tid", "tid + s / 2"),
)


def _kernel(init: str, cond: str, update: str, guard: str, i: str, j: str, size: str) -> str:
    return f"""
#define N 256
__global__ void k(float* out) {{
  __shared__ float a[{size}];
  int tid = threadIdx.x;
  int lane = threadIdx.x % 32;
  int half = blockDim.x / 2;
  int s0 = 0;
  a[tid] = 1.0f;
  __syncthreads();
  for (int s = {init}; {cond}; {update}) {{
    int idx = 2 * s * tid;
    if ({guard}) a[{i}] += a[{j}];
    __syncthreads();
  }}
  if (tid == 0) out[0] = a[0] + s0;
}}
"""


def _loop(src: str) -> tuple[Any, dict[str, Any], set[str], int | None]:
    """Read the generated kernel's loop as the recogniser does."""
    model = analyze_text(src, "/tmp/tree.cu")
    fn = next(f for f in model.functions if f.name == "k")
    body = tr.function_node(model, fn).child_by_field_name("body")
    ev = tr._Eval(model, fn, body)
    stmts = tr._statements(body)
    k, st = next((k, s) for k, s in enumerate(stmts) if s.type == "for_statement")
    parts = tr._loop_parts(ev, st, stmts[k - 1])
    assert parts is not None, src
    inner = [x for x in parts["body"] if x.type != "declaration"]
    comb = tr._combine(ev, inner[0], "a")
    assert comb is not None, src
    tid_names = {
        n for n, d in ev.defs.items() if len(d) == 1 and d[0] is not None and tr.squash(ev.text(d[0])) == "threadIdx.x"
    }
    arr = fn.shared[0]
    size = arr.dim_values[0] if arr.dim_values and arr.dim_values[0] else None
    return ev, {**parts, "guard": comb[0], "i": comb[1], "j": comb[2]}, tid_names, size


def _plain(ev: Any, loop: dict[str, Any], B: int, tid_names: set[str], size: int | None, first: list) -> bool:
    """The plain simulation: every slot a Counter of the inputs it holds, every thread a fresh environment."""

    def guard(env: dict[str, int]) -> bool:
        g = loop["guard"]
        if g is None:
            return True
        if isinstance(g, tr._Conj):
            return all(ev.value(p, env) for p in g.parts)
        return bool(ev.value(g, env))

    slots = {i: Counter({i: 1}) for i in range(B)}
    base = {"blockDim.x": B, "blockDim.y": 1, "blockDim.z": 1}
    var = loop["var"]
    s = ev.value(loop["init"], base)
    steps = 0
    while ev.value(loop["cond"], {**base, var: s}):
        steps += 1
        if steps > tr._MAX_STEPS:
            return False
        writes: dict[int, int] = {}
        reads: set[int] = set()
        for t in range(B):
            env = {**base, var: s, "threadIdx.x": t, **dict.fromkeys(tid_names, t)}
            if not guard(env):
                continue
            i, j = ev.value(loop["i"], env), ev.value(loop["j"], env)
            if i < 0 or j < 0 or (size is not None and (i >= size or j >= size)) or i == j or i in writes:
                return False
            writes[i] = j
            reads.add(j)
            if steps == 1:
                first.append((t, i, j))
        if reads & set(writes):
            return False
        for i, j in writes.items():
            slots[i] = slots.get(i, Counter()) + slots.get(j, Counter())
        s = tr._eval_update(ev, loop["update"], {**base, var: s})
    return slots.get(0) == Counter(range(B))


def _outcome(run: Any, *args: Any) -> tuple[str, Any]:
    first: list = []
    try:
        return "ok", (run(*args, first), tuple(first))
    except (tr._Unknown, KeyError):
        return "unknown", None
    except Exception as exc:  # e.g. a negative shift count: both must fail alike
        return type(exc).__name__, None


def _cases() -> list[tuple[str, ...]]:
    every = list(itertools.product(INITS, CONDS, UPDATES, GUARDS, INDICES, ("1024", "256", "N", "64")))
    rng = random.Random(15)
    picked = rng.sample(every, 300)
    # The three textbook forms are always among them.
    picked += [
        ("blockDim.x / 2", "s > 0", "s >>= 1", "tid < s", ("tid", "tid + s"), "1024"),
        ("1", "s < blockDim.x", "s *= 2", "tid % (2 * s) == 0", ("tid", "tid + s"), "1024"),
        ("1", "s < blockDim.x", "s *= 2", "2 * s * tid < blockDim.x", ("idx", "idx + s"), "N"),
    ]
    return [(a, b, c, d, i, j, z) for a, b, c, d, (i, j), z in picked]


CASES = _cases()


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_fast_simulation_gives_the_plain_one(case: int) -> None:
    ev, loop, tid_names, size = _loop(_kernel(*CASES[case]))
    for B in tr.BLOCK_SIZES:
        if size is not None and size < B:
            continue
        assert _outcome(tr._simulate, ev, loop, B, tid_names, size) == _outcome(_plain, ev, loop, B, tid_names, size), (
            CASES[case],
            B,
        )


def test_the_textbook_forms_are_among_the_cases_and_prove_trees() -> None:
    proven = 0
    for case in CASES[-3:]:
        ev, loop, tid_names, size = _loop(_kernel(*case))
        runs, _first, unknown = tr._run_sizes(ev, loop, tid_names, size)
        proven += bool(runs) and not unknown
    assert proven == 3


def test_loops_of_one_shape_share_their_run_and_others_do_not() -> None:
    """The memo per loop shape answers a copy of a loop (renamed kernel, moved in the file) from its first run, and
    a loop that differs in anything the simulation reads (a constant, a local's definition) is run on its own."""
    tree = _kernel("blockDim.x / 2", "s > 0", "s >>= 1", "tid < s", "tid", "tid + s", "N")
    ev, loop, tid_names, size = _loop(tree)
    key = tr._loop_key(ev, loop, tid_names, size)
    moved = "// a comment that moves every offset\n" + tree
    ev2, loop2, tid2, size2 = _loop(moved)
    assert tr._loop_key(ev2, loop2, tid2, size2) == key
    for changed in (
        tree.replace("#define N 256", "#define N 128"),
        tree.replace("int tid = threadIdx.x;", "int tid = threadIdx.x + 1;"),
        tree.replace("if (tid < s)", "if (tid < s + 0)"),
    ):
        ev3, loop3, tid3, size3 = _loop(changed)
        assert tr._loop_key(ev3, loop3, tid3, size3) != key, changed
    # Two runs of one shape give the plain simulation's answer both times (the second from the memo).
    tr._RUNS.clear()
    assert tr._run_sizes(ev, loop, tid_names, size) == tr._run_sizes(ev2, loop2, tid2, size2)
    assert len(tr._RUNS) == 1


class _Table:
    """An evaluator whose expressions are Python functions of the environment, to run a schedule written out."""

    def _compile(self, node: Any, depth: int) -> Any:
        return node

    def value(self, node: Any, env: dict[str, int]) -> int:
        return int(node(env))


def _schedule_loop(steps: list[dict[int, tuple[int, int]]]) -> dict[str, Any]:
    """A loop over `s` = 1, 2, ... whose step `s` lets the threads of `steps[s - 1]` combine `a[i] += a[j]`."""

    def pick(k: int) -> Any:
        return lambda env: steps[env["s"] - 1][env["threadIdx.x"]][k]

    return {
        "var": "s",
        "init": lambda env: 1,
        "cond": lambda env: env["s"] <= len(steps),
        "update": lambda env: env["s"] + 1,
        "guard": lambda env: env["threadIdx.x"] in steps[env["s"] - 1],
        "i": pick(0),
        "j": pick(1),
    }


def test_an_input_held_twice_stays_twice_in_every_slot_it_reaches() -> None:
    """Slot 1 comes to hold a[3..31] twice (through slots 2 and 3) while slot 0 holds none of them; when slot 0
    then takes slot 1, it holds every input, some twice: not a tree. A plain count sees it; so must the masks."""
    B = 32
    fold = [{0: (3, k)} for k in range(4, B)]  # slot 3 takes a[4..31], one per step
    spread = [{1: (1, 3), 2: (2, 3)}, {1: (1, 2)}]  # slots 1 and 2 both take slot 3; slot 1 takes slot 2
    bad = _schedule_loop([*fold, *spread, {0: (0, 1)}])
    good = _schedule_loop([*fold, {1: (1, 3)}, {1: (1, 2)}, {0: (0, 1)}])
    ev = _Table()
    for loop, want in ((bad, False), (good, True)):
        assert _outcome(_plain, ev, loop, B, set(), None)[1][0] is want
        assert _outcome(tr._simulate, ev, loop, B, set(), None) == _outcome(_plain, ev, loop, B, set(), None)
