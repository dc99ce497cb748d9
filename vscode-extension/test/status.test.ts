import assert from "node:assert/strict";
import { test } from "node:test";
import { SingleFlight } from "../src/singleFlight";
import { describeState, parseBackendStatus } from "../src/status";
import { RESTRICTED_OVERRIDES, serverSettings } from "../src/serverSettings";
import { commandOutcome, generatedFiles, kernelNameProblem, serverCommandId, SERVER_COMMANDS } from "../src/commands";

test("a GPU, a queue and a running job read as the issue words them", () => {
  const backend = parseBackendStatus({ gpu: { name: "NVIDIA H200" }, queue: 1, running: { kernel: "saxpy", stage: "timing" } });
  const view = describeState({ kind: "running", backend, restricted: false });
  assert.equal(view.text, "$(chip) NVIDIA H200");
  assert.equal(view.detail, "verifying 2 candidates (now: saxpy: timing)");
  assert.equal(view.busy, true);
});

test("no GPU reads as compile-only, idle", () => {
  const view = describeState({ kind: "running", backend: parseBackendStatus({ gpu: null, queue_length: 0 }), restricted: false });
  assert.equal(view.text, "no GPU: compile-only");
  assert.equal(view.detail, "idle");
  assert.equal(view.severity, "information");
});

test("backend errors are shown as errors", () => {
  const view = describeState({
    kind: "running",
    backend: parseBackendStatus({ gpu_found: false, error: "worker crashed (replaced)" }),
    restricted: false,
  });
  assert.equal(view.severity, "error");
  assert.match(view.detail, /^worker crashed \(replaced\); idle/);
});

test("restricted mode says why", () => {
  const view = describeState({ kind: "running", backend: undefined, restricted: true });
  assert.match(view.detail, /untrusted workspace: analysis only, nothing is compiled or run/);
});

test("restarts are not re-entered: concurrent calls join the one in flight", async () => {
  const flight = new SingleFlight<number>();
  let runs = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const op = async (): Promise<number> => {
    runs += 1;
    await gate;
    return runs;
  };
  const a = flight.run(op);
  const b = flight.run(op);
  assert.equal(flight.busy, true);
  release();
  assert.deepEqual(await Promise.all([a, b]), [1, 1]);
  assert.equal(flight.busy, false);
  assert.equal(await flight.run(async () => 7), 7);
  await assert.rejects(flight.run(() => {
    throw new Error("boom");
  }), /boom/);
  assert.equal(flight.busy, false);
});

test("the server gets its own settings only, and restricted ones in an untrusted workspace", () => {
  const section = { interpreter: "/py", installCommand: "x", trace: { server: "off" }, gpu: { backend: "local" }, profile: { onSave: true } };
  assert.deepEqual(serverSettings(section, true), { gpu: { backend: "local" }, profile: { onSave: true } });
  const restricted = serverSettings(section, false);
  assert.deepEqual(restricted, {
    gpu: { backend: "off" },
    profile: { onSave: false },
    verification: { trustedWorkspace: false, trigger: "manual" },
  });
  assert.equal(Object.keys(RESTRICTED_OVERRIDES).length, 4);
});

test("server command ids are matched whatever their spelling", () => {
  const verify = SERVER_COMMANDS[0]!;
  assert.equal(serverCommandId(verify, ["warpwise.verifyKernel"]), "warpwise.verifyKernel");
  assert.equal(serverCommandId(verify, ["warpwise/verify_kernel", "warpwise/clearCache"]), "warpwise/verify_kernel");
  assert.equal(serverCommandId(verify, ["warpwise.server.verifyKernel"]), "warpwise.server.verifyKernel");
  assert.equal(serverCommandId(verify, ["warpwise.clearCache"]), undefined);
});

test("command results become messages or documents", () => {
  assert.deepEqual(commandOutcome("cache cleared (12 results)"), { kind: "message", text: "cache cleared (12 results)", severity: "information" });
  assert.deepEqual(commandOutcome({ markdown: "# lineage" }), { kind: "document", content: "# lineage", language: "markdown" });
  assert.deepEqual(commandOutcome({ ok: false, status: "compile_failed", message: "nvcc failed" }), { kind: "message", text: "nvcc failed", severity: "error" });
  assert.deepEqual(commandOutcome({ ok: false, status: "unavailable", message: "no GPU" }), { kind: "message", text: "no GPU", severity: "warning" });
  assert.deepEqual(commandOutcome({ ok: true, status: "verified", message: "1.7x" }), { kind: "message", text: "1.7x", severity: "information" });
  assert.deepEqual(commandOutcome(null), { kind: "none" });
});

