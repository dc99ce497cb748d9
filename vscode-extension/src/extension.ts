/**
 * warpwise for VS Code: starts the warpwise language server (`python -m warpwise serve`) for CUDA files and adds
 * the editor-side parts the protocol does not cover: interpreter discovery, the status item, commands in the
 * palette and the context menu, cancellable progress notifications, and workspace trust.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import {
  type ServerCommand,
  SERVER_COMMANDS,
  commandOutcome,
  generatedFiles,
  kernelNameProblem,
  serverCommandId,
} from "./commands";
import { PYTHON_EXTENSION_ID } from "./host";
import { WarpwiseServer } from "./server";

let server: WarpwiseServer | undefined;

/** Read-only documents the server answers with (a card's lineage), shown without a save prompt on close. */
const DOCUMENT_SCHEME = "warpwise";
const documents = new Map<string, string>();
const documentsChanged = new vscode.EventEmitter<vscode.Uri>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  server = new WarpwiseServer();
  const s = server;
  context.subscriptions.push(
    s,
    vscode.commands.registerCommand("warpwise.restartServer", () => s.restart()),
    vscode.commands.registerCommand("warpwise.showOutput", () => s.output.show(true)),
    vscode.commands.registerCommand("warpwise.installServer", () => s.install()),
    vscode.commands.registerCommand("warpwise.selectInterpreter", () => selectInterpreter()),
    documentsChanged,
    vscode.workspace.registerTextDocumentContentProvider(DOCUMENT_SCHEME, {
      onDidChange: documentsChanged.event,
      provideTextDocumentContent: (uri) => documents.get(uri.path) ?? "",
    }),
    ...SERVER_COMMANDS.map((command) =>
      vscode.commands.registerCommand(command.id, (...args: unknown[]) => runServerCommand(s, command, args)),
    ),
  );
  if (!vscode.workspace.isTrusted) {
    void vscode.window
      .showInformationMessage(
        "warpwise runs in restricted mode in this untrusted workspace: findings and hovers work, but nothing is compiled or run on a GPU until you trust the workspace.",
        "Manage Workspace Trust",
      )
      .then((pick) => pick && vscode.commands.executeCommand("workbench.trust.manage"));
  }
  await s.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}

async function selectInterpreter(): Promise<void> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    const pick = await vscode.window.showQuickPick(
      [
        { label: "Use the Python extension's interpreter", detail: "Select it with Python: Select Interpreter", id: "python" },
        { label: "Set warpwise.interpreter", detail: "A path to a Python with warpwise installed", id: "setting" },
      ],
      { title: "warpwise: which Python runs the language server?" },
    );
    if (pick?.id === "python") {
      await vscode.workspace.getConfiguration("warpwise").update("interpreter", undefined, vscode.ConfigurationTarget.Global);
      await vscode.commands.executeCommand("python.setInterpreter");
      return;
    }
    if (!pick) {
      return;
    }
  }
  await vscode.commands.executeCommand("workbench.action.openSettings", "warpwise.interpreter");
}

async function runServerCommand(s: WarpwiseServer, command: ServerCommand, args: unknown[]): Promise<unknown> {
  if (command.runsCode && !s.trusted) {
    const pick = await vscode.window.showWarningMessage(
      `warpwise cannot ${command.action} here: this workspace is not trusted, and verification compiles and runs its code on a GPU.`,
      "Manage Workspace Trust",
    );
    if (pick) {
      await vscode.commands.executeCommand("workbench.trust.manage");
    }
    return undefined;
  }
  const client = s.languageClient;
  if (!client) {
    const pick = await vscode.window.showErrorMessage(
      `warpwise cannot ${command.action}: the language server is not running.`,
      "Open Log",
      "Restart Server",
    );
    if (pick === "Open Log") {
      s.output.show(true);
    } else if (pick === "Restart Server") {
      await s.restart();
    }
    return undefined;
  }
  const advertised = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  const id = serverCommandId(command, advertised);
  if (!id) {
    void vscode.window.showWarningMessage(
      `warpwise cannot ${command.action}: this version of the server does not provide that command (it offers: ${advertised.join(", ") || "none"}).`,
    );
    return undefined;
  }
  if (command.needs === "description") {
    return generateKernel(client, id, args);
  }
  const serverArgs =
    command.needs === "cursor"
      ? cursorArguments(args, true)
      : command.needs === "document"
        ? cursorArguments(args, false)
        : args.filter(isJsonValue);
  if (serverArgs === undefined) {
    void vscode.window.showWarningMessage(`warpwise: open a CUDA file and put the cursor in a kernel to ${command.action}.`);
    return undefined;
  }
  const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: id, arguments: serverArgs });
  const outcome = commandOutcome(result);
  if (outcome.kind === "message") {
    const text = `warpwise: ${outcome.text}`;
    if (outcome.severity === "error") {
      void vscode.window.showErrorMessage(text);
    } else if (outcome.severity === "warning") {
      void vscode.window.showWarningMessage(text);
    } else {
      void vscode.window.showInformationMessage(text);
    }
  } else if (outcome.kind === "document") {
    const title = /^#\s+(.+)$/m.exec(outcome.content)?.[1]?.replace(/[`/\\]/g, "") ?? command.id;
    const uri = vscode.Uri.from({ scheme: DOCUMENT_SCHEME, path: `/${title}.md` });
    documents.set(uri.path, outcome.content);
    documentsChanged.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, outcome.language);
    await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
  }
  return result;
}

