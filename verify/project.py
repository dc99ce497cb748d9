"""Project configuration: the include folders, defines and flags a file is built with, and where they came from.

A kernel is built the way the user's own build builds it. The flags of one file are merged from, in order of
increasing precedence:

1. the project configuration, `[tool.warpwise]` in a `pyproject.toml` or the top level of a `warpwise.toml`
   (or `.warpwise.toml`), the nearest one found by walking up from the file, as ruff finds its configuration;
2. the file's own entry in a `compile_commands.json` (CMake's `CMAKE_EXPORT_COMPILE_COMMANDS`, bear), found
   like clangd finds it: in the file's folder or a parent, or in a `build/` folder beside one of them, or at the
   path the configuration names with `compile-commands`;
3. the editor's settings (`warpwise.build.includeDirs`, `warpwise.build.defines`, ...), mapped onto the same
   model by `flags_from_mapping`;
4. the command line (`-I/--include-dir`, `-D/--define`).

Every source of flags is recorded in `BuildFlags.origins`, so a hover or the CLI can say where a file's flags
came from. Bad input never raises: a malformed `compile_commands.json`, a key of the wrong type or an unreadable
file becomes a `ConfigProblem` naming the file and the key, and the default stands in its place.
"""

from __future__ import annotations

import functools
import json
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

