"""The index of public expert lineages (issue 21): which published kernels form a lineage, read from mirrors.

`lineages/public/INDEX.yaml` lists, per lineage of a public repository at a pinned commit, the versions of one
operator in order: file, kernel, line range, what the version adds (our words) and the authors' reported figure.
`lineages/public/expert_changes.yaml` maps every step k -> k+1 to the card ids that name the expert's change
(built-in cards or proposed ones). No public code is stored in this repository: a version's text is read at
analysis time from a mirror, a bare git directory `<owner>+<name>/repo` under a mirrors folder (what the search
tool's fetch produces), at the pinned commit.

    python -m warpwise.lineages.public_index check  --mirrors /work/.mirror   # every kernel found where indexed
    python -m warpwise.lineages.public_index lines  --mirrors /work/.mirror   # (re)write the line ranges
    python -m warpwise.lineages.public_index render                           # INDEX.md from INDEX.yaml
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PUBLIC = Path(__file__).resolve().parent / "public"
INDEX = PUBLIC / "INDEX.yaml"
CHANGES = PUBLIC / "expert_changes.yaml"
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[^\n]*$', re.M)
_MAX_INCLUDE_DEPTH = 8
STEP_KINDS = frozenset({"optimisation", "slower", "refactor", "correctness"})


class PublicIndexError(ValueError):
    """The index or the change mapping is malformed, or a mirror lacks what the index names."""


@dataclass(frozen=True)
class Version:
    """One published version of an operator: where its kernel lives and what it adds."""

    id: str
    file: str
    kernel: str
    adds: str
    lines: tuple[int, int] | None = None
    name_expression: str | None = None
    launch: str | None = None
    reported: dict[str, Any] | None = None
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lineage:
    """Consecutive versions of one operator in one public repository."""

    id: str
    repo: str
    commit: str
    operator: str
    family: str
    problem: str | None
    versions: tuple[Version, ...]
    reported_context: dict[str, Any] = field(default_factory=dict)

    def steps(self) -> list[tuple[Version, Version]]:
        """Return the forward steps (k, k+1) in order."""
        return list(zip(self.versions, self.versions[1:], strict=False))


@dataclass(frozen=True)
class StepChange:
    """The expert's change in one step, as card ids, written from reading the code."""

    lineage: str
    step: tuple[str, str]
    cards: tuple[str, ...]
    note: str
    kind: str = "optimisation"


@dataclass(frozen=True)
class ChangeMap:
    """The mapping from expert steps to card ids, with the proposed card ids it introduces."""

    proposed: dict[str, str]
    steps: tuple[StepChange, ...]

    def for_step(self, lineage: str, a: str, b: str) -> StepChange | None:
        """Return the mapped change of one step, if any."""
        for s in self.steps:
            if s.lineage == lineage and s.step == (a, b):
                return s
        return None


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj or obj[key] in (None, ""):
        raise PublicIndexError(f"{where}: field `{key}` is missing")
    return obj[key]


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PublicIndexError(f"{path}: cannot be read as YAML ({exc})") from exc


def load_index(path: Path = INDEX) -> list[Lineage]:
    """Return the lineages of an index file, validated (pinned commits, unique ids, versions in order)."""
    doc = _read_yaml(path)
    if not isinstance(doc, dict) or doc.get("schema") != 1:
        raise PublicIndexError(f"{path}: expected a mapping with `schema: 1`")
    commits: dict[str, str] = {}
    for r in doc.get("repositories") or []:
        repo, commit = _need(r, "repo", f"{path}: repository"), str(_need(r, "commit", f"{path}: {r.get('repo')}"))
        if not re.fullmatch(r"[0-9a-f]{40}", commit):
            raise PublicIndexError(f"{path}: {repo}: commit {commit!r} is not a 40-digit commit id")
        commits[repo] = commit
    out: list[Lineage] = []
    seen: set[str] = set()
    for raw in doc.get("lineages") or []:
        lid = str(_need(raw, "id", f"{path}: lineage"))
        where = f"{path}: lineage {lid}"
        if lid in seen:
            raise PublicIndexError(f"{where}: the id is used twice")
        seen.add(lid)
        repo = str(_need(raw, "repo", where))
        if repo not in commits:
            raise PublicIndexError(f"{where}: repository {repo} has no pinned commit under `repositories`")
        versions = []
        vids: set[str] = set()
        for v in _need(raw, "versions", where):
            vid = str(_need(v, "id", f"{where}: version"))
            if vid in vids:
                raise PublicIndexError(f"{where}: version {vid} is listed twice")
            vids.add(vid)
            lines = v.get("lines")
            if lines is not None and (len(lines) != 2 or not 1 <= int(lines[0]) <= int(lines[1])):
                raise PublicIndexError(f"{where}: version {vid}: `lines` must be [first, last] with first <= last")
            versions.append(
                Version(
                    id=vid,
                    file=str(_need(v, "file", f"{where}: version {vid}")),
                    kernel=str(_need(v, "kernel", f"{where}: version {vid}")),
                    adds=str(_need(v, "adds", f"{where}: version {vid}")),
                    lines=(int(lines[0]), int(lines[1])) if lines else None,
                    name_expression=v.get("name_expression"),
                    launch=v.get("launch"),
                    reported=v.get("reported"),
                    needs=tuple((v.get("build") or {}).get("needs") or ()),
                )
            )
        if len(versions) < 2:
            raise PublicIndexError(f"{where}: a lineage needs at least two versions")
        out.append(
            Lineage(
                id=lid,
                repo=repo,
                commit=commits[repo],
                operator=str(_need(raw, "operator", where)),
                family=str(_need(raw, "family", where)),
                problem=raw.get("problem"),
                versions=tuple(versions),
                reported_context=dict(raw.get("reported_context") or {}),
            )
        )
    return out