test("the server's own status payload is read: GPU, queue, running job, cards and worker", () => {
  const payload = {
    version: "0.1.0",
    gpu: { found: false, name: null, detail: "no NVIDIA driver" },
    verification: { available: false, detail: "no GPU: compile-only" },
    cards: { available: true, detail: "" },
    queue: { length: 1, running: { id: 3, kind: "profile", title: "Profile vector_ops.cu", state: "running", stage: "compile" } },
    worker: { state: "running", detail: "", restarts: 0, analysisFailures: 0, lastFailure: null },
  };
  const view = describeState({ kind: "running", backend: parseBackendStatus(payload), restricted: false });
  assert.equal(view.text, "no GPU: compile-only");
  assert.equal(view.detail, "Profile vector_ops.cu: compile; 1 more job queued");
  const verifying = parseBackendStatus({ ...payload, queue: { length: 1, running: { kind: "verify", title: "Write `0.5f`", stage: "timing" } } });
  assert.equal(describeState({ kind: "running", backend: verifying, restricted: false }).detail, "verifying 2 candidates (now: Write `0.5f`: timing)");
  const gpu = parseBackendStatus({ ...payload, gpu: { found: true, name: "NVIDIA H200" }, queue: { length: 0, running: null } });
  assert.equal(describeState({ kind: "running", backend: gpu, restricted: false }).text, "$(chip) NVIDIA H200");
  const broken = parseBackendStatus({
    ...payload,
    cards: { available: false, detail: "card x.md: bad field" },
    worker: { state: "stopped", lastFailure: "MemoryError" },
  });
  const brokenView = describeState({ kind: "running", backend: broken, restricted: false });
  assert.equal(brokenView.severity, "error");
  assert.match(brokenView.detail, /^analysis worker stopped: MemoryError; skill cards unavailable: card x\.md: bad field; /);
});

test("the first report, while the server still looks for a GPU, does not claim there is none", () => {
  const looking = parseBackendStatus({ gpu: { found: false, name: null, detail: "looking for a GPU" }, backend: "compile-only", queue: { length: 0 } });
  const view = describeState({ kind: "running", backend: looking, restricted: false });
  assert.equal(view.text, "looking for a GPU");
  assert.equal(view.busy, true);
  const off = parseBackendStatus({ gpu: { found: false, name: null, detail: "no NVIDIA GPU found" }, backend: "off", queue: { length: 0 } });
  assert.equal(describeState({ kind: "running", backend: off, restricted: false }).text, "GPU verification off");
  const none = parseBackendStatus({ gpu: { found: false, name: null, detail: "no NVIDIA GPU found" }, backend: "compile-only", queue: { length: 0 } });
  assert.equal(describeState({ kind: "running", backend: none, restricted: false }).text, "no GPU: compile-only");
});

test("a generated kernel's name is a C identifier, and the answer names the files it wrote", () => {
  assert.equal(kernelNameProblem("scale2"), undefined);
  assert.equal(kernelNameProblem(" _k9 "), undefined);
  assert.match(kernelNameProblem("2x") ?? "", /C identifier/);
  assert.match(kernelNameProblem("soft max") ?? "", /C identifier/);
  assert.match(kernelNameProblem("") ?? "", /Name the kernel/);
  const written = { ok: true, status: "built", kernelUri: "file:///w/scale2.cu", problemUri: "file:///w/scale2.problem.py" };
  assert.deepEqual(generatedFiles(written), { kernel: "file:///w/scale2.cu", problem: "file:///w/scale2.problem.py" });
  assert.equal(generatedFiles({ ok: false, status: "no_llm", message: "no LLM is configured" }), undefined);
  assert.ok(SERVER_COMMANDS.some((c) => c.id === "warpwise.generateKernel" && c.needs === "description" && c.runsCode));
});
