"""Which rules report on one file, and at what severity: the project configuration's rule settings.

`[tool.warpwise]` (or a `warpwise.toml`) may say, like ruff's configuration:

    select = ["missing-restrict", "scalar-global-access"]   # report only these ("all" for every rule)
    ignore = ["division-by-power-of-two"]                   # never report these
    per-file-ignores = { "tests/**" = ["all"], "*.cuh" = ["missing-launch-bounds"] }
    severity = { "missing-restrict" = "hint", "int32-index-overflow" = "error" }

`per-file-ignores` patterns are gitignore-style globs (`pathspec`), relative to the folder of the configuration
file: `tests/**` is everything under `tests/`, a pattern without a slash (`*.cuh`) matches a file name at any
depth, a leading `/` anchors at the configuration's folder. Command-line `--select` replaces the configured
`select`; command-line `--ignore` adds to the configured `ignore`. The editor's `warpwise.cards.enabled` /
`warpwise.cards.disabled` apply on top: a rule reports only where every layer lets it.

A severity override is the last word on a finding's level: it is applied after warpwise decides a finding's
default severity, by the CLI and the language server alike. Rule ids the configuration names but warpwise does
not know are reported (`RulePolicy.unknown`), never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from warpwise.analyzers.findings import Severity
from warpwise.verify.project import ConfigProblem, ProjectConfig, find_config, load_config

ALL = "all"


@dataclass(frozen=True, slots=True)
class RulePolicy:
    """The rule settings that apply to one file.

    `select` is None when nothing restricts the rules; `ignored` holds the configured `ignore` plus the
    per-file ignores whose pattern matches this file (`ALL` in either means every rule).
    """

    path: str
    config: str | None = None
    select: frozenset[str] | None = None
    ignored: frozenset[str] = frozenset()
    severity: dict[str, Severity] = field(default_factory=dict)
    matched_patterns: tuple[str, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()

    def enabled(self, rule: str) -> bool:
        """Return whether `rule` reports on this file under the configuration."""
        if ALL in self.ignored or rule in self.ignored:
            return False
        return self.select is None or ALL in self.select or rule in self.select

    def severity_of(self, rule: str, default: Severity) -> Severity:
        """Return the configured severity of `rule`, or `default` when the configuration says nothing."""
        return self.severity.get(rule, default)

    def with_cli(self, select: Iterable[str] | None, ignore: Iterable[str]) -> RulePolicy:
        """Return this policy with the command line's `--select` (replaces) and `--ignore` (adds) applied."""
        sel = self.select if select is None else frozenset(select)
        return RulePolicy(
            self.path,
            self.config,
            sel,
            self.ignored | frozenset(ignore),
            self.severity,
            self.matched_patterns,
            self.problems,
        )

    def unknown(self, known: Iterable[str]) -> list[ConfigProblem]:
        """Return a problem for every rule id the configuration names that is not one of `known`."""
        if self.config is None:
            return []
        config = _load(self.config)
        names = {*known, ALL}
        pre = "tool.warpwise." if Path(self.config).name == "pyproject.toml" else ""
        out = []
        for key, ids in (("select", config.select), ("ignore", config.ignore)):
            out += [_unknown(self.config, pre + key, i, names) for i in ids if i not in names]
        for glob, ids in config.per_file_ignores:
            key = f'{pre}per-file-ignores."{glob}"'
            out += [_unknown(self.config, key, i, names) for i in ids if i not in names]
        out += [_unknown(self.config, f"{pre}severity.{r}", r, names) for r, _ in config.severity if r not in names]
        return out

    def describe(self, rule: str) -> str | None:
        """Return where this file's configuration changes `rule` (for a hover), or None when it does not."""
        if self.config is None or rule not in self.severity:
            return None
        return f"severity `{self.severity[rule].value}` from `{self.config}`"


def _unknown(config: str, key: str, rule: str, known: set[str]) -> ConfigProblem:
    hint = ""
    if rule.startswith("warpwise-") and rule.removeprefix("warpwise-") in known:
        hint = f" (write `{rule.removeprefix('warpwise-')}`: the `warpwise-` prefix belongs in NOLINT comments)"
    return ConfigProblem(config, key, f"`{rule}` is not a warpwise rule id{hint} (see `warpwise rules`)")


_CACHE: dict[str, tuple[tuple[int, int], ProjectConfig]] = {}


def _load(path: str) -> ProjectConfig:
    """Load a configuration file once per version of it (its modification time and size)."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (-1, -1)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    config = load_config(path)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[path] = (stamp, config)
    return config


def policy_for(file: str | Path, folders: dict[str, str | None] | None = None) -> RulePolicy:
    """Return the rule settings of `file` from the nearest configuration above it (none: every rule, defaults).

    `folders`, when given, remembers each folder's configuration file for the caller's lifetime (a `check` run
    over a large tree looks each folder up once); the configuration itself is reread when it changes.
    """
    folder = str(Path(file).resolve().parent)
    if folders is not None and folder in folders:
        found = folders[folder]
    else:
        path = find_config(file)
        found = str(path) if path is not None else None
        if folders is not None:
            folders[folder] = found
    if found is None:
        return RulePolicy(str(file))
    config = _load(found)
    return policy_of(config, file)


def policy_of(config: ProjectConfig, file: str | Path) -> RulePolicy:
    """Return the rule settings `config` gives `file` (the per-file globs are relative to the config's folder)."""
    import pathspec

    problems = list(config.problems)
    ignored = set(config.ignore)
    matched: list[str] = []
    root = Path(config.path).parent if config.path else None
    rel = _relative(Path(file), root)
    for glob, ids in config.per_file_ignores:
        try:
            spec = pathspec.GitIgnoreSpec.from_lines([glob])
        except (ValueError, TypeError) as exc:
            problems.append(ConfigProblem(str(config.path), f'per-file-ignores."{glob}"', f"is not a glob: {exc}"))
            continue
        if rel is not None and spec.match_file(rel):
            ignored.update(ids)
            matched.append(glob)
    severity = {rule: Severity(level) for rule, level in config.severity}
    return RulePolicy(
        str(file),
        config.path,
        frozenset(config.select) if config.select else None,
        frozenset(ignored),
        severity,
        tuple(matched),
        tuple(problems),
    )


def _relative(file: Path, root: Path | None) -> str | None:
    """Return `file` relative to `root` in POSIX form, or None when it lies outside it."""
    if root is None:
        return None
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
