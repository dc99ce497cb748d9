"""The configuration reference (docs/configuration.md), generated so that it cannot drift from the code.

Three sources, each the single source of truth for its part:
- the editor and server settings: `server/settings.schema.json` (itself generated from `server/settings.py`),
  shipped in the package as `warpwise/server/settings.schema.json`;
- the VS Code client's own settings: the keys of `vscode-extension/package.json` that the server does not read;
- the command line: the argument parser of every `warpwise` subcommand;
- the project configuration file: `warpwise.verify.project.PROJECT_KEYS`, the table its reader accepts.

    python -m warpwise.reference docs/configuration.md           (rewrite it)
    python -m warpwise.reference --check docs/configuration.md   (exit 1 when it is stale; a test runs this)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from warpwise.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "server" / "settings.schema.json"
EXTENSION_MANIFEST = ROOT / "vscode-extension" / "package.json"


def _schema() -> dict[str, Any]:
    """Return the settings schema (from the installed package, else from the source tree)."""
    from importlib import resources

    try:
        return json.loads(resources.files("warpwise.server").joinpath("settings.schema.json").read_text())
    except FileNotFoundError:  # A source tree that was never installed.
        return json.loads(SCHEMA.read_text())


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(prop: dict[str, Any]) -> str:
    t = prop.get("type", "")
    if t == "array":
        return f"array of {prop.get('items', {}).get('type', 'value')}"
    return str(t)


def _constraints(prop: dict[str, Any]) -> str:
    parts = []
    if "enum" in prop:
        descs = prop.get("enumDescriptions") or [""] * len(prop["enum"])
        parts.append("; ".join(f"`{v}`" + (f": {d}" if d else "") for v, d in zip(prop["enum"], descs, strict=False)))
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in prop:
            parts.append(f"{word} {prop[key]}")
    if "pattern" in prop:
        parts.append(prop.get("patternErrorMessage") or f"matches `{prop['pattern']}`")
    return "; ".join(parts)


def _settings_table(props: dict[str, dict[str, Any]]) -> list[str]:
    rows = ["| key | type | default | description | allowed values |", "| --- | --- | --- | --- | --- |"]
    for key in sorted(props):
        prop = props[key]
        desc = prop.get("markdownDescription") or prop.get("description", "")
        rows.append(
            f"| `{key}` | {_type(prop)} | `{json.dumps(prop.get('default'))}` | {_cell(desc)} | "
            f"{_cell(_constraints(prop))} |"
        )
    return rows


def _project_table() -> list[str]:
    from warpwise.verify.project import PROJECT_KEYS

    rows = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    rows += [f"| `{k}` | {t} | `{d}` | {_cell(text)} |" for k, t, d, text in PROJECT_KEYS]
    return rows


def _client_settings(server_keys: set[str]) -> dict[str, dict[str, Any]]:
    """Return the VS Code client's own settings (those the server does not read), when the manifest is at hand."""
    if not EXTENSION_MANIFEST.is_file():
        return {}
    config = json.loads(EXTENSION_MANIFEST.read_text())["contributes"]["configuration"]
    sections = config if isinstance(config, list) else [config]
    return {k: v for s in sections for k, v in s.get("properties", {}).items() if k not in server_keys}


def _cli_sections() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: list[str] = []
    commands = [("warpwise", parser)] + [(f"warpwise {name}", sub.choices[name]) for name in sorted(sub.choices)]
    for name, p in commands:
        options = [a for a in p._actions if a.option_strings and "-h" not in a.option_strings]
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction) and p is not parser]
        out += ["", f"### `{name}`", "", _cell(p.description or "")]
        if options:
            out += ["", "| option | default | description |", "| --- | --- | --- |"]
            for a in options:
                arg = f" {a.metavar or a.dest.upper()}" if a.nargs != 0 else ""
                flags = ", ".join(f"`{o}`{arg}" for o in a.option_strings)
                default = "" if a.default in (None, argparse.SUPPRESS, False) else f"`{a.default}`"
                if isinstance(a.default, set | list | tuple):
                    default = "" if not a.default else f"`{','.join(sorted(map(str, a.default)))}`"
                text = (a.help or "").rstrip(".")
                if a.choices:
                    text += f". One of {', '.join(f'`{c}`' for c in a.choices)}"
                out.append(f"| {flags} | {default} | {_cell(text)} |")
        for n in nested:
            out += ["", "Verbs: " + ", ".join(f"`{v}`" for v in n.choices) + f" (see `{name} VERB --help`)."]
    return out


def render() -> str:
    """Return docs/configuration.md."""
    props = _schema()["properties"]
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m warpwise.reference docs/configuration.md` from server/settings.schema.json, "
        "vscode-extension/package.json and the command-line parser; tests/warpwise/test_reference.py fails when it "
        "is stale. Do not edit by hand. -->",
        "",
        "warpwise is configured in four places:",
        "",
        "- **The project configuration**: `[tool.warpwise]` in the nearest `pyproject.toml`, or a `warpwise.toml` "
        "(or `.warpwise.toml`), found by walking up from each file as ruff finds its configuration; the CLI and "
        "the editor read the same file.",
        "- **Editor settings** (`warpwise.*` in VS Code's settings, or the `initializationOptions` / "
        "`workspace/configuration` answers of any LSP client). An invalid value is reported and replaced by its "
        "default.",
        "- **Command-line options** of each `warpwise` subcommand.",
        "- **Source comments**: `// NOLINT(warpwise-<id>)` and its relatives suppress findings "
        "([suppressions](suppressions.md)).",
        "",
        "## Project configuration",
        "",
        "Keys of `[tool.warpwise]` (in `pyproject.toml`) or of the top level of `warpwise.toml`. A key of the wrong "
        "type or an unknown key is reported with the file and the key, and the default stands in. Build flags: "
        "[verification](verification.md#building-real-projects); rule settings: `warpwise.verify.rule_policy`.",
        "",
        *_project_table(),
        "",
        "```toml",
        "[tool.warpwise]",
        'include-dirs = ["include"]',
        'ignore = ["division-by-power-of-two"]',
        "",
        "[tool.warpwise.per-file-ignores]",
        '"tests/**" = ["all"]                      # gitignore-style, relative to this file',
        '"*.cuh" = ["missing-launch-bounds"]       # no slash: a file name at any depth',
        "",
        "[tool.warpwise.severity]",
        '"missing-restrict" = "hint"',
        '"int32-index-overflow" = "error"',
        "```",
        "",
        "Command-line `--select` replaces the configured `select` and `--ignore` adds to `ignore`; the editor's "
        "`warpwise.cards.enabled` / `warpwise.cards.disabled` apply on top (a rule reports only where every layer "
        "lets it). A severity override applies after warpwise decides a finding's default level, in `check` "
        "(text, JSON, SARIF) and in the editor, whose hover names the file it came from.",
        "",
        "## Editor and language-server settings",
        "",
        "The server reads these (schema: `server/settings.schema.json`, generated from `server/settings.py`).",
        "",
        *_settings_table(props),
    ]
    client = _client_settings(set(props))
    if client:
        lines += [
            "",
            "## VS Code client settings",
            "",
            "Read by the VS Code extension only (how it starts the server).",
            "",
            *_settings_table(client),
        ]
    lines += ["", "## Command line", *_cli_sections(), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the reference file."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"] or ["docs/configuration.md"]
    text = render()
    stale = False
    for raw in paths:
        path = Path(raw)
        if check:
            if not path.is_file() or path.read_text() != text:
                print(f"{path}: stale; run `python -m warpwise.reference {path}`", file=sys.stderr)
                stale = True
        else:
            path.write_text(text)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
