"""Fix safety on real code (issue 18): idempotent fixes, converging `--fix`, files that keep compiling.

Reads the exported mirrors of issue 17's repositories (`MIRRORS/<name>/...`, `MIRRORS/commits.json` mapping each
name to `[owner/repo, commit]`; the file lists and build recipes are `bench/realworld_build.py`'s). For every CUDA
file:

* idempotence: for every card with a fix there, applying all its fixes twice gives the text of applying them once,
* convergence: `fix_text` with unsafe fixes included stops before its round limit, and a second run changes nothing,
* compile preservation (optional, within `--budget-s`): every file `--fix` changes (safe and unsafe fixes) is
  built with nvcc and the repository's flags twice, as it is and as fixed, each as a copy in a temporary folder
  with the original's folder first on the include path (so builds can run side by side, `--jobs`, and the
  mirror is never written); a fixed file whose original builds must still build. `--nvcc-state` (from
  `realworld_build.py --phase nvcc`) limits the rebuilds to the files nvcc built there; `--cache` keeps every
  build's outcome by the hash of its text and command, so a rerun after a change builds only the new texts.

Resource builds for claims are off (`WARPWISE_NO_RESOURCE_BUILDS=1`): they do not change any fix's text, only
severities and whether a guarded safe fix is applied in bulk, and with them every file with a per-thread array
would wait for NVRTC. Writes bench/results/realworld_fix_safety-<date>.json and .md (or `--out`).

`--extra-corpus` adds the other repositories of the precision set (`bench/precision/corpus.yaml`, exported by
`bench/precision.py export`): they have no build recipe, so they get the idempotence and convergence checks only.

    python bench/realworld_fix_safety.py MIRRORS [--nvcc-state FILE] [--budget-s S] [--extra-include DIR]
        [--cache FILE] [--jobs N] [--extra-corpus EXPORT]
    python bench/realworld_fix_safety.py --render RESULTS.json   (rewrite the Markdown summary of a results file)

`--only NAME` (repeatable) checks only those repositories; with `--keep-from EARLIER.json` the other repositories'
rows come from an earlier results file (its command and machine are kept in `runs`), so a part of the corpus can be
finished on another machine (many cores, torch with its CUDA headers) and reported with the rest.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("WARPWISE_NO_RESOURCE_BUILDS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realworld_build as rw
import yaml

from warpwise.analyzers.build import analyze_text
from warpwise.engine import fix_text
from warpwise.skills.engine import compute_fix, match_file, merge_fixes
from warpwise.skills.library import builtin_library
from warpwise.skills.rewrite import apply_edits

MAX_ROUNDS = 8
GENERIC_RECIPE = rw.Recipe(
    roots=("",),
    include_dirs=(),
    defines=(),
    nvcc_flags=("-O3",),
    torch=False,
    where="no build recipe: nvcc -O3 and the repository's own flags (EXTRA_FLAGS); torch's include folders and "
    "extension flags only for files that include torch's headers or are compiled by `load_inline`; the "
    "repository's folders that hold the headers a file includes; sm_90a or sm_100a where the file's PTX needs it",
)
"""How `--extra-build` builds a file of a repository without a recipe (torch extensions or stand-alone programs);
`file_recipe` adapts it to each file."""
EXTRA_FLAGS: dict[str, tuple[str, ...]] = {
    # kernels/*/*.py: torch.utils.cpp_extension.load(extra_cuda_cflags=[-O3, -U__CUDA_NO_HALF_*, ...]).
    "LeetCUDA": ("-O3", *rw._HALF_UNDEFS),
    # The load() calls of its Python scripts: extra_cuda_cflags=["-O3"] (and fast math for some).
    "learn-cuda": ("-O3",),
    "cudacodes": ("-O3",),
    # lecture scripts: load_inline(extra_cuda_cflags=["-O2"]).
    "lectures": ("-O2",),
}
"""nvcc flags the repositories' own build scripts pass (read from their Python `load` calls), by repository."""
LOAD_INLINE_PRELUDE = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
"""What `torch.utils.cpp_extension.load_inline` puts before a CUDA source it compiles."""
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_TORCH_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](?:torch|ATen|c10)/', re.M)
_BLACKWELL_SPECIFIC = re.compile(rb"\btcgen05\.")
"""Blackwell's tensor-memory instructions: ptxas takes them only for `sm_100a` (the repositories build such
files with `-gencode arch=compute_100a,code=sm_100a`)."""
PRECISION_CORPUS = Path(__file__).resolve().parent / "precision" / "corpus.yaml"
"""The pinned repositories of the precision set; `--extra-corpus` reads their names and commits from here."""


