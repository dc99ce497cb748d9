/**
 * The server's commands as editor commands: each has a palette entry and, where it is about the code under the
 * cursor, an entry in the editor's context menu. The extension forwards them with `workspace/executeCommand`,
 * adding the document and cursor, and shows what the server answers.
 */

/** An editor command backed by a server command. */
export interface ServerCommand {
  /** The VS Code command id (package.json). */
  id: string;
  /** Words for messages ("verify a kernel"). */
  action: string;
  /** What the command needs from the editor: the kernel or card under the cursor, a description typed in, or nothing. */
  needs: "cursor" | "document" | "description" | "nothing";
  /** True when the command compiles or runs code, so it is refused in an untrusted workspace. */
  runsCode: boolean;
}

export const SERVER_COMMANDS: readonly ServerCommand[] = [
  { id: "warpwise.verifyKernel", action: "verify the kernel under the cursor", needs: "cursor", runsCode: true },
  { id: "warpwise.optimizeKernel", action: "optimize the kernel under the cursor", needs: "cursor", runsCode: true },
  { id: "warpwise.profileFile", action: "profile the kernels of this file", needs: "document", runsCode: true },
  { id: "warpwise.generateKernel", action: "generate a kernel from a description", needs: "description", runsCode: true },
  { id: "warpwise.showLineage", action: "show the lineage of the skill card under the cursor", needs: "cursor", runsCode: false },
  { id: "warpwise.clearCache", action: "clear the verification cache", needs: "nothing", runsCode: false },
  { id: "warpwise.restartWorker", action: "restart the GPU worker", needs: "nothing", runsCode: false },
];

/** The ids of the commands the extension registers itself (server commands with these ids are not re-registered). */
export const CLIENT_COMMAND_IDS: ReadonlySet<string> = new Set([
  ...SERVER_COMMANDS.map((c) => c.id),
  "warpwise.restartServer",
  "warpwise.showOutput",
  "warpwise.selectInterpreter",
  "warpwise.installServer",
]);

function normalize(id: string): string {
  return id.toLowerCase().replace(/[^a-z]/g, "");
}

/**
 * The server's id for an editor command, among the commands the server advertises. The server may spell it
 * `warpwise.verifyKernel`, `warpwise/verifyKernel` or `warpwise.verify_kernel`; all name the same command.
 */
export function serverCommandId(command: ServerCommand, advertised: readonly string[]): string | undefined {
  const exact = advertised.find((c) => c === command.id);
  if (exact) {
    return exact;
  }
  const wanted = normalize(command.id);
  const suffix = normalize(command.id.replace(/^warpwise\./, ""));
  return advertised.find((c) => normalize(c) === wanted) ?? advertised.find((c) => normalize(c).endsWith(suffix));
}

/** What to do with a command's result: show a line, open a document, or nothing. */
export type CommandOutcome =
  | { kind: "message"; text: string; severity: "information" | "warning" | "error" }
  | { kind: "document"; content: string; language: string }
  | { kind: "none" };

/** Read a server command's result, which may be a string, Markdown, or an object with a message. */
export function commandOutcome(result: unknown): CommandOutcome {
  if (typeof result === "string") {
    return result.includes("\n")
      ? { kind: "document", content: result, language: "markdown" }
      : { kind: "message", text: result, severity: "information" };
  }
  if (result && typeof result === "object") {
    const r = result as Record<string, unknown>;
    const markdown = r.markdown ?? r.content ?? r.report;
    if (typeof markdown === "string" && markdown.trim() !== "") {
      return { kind: "document", content: markdown, language: "markdown" };
    }
    const message = r.message ?? r.summary;
    if (typeof message === "string" && message.trim() !== "") {
      // A failure is an error; a command that could not run here (no GPU, untrusted, no kernel) is a warning.
      const failed = r.error === true || (typeof r.status === "string" && /fail|error|crash|incorrect/.test(r.status));
      const severity = failed ? "error" : r.ok === false ? "warning" : "information";
      return { kind: "message", text: message, severity };
    }
  }
  return { kind: "none" };
}

/** A C identifier, as the server requires for a generated kernel's name (it is also the files' stem). */
export function kernelNameProblem(name: string): string | undefined {
  if (name.trim() === "") {
    return "Name the kernel (it also names NAME.cu and NAME.problem.py).";
  }
  return /^[A-Za-z_]\w*$/.test(name.trim()) ? undefined : "A kernel name is a C identifier: letters, digits and _, not starting with a digit.";
}

/** The files a generation wrote, from the server's answer (none when it wrote nothing). */
export function generatedFiles(result: unknown): { kernel: string; problem: string } | undefined {
  if (!result || typeof result !== "object") {
    return undefined;
  }
  const r = result as Record<string, unknown>;
  return typeof r.kernelUri === "string" && typeof r.problemUri === "string"
    ? { kernel: r.kernelUri, problem: r.problemUri }
    : undefined;
}

