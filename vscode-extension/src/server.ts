/**
 * The language server's lifecycle in the editor: find an interpreter, start `python -m warpwise serve`, keep the
 * status item true, restart on request (never twice at once), and explain every way it can fail to start.
 */
import { readdirSync } from "node:fs";
import * as path from "node:path";
import * as os from "node:os";
import * as readline from "node:readline";
import * as vscode from "vscode";
import {
  type ConfigurationParams,
  DidChangeConfigurationNotification,
  type DynamicFeature,
  ErrorAction,
  type ErrorHandler,
  type Executable,
  CloseAction,
  LanguageClient,
  type LanguageClientOptions,
  type StaticFeature,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { CLIENT_COMMAND_IDS } from "./commands";
import { type Discovery, describeDiscovery, discover, installCommand, pickBundledWheel } from "./discovery";
import { discoveryHost, PYTHON_EXTENSION_ID } from "./host";
import { showProgressAsNotifications } from "./progress";
import { CUDA_SELECTOR, DOCUMENT_SELECTOR } from "./selectors";
import { serverSettings } from "./serverSettings";
import { SingleFlight } from "./singleFlight";
import { type BackendStatus, type ClientState, describeState, parseBackendStatus } from "./status";

export { DOCUMENT_SELECTOR } from "./selectors";

/** The server's status notification. */
export const STATUS_NOTIFICATION = "warpwise/status";

/** How many times the server may crash within CRASH_WINDOW_MS before the extension stops restarting it. */
const MAX_CRASHES = 3;
const CRASH_WINDOW_MS = 3 * 60_000;

/**
 * A language client that does not register VS Code commands for server commands the extension already provides
 * (`warpwise.verifyKernel` and friends are registered by the extension, which adds the cursor to their arguments).
 */
class WarpwiseLanguageClient extends LanguageClient {
  override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const dynamic = feature as Partial<DynamicFeature<{ commands?: string[] }>>;
    if (dynamic.registrationType?.method === "workspace/executeCommand" && typeof dynamic.register === "function") {
      const register = dynamic.register.bind(feature);
      dynamic.register = (data) =>
        register({
          ...data,
          registerOptions: {
            ...data.registerOptions,
            commands: (data.registerOptions.commands ?? []).filter((c) => !CLIENT_COMMAND_IDS.has(c)),
          },
        });
    }
    super.registerFeature(feature);
  }
}