class RepoIndex:
    """The files of one exported repository by name, to find the folders that hold the headers a file includes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.deps = _submodules(root)
        """The repository's submodules: dependencies (CUTLASS, fmt) whose headers do not set the file's target."""
        self._texts: dict[Path, bytes] = {}
        self.by_name: dict[str, list[Path]] = {}
        for p in root.rglob("*"):
            if p.is_file():
                self.by_name.setdefault(p.name, []).append(p)

    def read(self, path: Path) -> bytes:
        """Return a file's bytes (read once)."""
        if path not in self._texts:
            self._texts[path] = path.read_bytes()
        return self._texts[path]

    def resolve(self, name: str, near: Path) -> Path | None:
        """Return the repository file that `#include <name>` means from `near`'s folder (the nearest match)."""
        if (near.parent / name).is_file():
            return near.parent / name
        parts = Path(name).parts
        found = [p for p in self.by_name.get(parts[-1], []) if p.parts[-len(parts) :] == parts]
        if not found:
            return None
        return max(found, key=lambda p: (_common_prefix(p, near), -len(p.parts)))

    def include_dirs(self, file: Path, text: bytes, depth: int = 6) -> tuple[list[str], list[Path]]:
        """Return the folders a file's includes need (recursively through the repository's headers) and the
        repository files it includes."""
        dirs: list[str] = []
        seen: list[Path] = []
        todo = [(file, text, 0)]
        while todo:
            cur, body, level = todo.pop()
            for m in _INCLUDE.finditer(body):
                name = m.group(1).decode("utf-8", "replace")
                if m.group(0).rstrip().endswith(b">") and _system_header(name):
                    continue  # `<mma.h>` is the toolkit's even where the repository has a file of that name.
                hit = self.resolve(name, cur)
                if hit is None or hit in seen:
                    continue
                seen.append(hit)
                if hit.parent != cur.parent or len(Path(name).parts) > 1:
                    base = hit.parents[len(Path(name).parts) - 1]
                    if str(base) not in dirs:
                        dirs.append(str(base))
                if level < depth:
                    todo.append((hit, self.read(hit), level + 1))
        return dirs, seen

    def includer_prelude(self, header: Path, depth: int = 4) -> tuple[str, ...]:
        """Return what a translation unit of the repository includes before `header` (absolute paths), or ().

        A header that relies on what its includer included first does not build alone; built after its first
        includer's earlier `#include` and `#define` lines, it builds as the repository builds it.
        """
        if depth == 0:
            return ()
        files = (p for ps in self.by_name.values() for p in ps if p.suffix in (".cu", ".cuh", ".h"))
        # A translation unit (.cu) that includes the header is the best context; an including header the next.
        for cand in sorted(files, key=lambda p: (p.suffix != ".cu", p)):
            if cand == header:
                continue
            body = self.read(cand)
            if header.name.encode() not in body:
                continue
            lines = body.split(b"\n")
            for i, line in enumerate(lines):
                m = _INCLUDE.match(line)
                if m is None or self.resolve(m.group(1).decode("utf-8", "replace"), cand) != header:
                    continue
                before = [] if cand.suffix == ".cu" else list(self.includer_prelude(cand, depth - 1))
                for prev in lines[:i]:
                    pm = _INCLUDE.match(prev)
                    if pm is not None:
                        hit = self.resolve(pm.group(1).decode("utf-8", "replace"), cand)
                        before.append(f'#include "{hit}"' if hit is not None else prev.decode("utf-8", "replace"))
                    elif prev.lstrip().startswith(b"#define"):
                        before.append(prev.decode("utf-8", "replace"))
                return tuple(before)
        return ()


