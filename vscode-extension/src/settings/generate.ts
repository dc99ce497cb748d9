/**
 * Settings generation: the server's settings schema is the single source of truth for `warpwise.*` settings.
 *
 * The language server exports its typed settings model as JSON Schema (`server/settings.schema.json`). This module
 * turns that schema into the `contributes.configuration` block of the extension's package.json, the way
 * rust-analyzer generates its package.json configuration from the server's config. Nested objects become dotted
 * keys (`gpu.backend` -> `warpwise.gpu.backend`), so `workspace.getConfiguration("warpwise")` hands back an object
 * with the schema's own shape, ready to be sent as initialization options. A check compares the generated block
 * with the committed package.json and fails when they drift.
 *
 * This module is pure (no `vscode`, no file system) so it can be unit-tested.
 */

/** A JSON Schema node, as far as settings need it. */
export interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  enum?: unknown[];
  const?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
  default?: unknown;
  description?: string;
  markdownDescription?: string;
  title?: string;
  deprecated?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  uniqueItems?: boolean;
  minItems?: number;
  maxItems?: number;
  $defs?: Record<string, SchemaNode>;
  definitions?: Record<string, SchemaNode>;
  /** VS Code scope of the setting; also read from `scope`. */
  "x-vscode-scope"?: string;
  scope?: string;
  "x-enumDescriptions"?: string[];
  enumDescriptions?: string[];
  "x-order"?: number;
  patternErrorMessage?: string;
  [extra: string]: unknown;
}

/** One entry of `contributes.configuration.properties`. */
export interface ConfigurationProperty {
  type: string | string[];
  default: unknown;
  description?: string;
  markdownDescription?: string;
  scope: string;
  order: number;
  enum?: unknown[];
  enumDescriptions?: string[];
  markdownEnumDescriptions?: string[];
  items?: Record<string, unknown>;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  patternErrorMessage?: string;
  format?: string;
  uniqueItems?: boolean;
  minItems?: number;
  maxItems?: number;
  additionalProperties?: unknown;
  properties?: Record<string, unknown>;
  deprecationMessage?: string;
  tags?: string[];
}

/** The `contributes.configuration` block. */
export interface Configuration {
  title: string;
  properties: Record<string, ConfigurationProperty>;
}

/** A schema that cannot be turned into settings; the message names the file and the field. */
export class SettingsSchemaError extends Error {}

export const VSCODE_SCOPES = [
  "application",
  "machine",
  "machine-overridable",
  "window",
  "resource",
  "language-overridable",
] as const;

/** The scope a setting gets when the schema does not name one: per window, like the server process it configures. */
export const DEFAULT_SCOPE = "window";

const CONSTRAINT_KEYS = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "patternErrorMessage",
  "format",
  "uniqueItems",
  "minItems",
  "maxItems",
] as const;

/** Build `contributes.configuration` from the client's own settings followed by the server's schema. */
export function configurationFromSchema(
  serverSchema: SchemaNode | undefined,
  clientSettings: Record<string, ConfigurationProperty>,
  options: { prefix?: string; title?: string; source?: string } = {},
): Configuration {
  const prefix = options.prefix ?? "warpwise";
  const source = options.source ?? "settings schema";
  const properties: Record<string, ConfigurationProperty> = {};
  let order = 0;
  for (const [key, property] of Object.entries(clientSettings)) {
    properties[key] = { ...property, order: order++ };
  }
  if (serverSchema !== undefined) {
    const root = resolve(serverSchema, serverSchema, source, "(root)");
    if (!root.properties) {
      throw new SettingsSchemaError(`${source}: the root has no "properties"; expected an object schema of settings`);
    }
    const leaves = flatten(serverSchema, root, [], undefined, source);
    for (const leaf of leaves) {
      // Keys may be relative (`gpu.backend`) or already carry the section (`warpwise.gpu.backend`).
      const name = leaf.path.join(".");
      const key = name.startsWith(`${prefix}.`) ? name : `${prefix}.${name}`;
      if (key in properties) {
        throw new SettingsSchemaError(
          `${source}: setting "${leaf.path.join(".")}" collides with the extension's own setting "${key}"; rename one`,
        );
      }
      properties[key] = toProperty(serverSchema, leaf, order++, source);
    }
  }
  return { title: options.title ?? "warpwise", properties };
}

