"""The CI files users copy: the composite action, the pre-commit hooks and the workflow in docs/ci.md.

Their `warpwise` command lines must be accepted by warpwise's own argument parser, so a renamed flag breaks this
test instead of users' CI. (`make wheel-smoke` runs the hooks for real with `pre-commit try-repo`.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from warpwise.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _parses(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]


def test_pre_commit_hooks_run_check_and_fix_on_cuda_files() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"warpwise-check", "warpwise-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        entry = shlex.split(hook["entry"])
        assert entry[0] == "warpwise"
        _parses([*entry[1:], "kernel.cu"])
        files = re.compile(hook["files"])
        assert files.search("src/a.cu") and files.search("inc/a.cuh") and not files.search("a.cpp")
    assert "--fix" in hooks["warpwise-fix"]["entry"] and "--fix" not in hooks["warpwise-check"]["entry"]


def _action() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_the_action_is_composite_installs_checks_and_uploads() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert any("pip install" in s.get("run", "") and "GITHUB_ACTION_PATH" in s.get("run", "") for s in steps)
    check = next(s for s in steps if s.get("id") == "check")
    line = next(ln for ln in check["run"].splitlines() if ln.strip().startswith("warpwise check"))
    argv = shlex.split(line.split(">")[0].replace("$WARPWISE_ARGS", "").replace("$WARPWISE_PATHS", "."))
    _parses(argv[1:])
    assert "--format" in argv and argv[argv.index("--format") + 1] == "sarif"
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    for name in ("paths", "args", "sarif-file", "upload", "fail-on-findings", "python-version"):
        assert name in action["inputs"], name


def test_the_docs_workflow_uses_the_action_with_its_inputs() -> None:
    text = (ROOT / "docs" / "ci.md").read_text()
    block = re.search(r"<!-- workflow:begin.*?-->\s*```yaml\n(.*?)```\s*<!-- workflow:end -->", text, re.S)
    assert block is not None, "docs/ci.md lost its workflow block"
    workflow = yaml.safe_load(block.group(1))
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["warpwise"]["steps"]
    ours = next(s for s in steps if s.get("uses", "").split("@")[0].endswith("/warpwise"))
    assert set(ours.get("with", {})) <= set(_action()["inputs"])
    assert any(s.get("uses", "").startswith("actions/checkout@") for s in steps)