def _system_header(name: str) -> bool:
    """Return whether an angle-bracket include names a standard or toolkit header (found before the repository's)."""
    if "." not in name:
        return True  # <vector>, <cstdint>: the C++ library.
    toolkit = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    return any((d / name).is_file() for d in (toolkit, Path("/usr/include")))


def _common_prefix(a: Path, b: Path) -> int:
    """Return how many leading path parts two paths share."""
    n = 0
    for x, y in zip(a.parts, b.parts, strict=False):
        if x != y:
            break
        n += 1
    return n


def needed_arch(texts: list[bytes]) -> str:
    """Return the target a file's PTX needs: `sm_100a` for Blackwell's instructions, else the gate's choice
    (`target_arch`: `sm_90a` for Hopper's architecture-specific ones)."""
    from warpwise.verify.worker.nvbuild import target_arch

    if any(_BLACKWELL_SPECIFIC.search(t) for t in texts):
        return "sm_100a"
    return target_arch("\n".join(t.decode("utf-8", "replace") for t in texts), "sm_90")


def file_recipe(recipe: Any, index: RepoIndex, file: Path, generic: bool) -> Any:
    """Return the recipe one file is built with: its repository's, with the target its PTX needs, the include
    folders its headers live in, and, for a header, what its includer includes first; for a repository without
    a recipe (`generic`), torch's flags only where the file is a torch extension."""
    text = file.read_bytes()
    dirs, headers = index.include_dirs(file, text)
    own = [h for h in headers if not any(h.is_relative_to(d) for d in index.deps)]
    arch = needed_arch([text, *(index.read(h) for h in own)])
    prelude = index.includer_prelude(file) if file.suffix == ".cuh" else ()
    root = index.root
    extra = tuple(str(Path(d).relative_to(root)) for d in dirs if Path(d).is_relative_to(root))
    out = replace(recipe, arch=arch, prelude=prelude, include_dirs=(*recipe.include_dirs, *extra))
    if not generic:
        return out
    torch_ext = bool(_TORCH_INCLUDE.search(text)) or any(_TORCH_INCLUDE.search(index.read(h)) for h in headers)
    # `load_inline` puts torch's types header before the source: a file that names `torch::` without it is one.
    load_inline = b"torch::" in text and not re.search(rb'#[ \t]*include[ \t]*[<"]torch/', text)
    flags = EXTRA_FLAGS.get(root.name, recipe.nvcc_flags)
    by_script, script_flags, script_arch = python_build(file)
    if by_script and script_flags:
        flags = script_flags
    if script_arch is not None and out.arch == "sm_90":
        out = replace(out, arch=script_arch)
    return replace(
        out,
        torch=torch_ext or load_inline or by_script,
        nvcc_flags=flags,
        prelude=(*(LOAD_INLINE_PRELUDE if load_inline else ()), *out.prelude),
    )


_CUDA_CFLAGS = re.compile(r"extra_cuda_cflags\s*=\s*\[(.*?)\]", re.S)
_QUOTED = re.compile(r"""(?<![fA-Za-z])["'](-[^"']*)["']""")
_ARCH_FLAG = re.compile(r"(?:code=|arch=)(sm_\d+a)\b")


def python_build(file: Path) -> tuple[bool, tuple[str, ...], str | None]:
    """Return whether a Python script beside a file (or one folder up) builds it as a torch extension
    (`torch.utils.cpp_extension.load`), the literal nvcc flags of its `extra_cuda_cflags`, and the
    architecture-specific target they name (`sm_120a`), if any."""
    for folder in (file.parent, file.parent.parent):
        for script in sorted(folder.glob("*.py")):
            text = script.read_text(encoding="utf-8", errors="replace")
            if "cpp_extension" not in text:
                continue
            m = _CUDA_CFLAGS.search(text)
            flags = _QUOTED.findall(m.group(1)) if m else []
            arch = next((a.group(1) for f in flags if (a := _ARCH_FLAG.search(f))), None)
            # Link flags (`-l...`, which also drops `-lineinfo`: line tables change no build's outcome), ptxas'
            # verbose report and targets are not compile flags of one file here.
            kept = [f for f in flags if not f.startswith(("-l", "-Xptxas", "--ptxas", "-gencode", "-arch", "-I"))]
            return True, tuple(kept), arch
    return False, (), None