interface Leaf {
  path: string[];
  node: SchemaNode;
  /** The default taken from an enclosing object's default when the leaf has none of its own. */
  inheritedDefault: { present: boolean; value: unknown };
}

function flatten(
  rootSchema: SchemaNode,
  node: SchemaNode,
  path: string[],
  parentDefault: { present: boolean; value: unknown } | undefined,
  source: string,
): Leaf[] {
  const leaves: Leaf[] = [];
  const entries = Object.entries(node.properties ?? {});
  entries.sort(([, a], [, b]) => (a["x-order"] ?? 0) - (b["x-order"] ?? 0));
  for (const [name, raw] of entries) {
    const childPath = [...path, name];
    const child = resolve(rootSchema, raw, source, childPath.join("."));
    const inherited = childDefault(parentDefault, node, name);
    if (isNestedGroup(rootSchema, child, source, childPath)) {
      const groupDefault = "default" in child ? { present: true, value: child.default } : inherited;
      leaves.push(...flatten(rootSchema, resolveAll(rootSchema, child, source, childPath.join(".")), childPath, groupDefault, source));
    } else {
      leaves.push({ path: childPath, node: child, inheritedDefault: inherited });
    }
  }
  return leaves;
}

function childDefault(
  parentDefault: { present: boolean; value: unknown } | undefined,
  parent: SchemaNode,
  name: string,
): { present: boolean; value: unknown } {
  const fromParent = parentDefault?.present ? parentDefault.value : parent.default;
  if (fromParent !== null && typeof fromParent === "object" && !Array.isArray(fromParent) && name in fromParent) {
    return { present: true, value: (fromParent as Record<string, unknown>)[name] };
  }
  return { present: false, value: undefined };
}

/** An object with named properties and no free-form keys is a group of settings, not one setting. */
function isNestedGroup(rootSchema: SchemaNode, node: SchemaNode, source: string, path: string[]): boolean {
  const merged = resolveAll(rootSchema, node, source, path.join("."));
  const isObject = merged.type === "object" || (merged.type === undefined && merged.properties !== undefined);
  return isObject && merged.properties !== undefined && !merged.additionalProperties;
}

/** Follow `$ref` (local `#/$defs/...` or `#/definitions/...` only). */
function resolve(rootSchema: SchemaNode, node: SchemaNode, source: string, where: string): SchemaNode {
  let current = node;
  const seen = new Set<string>();
  while (current.$ref !== undefined) {
    const ref = current.$ref;
    if (seen.has(ref)) {
      throw new SettingsSchemaError(`${source}: "${where}" has a circular $ref ${ref}`);
    }
    seen.add(ref);
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const table = match ? (match[1] === "$defs" ? rootSchema.$defs : rootSchema.definitions) : undefined;
    const target = match && table ? table[decodePointer(match[2] ?? "")] : undefined;
    if (!target) {
      throw new SettingsSchemaError(`${source}: "${where}" refers to ${ref}, which is not defined in the schema`);
    }
    // Keywords beside $ref (description, default) override the target's, as in JSON Schema 2019-09 and later.
    const { $ref: _ignored, ...siblings } = current;
    current = { ...target, ...siblings };
  }
  return current;
}

