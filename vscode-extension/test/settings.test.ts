import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CLIENT_SETTINGS } from "../src/settings/client";
import {
  type SchemaNode,
  SettingsSchemaError,
  configurationFromSchema,
  diffConfiguration,
} from "../src/settings/generate";

const root = join(__dirname, "..", "..");
const fixture = JSON.parse(readFileSync(join(root, "test", "fixtures", "settings.schema.json"), "utf8")) as SchemaNode;

test("flat, nested, referenced and nullable settings become warpwise.* keys in schema order", () => {
  const config = configurationFromSchema(fixture, {});
  assert.deepEqual(Object.keys(config.properties), [
    "warpwise.gpu.backend",
    "warpwise.verification.rtol",
    "warpwise.verification.budget",
    "warpwise.cards.disabled",
    "warpwise.llm.endpoint",
    "warpwise.env",
  ]);
  assert.deepEqual(
    Object.values(config.properties).map((p) => p.order),
    [0, 1, 2, 3, 4, 5],
  );
});

test("every generated setting has a type, a default, a description and a scope", () => {
  const config = configurationFromSchema(fixture, {});
  for (const [key, p] of Object.entries(config.properties)) {
    assert.ok(p.type, `${key} type`);
    assert.ok("default" in p, `${key} default`);
    assert.ok(p.markdownDescription ?? p.description, `${key} description`);
    assert.ok(p.scope, `${key} scope`);
  }
});

test("enums, constraints, defaults from the enclosing object and scopes are carried over", () => {
  const p = configurationFromSchema(fixture, {}).properties;
  assert.deepEqual(p["warpwise.gpu.backend"]?.enum, ["auto", "off"]);
  assert.deepEqual(p["warpwise.gpu.backend"]?.markdownEnumDescriptions, ["A local GPU when found.", "Never run kernels."]);
  assert.equal(p["warpwise.verification.rtol"]?.default, 0.00001);
  assert.equal(p["warpwise.verification.rtol"]?.exclusiveMinimum, 0);
  assert.equal(p["warpwise.verification.budget"]?.default, 120);
  assert.equal(p["warpwise.verification.budget"]?.minimum, 0);
  assert.deepEqual(p["warpwise.cards.disabled"]?.items, { type: "string" });
  assert.deepEqual(p["warpwise.llm.endpoint"]?.type, ["string", "null"]);
  assert.equal(p["warpwise.llm.endpoint"]?.pattern, "^https?://");
  assert.equal(p["warpwise.llm.endpoint"]?.patternErrorMessage, "an http(s) URL");
  assert.equal(p["warpwise.llm.endpoint"]?.scope, "machine-overridable");
  assert.equal(p["warpwise.gpu.backend"]?.scope, "window");
  assert.deepEqual(p["warpwise.env"]?.additionalProperties, { type: "string" });
});

test("the client's own settings come first and may not be redefined by the server", () => {
  const config = configurationFromSchema(fixture, CLIENT_SETTINGS);
  assert.deepEqual(Object.keys(config.properties).slice(0, Object.keys(CLIENT_SETTINGS).length), Object.keys(CLIENT_SETTINGS));
  const clash: SchemaNode = { type: "object", properties: { interpreter: { type: "string", default: "", description: "x" } } };
  assert.throws(() => configurationFromSchema(clash, CLIENT_SETTINGS, { source: "s.json" }), /s\.json: setting "interpreter" collides/);
});

test("a setting without a description or default is an error that names the file and the setting", () => {
  const noDescription: SchemaNode = { type: "object", properties: { "a.b": { type: "string", default: "" } } };
  assert.throws(
    () => configurationFromSchema(noDescription, {}, { source: "server/settings.schema.json" }),
    (e: unknown) => e instanceof SettingsSchemaError && /server\/settings\.schema\.json: setting "a\.b" has no description/.test(e.message),
  );
  const noDefault: SchemaNode = { type: "object", properties: { c: { type: "number", description: "C." } } };
  assert.throws(() => configurationFromSchema(noDefault, {}), /setting "c" has no default/);
  const badRef: SchemaNode = { type: "object", properties: { d: { $ref: "#/$defs/Missing" } } };
  assert.throws(() => configurationFromSchema(badRef, {}), /"d" refers to #\/\$defs\/Missing/);
  const badScope: SchemaNode = { type: "object", properties: { e: { type: "string", default: "", description: "E.", scope: "global" } } };
  assert.throws(() => configurationFromSchema(badScope, {}), /scope "global"; use one of/);
});

test("the drift check names what changed", () => {
  const config = configurationFromSchema(fixture, CLIENT_SETTINGS);
  assert.deepEqual(diffConfiguration(config, JSON.parse(JSON.stringify(config))), []);
  const edited = JSON.parse(JSON.stringify(config)) as typeof config;
  delete edited.properties["warpwise.env"];
  (edited.properties["warpwise.gpu.backend"] as { default: unknown }).default = "off";
  (edited.properties as Record<string, unknown>)["warpwise.old"] = { type: "string" };
  assert.deepEqual(diffConfiguration(config, edited), [
    "warpwise.gpu.backend: differs from the schema",
    "warpwise.env: missing from package.json",
    "warpwise.old: in package.json but not in the schema",
  ]);
});

test("package.json carries exactly the generated settings (the committed drift check)", (t) => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    contributes: { configuration: unknown };
  };
  const schemaFile = join(root, "..", "server", "settings.schema.json");
  let schema: SchemaNode | undefined;
  try {
    schema = JSON.parse(readFileSync(schemaFile, "utf8")) as SchemaNode;
  } catch {
    t.skip("server/settings.schema.json not found: nothing to compare with");
    return;
  }
  const expected = configurationFromSchema(schema, CLIENT_SETTINGS, { source: "server/settings.schema.json" });
  assert.deepEqual(diffConfiguration(expected, manifest.contributes.configuration), []);
});
