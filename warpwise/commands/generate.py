"""`warpwise generate`: write a problem file and a first kernel from a description (LLM), checked by the gate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command


@command("generate")
def _add_generate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="write a kernel and its problem file from a description (needs an LLM endpoint)",
        description="Ask the configured LLM (WARPWISE_LLM_ENDPOINT, WARPWISE_LLM_MODEL, key in "
        "WARPWISE_LLM_API_KEY or OPENAI_API_KEY) for a problem file and a first kernel for DESCRIPTION, write "
        "them as NAME.problem.py and NAME.cu, and check the kernel against the problem's reference() with the "
        "gate (compile-only without a GPU). A failing kernel is sent back with the gate's message. The generated "
        "problem file is Python that the gate's worker runs: it is screened first (imports and calls), but read "
        "it before running it on a shared machine.",
        epilog="Exit codes: 0 the kernel matched the reference (or built, compile-only), 1 it did not, 2 usage or "
        "input error.",
    )
    p.add_argument("description", metavar="DESCRIPTION", help="what the kernel computes, in words")
    p.add_argument("--name", required=True, metavar="NAME", help="the kernel's name (and the files' stem)")
    p.add_argument("--out", default=".", metavar="DIR", help="folder for NAME.cu and NAME.problem.py")
    p.add_argument("--attempts", type=int, default=3, metavar="N", help="tries, each with the gate's feedback")
    p.add_argument("--overwrite", action="store_true", help="replace existing files")
    p.add_argument("--optimize", action="store_true", help="then optimize the kernel (warpwise optimize)")
    p.add_argument("--budget-s", type=float, default=120.0, metavar="S", help="GPU-seconds for --optimize")
    p.add_argument("--dry-run", action="store_true", help="compile-only: build, run nothing")
    p.add_argument("--llm-endpoint", metavar="URL", help="OpenAI-compatible base URL (else WARPWISE_LLM_ENDPOINT)")
    p.add_argument("--llm-model", metavar="NAME", help="model name (else WARPWISE_LLM_MODEL)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_generate)


def _run_generate(args: argparse.Namespace) -> int:
    from warpwise.search.evaluate import GateVerifier
    from warpwise.search.generate import GenerateError, generate
    from warpwise.search.llm import LLMClient, LLMConfig, LLMError
    from warpwise.search.optimize import OptimizeOptions, gate_for, optimize

    config = LLMConfig.resolve(args.llm_endpoint or "", args.llm_model or "")
    if config is None:
        print(
            "warpwise generate: error: no LLM configured (--llm-endpoint/--llm-model or "
            "WARPWISE_LLM_ENDPOINT/WARPWISE_LLM_MODEL)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    if args.dry_run:
        backend = "compile-only"
    else:
        from warpwise.verify.backends import gpu_count

        backend = "local" if gpu_count() > 0 else "compile-only"
    compile_only = backend == "compile-only"
    try:
        client = LLMClient(config)
    except LLMError as exc:
        print(f"warpwise generate: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    gate = gate_for(backend, None)
    try:
        report = generate(
            args.description,
            args.name,
            args.out,
            client,
            GateVerifier(gate),
            compile_only=compile_only,
            attempts=args.attempts,
            overwrite=args.overwrite,
        )
    except GenerateError as exc:
        print(f"warpwise generate: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        gate.backend.close()
        client.close()
    if report.ok and args.optimize:
        opt = optimize(
            report.kernel_path,
            args.name,
            OptimizeOptions(budget_s=args.budget_s, compile_only=compile_only),
            backend=backend,
        )
        report.optimized = opt.to_dict()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"{report.status}: {report.message}")
        for a in report.attempts:
            print(f"  attempt {a['attempt']}: {a['outcome']}")
        if Path(report.kernel_path).exists():
            print(f"wrote {report.kernel_path} and {report.problem_path}")
        if report.optimized is not None:
            best = report.optimized.get("best")
            sp = best.get("speedup") if best else None
            print(f"optimize: verified {sp['median']:.2f}x" if sp else "optimize: no verified improvement")
    return EXIT_CLEAN if report.ok else EXIT_FINDINGS
