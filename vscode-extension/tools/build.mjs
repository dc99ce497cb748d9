// Bundle the extension (and, on request, the build tools and unit tests) with esbuild.
//   node tools/build.mjs               dist/extension.js, with source maps
//   node tools/build.mjs --production  dist/extension.js, minified, for the .vsix
//   node tools/build.mjs --watch       rebuild dist/extension.js on change
//   node tools/build.mjs --tools       out/tools/settings.js (the settings generator)
//   node tools/build.mjs --tests       out/test/*.test.js (unit tests for node --test)
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));
const common = { bundle: true, platform: "node", target: "node20", format: "cjs", logLevel: "warning", absWorkingDir: root };

if (args.has("--tools")) {
  await esbuild.build({ ...common, entryPoints: ["tools/settings.ts"], outfile: "out/tools/settings.js", sourcemap: "inline" });
} else if (args.has("--tests")) {
  const tests = readdirSync(join(root, "test")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    ...common,
    entryPoints: tests.map((f) => `test/${f}`),
    outdir: "out/test",
    sourcemap: "inline",
    // The unit tests cover modules that do not import `vscode`; a test that pulls it in fails loudly here.
    external: [],
  });
} else {
  const production = args.has("--production");
  const options = {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: production,
    sourcemap: production ? false : "linked",
  };
  if (args.has("--watch")) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  } else {
    await esbuild.build(options);
  }
}