def load_changes(path: Path = CHANGES) -> ChangeMap:
    """Return the expert-change mapping of a file."""
    doc = _read_yaml(path)
    if not isinstance(doc, dict) or doc.get("schema") != 1:
        raise PublicIndexError(f"{path}: expected a mapping with `schema: 1`")
    proposed = {str(k): str(v) for k, v in (doc.get("proposed_cards") or {}).items()}
    steps = []
    for raw in doc.get("steps") or []:
        where = f"{path}: step {raw.get('lineage')} {raw.get('step')}"
        step = str(_need(raw, "step", where))
        if "->" not in step:
            raise PublicIndexError(f"{where}: `step` must read `k -> k+1`")
        a, b = (s.strip() for s in step.split("->", 1))
        cards = raw.get("cards") or []
        if not isinstance(cards, list):
            raise PublicIndexError(f"{where}: `cards` must be a list of card ids ([] when no card names it)")
        kind = str(raw.get("kind") or "optimisation")
        if kind not in STEP_KINDS:
            raise PublicIndexError(f"{where}: `kind` {kind!r} is not one of {', '.join(sorted(STEP_KINDS))}")
        lineage = str(_need(raw, "lineage", where))
        steps.append(StepChange(lineage, (a, b), tuple(map(str, cards)), str(raw.get("note", "")), kind))
    return ChangeMap(proposed, tuple(steps))


def consistency_problems(lineages: list[Lineage], changes: ChangeMap, card_ids: set[str]) -> list[str]:
    """Return what disagrees between the index, the mapping and the card ids (empty when consistent)."""
    problems = []
    by_id = {li.id: li for li in lineages}
    for s in changes.steps:
        li = by_id.get(s.lineage)
        if li is None:
            problems.append(f"step {s.lineage} {s.step[0]} -> {s.step[1]}: no such lineage in the index")
            continue
        if s.step not in {(a.id, b.id) for a, b in li.steps()}:
            problems.append(f"step {s.lineage} {s.step[0]} -> {s.step[1]}: not consecutive versions of the lineage")
        for card in s.cards:
            if card not in card_ids and card not in changes.proposed:
                problems.append(
                    f"step {s.lineage} {s.step[0]} -> {s.step[1]}: card `{card}` is neither built in nor proposed"
                )
    for pid in changes.proposed:
        if pid in card_ids:
            problems.append(f"proposed card `{pid}` already exists as a card")
    return problems


def git_dir(mirrors: Path, repo: str) -> Path:
    """Return the bare git directory of a repository's mirror."""
    return mirrors / repo.replace("/", "+") / "repo"


