/**
 * Interpreter discovery: which Python runs `python -m warpwise serve`, and whether warpwise is installed in it.
 *
 * The order is the one a user expects: the `warpwise.interpreter` setting when it is set (and then only that one:
 * a wrong setting is reported, not silently replaced), else the Python extension's active interpreter, else a
 * `.venv` or `venv` in a workspace folder, else `python3` / `python` on `PATH`. In an untrusted workspace no
 * interpreter inside the workspace is started, since that would run the workspace's code.
 *
 * This module is pure: everything it needs from the machine comes in through `DiscoveryHost`, so the order and the
 * messages are unit-tested without VS Code.
 */
import * as path from "node:path";

/** Where a candidate interpreter came from, in the user's terms. */
export type InterpreterSource = "setting" | "python-extension" | "workspace-venv" | "path";

export interface Candidate {
  path: string;
  source: InterpreterSource;
}

/** What running the probe script in an interpreter told us. */
export type ProbeResult =
  | { kind: "ok"; python: string; warpwise: string; pythonPath?: string }
  | { kind: "no-warpwise"; python: string; error: string }
  | { kind: "not-runnable"; error: string };

export interface DiscoveryHost {
  /** The `warpwise.interpreter` setting (VS Code already ignores a workspace value in an untrusted workspace). */
  configured: string;
  workspaceFolders: readonly string[];
  trusted: boolean;
  home: string;
  platform: NodeJS.Platform;
  /** The Python extension's active interpreter for the first workspace folder, when that extension is present. */
  pythonExtensionInterpreter(): Promise<string | undefined>;
  isFile(file: string): boolean;
  /** The first match of an executable name on `PATH`. */
  which(name: string): string | undefined;
  probe(python: string): Promise<ProbeResult>;
}

export type Discovery =
  | { kind: "ready"; interpreter: Candidate; python: string; warpwise: string; pythonPath?: string }
  | { kind: "not-installed"; interpreter: Candidate; python: string; error: string }
  | { kind: "python-too-old"; interpreter: Candidate; python: string }
  | { kind: "bad-setting"; configured: string; resolved: string; reason: string }
  | { kind: "untrusted-location"; interpreter: Candidate }
  | { kind: "none-found"; tried: Candidate[] };

/** The oldest Python warpwise supports (pyproject's requires-python). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** A probe that prints the interpreter's version and warpwise's, as JSON on one line. */
export const PROBE_SCRIPT = [
  "import json, sys",
  "out = {'python': '.'.join(map(str, sys.version_info[:3]))}",
  "try:",
  "    import warpwise",
  "    out['warpwise'] = getattr(warpwise, '__version__', 'unknown')",
  "except Exception as e:",
  "    out['error'] = f'{type(e).__name__}: {e}'",
  "print(json.dumps(out))",
].join("\n");

/** Turn the probe's output into a result. */
export function parseProbeOutput(stdout: string, stderr: string, exitCode: number | null): ProbeResult {
  const line = stdout.trim().split(/\r?\n/).pop() ?? "";
  let parsed: { python?: unknown; warpwise?: unknown; error?: unknown } | undefined;
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed.python !== "string") {
    const why = stderr.trim().split(/\r?\n/).pop() || `exit code ${String(exitCode)}`;
    return { kind: "not-runnable", error: why };
  }
  if (typeof parsed.warpwise === "string") {
    return { kind: "ok", python: parsed.python, warpwise: parsed.warpwise };
  }
  return { kind: "no-warpwise", python: parsed.python, error: typeof parsed.error === "string" ? parsed.error : "" };
}

/** Expand `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` in a configured path. */
export function expandPath(raw: string, host: Pick<DiscoveryHost, "workspaceFolders" | "home">, env = process.env): string {
  let value = raw.trim();
  const folder = host.workspaceFolders[0] ?? "";
  value = value.replace(/\$\{workspaceFolder\}/g, folder).replace(/\$\{userHome\}/g, host.home);
  value = value.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => env[name] ?? "");
  if (value === "~" || value.startsWith("~/")) {
    value = path.join(host.home, value.slice(1));
  }
  if (!path.isAbsolute(value) && folder !== "" && (value.includes("/") || value.includes("\\"))) {
    value = path.resolve(folder, value);
  }
  return value;
}

/** True when `file` lies inside one of the workspace folders. */
export function insideWorkspace(file: string, folders: readonly string[]): boolean {
  const resolved = path.resolve(file);
  return folders.some((folder) => {
    const rel = path.relative(path.resolve(folder), resolved);
    return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
  });
}

/** The version tuple of a dotted version string. */
function versionTuple(version: string): number[] {
  return version.split(".").map((part) => Number.parseInt(part, 10) || 0);
}

