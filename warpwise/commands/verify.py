"""`warpwise verify`: build, check and time a rewritten kernel against the original, and print the verdict."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command

if TYPE_CHECKING:
    from warpwise.analyzers.model import FileModel

BACKENDS = ("auto", "local", "compile-only", "cluster")


@command("verify")
def _add_verify(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="verify a rewritten kernel on a GPU (or compile-only without one)",
        description="Build the original kernel and a candidate rewrite, run both on the same seeded random inputs, "
        "compare the outputs, and time both with the L2 flushed. The candidate is 'verified' only when it matched "
        "on every seed and was faster by more than the measured spread. Without a GPU the kernels are only built "
        "(status no_gpu, or spec_missing naming what is missing when no run spec exists). Without --candidate the "
        "original is checked against itself.",
        epilog="Exit codes: 0 verified (or built, in compile-only mode), 1 any other verdict, 2 usage or input error.",
    )
    p.add_argument("file", metavar="FILE", help="the CUDA file holding the original kernel")
    p.add_argument("--kernel", required=True, metavar="NAME", help="the kernel to verify")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--candidate", metavar="FILE2", help="the rewritten CUDA file")
    group.add_argument("--skill", metavar="ID", help="rewrite the kernel with a skill card, then verify the result")
    p.add_argument("--candidate-kernel", metavar="NAME", help="the kernel's name in the candidate (default: --kernel)")
    p.add_argument("--profile", action="store_true", help="also profile both kernels with Nsight Compute")
    p.add_argument("--sanitize", action="store_true", help="also run the candidate under compute-sanitizer")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    # The defaults of these four come from `[tool.warpwise.gpu]` when the project sets them (`_gpu_defaults`).
    p.add_argument("--backend", choices=BACKENDS, help="where to run (default: local GPU if any)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address for --backend cluster")
    p.add_argument("--seeds", type=int, metavar="N", help="random input sets to check (default: 3)")
    p.add_argument("--time-limit", type=float, metavar="S", help="per-job limit in seconds (default: 120)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not update the result cache")
    add_build_flags(p)
    p.set_defaults(handler=_run_verify)


def add_build_flags(p: argparse.ArgumentParser) -> None:
    """Add `-I/--include-dir` and `-D/--define`, which extend the project configuration's flags."""
    p.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="an include folder for the file's headers (repeatable; added to [tool.warpwise] and compile_commands)",
    )
    p.add_argument(
        "-D",
        "--define",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="a preprocessor define for the build (repeatable)",
    )


_GPU_DEFAULTS: dict[str, str | float] = {"backend": "auto", "seeds": 3, "time-limit": 120.0}


def _gpu_defaults(args: argparse.Namespace) -> None:
    """Fill the GPU options the command line left out from `[tool.warpwise.gpu]`, then from the built-in defaults."""
    from warpwise.verify import project

    found = project.find_config(args.file)
    config = dict(project.load_config(found).gpu) if found is not None else {}
    for key, default in (*_GPU_DEFAULTS.items(), ("scheduler", None)):
        attr = key.replace("-", "_")
        if getattr(args, attr) is None:
            value = config.get(key, default)
            setattr(args, attr, int(value) if key == "seeds" and value is not None else value)


def _backend_name(args: argparse.Namespace) -> str:
    """Return the backend to use: a GPU when one is visible, else compile-only."""
    if args.backend != "auto":
        return str(args.backend)
    from warpwise.verify.backends import gpu_count

    return "local" if gpu_count() > 0 else "compile-only"


