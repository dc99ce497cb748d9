"""Loading and validating skill cards: raw file -> validated header -> compiled `SkillCard`.

A card is a folder, `<card-id>/card.md`, beside its rules module `<card_id>.py` (the card id with underscores:
its matcher, checks, rewrite and the recognisers only it uses) and its `fixtures/`. The registry is the file
system: every folder of `skills/` (and of the extra folders a user names) that holds a `card.md` is a card; the
engine names none. The loader imports each rules module by file path under the stable name
`warpwise.skills.cards.<card_id>`, so its `@matcher` and `@check` decorators register, then validates the header,
resolves its matcher, checks and rewrite, and reports every problem with the file, the field and what to write
instead. Flat `*.md` cards (warpwise layout, rules in the shared engine modules) and `SKILL.md` files (KLineage
layout) in the given folders load as before. A card with problems is left out of the library; the others load.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from pydantic import ValidationError

from warpwise.skills.model import (
    Anchor,
    AnchorKind,
    Applicability,
    CardHeader,
    KLineageHeader,
    Precondition,
    Preconditions,
    Risk,
    Scope,
    Status,
)
from warpwise.skills.regions import CHECKS, MATCHERS

BUILTIN_CARDS = Path(__file__).resolve().parent
CARD_FILE = "card.md"
CARD_MODULES = "warpwise.skills.cards"
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n?(.*)\Z", re.S)
_IMPLEMENTATIONS = ("warpwise.skills.matchers", "warpwise.skills.checks")


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """Why a card could not be loaded: the file, the field, and what to write instead."""

    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


@dataclass(frozen=True)
class SkillCard:
    """A validated, compiled card."""

    header: CardHeader
    body: str
    path: str
    layout: str = "warpwise"
    rewrite_fn: Callable[..., Any] | None = None
    rules: ModuleType | None = None

    @property
    def skill_id(self) -> str:
        """Return the card's id."""
        return self.header.skill_id

    @property
    def applicability(self) -> Applicability:
        """Return the card's declared applicability."""
        return self.header.applicability

    @property
    def has_rewrite(self) -> bool:
        """Return whether the card produces text edits."""
        return self.rewrite_fn is not None and self.header.applicability is not Applicability.DISPLAY_ONLY

    @functools.cached_property
    def matcher(self) -> tuple[Callable[..., Any] | None, dict[str, Any]]:
        """Return the registered matcher function and its arguments, looked up once."""
        return MATCHERS.get(self.header.anchor.matcher), dict(self.header.anchor.args)

    @functools.cached_property
    def checks(self) -> tuple[tuple[Any, Any, str | None, dict[str, Any]], ...]:
        """Return (axis, precondition, check name or None, check arguments) for every precondition, computed once."""
        out = []
        for axis, pre in self.header.preconditions.items():
            ref = pre.check_ref
            out.append((axis, pre, ref.name if ref else None, dict(ref.args) if ref else {}))
        return tuple(out)

    def section(self, title: str) -> str:
        """Return the Markdown body of one `## title` section (empty when absent)."""
        pattern = re.compile(rf"^##\s+{re.escape(title)}\s*$(.*?)(?=^##\s|\Z)", re.M | re.S | re.I)
        m = pattern.search(self.body)
        return m.group(1).strip() if m else ""


@dataclass
class CardLibrary:
    """Every card that loaded, and the problems of those that did not."""

    cards: dict[str, SkillCard] = field(default_factory=dict)
    problems: list[LoadProblem] = field(default_factory=list)

    def __iter__(self):
        return iter(self.cards.values())

    def __len__(self) -> int:
        return len(self.cards)

    def get(self, skill_id: str) -> SkillCard | None:
        """Return one card by id."""
        return self.cards.get(skill_id)


def _register_implementations() -> None:
    for mod in _IMPLEMENTATIONS:
        importlib.import_module(mod)


def split_front_matter(text: str) -> tuple[str, str] | None:
    """Return (YAML header, Markdown body), or None when the text has no `---` front matter."""
    m = _FRONT_MATTER.match(text)
    return (m.group(1), m.group(2)) if m else None


def _loc(err: Any) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "(header)"


def _explain(err: Any) -> str:
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    if kind == "extra_forbidden":
        return "unknown key; remove it or check its spelling against skills/card.schema.json"
    if kind == "missing":
        return "required field is missing"
    return msg


def rules_module_name(card_id: str) -> str:
    """Return the stable module name a card folder's rules module is imported under."""
    return f"{CARD_MODULES}.{card_id.replace('-', '_')}"


def card_rules(card_id: str) -> ModuleType:
    """Return a built-in card's loaded rules module, for a card whose rules build on another card's (its
    recogniser, launches and generators); ImportError when that card's rules are not loaded."""
    mod = sys.modules.get(rules_module_name(card_id))
    if mod is None:
        card = builtin_library().get(card_id)
        mod = card.rules if card is not None else None
    if mod is None:
        raise ImportError(f"the {card_id} card's rules are not loaded")
    return mod