/** Resolve `$ref` and merge a single-branch `allOf` (pydantic wraps referenced models that way). */
function resolveAll(rootSchema: SchemaNode, node: SchemaNode, source: string, where: string): SchemaNode {
  let current = resolve(rootSchema, node, source, where);
  if (current.allOf && current.allOf.length === 1 && current.allOf[0]) {
    const { allOf, ...rest } = current;
    current = { ...resolve(rootSchema, allOf[0] as SchemaNode, source, where), ...rest };
  }
  return current;
}

function decodePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function toProperty(rootSchema: SchemaNode, leaf: Leaf, order: number, source: string): ConfigurationProperty {
  const name = leaf.path.join(".");
  const node = resolveAll(rootSchema, leaf.node, source, name);
  const { types, branch } = typesOf(rootSchema, node, source, name);
  const description = node.markdownDescription ?? node.description;
  if (!description) {
    throw new SettingsSchemaError(
      `${source}: setting "${name}" has no description; give the field a description in the server's settings model`,
    );
  }
  let defaultValue: unknown;
  if ("default" in node) {
    defaultValue = node.default;
  } else if (leaf.inheritedDefault.present) {
    defaultValue = leaf.inheritedDefault.value;
  } else {
    throw new SettingsSchemaError(
      `${source}: setting "${name}" has no default; every setting needs one (give the field a default in the server's settings model)`,
    );
  }
  const scope = node["x-vscode-scope"] ?? node.scope ?? DEFAULT_SCOPE;
  if (!(VSCODE_SCOPES as readonly string[]).includes(scope)) {
    throw new SettingsSchemaError(
      `${source}: setting "${name}" has scope "${scope}"; use one of ${VSCODE_SCOPES.join(", ")}`,
    );
  }
  // The server writes its descriptions in Markdown (identifiers in backticks), so they are shown as Markdown.
  const property: ConfigurationProperty = {
    type: types.length === 1 ? (types[0] as string) : types,
    default: defaultValue,
    markdownDescription: description,
    scope,
    order,
  };
  const enumSource = branch.enum !== undefined ? branch : node;
  const choices = enumChoices(rootSchema, enumSource, source, name);
  if (choices) {
    property.enum = choices.values;
    if (choices.descriptions) {
      property.markdownEnumDescriptions = choices.descriptions;
    }
  }
  for (const key of CONSTRAINT_KEYS) {
    const value = branch[key] ?? node[key];
    if (value !== undefined) {
      (property as unknown as Record<string, unknown>)[key] = value;
    }
  }
  const items = branch.items ?? node.items;
  if (items) {
    property.items = plainSchema(rootSchema, items, source, `${name}[]`);
  }
  const additional = branch.additionalProperties ?? node.additionalProperties;
  if (additional !== undefined && typeof additional === "object") {
    property.additionalProperties = plainSchema(rootSchema, additional, source, `${name}{}`);
  }
  if (node.deprecated) {
    property.deprecationMessage = `Deprecated: ${description}`;
  }
  return property;
}

/** The VS Code `type` of a leaf: its own type, or the union of `anyOf` branches (`X | None` becomes [X, "null"]). */
function typesOf(
  rootSchema: SchemaNode,
  node: SchemaNode,
  source: string,
  name: string,
): { types: string[]; branch: SchemaNode } {
  if (node.type !== undefined) {
    return { types: Array.isArray(node.type) ? [...node.type] : [node.type], branch: node };
  }
  const branches = node.anyOf ?? node.oneOf;
  if (branches && branches.length > 0) {
    const resolved = branches.map((b) => resolveAll(rootSchema, b, source, name));
    const types: string[] = [];
    let main: SchemaNode | undefined;
    for (const b of resolved) {
      const t = b.type ?? (b.enum !== undefined || b.const !== undefined ? inferType(b.enum ?? [b.const]) : undefined);
      if (t === undefined) {
        throw new SettingsSchemaError(`${source}: setting "${name}" has a branch without a type`);
      }
      for (const one of Array.isArray(t) ? t : [t]) {
        if (!types.includes(one)) {
          types.push(one);
        }
      }
      if (b.type !== "null" && main === undefined) {
        main = b;
      }
    }
    // A oneOf of constants is an enum with per-value descriptions.
    return { types, branch: main ?? node };
  }
  if (node.enum !== undefined) {
    return { types: [inferType(node.enum)], branch: node };
  }
  throw new SettingsSchemaError(`${source}: setting "${name}" has no type; give the field a type in the schema`);
}

