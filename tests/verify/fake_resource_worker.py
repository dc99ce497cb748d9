"""A stand-in for `warpwise.verify.resource_worker` in tests: it answers like the real one, after a delay.

`fake_resource_worker.py DELAY_S [crash] [no-nvrtc]`: every request waits DELAY_S seconds (NVRTC's first compilation in a
process takes seconds), then gets a successful build report with a 96-byte stack frame (a question for the NVRTC
version is answered at once, with none under `no-nvrtc`); with `crash` the process aborts on its first request
instead, as a compiler crash would.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    delay = float(sys.argv[1])
    crash = "crash" in sys.argv[2:]
    nvrtc = None if "no-nvrtc" in sys.argv[2:] else "NVRTC (test stand-in)"
    for line in sys.stdin:
        if crash:
            os.abort()
        request = json.loads(line)
        if request.get("query") == "nvrtc":  # Answered at once: asking for the version compiles nothing.
            sys.stdout.write(json.dumps({"nvrtc": nvrtc}) + "\n")
            sys.stdout.flush()
            continue
        time.sleep(delay)
        if not request:
            reply: dict[str, object] = {"warm": True}
        else:
            reply = {
                "info": {
                    "ok": True,
                    "compiler": "NVRTC (test stand-in)",
                    "seconds": delay,
                    "log": "",
                    "registers": 40,
                    "stack_bytes": 96,
                    "spill_stores": 0,
                    "spill_loads": 0,
                }
            }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