def _submodules(root: Path) -> list[Path]:
    """Return the folders of a repository's git submodules (dependencies placed there, not corpus files)."""
    gm = root / ".gitmodules"
    if not gm.is_file():
        return []
    return [root / m.group(1).strip() for m in re.finditer(r"^\s*path\s*=\s*(.+)$", gm.read_text(), re.M)]


def _card_once(card: str, text: bytes, path: str) -> bytes:
    model = analyze_text(text, path)
    fixes = [compute_fix(model, m) for m in match_file(model, builtin_library(), enabled={card})]
    edits = merge_fixes([f for f in fixes if f is not None])
    return apply_edits(text, edits) if edits else text


def check_file(path: Path) -> dict[str, Any]:
    """Return idempotence and convergence of every fix of one file."""
    text = path.read_bytes()
    model = analyze_text(text, str(path))
    cards = sorted({m.card_id for m in match_file(model, builtin_library()) if m.has_rewrite})
    not_idempotent = []
    for card in cards:
        once = _card_once(card, text, str(path))
        if once != text and _card_once(card, once, str(path)) != once:
            not_idempotent.append(card)
    out = fix_text(text, str(path), include_unsafe=True, max_rounds=MAX_ROUNDS)
    again = fix_text(out.text, str(path), include_unsafe=True, max_rounds=MAX_ROUNDS)
    return {
        "cards_with_fixes": cards,
        "not_idempotent": not_idempotent,
        "fixes_applied": len(out.applied),
        "rounds": out.rounds,
        "converged": out.rounds < MAX_ROUNDS and again.text == out.text,
        "changed": out.text != text,
        "fixed_text": out.text,
    }


def build_text(root: Path, recipe: Any, file: Path, text: bytes, timeout_s: float) -> dict[str, Any]:
    """Build `text` as `file` would be built (a copy in a temporary folder, the original's folder included first)."""
    with tempfile.TemporaryDirectory(prefix="rw-fix-") as tmp:
        copy = Path(tmp) / file.name
        copy.write_bytes(text)
        # The copy's own folder holds nothing else: its includes resolve from the original's folder, first.
        return rw.nvcc_build(root, recipe, copy, timeout_s, flags_of=file)


def _cache_key(root: Path, recipe: Any, file: Path, text: bytes) -> str:
    """Return the hash of a build's text, file name and command."""
    flags = " ".join([*rw.repo_flags(root, recipe, file), f"-arch={recipe.arch}", *recipe.prelude])
    return hashlib.sha256(text + b"\0" + str(file).encode() + b"\0" + flags.encode()).hexdigest()


