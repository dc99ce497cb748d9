import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type DiscoveryHost,
  type ProbeResult,
  describeDiscovery,
  discover,
  expandPath,
  insideWorkspace,
  installCommand,
  pickBundledWheel,
  parseProbeOutput,
} from "../src/discovery";

const OK: ProbeResult = { kind: "ok", python: "3.11.7", warpwise: "0.1.0" };
const NO_WARPWISE: ProbeResult = { kind: "no-warpwise", python: "3.12.1", error: "ModuleNotFoundError: No module named 'warpwise'" };

function host(overrides: Partial<DiscoveryHost> & { files?: string[]; probes?: Record<string, ProbeResult>; onPath?: Record<string, string> }): DiscoveryHost {
  const files = new Set(overrides.files ?? []);
  const probes = overrides.probes ?? {};
  const probed: string[] = [];
  return {
    configured: "",
    workspaceFolders: ["/ws"],
    trusted: true,
    home: "/home/u",
    platform: "linux",
    pythonExtensionInterpreter: async () => undefined,
    isFile: (f) => files.has(f),
    which: (name) => overrides.onPath?.[name],
    probe: async (p) => {
      probed.push(p);
      return probes[p] ?? { kind: "not-runnable", error: "ENOENT" };
    },
    ...overrides,
  };
}

test("the setting wins, with ${workspaceFolder} and ~ expanded", async () => {
  const h = host({
    configured: "${workspaceFolder}/.venv/bin/python",
    files: ["/ws/.venv/bin/python", "/usr/bin/python3"],
    probes: { "/ws/.venv/bin/python": OK, "/usr/bin/python3": OK },
    onPath: { python3: "/usr/bin/python3" },
  });
  const result = await discover(h);
  assert.equal(result.kind, "ready");
  assert.equal(result.kind === "ready" && result.interpreter.source, "setting");
  assert.equal(expandPath("~/py/bin/python", h), "/home/u/py/bin/python");
  assert.equal(expandPath("${env:HOME_PY}/python", h, { HOME_PY: "/opt" }), "/opt/python");
});

test("a setting that points at nothing is reported, not silently replaced", async () => {
  const result = await discover(
    host({ configured: "/nope/python", files: ["/usr/bin/python3"], probes: { "/usr/bin/python3": OK }, onPath: { python3: "/usr/bin/python3" } }),
  );
  assert.equal(result.kind, "bad-setting");
  assert.match(describeDiscovery(result), /`warpwise.interpreter` is "\/nope\/python", but \/nope\/python: no such file/);
});

test("without a setting: the Python extension, then the workspace venv, then PATH", async () => {
  const all = {
    files: ["/ws/.venv/bin/python", "/env/bin/python", "/usr/bin/python3"],
    probes: { "/env/bin/python": OK, "/ws/.venv/bin/python": OK, "/usr/bin/python3": OK },
    onPath: { python3: "/usr/bin/python3" },
  };
  const withExtension = await discover(host({ ...all, pythonExtensionInterpreter: async () => "/env/bin/python" }));
  assert.equal(withExtension.kind === "ready" && withExtension.interpreter.source, "python-extension");
  const withoutExtension = await discover(host(all));
  assert.equal(withoutExtension.kind === "ready" && withoutExtension.interpreter.path, "/ws/.venv/bin/python");
  const onlyPath = await discover(host({ ...all, files: ["/usr/bin/python3"] }));
  assert.equal(onlyPath.kind === "ready" && onlyPath.interpreter.source, "path");
});