export function isSupportedPython(version: string): boolean {
  const [major = 0, minor = 0] = versionTuple(version);
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** Candidates in order of preference, when the setting is empty. */
export async function candidates(host: DiscoveryHost): Promise<Candidate[]> {
  const found: Candidate[] = [];
  const add = (file: string | undefined, source: InterpreterSource): void => {
    if (file && !found.some((c) => c.path === file)) {
      found.push({ path: file, source });
    }
  };
  add(await host.pythonExtensionInterpreter(), "python-extension");
  const bin = host.platform === "win32" ? path.join("Scripts", "python.exe") : path.join("bin", "python");
  for (const folder of host.workspaceFolders) {
    for (const venv of [".venv", "venv"]) {
      const file = path.join(folder, venv, bin);
      if (host.isFile(file)) {
        add(file, "workspace-venv");
      }
    }
  }
  for (const name of host.platform === "win32" ? ["python.exe", "py.exe"] : ["python3", "python"]) {
    add(host.which(name), "path");
  }
  return found;
}

/** Find the interpreter to start the server with, or say precisely why there is none. */
export async function discover(host: DiscoveryHost): Promise<Discovery> {
  if (host.configured.trim() !== "") {
    const resolved = expandPath(host.configured, host);
    const interpreter: Candidate = { path: resolved, source: "setting" };
    if (!host.trusted && insideWorkspace(resolved, host.workspaceFolders)) {
      return { kind: "untrusted-location", interpreter };
    }
    if (!host.isFile(resolved)) {
      return { kind: "bad-setting", configured: host.configured, resolved, reason: "no such file" };
    }
    const probe = await host.probe(resolved);
    return fromProbe(interpreter, probe, host.configured);
  }
  const tried: Candidate[] = [];
  let firstWithoutWarpwise: Discovery | undefined;
  let skippedUntrusted: Candidate | undefined;
  for (const candidate of await candidates(host)) {
    if (!host.trusted && insideWorkspace(candidate.path, host.workspaceFolders)) {
      skippedUntrusted ??= candidate;
      continue;
    }
    tried.push(candidate);
    const result = fromProbe(candidate, await host.probe(candidate.path), undefined);
    if (result.kind === "ready") {
      return result;
    }
    if (result.kind !== "bad-setting" && firstWithoutWarpwise === undefined) {
      firstWithoutWarpwise = result;
    }
  }
  if (firstWithoutWarpwise) {
    return firstWithoutWarpwise;
  }
  if (skippedUntrusted) {
    return { kind: "untrusted-location", interpreter: skippedUntrusted };
  }
  return { kind: "none-found", tried };
}

function fromProbe(interpreter: Candidate, probe: ProbeResult, configured: string | undefined): Discovery {
  if (probe.kind === "not-runnable") {
    return {
      kind: "bad-setting",
      configured: configured ?? interpreter.path,
      resolved: interpreter.path,
      reason: `it does not run as Python (${probe.error})`,
    };
  }
  if (!isSupportedPython(probe.python)) {
    return { kind: "python-too-old", interpreter, python: probe.python };
  }
  if (probe.kind === "no-warpwise") {
    return { kind: "not-installed", interpreter, python: probe.python, error: probe.error };
  }
  return { kind: "ready", interpreter, python: probe.python, warpwise: probe.warpwise, pythonPath: probe.pythonPath };
}

const SOURCE_WORDS: Record<InterpreterSource, string> = {
  setting: "the `warpwise.interpreter` setting",
  "python-extension": "the Python extension's active interpreter",
  "workspace-venv": "the workspace's virtual environment",
  path: "`PATH`",
};

/** One concrete line for the user, naming the interpreter and what to do. */
export function describeDiscovery(result: Discovery): string {
  switch (result.kind) {
    case "ready":
      return `warpwise ${result.warpwise} on Python ${result.python} (${result.interpreter.path}, from ${SOURCE_WORDS[result.interpreter.source]}${result.pythonPath ? "; the extension's bundled libraries" : ""})`;
    case "not-installed":
      return `the warpwise package is not installed in ${result.interpreter.path} (Python ${result.python}, from ${SOURCE_WORDS[result.interpreter.source]}); install it there or choose another interpreter.`;
    case "python-too-old":
      return `${result.interpreter.path} is Python ${result.python}; warpwise needs Python ${MIN_PYTHON.join(".")} or newer. Set \`warpwise.interpreter\` to a newer one.`;
    case "bad-setting":
      return `\`warpwise.interpreter\` is "${result.configured}", but ${result.resolved}: ${result.reason}. Fix the setting or clear it to let warpwise find Python.`;
    case "untrusted-location":
      return `${result.interpreter.path} lies inside this untrusted workspace, so warpwise does not start it. Trust the workspace, or set \`warpwise.interpreter\` in your user settings to an interpreter outside it.`;
    case "none-found":
      return result.tried.length === 0
        ? "No Python interpreter found: set `warpwise.interpreter`, select one with the Python extension, or put `python3` on PATH."
        : `No usable Python found (tried ${result.tried.map((c) => c.path).join(", ")}); set \`warpwise.interpreter\`.`;
  }
}

function shellQuote(value: string): string {
  return /[\s"'$`\\]/.test(value) ? `"${value.replace(/(["$`\\])/g, "\\$1")}"` : value;
}

/**
 * The install command for an interpreter, from the `warpwise.installCommand` template: `${interpreter}` is the
 * interpreter's path and `${bundledWheel}` the warpwise wheel this extension carries (`bundled/*.whl`).
 */
export function installCommand(template: string, interpreter: string, bundledWheel?: string): string {
  return template
    .replace(/\$\{interpreter\}/g, shellQuote(interpreter))
    .replace(/\$\{bundledWheel\}/g, bundledWheel ? shellQuote(bundledWheel) : "${bundledWheel}");
}

/** The newest `warpwise-<version>-*.whl` among the names of the extension's `bundled/` folder, if any. */
export function pickBundledWheel(names: readonly string[]): string | undefined {
  return names.filter((n) => /^warpwise-[^-]+-.*\.whl$/.test(n)).sort().pop();
}
