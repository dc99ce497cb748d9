"""How the real-world fix-safety benchmark builds a file as its repository would (`bench/realworld_fix_safety.py`).

A file whose original does not build here is not judged, so each way the harness fails a buildable file hides a
fix that might break it: these tests pin the folders, targets, flags and preludes it derives from a repository.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

_RESOURCE_BUILDS_SET = "WARPWISE_NO_RESOURCE_BUILDS" in os.environ

import realworld_build as rw  # noqa: E402 (after the path and the environment are saved)
import realworld_fix_safety as fs  # noqa: E402

if not _RESOURCE_BUILDS_SET:
    # The benchmark turns resource builds off for its own process; the other tests of this session keep them.
    os.environ.pop("WARPWISE_NO_RESOURCE_BUILDS", None)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_include_dirs_name_the_repository_folder_that_holds_a_header(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "softmax/kernels/naive.cu": '#include "cuda_utils.cuh"\n#include <mma.h>\n',
            "softmax/include/cuda_utils.cuh": '#include "inner/deep.h"\n',
            "softmax/include/inner/deep.h": "",
            "other/include/mma.h": "",
        },
    )
    index = fs.RepoIndex(root)
    dirs, headers = index.include_dirs(
        root / "softmax/kernels/naive.cu", (root / "softmax/kernels/naive.cu").read_bytes()
    )
    assert dirs == [str(root / "softmax/include")]
    # `<mma.h>` is the toolkit's header, found before any file of that name in the repository.
    assert root / "other/include/mma.h" not in headers
    assert root / "softmax/include/inner/deep.h" in headers


def test_the_nearest_of_two_same_named_headers_is_taken(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"a/k/x.cu": '#include "common.h"\n', "a/common.h": "", "b/common.h": ""})
    index = fs.RepoIndex(root)
    assert index.resolve("common.h", root / "a/k/x.cu") == root / "a/common.h"


def test_target_follows_the_architecture_specific_ptx(tmp_path: Path) -> None:
    assert fs.needed_arch([b'asm volatile("wgmma.fence.sync.aligned;");']) == "sm_90a"
    assert (
        fs.needed_arch([b'asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.b32 [%0], 32;" :: "r"(p));'])
        == "sm_100a"
    )
    assert fs.needed_arch([b"__global__ void k(float* x) { x[0] = 1.f; }"]) == "sm_90"


def test_a_submodules_ptx_does_not_set_the_target(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            ".gitmodules": '[submodule "third-party/cutlass"]\n\tpath = third-party/cutlass\n',
            "k/vector_add.cu": "#include <cute/tensor.hpp>\n__global__ void k() {}\n",
            "third-party/cutlass/include/cute/tensor.hpp": '// asm("tcgen05.alloc ...")\n',
        },
    )
    recipe = fs.file_recipe(fs.GENERIC_RECIPE, fs.RepoIndex(root), root / "k/vector_add.cu", generic=True)
    assert recipe.arch == "sm_90"
    assert recipe.include_dirs == ("third-party/cutlass/include",)
    assert fs._submodules(root) == [root / "third-party/cutlass"]


def test_torch_flags_only_for_torch_extensions(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "plain.cu": "#include <cuda_fp16.h>\n__global__ void k(half* x) { x[0] = 1.0f; }\n",
            "ext.cu": "#include <torch/extension.h>\n",
            "inline.cu": "#include <c10/cuda/CUDAStream.h>\ntorch::Tensor f(torch::Tensor x);\n",
        },
    )
    index = fs.RepoIndex(root)
    plain = fs.file_recipe(fs.GENERIC_RECIPE, index, root / "plain.cu", generic=True)
    ext = fs.file_recipe(fs.GENERIC_RECIPE, index, root / "ext.cu", generic=True)
    inline = fs.file_recipe(fs.GENERIC_RECIPE, index, root / "inline.cu", generic=True)
    assert not plain.torch and plain.prelude == ()
    assert ext.torch and ext.prelude == ()
    # `torch::` without torch's headers: `load_inline` compiles it, after its own includes.
    assert inline.torch and inline.prelude == fs.LOAD_INLINE_PRELUDE


def test_a_header_gets_what_its_includer_includes_first(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "src/q.cu": '#include <cuda_fp16.h>\n#include "util.cuh"\n#define TILE 8\n#include "quant/qdq.cuh"\n',
            "src/util.cuh": "",
            "src/quant/qdq.cuh": "__device__ inline half twice(half x) { return __hadd(x, x); }\n",
        },
    )
    prelude = fs.RepoIndex(root).includer_prelude(root / "src/quant/qdq.cuh")
    assert prelude == ("#include <cuda_fp16.h>", f'#include "{root / "src/util.cuh"}"', "#define TILE 8")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_header_that_needs_its_includer_builds_only_with_the_prelude(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "src/q.cu": '#include <cuda_fp16.h>\n#include "qdq.cuh"\n',
            "src/qdq.cuh": "__device__ inline half twice(half x) { return __hadd(x, x); }\n",
        },
    )
    header = root / "src/qdq.cuh"
    alone = rw.nvcc_build(root, fs.GENERIC_RECIPE, header, 120)
    recipe = fs.file_recipe(fs.GENERIC_RECIPE, fs.RepoIndex(root), header, generic=True)
    with_prelude = rw.nvcc_build(root, recipe, header, 120)
    assert not alone["ok"] and "half" in alone["error"]
    assert with_prelude["ok"], with_prelude["error"]


def test_a_file_a_script_builds_with_torch_gets_the_scripts_flags_and_target(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "mm/main.py": (
                "import torch.utils.cpp_extension\n"
                "torch.utils.cpp_extension.load('m', sources=['mm_v1.cu'], extra_cuda_cflags=[\n"
                '    "-O3", "-lineinfo", "-Xptxas=-v", "-gencode=arch=compute_120a,code=sm_120a", f"-I {root}/x",\n'
                "], extra_ldflags=['-lcuda'])\n"
            ),
            "mm/mm_v1.cu": "__global__ void k() {}\n",
            "plain/k.cu": "__global__ void k() {}\n",
        },
    )
    index = fs.RepoIndex(root)
    built = fs.file_recipe(fs.GENERIC_RECIPE, index, root / "mm/mm_v1.cu", generic=True)
    plain = fs.file_recipe(fs.GENERIC_RECIPE, index, root / "plain/k.cu", generic=True)
    # torch's load() adds its extension flags (--expt-relaxed-constexpr among them) to the script's own.
    assert built.torch and built.nvcc_flags == ("-O3",) and built.arch == "sm_120a"
    assert not plain.torch and plain.arch == "sm_90"


def test_keep_from_takes_the_rows_of_repositories_not_checked_now() -> None:
    """A run over part of the corpus reports the rest from the earlier file, with both commands."""
    row = {"cards_with_fixes": [], "not_idempotent": [], "converged": True, "changed": False, "rounds": 1}
    earlier = {
        "command": "python bench/realworld_fix_safety.py first",
        "commits": {"a": ["o/a", "1" * 40], "b": ["o/b", "2" * 40]},
        "generic_recipe_repos": ["a", "b"],
        "files": {"a/x.cu": dict(row), "b/y.cu": {**row, "rebuild": "not run (budget spent)"}},
    }
    now = {
        "commits": {"b": ["o/b", "2" * 40]},
        "generic_recipe_repos": ["b"],
        "files": {"b/y.cu": {**row, "rebuild": {"control_ok": True, "ok": True, "error": ""}}},
        "runs": [{"command": "second", "machine": {"host": "h"}, "repositories": ["b"]}],
    }
    fs.keep_into(now, earlier, {"b"})
    assert list(now["files"]) == ["a/x.cu", "b/y.cu"]
    assert now["files"]["b/y.cu"]["rebuild"]["ok"] is True  # The new run's row wins.
    assert now["generic_recipe_repos"] == ["a", "b"]
    assert [r["repositories"] for r in now["runs"]] == [["a"], ["b"]]
    now.update(date="d", command="second", seconds=1.0)
    text = fs.render(now)
    assert "rows of a: `python bench/realworld_fix_safety.py first`" in text
    assert "1/1 fixed files whose original builds still build" in text
