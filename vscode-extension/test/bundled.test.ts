import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import { bundledPythonPath, parseManifest } from "../src/bundled";

const manifest = parseManifest('{"platform": "linux", "arch": "x64", "pythons": ["3.11", "3.12", "3.13"]}');

test("the bundle serves the Pythons and the platform it was built for", () => {
  assert.ok(manifest);
  assert.equal(
    bundledPythonPath("/ext/bundled/libs", manifest, "3.12.4", "linux", "x64", "useBundled"),
    ["/ext/bundled/libs", "/ext/bundled/libs/abi3", "/ext/bundled/libs/cp312"].join(path.delimiter),
  );
});

test("another Python, platform or strategy uses the interpreter's own packages", () => {
  assert.equal(bundledPythonPath("/l", manifest, "3.14.0", "linux", "x64", "useBundled"), undefined);
  assert.equal(bundledPythonPath("/l", manifest, "3.12.4", "darwin", "arm64", "useBundled"), undefined);
  assert.equal(bundledPythonPath("/l", manifest, "3.12.4", "linux", "x64", "fromEnvironment"), undefined);
  assert.equal(bundledPythonPath("/l", undefined, "3.12.4", "linux", "x64", "useBundled"), undefined);
});

test("a missing or damaged manifest is no bundle", () => {
  assert.equal(parseManifest(undefined), undefined);
  assert.equal(parseManifest("{not json"), undefined);
  assert.equal(parseManifest('{"platform": "linux"}'), undefined);
});