export class WarpwiseServer implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  private readonly status: vscode.LanguageStatusItem;
  private client: WarpwiseLanguageClient | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private readonly lifecycle = new SingleFlight<void>();
  private state: ClientState = { kind: "starting" };
  private discovery: Discovery | undefined;
  private crashes: number[] = [];
  private stopping = false;
  /** Whether the current client ever reached Running; a server that dies while starting is not restarted. */
  private reachedRunning = false;
  /** The server's latest `warpwise/status`, kept even when it arrives before the client reports Running. */
  private backend: BackendStatus | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  /** The server's last lines on stderr, quoted when it fails to start. */
  private stderrTail: string[] = [];

  constructor() {
    this.output = vscode.window.createOutputChannel("warpwise", { log: true });
    this.status = vscode.languages.createLanguageStatusItem("warpwise.status", CUDA_SELECTOR);
    this.status.name = "warpwise";
    this.render();
    this.disposables.push(
      this.output,
      this.status,
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.log("workspace trusted: restarting the server with GPU verification allowed");
        void this.restart();
      }),
    );
    const python = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
    if (python) {
      void python.activate().then(
        (api: { environments?: { onDidChangeActiveEnvironmentPath?: vscode.Event<unknown> } }) => {
          const event = api?.environments?.onDidChangeActiveEnvironmentPath;
          if (event) {
            this.disposables.push(
              event(() => {
                if (this.discovery?.kind !== "ready" || this.discovery.interpreter.source === "python-extension") {
                  this.log("the Python extension's interpreter changed: restarting");
                  void this.restart();
                }
              }),
            );
          }
        },
        () => undefined,
      );
    }
  }

  /** The running client, when the server is up. */
  get languageClient(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  get currentDiscovery(): Discovery | undefined {
    return this.discovery;
  }

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  log(line: string): void {
    this.output.info(`[client] ${line}`);
  }

  start(): Promise<void> {
    return this.lifecycle.run(() => this.doStart());
  }

  /** Restart the server; calls made while a restart is in flight join it instead of starting another. */
  restart(): Promise<void> {
    if (this.lifecycle.busy) {
      this.log("restart requested while one is in progress; waiting for that one");
    }
    return this.lifecycle.run(async () => {
      this.setState({ kind: "starting" });
      await this.doStop(false);
      this.crashes = [];
      await this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.lifecycle.run(() => this.doStop(true));
  }

  private setState(state: ClientState): void {
    this.state = state;
    void vscode.commands.executeCommand("setContext", "warpwise.serverRunning", state.kind === "running");
    this.render();
  }

  private render(): void {
    const view = describeState(this.state);
    this.status.text = view.text;
    this.status.detail = view.detail;
    this.status.busy = view.busy;
    this.status.severity =
      view.severity === "error"
        ? vscode.LanguageStatusSeverity.Error
        : view.severity === "warning"
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
    if (this.state.kind === "running" && this.state.restricted) {
      this.status.command = { title: "Manage Workspace Trust", command: "workbench.trust.manage" };
    } else if (this.state.kind === "no-interpreter") {
      this.status.command = { title: "Select Interpreter", command: "warpwise.selectInterpreter" };
    } else {
      this.status.command = { title: "Open Log", command: "warpwise.showOutput" };
    }
    this.status.accessibilityInformation = { label: `warpwise: ${view.text.replace(/\$\([^)]*\)\s*/g, "")}, ${view.detail}` };
  }

  private async doStart(): Promise<void> {
    this.setState({ kind: "starting" });
    const discovery = await discover(discoveryHost());
    this.discovery = discovery;
    this.log(describeDiscovery(discovery));
    if (discovery.kind !== "ready") {
      this.setState({ kind: "no-interpreter", message: describeDiscovery(discovery) });
      void this.explain(discovery);
      return;
    }
    const python = discovery.interpreter.path;
    this.setState({ kind: "starting", interpreter: python });
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file");
    // `-P` keeps the working directory off sys.path, so a `warpwise/` folder in the workspace is never imported.
    const executable: Executable = {
      command: python,
      args: ["-P", "-m", "warpwise", "serve"],
      transport: TransportKind.stdio,
      options: {
        cwd: folder?.uri.fsPath ?? os.tmpdir(),
        env: {
          ...process.env,
          PYTHONUNBUFFERED: "1",
          // The bundled libraries (`warpwise.importStrategy: useBundled`), when discovery found they run here.
          ...(discovery.pythonPath !== undefined ? { PYTHONPATH: discovery.pythonPath } : {}),
        },
      },
    };
    const trusted = this.trusted;
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: serverSettings(vscode.workspace.getConfiguration("warpwise"), trusted),
      errorHandler: this.errorHandler(),
      stdioOptions: {
        stdout: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (l) => channel.info(l));
        },
        stderr: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (l) => {
            channel.appendLine(l);
            this.stderrTail = [...this.stderrTail.slice(-9), l];
          });
        },
      },
      middleware: {
        workspace: {
          configuration: async (params: ConfigurationParams, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) {
              return result;
            }
            return result.map((value, i) =>
              params.items[i]?.section === "warpwise" ? serverSettings(value, vscode.workspace.isTrusted) : value,
            );
          },
        },
      },
    };
    const client = new WarpwiseLanguageClient("warpwise", "warpwise", { run: executable, debug: executable }, clientOptions);
    this.client = client;
    this.clientDisposables.push(
      client.onNotification(STATUS_NOTIFICATION, (params: unknown) => {
        this.backend = parseBackendStatus(params);
        if (this.state.kind === "running") {
          this.setState({ ...this.state, backend: this.backend });
        }
      }),
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.reachedRunning = true;
          this.setState({ kind: "running", backend: this.backend, restricted: !vscode.workspace.isTrusted });
        } else if (e.newState === State.Starting) {
          this.setState({ kind: "starting", interpreter: python });
        }
      }),
    );
    this.stderrTail = [];
    this.reachedRunning = false;
    this.backend = undefined;
    try {
      await client.start();
    } catch (error) {
      // Give the process a moment to flush its last words to stderr, which say more than the protocol error.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const why = this.stderrTail.filter((l) => l.trim() !== "").pop() ?? firstLine(error);
      this.log(`the server did not start: ${String(error)}`);
      this.setState({ kind: "stopped", message: `\`${python} -m warpwise serve\` did not start: ${why}` });
      void vscode.window.showErrorMessage(`warpwise: the language server did not start: ${why}`, "Open Log").then((pick) => {
        if (pick) {
          this.output.show(true);
        }
      });
      return;
    }
    this.clientDisposables.push(showProgressAsNotifications(client));
    this.setState({ kind: "running", backend: this.backend, restricted: !trusted });
    const info = client.initializeResult?.serverInfo;
    this.log(`server started: ${info?.name ?? "warpwise"} ${info?.version ?? ""} with ${python}${trusted ? "" : " (restricted mode)"}`);
  }

  private errorHandler(): ErrorHandler {
    return {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        if (this.stopping) {
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        if (!this.reachedRunning) {
          // It exited before answering `initialize`: restarting would fail the same way. `start()` reports why.
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        this.crashes = [...this.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
        if (this.crashes.length > MAX_CRASHES) {
          const last = this.stderrTail.filter((l) => l.trim() !== "").pop();
          const message = `the server stopped ${this.crashes.length} times in 3 minutes${last ? ` (last: ${last})` : ""}; not restarting it (see the log, then run "warpwise: Restart Language Server")`;
          this.setState({ kind: "stopped", message });
          void vscode.window.showErrorMessage(`warpwise: ${message}`, "Open Log").then((pick) => {
            if (pick) {
              this.output.show(true);
            }
          });
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        this.log("the server stopped unexpectedly; restarting it");
        return { action: CloseAction.Restart, handled: true };
      },
    };
  }

  /** Stop the client; `final` says the server stays stopped (otherwise a start follows and the status says so). */
  private async doStop(final: boolean): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const d of this.clientDisposables.splice(0)) {
      d.dispose();
    }
    if (!client) {
      return;
    }
    this.stopping = true;
    try {
      if (client.isRunning()) {
        await client.stop(5_000);
      }
    } catch (error) {
      this.log(`stopping the server: ${String(error)}`);
    } finally {
      this.stopping = false;
      await client.dispose().catch(() => undefined);
    }
    if (final) {
      this.setState({ kind: "stopped", message: "stopped" });
    }
  }

  private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (!event.affectsConfiguration("warpwise")) {
      return;
    }
    if (event.affectsConfiguration("warpwise.interpreter") || event.affectsConfiguration("warpwise.importStrategy")) {
      this.log("warpwise.interpreter or warpwise.importStrategy changed: restarting the server");
      void this.restart();
      return;
    }
    const client = this.languageClient;
    if (client) {
      void client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: serverSettings(vscode.workspace.getConfiguration("warpwise"), this.trusted),
      });
    }
  }

  /** Tell the user why there is no server, with the actions that fix it. */
  private async explain(discovery: Discovery): Promise<void> {
    const message = `warpwise: ${describeDiscovery(discovery)}`;
    const actions: string[] = [];
    if (discovery.kind === "not-installed") {
      actions.push("Install warpwise");
    }
    if (discovery.kind === "untrusted-location") {
      actions.push("Manage Workspace Trust");
    }
    actions.push("Select Interpreter", "Open Log");
    const pick = await vscode.window.showErrorMessage(message, ...actions);
    if (pick === "Install warpwise" && discovery.kind === "not-installed") {
      await this.install(discovery.interpreter.path);
    } else if (pick === "Select Interpreter") {
      await vscode.commands.executeCommand("warpwise.selectInterpreter");
    } else if (pick === "Manage Workspace Trust") {
      await vscode.commands.executeCommand("workbench.trust.manage");
    } else if (pick === "Open Log") {
      this.output.show(true);
    }
  }

  /** Run the install command in a terminal task (so the user sees it) and restart when it succeeds. */
  async install(interpreter?: string): Promise<void> {
    const discovery = this.discovery;
    const python =
      interpreter ?? (discovery && "interpreter" in discovery ? discovery.interpreter.path : undefined);
    if (!python) {
      void vscode.window.showErrorMessage("warpwise: no Python interpreter to install into; select one first.");
      return;
    }
    if (!this.trusted) {
      void vscode.window.showWarningMessage("warpwise: installing packages is disabled in an untrusted workspace.");
      return;
    }
    const template = vscode.workspace
      .getConfiguration("warpwise")
      .get<string>("installCommand", "${interpreter} -m pip install --upgrade ${bundledWheel}");
    const wheel = bundledWheel();
    if (template.includes("${bundledWheel}") && wheel === undefined) {
      void vscode.window.showErrorMessage(
        `warpwise: this copy of the extension carries no warpwise wheel (${BUNDLED_DIR} is empty); set \`warpwise.installCommand\`.`,
      );
      return;
    }
    const line = installCommand(template, python, wheel);
    this.log(`installing: ${line}`);
    const task = new vscode.Task(
      { type: "shell", task: "install-warpwise" },
      vscode.TaskScope.Workspace,
      "install warpwise",
      "warpwise",
      new vscode.ShellExecution(line),
    );
    const execution = await vscode.tasks.executeTask(task);
    const code = await new Promise<number | undefined>((resolve) => {
      const listener = vscode.tasks.onDidEndTaskProcess((e) => {
        if (e.execution === execution) {
          listener.dispose();
          resolve(e.exitCode);
        }
      });
    });
    if (code === 0) {
      this.log("warpwise installed; starting the server");
      await this.restart();
    } else {
      void vscode.window.showErrorMessage(`warpwise: the install command failed (exit code ${String(code)}): ${line}`);
    }
  }

  dispose(): void {
    void this.stop();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

/** Where the VSIX keeps the warpwise wheel (`make vsix` puts it there). */
const BUNDLED_DIR = path.join(__dirname, "..", "bundled");

function bundledWheel(): string | undefined {
  let names: string[] = [];
  try {
    names = readdirSync(BUNDLED_DIR);
  } catch {
    return undefined;
  }
  const name = pickBundledWheel(names);
  return name === undefined ? undefined : path.join(BUNDLED_DIR, name);
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split(/\r?\n/)[0] ?? text;
}
