/**
 * The backend state shown in the language status item: which GPU verifies candidates (or that there is none and
 * verification is compile-only), how many candidates are waiting, what runs now, and errors.
 *
 * The server reports its side with the `warpwise/status` notification; the client adds its own states (starting,
 * untrusted workspace, no interpreter, server stopped). Parsing is lenient about the notification's shape so an
 * older or newer server still shows something true; this module is pure and unit-tested.
 */

/** What the server said in its latest `warpwise/status` notification. */
export interface BackendStatus {
  /** The GPU's name, or undefined when no GPU is available. */
  gpu: string | undefined;
  /** The verification backend (`local`, `cluster`, `compile-only`, `off`), when the server names it. */
  backend: string | undefined;
  /** True while the server is still looking for a GPU (its first report after start). */
  searching: boolean;
  /** Candidates waiting in the queue (not counting the running one). */
  queued: number;
  /** What runs now, in words, e.g. "saxpy: timing", and its kind (`verify`, `profile`, ...). */
  running: string | undefined;
  runningKind: string | undefined;
  /** An error the server reports about its backend (worker stopped, cluster unreachable). */
  error: string | undefined;
  /** Things that work only in part (skill cards not loaded, a worker that had to be restarted). */
  warnings: string[];
}

export type ClientState =
  | { kind: "starting"; interpreter?: string }
  | { kind: "running"; backend: BackendStatus | undefined; restricted: boolean }
  | { kind: "no-interpreter"; message: string }
  | { kind: "stopped"; message: string };

export type Severity = "information" | "warning" | "error";

export interface StatusView {
  text: string;
  detail: string;
  severity: Severity;
  busy: boolean;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function count(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) {
    return Math.max(0, Math.trunc(value));
  }
  if (Array.isArray(value)) {
    return value.length;
  }
  if (value && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    return count(obj.length ?? obj.queued ?? obj.size);
  }
  return undefined;
}

interface JobView {
  text: string;
  kind: string | undefined;
}

function describeJob(value: unknown): JobView | undefined {
  if (typeof value === "string") {
    const text = str(value);
    return text ? { text, kind: undefined } : undefined;
  }
  if (!value || typeof value !== "object") {
    return undefined;
  }
  const job = value as Record<string, unknown>;
  const what = str(job.title) ?? str(job.kernel) ?? str(job.candidate) ?? str(job.skill) ?? str(job.id);
  const stage = str(job.stage) ?? str(job.state);
  const text = what && stage ? `${what}: ${stage}` : (what ?? stage);
  return text ? { text, kind: str(job.kind) } : undefined;
}

/**
 * Read a `warpwise/status` notification's params. The server sends
 * `{gpu: {found, name, detail}, verification: {available, detail}, cards: {available, detail},
 *   queue: {length, running}, worker: {state, detail, restarts, lastFailure}}`;
 * flat spellings (`gpu: "name"`, `queue: 2`, `running: "..."`) are read too.
 */
export function parseBackendStatus(params: unknown): BackendStatus {
  const p = (params && typeof params === "object" ? params : {}) as Record<string, unknown>;
  const obj = (value: unknown): Record<string, unknown> =>
    value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const gpuValue = p.gpu;
  let gpu: string | undefined;
  let searching = false;
  if (typeof gpuValue === "string") {
    gpu = str(gpuValue);
  } else {
    const g = obj(gpuValue);
    gpu = g.found === false ? undefined : (str(g.name) ?? str(g.device));
    searching = g.found !== true && g.name == null && /^looking\b/i.test(str(g.detail) ?? "");
  }
  gpu ??= str(p.gpu_name) ?? str(p.gpuName);
  const found = p.gpu_found ?? p.gpuFound ?? p.has_gpu ?? p.hasGpu;
  if (found === false) {
    gpu = undefined;
  }
  const queue = obj(p.queue);
  const running = describeJob(queue.running ?? p.running ?? p.running_job ?? p.runningJob ?? p.job);
  const warnings: string[] = [];
  const cards = obj(p.cards);
  if (cards.available === false) {
    warnings.push(`skill cards unavailable${str(cards.detail) ? `: ${str(cards.detail)}` : ""}`);
  }
  const worker = obj(p.worker);
  let error = str(p.error) ?? str(p.worker_error) ?? str(p.workerError);
  const workerState = str(worker.state);
  const workerWhy = str(worker.lastFailure) ?? str(worker.detail);
  if (workerState === "stopped" || workerState === "crashed") {
    error ??= `analysis worker ${workerState}${workerWhy ? `: ${workerWhy}` : ""}`;
  } else if (workerState === "restarted") {
    const restarts = typeof worker.restarts === "number" ? ` (${worker.restarts}x)` : "";
    warnings.push(`analysis worker restarted${restarts}${workerWhy ? `: ${workerWhy}` : ""}`);
  }
  return {
    gpu,
    backend: str(p.backend) ?? str(p.mode),
    searching,
    queued: count(p.queued ?? p.queue_length ?? p.queueLength ?? p.queue) ?? 0,
    running: running?.text,
    runningKind: running?.kind,
    error,
    warnings,
  };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The words and severity for the language status item. */
export function describeState(state: ClientState): StatusView {
  switch (state.kind) {
    case "starting":
      return {
        text: "warpwise: starting",
        detail: state.interpreter ? `python -m warpwise serve (${state.interpreter})` : "looking for Python",
        severity: "information",
        busy: true,
      };
    case "no-interpreter":
      return { text: "warpwise: no server", detail: state.message, severity: "error", busy: false };
    case "stopped":
      return { text: "warpwise: stopped", detail: state.message, severity: "error", busy: false };
    case "running": {
      if (state.restricted) {
        return {
          text: "$(shield) warpwise: restricted",
          detail: "untrusted workspace: analysis only, nothing is compiled or run",
          severity: "warning",
          busy: false,
        };
      }
      const b = state.backend;
      if (!b) {
        return { text: "warpwise", detail: "server running; GPU state not reported yet", severity: "information", busy: false };
      }
      const text = b.gpu
        ? `$(chip) ${b.gpu}`
        : b.backend === "off"
          ? "GPU verification off"
          : b.backend === "cluster"
            ? "$(server) GPU cluster"
            : b.searching
              ? "looking for a GPU"
              : "no GPU: compile-only";
      const total = b.queued + (b.running ? 1 : 0);
      let detail: string;
      if (total === 0) {
        detail = "idle";
      } else if (b.running && b.runningKind !== undefined && !/verif/.test(b.runningKind)) {
        // A profile or build job is not a candidate; say what it is.
        detail = `${b.running}${b.queued > 0 ? `; ${plural(b.queued, "more job")} queued` : ""}`;
      } else {
        detail = `verifying ${plural(total, "candidate")}${b.running ? ` (now: ${b.running})` : ""}`;
      }
      const problems = [...(b.error ? [b.error] : []), ...b.warnings];
      if (problems.length > 0) {
        detail = `${problems.join("; ")}; ${detail}`;
      }
      const severity = b.error ? "error" : b.warnings.length > 0 ? "warning" : "information";
      return { text, detail, severity, busy: total > 0 || b.searching };
    }
  }
}
