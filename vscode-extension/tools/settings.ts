/**
 * Write or check `contributes.configuration` in package.json from the server's settings schema.
 *
 *   node out/tools/settings.js --write   regenerate package.json
 *   node out/tools/settings.js --check   exit 1, naming each drifted setting, when package.json is out of date
 *
 * The schema is `server/settings.schema.json` at the repository root (override with WARPWISE_SETTINGS_SCHEMA).
 * Where the schema does not exist (a checkout without the server), --write generates the extension's own settings
 * only and --check has nothing to compare with, so it says so and passes.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { CLIENT_SETTINGS } from "../src/settings/client";
import {
  type SchemaNode,
  SettingsSchemaError,
  configurationFromSchema,
  diffConfiguration,
} from "../src/settings/generate";

const extensionRoot = resolve(__dirname, "..", "..");
const repoRoot = resolve(extensionRoot, "..");
const schemaPath = process.env.WARPWISE_SETTINGS_SCHEMA ?? join(repoRoot, "server", "settings.schema.json");
const packagePath = join(extensionRoot, "package.json");

function main(): number {
  const mode = process.argv[2];
  if (mode !== "--write" && mode !== "--check") {
    console.error("usage: settings.js --write | --check");
    return 2;
  }
  const shownSchema = relative(repoRoot, schemaPath);
  let schema: SchemaNode | undefined;
  if (existsSync(schemaPath)) {
    schema = JSON.parse(readFileSync(schemaPath, "utf8")) as SchemaNode;
  } else if (mode === "--check") {
    // Without the server's schema there is nothing to compare with; the check runs wherever the schema exists.
    console.warn(`settings: ${shownSchema} not found; package.json settings not checked`);
    return 0;
  } else {
    console.warn(`${shownSchema} does not exist yet; generating the extension's own settings only`);
  }
  let configuration;
  try {
    configuration = configurationFromSchema(schema, CLIENT_SETTINGS, { source: shownSchema });
  } catch (error) {
    if (error instanceof SettingsSchemaError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const text = readFileSync(packagePath, "utf8");
  const manifest = JSON.parse(text) as { contributes?: Record<string, unknown> };
  if (mode === "--check") {
    const problems = diffConfiguration(configuration, manifest.contributes?.configuration);
    if (problems.length > 0) {
      console.error(`vscode-extension/package.json is out of date with ${shownSchema}:`);
      for (const line of problems) {
        console.error(`  ${line}`);
      }
      console.error("Regenerate it with `cd vscode-extension && npm run settings` and commit package.json.");
      return 1;
    }
    console.log(`settings: package.json matches ${schema ? shownSchema : "the extension's own settings"}`);
    return 0;
  }
  manifest.contributes = { ...(manifest.contributes ?? {}), configuration };
  const updated = `${JSON.stringify(manifest, null, 2)}\n`;
  if (updated !== text) {
    writeFileSync(packagePath, updated);
    console.log(`settings: wrote ${Object.keys(configuration.properties).length} settings to package.json`);
  } else {
    console.log("settings: package.json already up to date");
  }
  return 0;
}

process.exitCode = main();