def rules_module_path(folder: Path) -> Path:
    """Return where a card folder's rules module lives: `<card-id>/<card_id>.py`."""
    return folder / f"{folder.name.replace('-', '_')}.py"


def _import_rules(folder: Path) -> tuple[ModuleType | None, list[LoadProblem]]:
    """Import a card folder's rules module once per process (None when the folder has none)."""
    path = rules_module_path(folder)
    others = sorted(p.name for p in folder.glob("*.py") if p != path)
    if others:
        return None, [
            LoadProblem(str(folder / others[0]), "(rules)", f"a card's rules module must be named {path.name}")
        ]
    if not path.is_file():
        return None, []
    name = rules_module_name(folder.name)
    loaded = sys.modules.get(name)
    if loaded is not None:
        # A copy of a loaded card (the same rules text elsewhere) shares the loaded module; other rules under the
        # same card id would register their matchers and checks a second time.
        first = Path(getattr(loaded, "__file__", "") or "")
        try:
            same = first.resolve() == path.resolve() or first.read_bytes() == path.read_bytes()
        except OSError:
            same = False
        if same:
            return loaded, []
        return None, [
            LoadProblem(str(path), "(rules)", f"other rules for card {folder.name!r} are loaded from {first}")
        ]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None, [LoadProblem(str(path), "(rules)", "cannot import the rules module")]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # A broken rules module is a load problem of its card, never a crash of the library.
        del sys.modules[name]
        return None, [
            LoadProblem(str(path), "(rules)", f"the rules module does not import: {type(exc).__name__}: {exc}")
        ]
    return module, []


def _resolve_rewrite(ref: str, rules: ModuleType | None) -> Callable[..., Any]:
    """Resolve `function` or `rules:function` in the card's own rules module, or `package.module:function`."""
    module, sep, name = ref.rpartition(":")
    if not sep or module == "rules":
        if rules is None:
            raise LookupError(f"the card has no rules module to hold {name!r}; write 'package.module:function'")
        mod = rules
    else:
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:  # The module is named by the card file: a wrong name is a load problem.
            raise LookupError(str(exc)) from exc
    fn = getattr(mod, name)
    if not callable(fn):
        raise TypeError(f"{ref} is not callable")
    return fn


def load_card(path: Path) -> tuple[SkillCard | None, list[LoadProblem]]:
    """Load one card file; return the card (or None) and the problems found."""
    _register_implementations()
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [LoadProblem(where, "(file)", f"cannot read the file: {exc}")]
    parts = split_front_matter(text)
    if parts is None:
        return None, [LoadProblem(where, "(file)", "no YAML front matter: start the file with a '---' line")]
    raw_header, body = parts
    try:
        raw = (
            yaml.load(raw_header, Loader=yaml.CSafeLoader)
            if hasattr(yaml, "CSafeLoader")
            else yaml.safe_load(raw_header)
        )
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 2}" if mark is not None else "(header)"
        return None, [LoadProblem(where, at, f"the YAML header does not parse: {getattr(exc, 'problem', exc)}")]
    if not isinstance(raw, dict):
        return None, [LoadProblem(where, "(header)", "the header must be a mapping of keys to values")]
    if path.name == "SKILL.md" or ("anchor" not in raw and "applicability" not in raw):
        return _load_klineage(path, raw, body)
    folder = path.name == CARD_FILE
    rules, problems = _import_rules(path.parent) if folder else (None, [])
    try:
        header = CardHeader.model_validate(raw)
    except ValidationError as exc:
        return None, problems + [LoadProblem(where, _loc(e), _explain(e)) for e in exc.errors()]
    if folder and path.parent.name != header.skill_id:
        problems.append(
            LoadProblem(
                where,
                "skill_id",
                f"the card folder should be named {header.skill_id} ({header.skill_id}/{CARD_FILE}), "
                f"not {path.parent.name}",
            )
        )
    elif not folder and path.stem != header.skill_id:
        problems.append(LoadProblem(where, "skill_id", f"the file should be named {header.skill_id}.md"))
    if header.anchor.matcher not in MATCHERS:
        problems.append(
            LoadProblem(
                where,
                "anchor.matcher",
                f"no matcher named {header.anchor.matcher!r} is "
                f"registered (known: {', '.join(sorted(MATCHERS)) or 'none'})",
            )
        )
    for axis, pre in header.preconditions.items():
        ref = pre.check_ref
        if ref is not None and ref.name not in CHECKS:
            problems.append(
                LoadProblem(
                    where, f"preconditions.{axis.value}.{pre.id}.check", f"no check named {ref.name!r} is registered"
                )
            )
    ids = [p.id for _, p in header.preconditions.items()]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(LoadProblem(where, "preconditions", f"precondition id {dup!r} is used twice"))
    rewrite_fn = None
    if header.rewrite is not None:
        try:
            rewrite_fn = _resolve_rewrite(header.rewrite, rules)
        except (LookupError, AttributeError, TypeError) as exc:
            problems.append(LoadProblem(where, "rewrite", f"{header.rewrite!r} does not import: {exc}"))
    elif header.applicability is not Applicability.DISPLAY_ONLY:
        problems.append(LoadProblem(where, "applicability", "a card without a rewrite must be 'display-only'"))
    if header.applicability is Applicability.SAFE and any(p.check is None for _, p in header.preconditions.items()):
        problems.append(
            LoadProblem(
                where,
                "applicability",
                "a 'safe' card needs a machine check on every precondition; make it 'unsafe' or add checks",
            )
        )
    for section in ("Overview", "When it helps", "When it does not help", "Example"):
        if not re.search(rf"^##\s+{re.escape(section)}\s*$", body, re.M | re.I):
            problems.append(LoadProblem(where, "(body)", f"missing a '## {section}' section"))
    if problems:
        return None, problems
    return SkillCard(header, body, where, "warpwise", rewrite_fn, rules), []


