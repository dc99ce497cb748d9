/**
 * A minimal LSP client over stdio, used before the editor run to ask the real server what it supports
 * (`initialize` capabilities and whether it reports `warpwise/status`), so the report can say which assertions
 * wait for which server feature instead of failing or pretending.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { tmpdir } from "node:os";

type Message = { id?: number | string; method?: string; params?: unknown; result?: unknown; error?: { message: string } };

export class LspSession {
  private buffer = Buffer.alloc(0);
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly notifications: Message[] = [];
  private readonly waiters: Array<{ method: string; resolve: (m: Message) => void }> = [];
  stderr = "";
  exited: number | null | undefined = undefined;

  private readonly child: ChildProcessWithoutNullStreams;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child;
    child.stdout.on("data", (chunk: Buffer) => this.onData(chunk));
    child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    child.on("exit", (code) => {
      this.exited = code;
      for (const p of this.pending.values()) {
        p.reject(new Error(`the server exited (${String(code)}): ${this.stderr.trim().split("\n").pop() ?? ""}`));
      }
      this.pending.clear();
    });
  }

  static start(python: string): LspSession {
    const child = spawn(python, ["-P", "-m", "warpwise", "serve"], {
      cwd: tmpdir(),
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new LspSession(child);
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf("\r\n\r\n");
      if (headerEnd < 0) {
        return;
      }
      const header = this.buffer.subarray(0, headerEnd).toString();
      const length = Number(/Content-Length: (\d+)/i.exec(header)?.[1] ?? "0");
      if (this.buffer.length < headerEnd + 4 + length) {
        return;
      }
      const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString();
      this.buffer = this.buffer.subarray(headerEnd + 4 + length);
      this.onMessage(JSON.parse(body) as Message);
    }
  }

  private onMessage(message: Message): void {
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server: answer the ones a plain client gets (configuration, progress, registration).
      const result = message.method === "workspace/configuration" ? ((message.params as { items?: unknown[] })?.items ?? []).map(() => null) : null;
      this.send({ id: message.id, result });
      return;
    }
    if (message.method !== undefined) {
      const waiter = this.waiters.findIndex((w) => w.method === message.method);
      if (waiter >= 0) {
        this.waiters.splice(waiter, 1)[0]?.resolve(message);
      } else {
        this.notifications.push(message);
      }
      return;
    }
    const pending = this.pending.get(Number(message.id));
    if (pending) {
      this.pending.delete(Number(message.id));
      if (message.error) {
        pending.reject(new Error(message.error.message));
      } else {
        pending.resolve(message.result);
      }
    }
  }

  private send(message: Record<string, unknown>): void {
    const body = JSON.stringify({ jsonrpc: "2.0", ...message });
    this.child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  request(method: string, params: unknown, timeoutMs = 30_000): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.send({ id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    this.send({ method, params });
  }

  /** The first notification of `method` (already received or still to come), or undefined after the timeout. */
  notification(method: string, timeoutMs: number): Promise<Message | undefined> {
    const index = this.notifications.findIndex((m) => m.method === method);
    if (index >= 0) {
      return Promise.resolve(this.notifications.splice(index, 1)[0]);
    }
    return new Promise((resolve) => {
      const waiter = { method, resolve: (m: Message | undefined) => resolve(m) };
      this.waiters.push(waiter);
      setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          resolve(undefined);
        }
      }, timeoutMs).unref();
    });
  }

  async close(): Promise<void> {
    if (this.exited === undefined) {
      try {
        await this.request("shutdown", null, 5_000);
        this.notify("exit", null);
      } catch {
        // A server that cannot shut down cleanly is killed below.
      }
      const exited = new Promise<void>((r) => this.child.once("exit", () => r()));
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
  }
}

export interface ServerFeatures {
  /** Why the server could not be asked, when it could not. */
  error?: string;
  serverInfo?: { name?: string; version?: string };
  capabilities: Record<string, unknown>;
  /** True when the server sent `warpwise/status` after `initialized`. */
  statusNotification: boolean;
}

/** Start the server, initialize, wait briefly for its status notification, and shut it down. */
export async function serverFeatures(python: string): Promise<ServerFeatures> {
  const session = LspSession.start(python);
  try {
    const result = (await session.request(
      "initialize",
      { processId: process.pid, rootUri: null, capabilities: { window: { workDoneProgress: true } }, initializationOptions: {} },
      60_000,
    )) as { capabilities?: Record<string, unknown>; serverInfo?: { name?: string; version?: string } };
    session.notify("initialized", {});
    const status = await session.notification("warpwise/status", 10_000);
    return { serverInfo: result.serverInfo ?? {}, capabilities: result.capabilities ?? {}, statusNotification: status !== undefined };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error), capabilities: {}, statusNotification: false };
  } finally {
    await session.close();
  }
}