def _skill_candidate(path: str, text: str, kernel: str, skill: str) -> tuple[str, int | None, FileModel]:
    """Return the file rewritten by every fix of one skill card in `kernel`, or raise ValueError saying why not.

    Also returns the factor by which the rewrite shrinks the kernel's grid where it launches it (None when it does
    not), and the model of the original (which the gate then reads instead of parsing the file again). Unsafe
    fixes are included: measuring whether they hold is what verification is for.
    """
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills import engine, library, rewrite

    known = {c.skill_id for c in library.builtin_library()}
    if skill not in known:
        raise ValueError(f"unknown skill `{skill}` (see `warpwise cards`)")
    data = text.encode("utf-8", "surrogatepass")
    model = analyze_text(data, path)
    matches = [m for m in engine.match_file(model, enabled={skill}) if m.function == kernel]
    if not matches:
        raise ValueError(f"skill `{skill}` does not apply to `{kernel}` in {path}")
    fixes = [f for f in (engine.compute_fix(model, m) for m in matches) if f is not None]
    edits = engine.merge_fixes(fixes)
    if not edits:
        raise ValueError(f"skill `{skill}` applies to `{kernel}` but offers no rewrite there (display-only)")
    from warpwise.skills.launches import grid_factor

    factor = grid_factor(skill, matches)
    return str(rewrite.apply_edits(data, edits).decode("utf-8", "surrogateescape")), factor, model