CONFIG_NAMES = (".warpwise.toml", "warpwise.toml", "pyproject.toml")
FAST_MATH_FLAGS = frozenset({"--use_fast_math", "-use_fast_math", "--use-fast-math", "-use-fast-math"})
"""The spellings nvcc and NVRTC accept for fast math (nvcc `--use_fast_math`/`-use_fast_math`, NVRTC also
`--use-fast-math`)."""
_STD_VALUES = frozenset({"c++11", "c++14", "c++17", "c++20", "c++03"})


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """A problem in a configuration source: the file, the key and what is wrong."""

    path: str
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: `{self.key}`" if self.key else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class BuildFlags:
    """The flags one file is built with (include folders absolute), and where each part came from."""

    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    std: str = "c++17"
    nvrtc_flags: tuple[str, ...] = ()
    nvcc_flags: tuple[str, ...] = ()
    arch: str | None = None
    origins: tuple[str, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()

    def merged(self, other: BuildFlags) -> BuildFlags:
        """Return these flags extended by `other` (its include folders and defines come after, so they win)."""
        return BuildFlags(
            include_dirs=tuple(dict.fromkeys(self.include_dirs + other.include_dirs)),
            defines=self.defines + other.defines,
            std=other.std if other.std != "c++17" else self.std,
            nvrtc_flags=self.nvrtc_flags + other.nvrtc_flags,
            nvcc_flags=self.nvcc_flags + other.nvcc_flags,
            arch=other.arch or self.arch,
            origins=self.origins + other.origins,
            problems=self.problems + other.problems,
        )

    def common_options(self) -> tuple[str, ...]:
        """Return the options both compilers take: `-I`, `-D` and `-std`."""
        opts = [f"-I{d}" for d in self.include_dirs]
        opts += [f"-D{d}" for d in self.defines]
        opts.append(f"--std={self.std}")
        return tuple(opts)

    def fast_math(self) -> str | None:
        """Return the flag that makes this build use fast math (`--use_fast_math`, which turns `expf` into
        `__expf`, divisions and square roots into approximations, and denormals into zero), or None."""
        for flag in (*self.nvcc_flags, *self.nvrtc_flags):
            if flag in FAST_MATH_FLAGS:
                return flag
        return None

    def describe(self) -> str:
        """Return one line saying where the flags came from."""
        if not self.origins:
            return "default flags (no project configuration, compile_commands.json or command-line flags)"
        return "flags from " + "; ".join(self.origins)


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """A validated `[tool.warpwise]` table: build flags, card selection and GPU settings."""

    path: str | None = None
    flags: BuildFlags = field(default_factory=BuildFlags)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    compile_commands: str | None = None
    gpu: tuple[tuple[str, str | float | bool], ...] = ()
    problems: tuple[ConfigProblem, ...] = ()
    # `per-file-ignores = { "GLOB" = ["rule-id", ...] }`: gitignore-style globs relative to the file's folder.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # `severity = { "rule-id" = "error" | "warning" | "info" | "hint" }`.
    severity: tuple[tuple[str, str], ...] = ()


def find_config(start: str | Path) -> Path | None:
    """Return the nearest configuration file at or above `start` (a pyproject.toml counts only with the table)."""
    here = Path(start).resolve()
    folder = here if here.is_dir() else here.parent
    for d in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            cand = d / name
            if not cand.is_file():
                continue
            if name != "pyproject.toml":
                return cand
            try:
                data = tomllib.loads(cand.read_text(encoding="utf-8", errors="replace"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if isinstance(data.get("tool"), dict) and "warpwise" in data["tool"]:
                return cand
    return None


def load_config(path: str | Path) -> ProjectConfig:
    """Read and validate one configuration file; problems are reported and replaced by defaults."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return ProjectConfig(str(p), problems=(ConfigProblem(str(p), "", f"cannot be read: {exc.strerror}"),))
    except tomllib.TOMLDecodeError as exc:
        return ProjectConfig(str(p), problems=(ConfigProblem(str(p), "", f"is not valid TOML: {exc}"),))
    table: Any = data
    prefix = ""
    if p.name == "pyproject.toml":
        table = data.get("tool", {}).get("warpwise", {})
        prefix = "tool.warpwise."
    if not isinstance(table, dict):
        return ProjectConfig(str(p), problems=(ConfigProblem(str(p), prefix.rstrip("."), "must be a table"),))
    return _config_from_table(table, p, prefix)


def _config_from_table(table: Mapping[str, Any], path: Path, prefix: str) -> ProjectConfig:
    """Validate a configuration table read from `path`."""
    reader = _Reader(str(path), prefix, path.parent)
    flags = reader.flags(table)
    select = reader.strings(table, "select")
    ignore = reader.strings(table, "ignore")
    per_file = reader.per_file_ignores(table)
    severity = reader.severities(table)
    cc = reader.string(table, "compile-commands")
    gpu: list[tuple[str, str | float | bool]] = []
    raw_gpu = table.get("gpu", {})
    if not isinstance(raw_gpu, dict):
        reader.problem("gpu", "must be a table such as `[tool.warpwise.gpu]`")
    else:
        for k, v in raw_gpu.items():
            why = _gpu_value_problem(str(k), v)
            if why is None:
                gpu.append((str(k), v))
            else:
                reader.problem(f"gpu.{k}", why)
    known = {k for k, *_ in PROJECT_KEYS}
    for k in table:
        if k not in known:
            reader.problem(str(k), f"is not a warpwise setting (known: {', '.join(sorted(known))})")
    cc_path = str((path.parent / cc).resolve()) if cc else None
    flags = replace(flags, origins=(f"{path}",) if _has_flags(table) else (), problems=tuple(reader.problems))
    return ProjectConfig(
        str(path),
        flags,
        select,
        ignore,
        cc_path,
        tuple(gpu),
        problems=tuple(reader.problems),
        per_file_ignores=per_file,
        severity=severity,
    )


SEVERITIES = ("error", "warning", "info", "hint")

# Every key of `[tool.warpwise]` / `warpwise.toml`: (key, TOML type, default, description). The reader accepts
# exactly these, and docs/configuration.md is generated from this table (`warpwise.reference`).
PROJECT_KEYS: tuple[tuple[str, str, str, str], ...] = (
    ("include-dirs", "array of string", "[]", "Include folders for the file's headers, relative to the file."),
    ("defines", "array of string or table", "[]", '`-D` macros: `["BLOCK=128"]` or `{ BLOCK = 128 }`.'),
    ("std", "string", '"c++17"', "The C++ standard: c++03, c++11, c++14, c++17 or c++20."),
    ("nvrtc-flags", "array of string", "[]", "Extra options for NVRTC builds."),
    ("nvcc-flags", "array of string", "[]", "Extra options for nvcc builds (the fallback builder)."),
    ("arch", "string", "the GPU's", "Target architecture such as `sm_90`."),
    (
        "compile-commands",
        "string",
        "found like clangd",
        "A `compile_commands.json`, or the folder holding it, relative to the file.",
    ),
    ("select", "array of string", "[] (every rule)", 'Report only these rule ids (`"all"`: every rule).'),
    ("ignore", "array of string", "[]", 'Never report these rule ids (`"all"`: none at all).'),
    (
        "per-file-ignores",
        "table of glob = array of string",
        "{}",
        "Rule ids not reported on the files a gitignore-style glob matches (relative to this file's folder).",
    ),
    (
        "severity",
        "table of rule id = string",
        "{}",
        "Severity overrides: `error`, `warning`, `info` or `hint`; the last word on a finding's level.",
    ),
    (
        "gpu",
        "table",
        "{}",
        "Defaults of `warpwise verify`, `[tool.warpwise.gpu]`: `backend` (auto, local, compile-only, cluster), "
        "`scheduler` (a Dask address), `seeds` (>= 3), `time-limit` (seconds > 0); command-line options win.",
    ),
)

GPU_BACKENDS = ("auto", "local", "compile-only", "cluster")


def _gpu_value_problem(key: str, value: object) -> str | None:
    """Return why `[tool.warpwise.gpu]`'s `key = value` is not valid, or None when it is."""
    if key == "backend":
        return None if value in GPU_BACKENDS else f"`{value}` is not one of {', '.join(GPU_BACKENDS)}"
    if key == "scheduler":
        return None if isinstance(value, str) and value else "must be a Dask scheduler address such as `tcp://h:8786`"
    if key == "seeds":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 3
        return None if ok else "must be a whole number of at least 3"
    if key == "time-limit":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 86400
        return None if ok else "must be a number of seconds above 0"
    return "is not a GPU setting (known: backend, scheduler, seeds, time-limit)"


_FLAG_KEYS = ("include-dirs", "defines", "std", "nvrtc-flags", "nvcc-flags", "arch")


def _has_flags(table: Mapping[str, Any]) -> bool:
    """Return whether a table sets any build flag."""
    return any(k in table for k in _FLAG_KEYS)


class _Reader:
    """Typed reads from a raw table, collecting problems that name the file and the key."""

    def __init__(self, path: str, prefix: str, base: Path | None) -> None:
        self.path = path
        self.prefix = prefix
        self.base = base
        self.problems: list[ConfigProblem] = []

    def problem(self, key: str, message: str) -> None:
        """Record a problem with one key."""
        self.problems.append(ConfigProblem(self.path, self.prefix + key, message))

    def strings(self, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
        """Return a list of strings, or () with a problem when it has another type."""
        value = table.get(key, [])
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(key, f"must be a list of strings, not {type(value).__name__}")
            return ()
        return tuple(value)

    def string(self, table: Mapping[str, Any], key: str) -> str | None:
        """Return a string, or None with a problem when it has another type."""
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.problem(key, f"must be a string, not {type(value).__name__}")
            return None
        return value

    def per_file_ignores(self, table: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Return `per-file-ignores` as (glob, rule ids) pairs; a bad glob or value is a problem and is skipped."""
        raw = table.get("per-file-ignores", {})
        if not isinstance(raw, dict):
            self.problem("per-file-ignores", 'must be a table such as `{ "tests/**" = ["rule-id"] }`')
            return ()
        out = []
        for glob, ids in raw.items():
            key = f'per-file-ignores."{glob}"'
            if isinstance(ids, str):
                ids = [ids]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                self.problem(key, f"must be a list of rule ids, not {type(ids).__name__}")
                continue
            if not glob.strip():
                self.problem(key, "the pattern is empty")
                continue
            out.append((str(glob), tuple(ids)))
        return tuple(out)

    def severities(self, table: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """Return `severity` as (rule id, level) pairs; an unknown level is a problem and is skipped."""
        raw = table.get("severity", {})
        if not isinstance(raw, dict):
            self.problem("severity", 'must be a table such as `{ "rule-id" = "hint" }`')
            return ()
        out = []
        for rule, level in raw.items():
            if not isinstance(level, str) or level.lower() not in SEVERITIES:
                self.problem(f"severity.{rule}", f"`{level}` is not one of {', '.join(SEVERITIES)}")
                continue
            out.append((str(rule), level.lower()))
        return tuple(out)

    def flags(self, table: Mapping[str, Any]) -> BuildFlags:
        """Return the build flags of a table (include folders resolved against the table's folder)."""
        dirs = []
        for d in self.strings(table, "include-dirs"):
            p = Path(d).expanduser()
            if not p.is_absolute() and self.base is not None:
                p = self.base / p
            dirs.append(str(p.resolve()))
            if not p.is_dir():
                self.problem("include-dirs", f"`{d}` is not a folder")
        raw_defines = table.get("defines", [])
        defines: tuple[str, ...] = ()
        if isinstance(raw_defines, dict):
            out = []
            for k, v in raw_defines.items():
                if isinstance(v, bool):
                    out.append(f"{k}={int(v)}")
                elif isinstance(v, str | int | float):
                    out.append(f"{k}={v}")
                else:
                    self.problem(f"defines.{k}", "must be a string or a number")
            defines = tuple(out)
        else:
            defines = self.strings(table, "defines")
        std = self.string(table, "std") or "c++17"
        std = std.removeprefix("-std=").removeprefix("--std=")
        if std not in _STD_VALUES:
            self.problem("std", f"`{std}` is not one of {', '.join(sorted(_STD_VALUES))}; using c++17")
            std = "c++17"
        arch = self.string(table, "arch")
        if arch is not None and not (arch.startswith("sm_") or arch.startswith("compute_")):
            self.problem("arch", f"`{arch}` is not an architecture such as `sm_90`")
            arch = None
        return BuildFlags(
            tuple(dirs),
            defines,
            std,
            self.strings(table, "nvrtc-flags"),
            self.strings(table, "nvcc-flags"),
            arch,
        )


def flags_from_mapping(raw: Mapping[str, Any], origin: str, base: Path | None = None) -> BuildFlags:
    """Map an editor's or another caller's settings (`includeDirs`/`include-dirs`, `defines`, ...) onto flags."""
    table = {_kebab(k): v for k, v in raw.items()}
    reader = _Reader(origin, "", base)
    flags = reader.flags({k: v for k, v in table.items() if k in _FLAG_KEYS})
    return replace(flags, origins=(origin,) if _has_flags(table) else (), problems=tuple(reader.problems))


def _kebab(key: str) -> str:
    """Return `includeDirs` as `include-dirs`."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in key)


def cli_flags(include_dirs: Iterable[str] = (), defines: Iterable[str] = ()) -> BuildFlags:
    """Return the flags given on the command line (folders resolved against the working directory)."""
    dirs = tuple(str(Path(d).expanduser().resolve()) for d in include_dirs)
    defs = tuple(defines)
    if not dirs and not defs:
        return BuildFlags()
    problems = tuple(
        ConfigProblem("command line", "-I", f"`{d}` is not a folder") for d in dirs if not Path(d).is_dir()
    )
    return BuildFlags(dirs, defs, origins=("the command line",), problems=problems)


def find_compile_commands(start: str | Path) -> Path | None:
    """Return the nearest `compile_commands.json` at or above `start`, or in a `build/` folder beside one."""
    here = Path(start).resolve()
    folder = here if here.is_dir() else here.parent
    for d in (folder, *folder.parents):
        for cand in (d / "compile_commands.json", d / "build" / "compile_commands.json"):
            if cand.is_file():
                return cand
    return None


def compile_commands_flags(db: str | Path, file: str | Path) -> BuildFlags:
    """Return the flags of `file`'s entry in a compilation database, or a problem saying why there are none."""
    p = Path(db)
    target = Path(file).resolve()
    try:
        entries = json.loads(p.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return BuildFlags(problems=(ConfigProblem(str(p), "", f"cannot be read: {exc.strerror}"),))
    except ValueError as exc:
        return BuildFlags(problems=(ConfigProblem(str(p), "", f"is not valid JSON: {exc}"),))
    if not isinstance(entries, list):
        return BuildFlags(problems=(ConfigProblem(str(p), "", "must be a JSON list of entries"),))
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            continue
        directory = Path(entry["directory"]) if isinstance(entry.get("directory"), str) else p.parent
        if not directory.is_absolute():
            directory = p.parent / directory
        fpath = Path(entry["file"])
        if not fpath.is_absolute():
            fpath = directory / fpath
        try:
            same = fpath.resolve() == target
        except OSError:
            same = False
        if not same:
            continue
        args = entry.get("arguments")
        if isinstance(args, list) and all(isinstance(a, str) for a in args):
            argv = list(args)
        elif isinstance(entry.get("command"), str):
            try:
                argv = shlex.split(entry["command"])
            except ValueError as exc:
                msg = f"the command of {target.name} cannot be split: {exc}"
                return BuildFlags(problems=(ConfigProblem(str(p), f"[{i}].command", msg),))
        else:
            msg = f"the entry of {target.name} has neither `arguments` (a list of strings) nor `command`"
            return BuildFlags(problems=(ConfigProblem(str(p), f"[{i}]", msg),))
        flags = parse_command_line(argv[1:], directory)
        return replace(flags, origins=(f"{p} (entry for {target.name})",))
    return BuildFlags()


def parse_command_line(argv: list[str], directory: Path) -> BuildFlags:
    """Return the include folders, defines, standard and architecture of a compiler command line."""
    dirs: list[str] = []
    defines: list[str] = []
    std = "c++17"
    arch: str | None = None
    extra: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a in ("-I", "-isystem", "--include-path", "-iquote") and nxt:
            dirs.append(nxt)
            i += 2
            continue
        if a in ("-D", "--define-macro") and nxt:
            defines.append(nxt)
            i += 2
            continue
        if a.startswith("-isystem") and len(a) > 8:
            dirs.append(a[8:])
        elif a.startswith("-I") and len(a) > 2:
            dirs.append(a[2:])
        elif a.startswith("--include-path="):
            dirs.append(a.split("=", 1)[1])
        elif a.startswith("-D") and len(a) > 2:
            defines.append(a[2:])
        elif a.startswith(("-std=", "--std=")):
            value = a.split("=", 1)[1]
            std = value if value in _STD_VALUES else std
        elif a.startswith(("-arch=", "--gpu-architecture=")):
            value = a.split("=", 1)[1]
            arch = value.replace("compute_", "sm_") if value.startswith(("sm_", "compute_")) else arch
        elif a in ("--expt-relaxed-constexpr", "--expt-extended-lambda", "--extended-lambda") or a in FAST_MATH_FLAGS:
            extra.append(a)
        i += 1
    resolved = tuple(dict.fromkeys(str((directory / d).resolve()) for d in dirs))
    return BuildFlags(resolved, tuple(defines), std, (), tuple(extra), arch)


def flags_for(
    file: str | Path,
    cli: BuildFlags | None = None,
    editor: BuildFlags | None = None,
) -> BuildFlags:
    """Return the merged build flags of one file: configuration, compile_commands.json, editor, command line."""
    flags = BuildFlags()
    config_path = find_config(file)
    config = load_config(config_path) if config_path is not None else None
    if config is not None:
        flags = flags.merged(replace(config.flags, problems=config.problems))
    db: Path | None = None
    if config is not None and config.compile_commands:
        db = Path(config.compile_commands)
        if db.is_dir():
            db = db / "compile_commands.json"
        if not db.is_file():
            problem = ConfigProblem(str(config_path), "compile-commands", f"`{db}` does not exist")
            flags = flags.merged(BuildFlags(problems=(problem,)))
            db = None
    else:
        db = find_compile_commands(file)
    if db is not None:
        flags = flags.merged(compile_commands_flags(db, file))
    if editor is not None:
        flags = flags.merged(editor)
    if cli is not None:
        flags = flags.merged(cli)
    return flags


def fast_math_origin(file: str | Path) -> str | None:
    """Return where the build of `file` asks for fast math (`` `--use_fast_math` in <source>``), or None when its
    project configuration and compile_commands.json entry do not (nvcc's default: precise math). Read through
    `flags_for`, cached by the file and the modification times of the sources it read."""
    try:
        config = find_config(file)
        db = find_compile_commands(file)
        stamp = tuple(_mtime(p) for p in (config, db))
    except OSError:
        return None
    return _fast_math_origin(str(file), stamp)


def _mtime(path: Path | None) -> float | None:
    return path.stat().st_mtime if path is not None else None


@functools.lru_cache(maxsize=256)
def _fast_math_origin(file: str, stamp: tuple[float | None, ...]) -> str | None:
    del stamp  # Part of the cache key only: a changed configuration is read again.
    flags = flags_for(file)
    flag = flags.fast_math()
    if flag is None:
        return None
    return f"`{flag}` in " + ("; ".join(flags.origins) or "the project's flags")