def read_file(mirrors: Path, repo: str, commit: str, path: str) -> bytes:
    """Return one file of a mirror at a commit (PublicIndexError when the mirror or the file is missing)."""
    gd = git_dir(mirrors, repo)
    if not gd.is_dir():
        raise PublicIndexError(f"no mirror of {repo} at {gd}")
    proc = subprocess.run(
        ["git", f"--git-dir={gd}", "show", f"{commit}:{path}"], capture_output=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PublicIndexError(f"{repo}@{commit[:12]}: {path}: {msg[-1] if msg else 'not found'}")
    return proc.stdout


def _normpath(base: str, rel: str) -> str:
    parts: list[str] = []
    for p in (base.split("/")[:-1] if base else []) + rel.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if parts:
                parts.pop()
            continue
        parts.append(p)
    return "/".join(parts)


def list_files(mirrors: Path, repo: str, commit: str) -> list[str]:
    """Return every path of a mirror at a commit."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir(mirrors, repo)}", "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def version_text(mirrors: Path, lineage: Lineage, version: Version) -> bytes:
    """Return a version's file with the repository's own quoted includes inlined (each once), as analysed.

    An include is looked up beside the including file first, then, as a build's `-I` folder would find it, as the
    one file of the repository whose path ends with the included name.
    """
    done: set[str] = set()
    tree: list[str] = []

    def locate(including: str, name: str) -> str:
        target = _normpath(including, name)
        if not tree:
            tree.extend(list_files(mirrors, lineage.repo, lineage.commit) or [""])
        if target in tree:
            return target
        hits = [p for p in tree if p == name or p.endswith("/" + name.lstrip("./"))]
        return hits[0] if len(hits) == 1 else target

    def expand(path: str, depth: int) -> bytes:
        done.add(path)
        data = read_file(mirrors, lineage.repo, lineage.commit, path)
        if depth >= _MAX_INCLUDE_DEPTH:
            return data

        def sub(m: re.Match[bytes]) -> bytes:
            target = locate(path, m.group(1).decode("utf-8", "replace"))
            if target in done:
                return b""
            try:
                return expand(target, depth + 1)
            except PublicIndexError:
                return m.group(0)  # A header outside the repository (or absent) stays an include.

        return _INCLUDE.sub(sub, data)

    return expand(version.file, 0)


def kernel_lines(text: bytes, kernel: str) -> tuple[int, int] | None:
    """Return the 1-based first and last line of the first definition of kernel `kernel` in a file's text."""
    from warpwise.analyzers.build import analyze_text

    model = analyze_text(text, "<public>")
    for fn in model.functions:
        if fn.name == kernel and fn.is_kernel and fn.body_span is not None:
            first = text.count(b"\n", 0, fn.base) + 1
            last = text.count(b"\n", 0, max(fn.base, fn.base + fn.length - 1)) + 1
            return first, last
    return None


def check_mirrors(lineages: list[Lineage], mirrors: Path) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str]]:
    """Return each version's kernel line range in its mirror, and what could not be found."""
    found: dict[tuple[str, str], tuple[int, int]] = {}
    problems = []
    for li in lineages:
        for v in li.versions:
            try:
                text = read_file(mirrors, li.repo, li.commit, v.file)
            except PublicIndexError as exc:
                problems.append(f"{li.id} {v.id}: {exc}")
                continue
            span = kernel_lines(text, v.kernel)
            if span is None:
                problems.append(f"{li.id} {v.id}: kernel `{v.kernel}` not found in {v.file}")
                continue
            found[(li.id, v.id)] = span
            if v.lines is not None and v.lines != span:
                problems.append(f"{li.id} {v.id}: indexed lines {list(v.lines)} but the kernel is at {list(span)}")
    return found, problems


def write_lines(path: Path, spans: dict[tuple[str, str], tuple[int, int]]) -> None:
    """Rewrite the index with the given line ranges, keeping its leading comment block."""
    text = path.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    doc = yaml.safe_load(text)
    for raw in doc["lineages"]:
        for v in raw["versions"]:
            span = spans.get((raw["id"], str(v["id"])))
            if span is not None:
                v["lines"] = [span[0], span[1]]
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=118)
    path.write_text(header + body, encoding="utf-8")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(lineages: list[Lineage]) -> str:
    """Return the index as Markdown: one table per lineage."""
    out = [
        "# Public expert lineages",
        "",
        "Generated from `INDEX.yaml` by `python -m warpwise.lineages.public_index render`; do not edit by hand.",
        "No code of these repositories is stored here: paths, kernel names, line ranges at the pinned commit, our",
        "descriptions, and the authors' own figures with where they reported them (their GPU, not ours).",
        "",
        "| lineage | repository @ commit | operator | versions |",
        "| --- | --- | --- | --- |",
    ]
    for li in lineages:
        out.append(f"| [{li.id}](#{li.id}) | {li.repo} @ `{li.commit[:12]}` | {li.operator} | {len(li.versions)} |")
    for li in lineages:
        ctx = li.reported_context
        out += ["", f"## {li.id}", "", f"{li.repo} at `{li.commit}`; operator `{li.operator}` ({li.family})."]
        if ctx:
            out.append("Reported: " + ", ".join(f"{k} {v}" for k, v in ctx.items() if v is not None) + ".")
        out += ["", "| version | file | kernel | lines | adds | reported |", "| --- | --- | --- | --- | --- | --- |"]
        for v in li.versions:
            lines = f"{v.lines[0]}-{v.lines[1]}" if v.lines else "?"
            rep = f"{v.reported['value']} {v.reported.get('unit', '')}" if v.reported else ""
            out.append(f"| {v.id} | `{v.file}` | `{v.kernel}` | {lines} | {_cell(v.adds)} | {_cell(rep)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Check the index against mirrors, write its line ranges, or render it as Markdown."""
    ap = argparse.ArgumentParser(prog="python -m warpwise.lineages.public_index", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["check", "lines", "render"])
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors (<owner>+<name>/repo bare git directories)")
    ap.add_argument("--index", type=Path, default=INDEX)
    args = ap.parse_args(argv)
    lineages = load_index(args.index)
    if args.command == "render":
        args.index.with_suffix(".md").write_text(render_markdown(lineages), encoding="utf-8")
        return 0
    if args.mirrors is None:
        ap.error("--mirrors is required for check and lines")
    spans, problems = check_mirrors(lineages, args.mirrors)
    if args.command == "lines":
        write_lines(args.index, spans)
        problems = [p for p in problems if "indexed lines" not in p]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(spans)} kernels found, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