def main() -> int:
    """Run the checks and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mirrors", type=Path, nargs="?")
    ap.add_argument("--render", type=Path, help="only rewrite the Markdown summary of this results file")
    ap.add_argument("--nvcc-state", type=Path, help="realworld_build.py's nvcc state (which files built)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="wall-clock budget for the nvcc rebuilds")
    ap.add_argument("--timeout-s", type=float, default=900.0, help="time limit of one nvcc rebuild")
    ap.add_argument("--extra-include", action="append", default=[], help="headers the toolkit lacks")
    ap.add_argument("--cache", type=Path, help="JSON file of build outcomes by the hash of text and command")
    ap.add_argument("--jobs", type=int, default=1, help="nvcc builds side by side")
    ap.add_argument(
        "--extra-build",
        action="store_true",
        help="also build the --extra-corpus files --fix changes, with GENERIC_RECIPE (a file whose original does not "
        "build that way is not judged)",
    )
    ap.add_argument("--out", type=Path, help="write <out>.json and <out>.md (default: dated, in results)")
    ap.add_argument("--only", action="append", default=[], help="check only this repository (repeatable)")
    ap.add_argument("--keep-from", type=Path, help="an earlier results file: the rows of repositories not checked now")
    ap.add_argument(
        "--extra-corpus",
        type=Path,
        help="a `bench/precision.py export` folder: its repositories without a build recipe get the idempotence and "
        "convergence checks (no nvcc builds)",
    )
    args = ap.parse_args()
    if args.render is not None:
        args.render.with_suffix(".md").write_text(render(json.loads(args.render.read_text())))
        return 0
    if args.mirrors is None:
        ap.error("MIRRORS is required")
    rw.EXTRA_INCLUDE_DIRS[:] = args.extra_include
    commits = json.loads((args.mirrors / "commits.json").read_text())
    built = json.loads(args.nvcc_state.read_text())["nvcc"] if args.nvcc_state else {}
    rows: dict[str, Any] = {}
    t_start = time.perf_counter()
    only = set(args.only)
    for name, recipe in rw.RECIPES.items():
        root = args.mirrors / name
        if not root.is_dir() or (only and name not in only):
            continue
        for f in rw.files_of(root, recipe):
            key = f"{name}/{f.relative_to(root)}"
            t0 = time.perf_counter()
            try:
                row = check_file(f)
            except Exception as exc:  # A crash is a result to report, never a stopped benchmark.
                row = {"error": f"{type(exc).__name__}: {exc}"}
            row["seconds"] = round(time.perf_counter() - t0, 2)
            rows[key] = row
    extra_roots: dict[str, Path] = {}
    if args.extra_corpus is not None:
        for entry in yaml.safe_load(PRECISION_CORPUS.read_text())["repositories"]:
            name = entry["name"]
            root = args.extra_corpus / name
            if name in rw.RECIPES or name in commits or not root.is_dir() or (only and name not in only):
                continue
            commits[name] = [entry["repo"], entry["commit"]]
            extra_roots[name] = root
            subs = _submodules(root)
            for f in sorted(p for p in root.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file()):
                if any(f.is_relative_to(s) for s in subs):
                    continue  # A submodule's files are the repository's dependencies, not its own code.
                key = f"{name}/{f.relative_to(root)}"
                t0 = time.perf_counter()
                try:
                    row = check_file(f)
                except Exception as exc:  # A crash is a result to report, never a stopped benchmark.
                    row = {"error": f"{type(exc).__name__}: {exc}"}
                row["seconds"] = round(time.perf_counter() - t0, 2)
                row["rebuild"] = "generic recipe" if args.extra_build else "no build recipe"
                rows[key] = row
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache and args.cache.is_file() else {}
    jobs = []
    indexes: dict[Path, RepoIndex] = {}
    for key, row in rows.items():
        fixed = row.get("fixed_text")
        if fixed is None or not row.get("changed") or (built and not built.get(key, {}).get("ok")):
            continue
        name, rel = key.split("/", 1)
        if name in extra_roots:
            if not args.extra_build:
                continue  # No build recipe (`--extra-corpus`): idempotence and convergence only.
            root, recipe = extra_roots[name], GENERIC_RECIPE
        else:
            root, recipe = args.mirrors / name, rw.RECIPES[name]
        file = root / rel
        index = indexes.setdefault(root, RepoIndex(root))
        recipe = file_recipe(recipe, index, file, generic=name in extra_roots)
        jobs.append((key, root, recipe, file, file.read_bytes(), fixed))
    # Quick builds first (the times of realworld_build's nvcc phase where known), so a budget covers the most files.
    # Without those times, files that do not include torch's headers first: they build in seconds, torch's in tens.
    jobs.sort(key=lambda j: (float(built.get(j[0], {}).get("seconds") or 100.0), j[2].torch))

    lock = threading.Lock()
    t_builds = time.perf_counter()

    def outcome(root: Path, recipe: Any, file: Path, text: bytes) -> dict[str, Any]:
        ck = _cache_key(root, recipe, file, text)
        with lock:
            if ck in cache:
                return dict(cache[ck])
        if time.perf_counter() - t_builds > args.budget_s:
            return {"not_run": True}
        result = build_text(root, recipe, file, text, args.timeout_s)
        with lock:
            cache[ck] = result
            if args.cache:
                tmp = args.cache.with_suffix(".tmp")
                tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
                os.replace(tmp, args.cache)
        return result

    def one(job: tuple[Any, ...]) -> tuple[str, Any]:
        key, root, recipe, file, original, fixed = job
        # The original is built first, on this machine now: only a file that builds here tests its fix.
        control = outcome(root, recipe, file, original)
        if control.get("not_run"):
            return key, "not run (budget spent)"
        if not control["ok"]:
            return key, {"control_ok": False, "error": control["error"], "timed_out": control.get("timed_out")}
        fixed_build = outcome(root, recipe, file, fixed)
        if fixed_build.get("not_run"):
            return key, "not run (budget spent)"
        return key, {
            "control_ok": True,
            "ok": fixed_build["ok"],
            "timed_out": fixed_build.get("timed_out"),
            "error": fixed_build["error"],
            "seconds": [control["seconds"], fixed_build["seconds"]],
        }

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for key, result in pool.map(one, jobs):
            rows[key]["rebuild"] = result
            print(key, json.dumps(result)[:200], flush=True)
    for row in rows.values():
        row.pop("fixed_text", None)
    date = datetime.date.today().isoformat()
    command = " ".join(["python", "bench/realworld_fix_safety.py", *sys.argv[1:]])
    checked = {key.split("/", 1)[0] for key in rows}
    doc = {
        "date": date,
        "command": command,
        "machine": machine(),
        "commits": commits,
        "seconds": round(time.perf_counter() - t_start, 1),
        "generic_recipe_repos": sorted(extra_roots) if args.extra_build else [],
        "files": rows,
        "runs": [{"command": command, "machine": machine(), "repositories": sorted(checked)}],
    }
    if args.keep_from is not None:
        keep_into(doc, json.loads(args.keep_from.read_text()), checked)
    stem = args.out or Path(__file__).resolve().parent / "results" / f"realworld_fix_safety-{date}"
    stem.with_name(stem.name + ".json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    stem.with_name(stem.name + ".md").write_text(render(doc))
    print(render(doc))
    return 0


def machine() -> dict[str, Any]:
    """Return what the builds ran on: host, CPU count, nvcc's and torch's versions."""
    info: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count()}
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=60).stdout
        info["nvcc"] = next((ln.strip() for ln in out.splitlines() if "release" in ln), out.strip()[-80:])
    except (OSError, subprocess.SubprocessError) as exc:
        info["nvcc"] = f"unavailable: {exc}"
    try:
        import torch

        info["torch"] = torch.__version__
    except Exception:  # torch is optional: only torch extension files need its headers.
        info["torch"] = None
    return info


def keep_into(doc: dict[str, Any], earlier: dict[str, Any], checked: set[str]) -> None:
    """Copy into `doc` the rows, commits and generic-recipe repositories of `earlier` not checked in `doc`."""
    kept = set()
    for key, row in earlier["files"].items():
        repo = key.split("/", 1)[0]
        if repo not in checked:
            doc["files"][key] = row
            kept.add(repo)
    for repo, commit in earlier["commits"].items():
        doc["commits"].setdefault(repo, commit)
    doc["generic_recipe_repos"] = sorted(
        set(doc["generic_recipe_repos"]) | (set(earlier.get("generic_recipe_repos") or []) & kept)
    )
    prior = earlier.get("runs") or [
        {"command": earlier["command"], "machine": earlier.get("machine"), "repositories": None}
    ]
    for run in prior:
        run = dict(run)
        run["repositories"] = sorted(kept & set(run["repositories"] or kept))
        if run["repositories"]:
            doc["runs"].insert(0, run)
    doc["files"] = dict(sorted(doc["files"].items()))


def render(doc: dict[str, Any]) -> str:
    """Return the Markdown summary."""
    files = doc["files"]
    per_repo: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for key, row in files.items():
        repo = key.split("/", 1)[0]
        r = per_repo.setdefault(repo, {"files": 0, "with_fixes": 0, "idempotent": 0, "converged": 0, "changed": 0})
        r["files"] += 1
        if "error" in row:
            problems.append(f"- `{key}`: {row['error']}")
            continue
        if row["cards_with_fixes"]:
            r["with_fixes"] += 1
            r["idempotent"] += not row["not_idempotent"]
        r["converged"] += row["converged"]
        r["changed"] += row["changed"]
        for card in row["not_idempotent"]:
            problems.append(f"- `{key}`: `{card}` is not idempotent")
        if not row["converged"]:
            problems.append(f"- `{key}`: `--fix` did not converge ({row['rounds']} rounds)")
        rb = row.get("rebuild")
        if isinstance(rb, dict) and rb.get("control_ok") and not rb["ok"] and rb.get("timed_out"):
            problems.append(f"- `{key}`: the fixed file's build ran past the time limit (not judged)")
        elif isinstance(rb, dict) and rb.get("control_ok") and not rb["ok"]:
            problems.append(f"- `{key}`: the fixed file no longer builds: {rb['error'][:200]}")
    tried = [row["rebuild"] for row in files.values() if isinstance(row.get("rebuild"), dict)]
    rebuilt = [rb for rb in tried if rb.get("control_ok") and not (rb.get("timed_out") and not rb["ok"])]
    skipped = sum(1 for row in files.values() if row.get("rebuild") == "not run (budget spent)")
    no_recipe = sorted({k.split("/", 1)[0] for k, row in files.items() if row.get("rebuild") == "no build recipe"})
    generic = doc.get("generic_recipe_repos") or []
    lines = [
        f"# Fix safety on real code ({doc['date']})",
        "",
        f"Command: `{doc['command']}` ({doc['seconds']} s, CPU only). Resource builds for claims off.",
        *(
            f"- rows of {', '.join(run['repositories'] or ['every repository'])}: `{run['command']}` on "
            f"{_machine_text(run.get('machine'))}"
            for run in doc.get("runs") or []
        ),
        "",
        "Commits:",
        "",
        "| repository | commit |",
        "| --- | --- |",
        *[f"| {v[0]} | `{v[1][:12]}` |" for v in doc["commits"].values()],
        "",
        "| repository | files | with fixes | every card idempotent | `--fix` converges | changed by `--fix` |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for repo, r in per_repo.items():
        lines.append(
            f"| {repo} | {r['files']} | {r['with_fixes']} | {r['idempotent']}/{r['with_fixes']} | "
            f"{r['converged']}/{r['files']} | {r['changed']} |"
        )
    ok = sum(1 for rb in rebuilt if rb["ok"])
    lines += [
        "",
        f"nvcc builds of every file `--fix` changed (safe and unsafe fixes, repository flags), original and fixed: "
        f"{ok}/{len(rebuilt)} fixed files whose original builds still build; "
        f"{len(tried) - len(rebuilt)} not judged (the original does not build here, or one of the two builds ran "
        f"past the time limit); {skipped} not run within the budget."
        + (
            f" Not built (no build recipe: idempotence and convergence only): {', '.join(no_recipe)}."
            if no_recipe
            else ""
        )
        + (f" Built with the generic recipe ({GENERIC_RECIPE.where}): {', '.join(generic)}." if generic else ""),
        "",
        "## Problems",
        "",
        *(problems or ["none"]),
        "",
    ]
    return "\n".join(lines)


def _machine_text(info: dict[str, Any] | None) -> str:
    """Return a machine record in words."""
    if not info:
        return "the machine of the earlier run (not recorded)"
    return f"{info.get('host')} ({info.get('cpus')} CPUs, {info.get('nvcc')}, torch {info.get('torch')})"


if __name__ == "__main__":
    raise SystemExit(main())