test("an interpreter without warpwise is skipped for one that has it, and reported when none has", async () => {
  const h = {
    files: ["/ws/.venv/bin/python", "/usr/bin/python3"],
    onPath: { python3: "/usr/bin/python3" },
  };
  const later = await discover(host({ ...h, probes: { "/ws/.venv/bin/python": NO_WARPWISE, "/usr/bin/python3": OK } }));
  assert.equal(later.kind === "ready" && later.interpreter.path, "/usr/bin/python3");
  const none = await discover(host({ ...h, probes: { "/ws/.venv/bin/python": NO_WARPWISE, "/usr/bin/python3": NO_WARPWISE } }));
  assert.equal(none.kind, "not-installed");
  assert.equal(none.kind === "not-installed" && none.interpreter.path, "/ws/.venv/bin/python");
  assert.match(describeDiscovery(none), /the warpwise package is not installed in \/ws\/\.venv\/bin\/python \(Python 3\.12\.1/);
});

test("an old Python is named with the version warpwise needs", async () => {
  const result = await discover(
    host({ files: ["/usr/bin/python3"], onPath: { python3: "/usr/bin/python3" }, probes: { "/usr/bin/python3": { kind: "ok", python: "3.9.18", warpwise: "0.0.1" } } }),
  );
  assert.equal(result.kind, "python-too-old");
  assert.match(describeDiscovery(result), /Python 3\.9\.18; warpwise needs Python 3\.11 or newer/);
});

test("nothing found says what to do", async () => {
  const result = await discover(host({}));
  assert.equal(result.kind, "none-found");
  assert.match(describeDiscovery(result), /set `warpwise.interpreter`/);
});

test("an untrusted workspace never starts an interpreter inside it", async () => {
  const h = {
    trusted: false,
    files: ["/ws/.venv/bin/python", "/usr/bin/python3"],
    probes: { "/ws/.venv/bin/python": OK, "/usr/bin/python3": OK },
    onPath: { python3: "/usr/bin/python3" },
  };
  const fallback = await discover(host(h));
  assert.equal(fallback.kind === "ready" && fallback.interpreter.path, "/usr/bin/python3");
  const onlyInside = await discover(host({ ...h, onPath: {} }));
  assert.equal(onlyInside.kind, "untrusted-location");
  const configuredInside = await discover(host({ ...h, configured: "${workspaceFolder}/.venv/bin/python" }));
  assert.equal(configuredInside.kind, "untrusted-location");
  assert.ok(insideWorkspace("/ws/a/b", ["/ws"]));
  assert.ok(!insideWorkspace("/wsx/a", ["/ws"]));
});

test("the probe's output is read, and garbage is not mistaken for Python", () => {
  assert.deepEqual(parseProbeOutput('{"python": "3.11.7", "warpwise": "0.1.0"}\n', "", 0), OK);
  assert.equal(parseProbeOutput('{"python": "3.11.7", "error": "ImportError: x"}', "", 0).kind, "no-warpwise");
  assert.deepEqual(parseProbeOutput("", "bash: not python\n", 127), { kind: "not-runnable", error: "bash: not python" });
});

test("the install command quotes the interpreter's path when needed", () => {
  assert.equal(installCommand("${interpreter} -m pip install warpwise", "/usr/bin/python3"), "/usr/bin/python3 -m pip install warpwise");
  assert.equal(installCommand("${interpreter} -m pip install warpwise", "/my env/python"), '"/my env/python" -m pip install warpwise');
});

test("the install command can name the wheel the extension carries", () => {
  const template = "${interpreter} -m pip install --upgrade ${bundledWheel}";
  assert.equal(
    installCommand(template, "/usr/bin/python3", "/ext/bundled/warpwise-0.1.0-py3-none-any.whl"),
    "/usr/bin/python3 -m pip install --upgrade /ext/bundled/warpwise-0.1.0-py3-none-any.whl",
  );
  assert.equal(
    installCommand(template, "/usr/bin/python3", "/my ext/bundled/warpwise-0.1.0-py3-none-any.whl"),
    '/usr/bin/python3 -m pip install --upgrade "/my ext/bundled/warpwise-0.1.0-py3-none-any.whl"',
  );
  assert.equal(pickBundledWheel(["README.md", "warpwise-0.1.0-py3-none-any.whl"]), "warpwise-0.1.0-py3-none-any.whl");
  assert.equal(pickBundledWheel(["warpwise-0.1.0.tar.gz", "other-1.0-py3-none-any.whl"]), undefined);
});
