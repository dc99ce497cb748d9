"""`warpwise worker`: join a Dask cluster as a verification worker (declaring its GPUs as a resource)."""

from __future__ import annotations

import argparse
import sys

from warpwise.cli import EXIT_ERROR, command


@command("worker")
def _add_worker(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worker",
        help="serve verification jobs for a Dask scheduler",
        description="Start a Dask worker that runs warpwise verification jobs. It declares the resource GPU=N "
        "(N visible GPUs), so that jobs needing a GPU are routed to it, and warpwise-build=1 for compile-only "
        "jobs. Each job still runs in an isolated worker process with a time limit.",
    )
    p.add_argument("--scheduler", required=True, metavar="ADDR", help="scheduler address, e.g. tcp://host:8786")
    p.add_argument("--gpus", type=int, default=None, help="GPUs to declare (default: all visible)")
    p.add_argument("--name", default=None, help="worker name shown by the scheduler")
    p.set_defaults(handler=_run_worker)


def _run_worker(args: argparse.Namespace) -> int:
    import asyncio

    try:
        from distributed import Worker
    except ImportError:
        print("warpwise worker: error: install the cluster extra (pip install 'warpwise[cluster]')", file=sys.stderr)
        return EXIT_ERROR
    from warpwise.verify.backends import BUILD_RESOURCE, GPU_RESOURCE, gpu_count

    gpus = gpu_count() if args.gpus is None else args.gpus
    resources = {BUILD_RESOURCE: 1.0}
    if gpus > 0:
        resources[GPU_RESOURCE] = float(gpus)

    async def serve() -> None:
        async with Worker(args.scheduler, nthreads=max(gpus, 1), resources=resources, name=args.name) as w:
            print(f"warpwise worker {w.address} joined {args.scheduler} with {resources}", file=sys.stderr)
            await w.finished()

    asyncio.run(serve())
    return 0