function inferType(values: unknown[]): string {
  const kinds = new Set(values.map((v) => (v === null ? "null" : Number.isInteger(v) ? "integer" : typeof v)));
  kinds.delete("null");
  if (kinds.size !== 1) {
    return "string";
  }
  const [only] = [...kinds];
  return only === "number" || only === "integer" || only === "boolean" ? only : "string";
}

function enumChoices(
  rootSchema: SchemaNode,
  node: SchemaNode,
  source: string,
  name: string,
): { values: unknown[]; descriptions?: string[] } | undefined {
  if (node.enum !== undefined) {
    const descriptions = node["x-enumDescriptions"] ?? node.enumDescriptions;
    if (descriptions && descriptions.length !== node.enum.length) {
      throw new SettingsSchemaError(
        `${source}: setting "${name}" has ${node.enum.length} enum values but ${descriptions.length} enum descriptions`,
      );
    }
    return descriptions ? { values: [...node.enum], descriptions: [...descriptions] } : { values: [...node.enum] };
  }
  const branches = node.oneOf ?? node.anyOf;
  if (branches && branches.length > 0) {
    const resolved = branches.map((b) => resolveAll(rootSchema, b, source, name));
    if (resolved.every((b) => b.const !== undefined)) {
      return {
        values: resolved.map((b) => b.const),
        descriptions: resolved.map((b) => b.description ?? b.title ?? ""),
      };
    }
  }
  return undefined;
}

/** A nested schema (array items, map values) with references resolved, for VS Code's settings editor. */
function plainSchema(rootSchema: SchemaNode, node: SchemaNode, source: string, where: string): Record<string, unknown> {
  const resolved = resolveAll(rootSchema, node, source, where);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resolved)) {
    if (key === "title" || key === "$defs" || key === "definitions") {
      continue;
    }
    if (key === "properties" && value && typeof value === "object") {
      const props: Record<string, unknown> = {};
      for (const [p, sub] of Object.entries(value as Record<string, SchemaNode>)) {
        props[p] = plainSchema(rootSchema, sub, source, `${where}.${p}`);
      }
      out[key] = props;
    } else if ((key === "items" || key === "additionalProperties") && value && typeof value === "object") {
      out[key] = plainSchema(rootSchema, value as SchemaNode, source, where);
    } else if ((key === "anyOf" || key === "oneOf" || key === "allOf") && Array.isArray(value)) {
      out[key] = (value as SchemaNode[]).map((b) => plainSchema(rootSchema, b, source, where));
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Describe how two configuration blocks differ, one line per setting, or return [] when they are the same. */
export function diffConfiguration(expected: Configuration, actual: unknown): string[] {
  const problems: string[] = [];
  const actualConfig = (actual ?? {}) as Partial<Configuration>;
  if (actualConfig.title !== expected.title) {
    problems.push(`title: expected ${JSON.stringify(expected.title)}, found ${JSON.stringify(actualConfig.title)}`);
  }
  const actualProps = (actualConfig.properties ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(expected.properties)) {
    if (!(key in actualProps)) {
      problems.push(`${key}: missing from package.json`);
    } else if (stableStringify(actualProps[key]) !== stableStringify(expected.properties[key])) {
      problems.push(`${key}: differs from the schema`);
    }
  }
  for (const key of Object.keys(actualProps)) {
    if (!(key in expected.properties)) {
      problems.push(`${key}: in package.json but not in the schema`);
    }
  }
  return problems;
}

function stableStringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}
