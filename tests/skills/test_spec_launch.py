"""Card checks see the launch a run spec gives (annotation, problem file) when the file has no launch of its own."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FileModel
from warpwise.skills.engine import explain
from warpwise.skills.library import builtin_library
from warpwise.skills.regions import Verdict, VerdictStatus
from warpwise.skills.spec_launch import is_spec_launch, launches_of

ANNOTATED = """// warpwise: n=1<<20 x:in[n] y:out[n] grid=(n+255)/256 block=256
__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
"""


def _verdicts(model: FileModel, card_id: str, pre: str) -> list[Verdict]:
    card = builtin_library().get(card_id)
    assert card is not None
    return [v for _, vs in explain(model, card) for v in vs if v.id == pre]


def test_an_annotation_gives_the_checks_a_launch_with_its_geometry_and_values(tmp_path: Path) -> None:
    src = tmp_path / "scale.cu"
    src.write_text(ANNOTATED)
    model = analyze_text(ANNOTATED, str(src))
    ((host, launch),) = launches_of(model, "scale")
    assert is_spec_launch(launch) and host.name == "the annotation at line 1"
    assert launch.block_value == (256,) and launch.grid_value == ((1 << 20) // 256,)
    assert launch.args == ("x", "y", str(1 << 20))
    got = _verdicts(model, "missing-launch-bounds", "one-block-size")
    assert [v.status for v in got] == [VerdictStatus.HOLDS], got
    assert "256 threads" in got[0].reason
    covers = _verdicts(model, "one-element-per-thread", "covers-n")
    assert covers and all("no launch of" not in v.reason for v in covers), covers


def test_a_problem_files_launch_is_named_and_its_geometry_is_left_to_the_worker() -> None:
    path = FIXTURES / "verify" / "problem" / "relu.cu"
    model = analyze_text(path.read_bytes(), str(path))
    ((host, launch),) = launches_of(model, "relu")
    assert host.name == "the problem file relu.problem.py"
    assert launch.block_value is None and "launch(inputs)" in launch.block
    got = _verdicts(model, "missing-launch-bounds", "one-block-size")
    assert got and all(v.status is VerdictStatus.UNKNOWN and "relu.problem.py" in v.reason for v in got), got


def test_without_a_spec_the_checks_still_say_there_is_no_launch(tmp_path: Path) -> None:
    text = ANNOTATED.split("\n", 1)[1]
    src = tmp_path / "bare.cu"
    src.write_text(text)
    assert launches_of(analyze_text(text, str(src)), "scale") == []
