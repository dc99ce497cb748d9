"""The process that runs NVRTC for resource claims (`warpwise.verify.resources`), apart from the caller.

NVRTC runs in the process that calls it; one source can crash it (a segmentation fault inside the compiler takes
its process down, as one file of the real-world corpus did), and its first compilation in a process takes seconds.
So resource builds run here: the caller (the language server, `warpwise check`) talks to one such process over
stdin and stdout, one JSON line per build each way, and survives when it dies.

    request:  {"source": Source.to_dict(), "arch": "sm_90", "cache_dir": "/path" | null}
    reply:    {"info": BuildInfo.to_dict(), "code": sha256 of the cubin}   (or {"error": "why"} when it raised)

An empty request (`{}`) warms the compiler up with a one-line kernel and replies `{"warm": true}`;
`{"query": "nvrtc"}` replies `{"nvrtc": "NVRTC 13.0"}` (null without NVRTC), so the caller never loads NVRTC itself.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

_WARM = 'extern "C" __global__ void warpwise_warm(float* x) { x[threadIdx.x] = 1.0f; }\n'


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Build what one request asks for and return the reply."""
    from warpwise.verify.types import Source
    from warpwise.verify.worker import nvbuild

    if request.get("query") == "nvrtc":
        return {"nvrtc": nvbuild.nvrtc_version()}
    if not request:
        nvbuild.build(Source(_WARM, "warpwise_warm", "warm.cu"), "sm_90", None)
        return {"warm": True}
    source = Source.from_dict(request["source"])
    cache = nvbuild.BuildCache(request["cache_dir"]) if request.get("cache_dir") else None
    built = nvbuild.build(source, str(request["arch"]), cache)
    return {"info": built.info.to_dict(), "code": hashlib.sha256(built.cubin).hexdigest() if built.cubin else ""}


def main() -> int:
    """Serve requests until stdin closes."""
    out = sys.stdout
    sys.stdout = sys.stderr  # Nothing but replies goes to the caller's pipe.
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # A build that raises is a reply, never a dead worker.
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
