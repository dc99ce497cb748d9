/**
 * The extension's own settings: the ones the editor client needs before a server exists (which interpreter to
 * start, what to install) and the standard trace switch. The server's settings come from its schema; these are
 * listed first in the Settings editor and are never sent to the server.
 */
import type { ConfigurationProperty } from "./generate";

/** The keys, relative to `warpwise.`, that belong to the client and are not part of the server's settings. */
export const CLIENT_KEYS = ["interpreter", "importStrategy", "installCommand", "trace"] as const;

export const CLIENT_SETTINGS: Record<string, ConfigurationProperty> = {
  "warpwise.interpreter": {
    type: "string",
    default: "",
    markdownDescription:
      "Python interpreter that runs the warpwise language server (`python -m warpwise serve`). Empty: the Python " +
      "extension's active interpreter, else `.venv` in the workspace, else `python3` on `PATH`. " +
      "`${workspaceFolder}` and `~` are expanded. Ignored in an untrusted workspace.",
    scope: "machine-overridable",
    order: 0,
  },
  "warpwise.importStrategy": {
    type: "string",
    enum: ["useBundled", "fromEnvironment"],
    enumDescriptions: [
      "Run the server from the libraries bundled in the extension when they serve the interpreter's Python " +
        "version and this platform (nothing needs to be installed); otherwise use the interpreter's packages.",
      "Always use the warpwise installed in the interpreter.",
    ],
    default: "useBundled",
    markdownDescription:
      "Where the language server's Python libraries come from: the extension's bundled copy (`bundled/libs`) or " +
      "the interpreter's environment.",
    scope: "machine",
    order: 0,
  },
  "warpwise.installCommand": {
    type: "string",
    default: "${interpreter} -m pip install --upgrade ${bundledWheel}",
    markdownDescription:
      "Command offered when warpwise is not installed in the interpreter; it runs in a terminal so you can see it. " +
      "`${interpreter}` is replaced by the interpreter's path, `${bundledWheel}` by the warpwise wheel this " +
      "extension carries (warpwise is not published on a package index; its dependencies come from PyPI).",
    scope: "machine",
    order: 0,
  },
  "warpwise.trace.server": {
    type: "string",
    enum: ["off", "messages", "verbose"],
    enumDescriptions: ["No protocol trace.", "Method names and timings.", "Full messages."],
    default: "off",
    description: "Traces the messages between VS Code and the warpwise language server in the output channel.",
    scope: "window",
    order: 0,
  },
};