/**
 * Generate a Kernel from a Description: ask for the description and the kernel's name, let the server have the
 * configured LLM write NAME.problem.py and NAME.cu into the active file's workspace folder (checked by the gate),
 * open both, and offer to optimize the kernel.
 */
async function generateKernel(
  client: NonNullable<WarpwiseServer["languageClient"]>,
  id: string,
  args: unknown[],
): Promise<unknown> {
  const given = args[0] !== undefined && isJsonValue(args[0]) ? (args[0] as Record<string, unknown>) : {};
  const description =
    typeof given.description === "string"
      ? given.description
      : await vscode.window.showInputBox({
          title: "warpwise: Generate a Kernel from a Description",
          prompt: "What should the kernel compute? (sizes and data types help)",
          placeHolder: "e.g. row-wise softmax of a 4096 x 4096 float32 matrix",
          ignoreFocusOut: true,
        });
  if (!description) {
    return undefined;
  }
  const name =
    typeof given.name === "string"
      ? given.name
      : await vscode.window.showInputBox({
          title: "warpwise: Generate a Kernel from a Description",
          prompt: "The kernel's name (the files are NAME.cu and NAME.problem.py)",
          validateInput: kernelNameProblem,
          ignoreFocusOut: true,
        });
  if (!name) {
    return undefined;
  }
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder =
    typeof given.folder === "string"
      ? given.folder
      : ((active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0])?.uri.toString();
  const serverArgs = [
    { description, name: name.trim(), ...(folder ? { folder } : {}), ...(active ? { uri: active.toString() } : {}) },
  ];
  const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: id, arguments: serverArgs });
  const outcome = commandOutcome(result);
  const files = generatedFiles(result);
  if (files) {
    const problem = await vscode.workspace.openTextDocument(vscode.Uri.parse(files.problem));
    await vscode.window.showTextDocument(problem, { preview: false, viewColumn: vscode.ViewColumn.Beside });
    const kernel = await vscode.workspace.openTextDocument(vscode.Uri.parse(files.kernel));
    await vscode.window.showTextDocument(kernel, { preview: false, viewColumn: vscode.ViewColumn.One });
  }
  const text = `warpwise: ${outcome.kind === "message" ? outcome.text : "generation finished"}`;
  if (files && (result as Record<string, unknown>).ok === true) {
    const pick = await vscode.window.showInformationMessage(text, "Optimize Kernel");
    if (pick) {
      await vscode.commands.executeCommand("warpwise.optimizeKernel", { uri: files.kernel, kernel: name.trim() });
    }
  } else if (outcome.kind === "message" && outcome.severity === "error") {
    void vscode.window.showErrorMessage(text);
  } else {
    void vscode.window.showWarningMessage(text);
  }
  return result;
}

/** The document and cursor a command applies to: from the arguments (code lens, server) or the active editor. */
function cursorArguments(args: unknown[], withCursor: boolean): unknown[] | undefined {
  const first = args[0];
  if (first !== undefined && !(first instanceof vscode.Uri) && isJsonValue(first)) {
    // Called with the server's own arguments (from a code lens or code action): pass them through.
    return args.filter(isJsonValue);
  }
  const editor = vscode.window.activeTextEditor;
  const uri = first instanceof vscode.Uri ? first : editor?.document.uri;
  if (!uri || !editor || editor.document.uri.toString() !== uri.toString() || !withCursor) {
    return uri ? [{ uri: uri.toString() }] : undefined;
  }
  const position = editor.selection.active;
  return [
    {
      uri: uri.toString(),
      version: editor.document.version,
      position: { line: position.line, character: position.character },
    },
  ];
}

function isJsonValue(value: unknown): boolean {
  if (value === null || ["string", "number", "boolean"].includes(typeof value)) {
    return true;
  }
  if (Array.isArray(value)) {
    return value.every(isJsonValue);
  }
  return typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype;
}