def _load_klineage(path: Path, raw: dict[str, Any], body: str) -> tuple[SkillCard | None, list[LoadProblem]]:
    """Load a KLineage `SKILL.md` as a display-only card (hover documentation and LLM context)."""
    where = str(path)
    try:
        kl = KLineageHeader.model_validate(raw)
    except ValidationError as exc:
        return None, [LoadProblem(where, _loc(e), _explain(e)) for e in exc.errors()]
    skill_id = re.sub(r"[^a-z0-9]+", "-", kl.skill_id.lower()).strip("-") or "unnamed"
    groups: dict[str, list[Precondition]] = {a: [] for a in ("data_types", "layout", "storage", "pipeline", "hardware")}
    items: list[tuple[str | None, str]] = []
    if isinstance(kl.preconditions, dict):
        items = [(axis, t) for axis, texts in kl.preconditions.items() for t in texts]
    else:
        for p in kl.preconditions:
            if isinstance(p, str):
                items.append((None, p))
            elif p.text:
                items.append((p.axis, p.text))
    for i, (axis, text) in enumerate(items):
        key = (axis or "pipeline").lower().replace(" ", "_").replace("-", "_")
        if key in ("datatype", "data_type", "dtype", "types"):
            key = "data_types"
        if key not in groups:
            key = "pipeline"
        groups[key].append(Precondition(id=f"p{i + 1}", text=text if len(text) >= 8 else f"{text} (as stated)"))
    scope = kl.scope
    operators = [scope] if isinstance(scope, str) else list(scope) if isinstance(scope, list) else []
    platforms = ["sm_70+"]
    if isinstance(scope, dict):
        operators = [str(o) for o in scope.get("operators", [])]
        platforms = [str(p) for p in scope.get("platforms", platforms) if re.fullmatch(r"sm_\d{2,3}[a-z]?\+?", str(p))]
    header = CardHeader(
        skill_id=skill_id,
        title=kl.skill_id,
        intent=kl.intent if len(kl.intent) >= 12 else f"{kl.intent} (KLineage skill)",
        status=Status.PREVIEW,
        scope=Scope(operators=operators, platforms=platforms or ["sm_70+"]),
        anchor=Anchor(kind=AnchorKind.KERNEL, matcher="none", description="KLineage skill: documentation only"),
        message=kl.intent,
        preconditions=Preconditions(**groups),
        applicability=Applicability.DISPLAY_ONLY,
        risk=Risk(summary="Not stated by the KLineage skill; verify before applying."),
        references=[{"title": f"KLineage skill {kl.skill_id}", "url": None}],
    )
    return SkillCard(header, body, where, "klineage", None), []


def iter_card_files(dirs: Iterable[Path]) -> list[Path]:
    """Return the card files under the given folders (sorted): each card folder's `card.md`, flat `*.md` cards
    and KLineage `SKILL.md` files; other Markdown inside a card folder is the card's own and is skipped."""
    out: list[Path] = []
    for d in dirs:
        if d.is_file():
            out.append(d)
        elif d.is_dir():
            found = sorted(p for p in d.rglob("*.md") if p.name != "README.md")
            folders = {p.parent for p in found if p.name == CARD_FILE}
            out.extend(p for p in found if p.name == CARD_FILE or not folders.intersection(p.parents))
    return out


def load_library(extra_dirs: Iterable[Path | str] = (), include_builtin: bool = True) -> CardLibrary:
    """Load the built-in cards plus cards from extra folders; duplicates and invalid cards are reported."""
    dirs = ([BUILTIN_CARDS] if include_builtin else []) + [Path(d) for d in extra_dirs]
    lib = CardLibrary()
    for path in iter_card_files(dirs):
        card, problems = load_card(path)
        lib.problems.extend(problems)
        if card is None:
            continue
        if card.skill_id in lib.cards:
            lib.problems.append(
                LoadProblem(
                    str(path), "skill_id", f"duplicate id {card.skill_id!r} (also in {lib.cards[card.skill_id].path})"
                )
            )
            continue
        lib.cards[card.skill_id] = card
    return lib


@functools.cache
def builtin_library() -> CardLibrary:
    """Return the built-in library (loaded once per process)."""
    return load_library()
