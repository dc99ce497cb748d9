/**
 * The machine as interpreter discovery sees it: settings, workspace folders, the Python extension's choice, files,
 * `PATH`, and a probe that runs a candidate interpreter with a time limit.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { type BundleManifest, bundledPythonPath, type ImportStrategy, parseManifest } from "./bundled";
import { type DiscoveryHost, PROBE_SCRIPT, type ProbeResult, parseProbeOutput } from "./discovery";

/** How long the probe may take; a cold interpreter importing warpwise takes well under this. */
const PROBE_TIMEOUT_MS = 20_000;

/** The subset of the Python extension's API that warpwise uses. */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

export const PYTHON_EXTENSION_ID = "ms-python.python";

/** The Python extension's API, activating it if needed, or undefined when it is not installed. */
export async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined;
  }
}

async function activeInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const api = await pythonExtensionApi();
  if (!api) {
    return undefined;
  }
  try {
    if (api.environments) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath ?? active.path;
    }
    return api.settings?.getExecutionDetails?.(resource).execCommand?.[0];
  } catch {
    return undefined;
  }
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) {
      return false;
    }
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") {
      continue;
    }
    const file = path.join(dir, name);
    if (isExecutableFile(file)) {
      return file;
    }
  }
  return undefined;
}

/** Run the probe script in `python` from a neutral directory, so a `warpwise/` folder in the workspace is not imported. */
export function probe(python: string, pythonPath?: string): Promise<ProbeResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONSAFEPATH: "1" };
  if (pythonPath !== undefined) {
    env.PYTHONPATH = pythonPath;
  }
  return new Promise((resolve) => {
    execFile(
      python,
      ["-c", PROBE_SCRIPT],
      { cwd: os.tmpdir(), timeout: PROBE_TIMEOUT_MS, windowsHide: true, env },
      (error, stdout, stderr) => {
        if (error && (error as NodeJS.ErrnoException).code !== undefined && typeof (error as NodeJS.ErrnoException).code === "string") {
          resolve({ kind: "not-runnable", error: error.message });
          return;
        }
        resolve(parseProbeOutput(stdout, stderr, error ? (error as { code?: number }).code ?? 1 : 0));
      },
    );
  });
}

/** The extension's bundled libraries (`bundled/libs`, beside `dist/`). */
export const BUNDLED_LIBS = path.join(__dirname, "..", "bundled", "libs");

function readManifest(): BundleManifest | undefined {
  try {
    return parseManifest(readFileSync(path.join(BUNDLED_LIBS, "bundle.json"), "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Probe `python`; under `useBundled`, when the bundle serves its version, probe it again with the bundled libraries
 * on PYTHONPATH and, when warpwise imports from there, say so (`pythonPath`), so the server starts the same way.
 */
async function probeWithBundle(python: string, strategy: ImportStrategy): Promise<ProbeResult> {
  const plain = await probe(python);
  if (plain.kind === "not-runnable") {
    return plain;
  }
  const pythonPath = bundledPythonPath(BUNDLED_LIBS, readManifest(), plain.python, process.platform, process.arch, strategy);
  if (pythonPath === undefined) {
    return plain;
  }
  const bundled = await probe(python, pythonPath);
  return bundled.kind === "ok" ? { ...bundled, pythonPath } : plain;
}

export function discoveryHost(): DiscoveryHost {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
  return {
    configured: vscode.workspace.getConfiguration("warpwise").get<string>("interpreter", ""),
    workspaceFolders: folders.map((f) => f.uri.fsPath),
    trusted: vscode.workspace.isTrusted,
    home: os.homedir(),
    platform: process.platform,
    pythonExtensionInterpreter: () => activeInterpreter(folders[0]?.uri),
    isFile: isExecutableFile,
    which,
    probe: (python: string) =>
      probeWithBundle(
        python,
        vscode.workspace.getConfiguration("warpwise").get<ImportStrategy>("importStrategy", "useBundled"),
      ),
  };
}
