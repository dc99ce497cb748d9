/**
 * The server's Python libraries bundled in the VSIX (`bundled/libs`, written by `scripts/bundle_libs.py`): warpwise
 * and its pure-Python dependencies in `libs/`, compiled ones for CPython's stable ABI in `libs/abi3/`, and those
 * built for one CPython X.Y in `libs/cpXY/`. With `warpwise.importStrategy: useBundled` (the default) the server runs
 * as `PYTHONPATH=<those folders> python -m warpwise serve` in any Python the bundle was built for, with nothing
 * installed in it; for another Python, platform or with `fromEnvironment`, the interpreter's own packages are used.
 *
 * Pure: the manifest, the platform and the Python version come in as arguments, so the choice is unit-tested.
 */
import * as path from "node:path";

export type ImportStrategy = "useBundled" | "fromEnvironment";

/** `bundled/libs/bundle.json`: which platform and Pythons the bundle serves. */
export interface BundleManifest {
  platform: string;
  arch: string;
  pythons: string[];
}

/** Parse bundle.json; undefined when it is missing or not a manifest. */
export function parseManifest(text: string | undefined): BundleManifest | undefined {
  if (text === undefined) {
    return undefined;
  }
  try {
    const value = JSON.parse(text) as Partial<BundleManifest>;
    if (typeof value.platform === "string" && typeof value.arch === "string" && Array.isArray(value.pythons)) {
      return { platform: value.platform, arch: value.arch, pythons: value.pythons.map(String) };
    }
  } catch {
    // A damaged manifest is the same as none: the interpreter's packages are used.
  }
  return undefined;
}

/** The PYTHONPATH that runs the bundled server with `python` (version "3.12.4"), or undefined when it cannot. */
export function bundledPythonPath(
  libs: string,
  manifest: BundleManifest | undefined,
  python: string,
  platform: string,
  arch: string,
  strategy: ImportStrategy,
): string | undefined {
  if (strategy !== "useBundled" || manifest === undefined) {
    return undefined;
  }
  if (manifest.platform !== platform || manifest.arch !== arch) {
    return undefined;
  }
  const [major, minor] = python.split(".");
  const version = `${major ?? ""}.${minor ?? ""}`;
  if (!manifest.pythons.includes(version)) {
    return undefined;
  }
  const native = path.join(libs, `cp${major ?? ""}${minor ?? ""}`);
  return [libs, path.join(libs, "abi3"), native].join(path.delimiter);
}
