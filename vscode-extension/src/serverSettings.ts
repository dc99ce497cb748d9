/**
 * What the server is told about settings: the `warpwise` section without the client's own keys, and, in an
 * untrusted workspace, with everything that would compile or run code switched off.
 */
import { CLIENT_KEYS } from "./settings/client";

/** Settings forced in an untrusted workspace, whatever the user configured (keys relative to `warpwise.`). */
export const RESTRICTED_OVERRIDES: Readonly<Record<string, unknown>> = {
  "verification.trustedWorkspace": false,
  "gpu.backend": "off",
  "verification.trigger": "manual",
  "profile.onSave": false,
};

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function setDotted(target: Json, dotted: string, value: unknown): void {
  const parts = dotted.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isObject(next)) {
      node[part] = {};
    }
    node = node[part] as Json;
  }
  node[parts[parts.length - 1] as string] = value;
}

/** A deep copy of a plain JSON value (VS Code's configuration objects are proxies with methods). */
function plain(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

/** The server's view of the `warpwise` section, nested as VS Code reads it (`{gpu: {backend: ...}}`). */
export function serverSettings(section: unknown, trusted: boolean): Json {
  const copy = plain(section);
  const settings: Json = isObject(copy) ? copy : {};
  for (const key of CLIENT_KEYS) {
    delete settings[key];
  }
  // VS Code adds the accessor methods of WorkspaceConfiguration; they are not settings.
  for (const key of ["has", "get", "update", "inspect"]) {
    delete settings[key];
  }
  if (!trusted) {
    for (const [key, value] of Object.entries(RESTRICTED_OVERRIDES)) {
      setDotted(settings, key, value);
    }
  }
  return settings;
}