def _run_verify(args: argparse.Namespace) -> int:
    from warpwise.skills.launches import shrunk_problem_spec
    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    _gpu_defaults(args)

    try:
        original = Path(args.file).read_text(encoding="utf-8", errors="replace")
        spec = None
        model = None
        if args.skill:
            cand_text, factor, model = _skill_candidate(args.file, original, args.kernel, args.skill)
            cand_path = args.file
            if factor is not None and factor > 1:
                spec = shrunk_problem_spec(args.file, original, args.kernel, factor)
                if spec is not None and not args.json:
                    print(
                        f"  the problem file launches `{args.kernel}`: the rewrite runs with its grid divided by "
                        f"{factor}, as the rewrite divides launches in the file",
                        file=sys.stderr,
                    )
            elif factor is None:  # A card whose rewrite changes the launch its own way (a grid of tiles).
                from warpwise.skills.launches import card_problem_spec

                spec = card_problem_spec(args.file, original, args.kernel, args.skill)
        elif args.candidate:
            cand_text = Path(args.candidate).read_text(encoding="utf-8", errors="replace")
            cand_path = args.candidate
        else:
            cand_text, cand_path = original, args.file
    except OSError as exc:
        print(f"warpwise verify: error: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as exc:
        print(f"warpwise verify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.seeds < 3:
        print("warpwise verify: error: --seeds must be at least 3", file=sys.stderr)
        return EXIT_ERROR
    backend_name = _backend_name(args)
    if backend_name == "compile-only":
        from warpwise.verify.spec import problem_file_for

        problem_file = problem_file_for(args.file, args.kernel)
        if problem_file is not None:
            print(
                f"warpwise verify: the problem file {problem_file} is not run: the compile-only backend builds the "
                "kernels and runs nothing",
                file=sys.stderr,
            )
    options = Options(
        seeds=tuple(range(args.seeds)),
        time_limit_s=args.time_limit,
        sanitizer=args.sanitize,
        profile=args.profile,
        compile_only=backend_name == "compile-only",
    )
    from warpwise.verify import project

    flags = project.flags_for(args.file, cli=project.cli_flags(args.include_dir, args.define))
    for problem in flags.problems:
        print(f"warpwise verify: warning: {problem}", file=sys.stderr)
    if not args.json:
        print(f"  {flags.describe()}", file=sys.stderr)
    candidate = Candidate(
        args.file,
        original,
        args.kernel,
        cand_text,
        cand_path,
        args.candidate_kernel,
        spec=spec,
        flags=flags,
        original_model=model,
    )
    cache = None if args.no_cache else ResultCache()
    try:
        backend = make_backend(backend_name, scheduler=args.scheduler, cache=cache)
    except (ValueError, OSError) as exc:
        print(f"warpwise verify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    t0 = time.perf_counter()
    quiet = args.json or not sys.stderr.isatty()

    def progress(stage: str) -> None:
        if not quiet:
            print(f"  [{time.perf_counter() - t0:6.2f} s] {stage} ...", file=sys.stderr, flush=True)
        elif not args.json:
            print(f"  {stage} ...", file=sys.stderr, flush=True)

    if not args.json:
        against = f"its rewrite by skill `{args.skill}`" if args.skill else cand_path
        print(f"verifying `{args.kernel}` of {args.file} against {against} ({backend_name})", file=sys.stderr)
    try:
        result = Gate(backend, cache).verify(candidate, options, progress)
    finally:
        backend.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        _print_table(result, args)
    ok = result.status is Status.VERIFIED or (result.status is Status.NO_GPU and backend_name == "compile-only")
    return EXIT_CLEAN if ok else EXIT_FINDINGS


def _fmt(v: Any, unit: str = "") -> str:
    """Format a number (or a dash for none)."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}{unit}"
    return f"{v}{unit}"


def _print_table(result: Any, args: argparse.Namespace) -> None:
    """Print the verdict and a table of both kernels."""
    r = result
    rows = [("", "original", "candidate")]
    ob, cb = r.original_build, r.candidate_build
    rows.append(("build", _build_cell(ob), _build_cell(cb)))
    rows.append(("registers", _fmt(ob and ob.registers), _fmt(cb and cb.registers)))
    rows.append(("spills (st/ld B)", _spill(ob), _spill(cb)))
    rows.append(("shared memory", _fmt(ob and ob.shared_bytes, " B"), _fmt(cb and cb.shared_bytes, " B")))
    ot, ct = r.original_timing, r.candidate_timing
    rows.append(("time (median)", _fmt(ot and ot.median_ms, " ms"), _fmt(ct and ct.median_ms, " ms")))
    rows.append(("time (IQR)", _iqr(ot), _iqr(ct)))
    op, cp = r.original_profile, r.candidate_profile
    if op or cp:
        rows.append(("bottleneck", op.bottleneck if op else "-", cp.bottleneck if cp else "-"))
        rows.append(("DRAM GB/s", _fmt(op and op.dram_gbps), _fmt(cp and cp.dram_gbps)))
        rows.append(("occupancy", _fmt(op and op.occupancy_pct, " %"), _fmt(cp and cp.occupancy_pct, " %")))
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    print(f"{args.file} :: {args.kernel}")
    for row in rows:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    if r.speedup is not None:
        s = r.speedup
        print(f"  speedup {s.median:.3f}x (spread {s.low:.3f}x .. {s.high:.3f}x)")
    d = r.durations
    print(f"  stages: build {d.build_s:.2f} s, check {d.check_s:.2f} s, time {d.time_s:.2f} s, total {d.total_s:.2f} s")
    if r.device is not None:
        print(f"  device: {r.device.label}")
    cached = " (cached)" if r.cached else ""
    print(f"status: {r.status.value}{cached}: {r.message.splitlines()[0] if r.message else ''}")
    if r.mismatch is not None:
        m = r.mismatch
        print(
            f"  `{m.buffer}` seed {m.seed}: {m.bad_elements}/{m.total_elements} bad, max abs {m.max_abs_error:.3g}, "
            f"max rel {m.max_rel_error:.3g}"
        )
    if r.annotation:
        print(f"  annotate the kernel, for example:\n  {r.annotation.strip()}")
    for build, which in ((ob, "original"), (cb, "candidate")):
        if build is not None and build.builder_reason and build.builder != "nvrtc":
            print(f"  {which} build: {build.builder_reason}")
    for build, which in ((ob, "original"), (cb, "candidate")):
        if build is not None and not build.ok:
            print(f"--- {which} compiler log ---\n{build.log.strip()}")


def _build_cell(b: Any) -> str:
    """Describe a build in one cell."""
    if b is None:
        return "-"
    if not b.ok:
        return "FAILED"
    via = f" {b.builder}" if b.builder else ""
    return f"ok{via} {b.seconds:.2f} s" + (" (cached)" if b.cached else "")


def _spill(b: Any) -> str:
    """Describe spills in one cell."""
    if b is None or b.spill_stores is None:
        return "-"
    return f"{b.spill_stores}/{b.spill_loads}"


def _iqr(t: Any) -> str:
    """Describe a timing's quartiles."""
    if t is None:
        return "-"
    return f"{t.q1_ms:.4g}..{t.q3_ms:.4g} ms ({t.reps} reps)"
