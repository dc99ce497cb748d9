"""CPU-side checks of the out-of-distribution naive suite (bench/suite_ood, issue 19).

The suite is `bench/suite_ood/<operator>/<variant>.cu`, each with `<variant>.problem.py` beside it. Nothing here
runs a kernel (CI has no GPU; bench/gpu/corpus_check.py --suite bench/suite_ood does that on the device machine).
What is checked: the suite's shape (kernels, operators, variants, operators without a corpus expert), that the
README lists every kernel, that every kernel parses and compiles with nvcc for sm_90, that the GPU script's
signature parser agrees with the analyzer, and that every problem file satisfies the gate's contract through the
gate's own `resolve_spec` and the worker's `Problem.case`, with its reference and eager code run on CPU torch at
the `tiny` preset.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_nvcc
from tests.lineages.kernels import corpus_check, load_problem, scale
from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

SUITE = ROOT / "bench" / "suite_ood"
CORPUS = ROOT / "lineages" / "corpus"
MAX_SMEM = 227 * 1024


def _kernels() -> list[Path]:
    return sorted(SUITE.glob("*/*.cu"))


KERNELS = _kernels()


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.stem}"


def _problem(p: Path) -> Path:
    return p.with_name(f"{p.stem}.problem.py")


def test_suite_shape() -> None:
    assert len(KERNELS) >= 30
    ops = Counter(p.parent.name for p in KERNELS)
    assert sum(1 for n in ops.values() if n >= 3) >= 10, ops
    experts: dict[str, str | None] = {}
    for p in KERNELS:
        assert _problem(p).is_file(), f"{_id(p)} has no problem file"
        ns = load_problem(_problem(p))
        assert ns["operator"] == p.parent.name, _id(p)
        expert = ns["corpus_expert"]
        assert expert is None or (CORPUS / expert / "expert.cu").is_file(), f"{_id(p)}: no corpus folder {expert}"
        assert experts.setdefault(p.parent.name, expert) == expert, f"{p.parent.name}: variants disagree"
    assert sum(1 for e in experts.values() if e is None) >= 4, experts


def test_readme_lists_every_kernel() -> None:
    text = (SUITE / "README.md").read_text(encoding="utf-8")
    missing = [_id(p) for p in KERNELS if f"`{_id(p)}`" not in text]
    assert not missing, f"bench/suite_ood/README.md does not list {missing}"


@pytest.mark.parametrize("path", KERNELS, ids=_id)
def test_parses_and_names_one_kernel(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    model = analyze_text(text, str(path))
    assert model.syntax_problems == (), model.syntax_problems
    ns = load_problem(_problem(path))
    assert [f.name for f in model.kernels] == [ns["kernel"]], "one __global__ kernel, named by the problem file"
    parsed = corpus_check().parse_signature(text, ns["kernel"])
    assert [(p.name, p.pointer) for p in parsed] == [(p.name, p.is_pointer) for p in model.kernels[0].params]


@needs_nvcc
def test_every_kernel_compiles_with_nvcc() -> None:
    results = compile_many([p.read_bytes() for p in KERNELS])
    failed = {_id(p): log[-2000:] for p, (ok, log) in zip(KERNELS, results, strict=True) if not ok}
    assert not failed, failed


@pytest.mark.parametrize("path", KERNELS, ids=_id)
def test_problem_file_satisfies_the_gate_contract_at_tiny_size(path: Path) -> None:
    from warpwise.verify.spec import ProblemSpec, resolve_spec
    from warpwise.verify.worker import gpu_job

    ns = load_problem(_problem(path))
    assert {"full", "tiny"} <= set(ns["SIZES"])
    assert ns["roofline"] in ("memory", "compute")
    spec = resolve_spec(str(path), path.read_text(encoding="utf-8"), ns["kernel"])
    assert isinstance(spec, ProblemSpec), spec
    assert spec.source == "problem_file", spec.origin
    pointers = [a.param for a in spec.run.args if a.buffer is not None]
    with scale("tiny"):
        problem = gpu_job.Problem(spec.run, torch.device("cpu"))
        case = problem.case(1)
        other = problem.case(2)
        inputs = ns["make_inputs"](0)
        assert ns["bytes_moved"](inputs) > 0
        assert ns["roofline"] == "memory" or ns["flops"](inputs) > 0
        ns["eager"](inputs)
    assert case.expected and set(case.expected) <= set(pointers)
    for name, want in case.expected.items():
        assert torch.isfinite(want.double()).all(), f"reference `{name}` is not finite"
    fed = [n for n in case.pristine if n not in case.expected]
    assert any(not torch.equal(case.pristine[n], other.pristine[n]) for n in fed), "seeds change the inputs"
    for geometry in case.geometry.values():
        threads = geometry.block[0] * geometry.block[1] * geometry.block[2]
        assert 1 <= threads <= 1024 and threads % 32 == 0, geometry
        assert min(geometry.grid) >= 1 and geometry.grid[0] < 2**31 and max(geometry.grid[1:]) <= 65535
        assert 0 <= geometry.smem <= MAX_SMEM


def test_tools_list_the_suite_by_operator_and_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from warpwise.lineages.suite import suite_kernels

    names = sorted(_id(p) for p in KERNELS)
    # The quality report and admission (warpwise.lineages.suite): every kernel resolves, `only` takes operators.
    assert [k.name for k in suite_kernels(SUITE, {"softmax", "gemv/block_row_uint"})] == [
        "gemv/block_row_uint",
        "softmax/block_row_while",
        "softmax/online_macro_cols",
        "softmax/row_per_thread",
    ]
    # The default suite keeps its names (one naive.cu per operator).
    assert [k.name for k in suite_kernels(ROOT / "bench" / "suite", {"sum"})] == ["sum"]
    # The GPU check script, with --suite (which its children read from the environment).
    cc = corpus_check()
    monkeypatch.setenv(cc.SUITE_ENV, str(SUITE))
    found = cc.discover(experts=False)
    assert sorted(e.name for e in found) == names
    assert {e.ident for e in cc.discover({"transpose/one_d_divmod"})} == {"naive/transpose/one_d_divmod"}
    monkeypatch.delenv(cc.SUITE_ENV)
    assert "naive/sum" in {e.ident for e in cc.discover()}
    # The search comparison: names, kernels and corpus operators from the problem files.
    spec = importlib.util.spec_from_file_location("search_compare", ROOT / "bench" / "search_compare.py")
    assert spec is not None and spec.loader is not None
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    entries = sc.suite_entries(SUITE)
    assert [n for n, *_ in entries] == names
    by_name = {n: (kernel, corpus) for n, _, kernel, corpus in entries}
    assert by_name["softmax/row_per_thread"] == ("softmax_row_per_thread", "softmax_rows")
    assert by_name["silu_mul/separate_2d"] == ("swiglu_2d", None)
    assert ("sum", ROOT / "bench" / "suite" / "sum" / "naive.cu", "sum_naive", "reduce_sum") in sc.suite_entries(
        ROOT / "bench" / "suite", ["sum"]
    )


def test_suite_check_reports_rules_and_rewrites_per_kernel(tmp_path: Path) -> None:
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("suite_check", ROOT / "bench" / "suite_check.py")
    assert spec is not None and spec.loader is not None
    sc = importlib.util.module_from_spec(spec)
    sys.modules["suite_check"] = sc  # its dataclass looks its module up
    spec.loader.exec_module(sc)
    (tmp_path / "gelu_tanh").mkdir()
    for name in ("one_d.cu", "one_d.problem.py"):
        shutil.copyfile(SUITE / "gelu_tanh" / name, tmp_path / "gelu_tanh" / name)
    (row,) = sc.suite_rows(tmp_path)
    assert (row.name, row.kernel) == ("gelu_tanh/one_d", "gelu_tanh_kernel")
    # A one-element-per-thread map without __restrict__: both cards fire, and both rewrite this spelling.
    assert row.fired["missing-restrict"] == 1 and row.fired["one-element-per-thread"] == 1
    assert {"missing-restrict", "one-element-per-thread"} <= set(row.rewrites)
    text = sc.markdown(tmp_path, [row], None, {"date": "2026-12-01", "command": "x", "commit": "c"})
    assert "| `gelu_tanh/one_d` | `gelu_tanh_kernel` |" in text
    assert "| `missing-restrict` | 1 | 1 |" in text


@pytest.mark.parametrize("path", KERNELS, ids=_id)
def test_full_size_launch_is_within_the_device_limits(path: Path) -> None:
    # The full-size inputs are made as meta tensors (shapes only, no memory) through the suite's `_gen` helper,
    # so a launch past the grid limits (65,535 blocks along y or z) shows up here and not first on the GPU.
    ns = load_problem(_problem(path))
    ns["_gen"] = lambda seed: (torch.device("meta"), None)
    with scale("full"):
        geometry = ns["launch"](ns["make_inputs"](0))
    grid, block = (tuple(int(x) for x in g) for g in geometry[:2])
    assert 1 <= block[0] * block[1] * block[2] <= 1024, geometry
    assert min(grid) >= 1 and grid[0] < 2**31 and max(grid[1:]) <= 65535, geometry
    assert (int(geometry[2]) if len(geometry) > 2 else 0) <= MAX_SMEM
