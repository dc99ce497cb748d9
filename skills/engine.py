"""Matching cards to code: regions, precondition verdicts, findings, and fixes computed on demand.

`match_file` runs every enabled card's matcher over every function of a file model, checks each
precondition against each region, and keeps the regions where no precondition is violated. The effective
applicability of a match is the card's, lowered to `unsafe` when any precondition is unknown. Fixes are
computed lazily (`compute_fix`): the server does it on `codeAction/resolve`, the CLI on `--fix`/`--diff`.
A card whose matcher, check or rewrite fails is logged and skipped; it never hides the others.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import string
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.findings import Finding, Related, Severity
from warpwise.analyzers.model import FileModel, FunctionKind, Span
from warpwise.skills.library import CardLibrary, SkillCard, builtin_library
from warpwise.skills.model import Applicability
from warpwise.skills.regions import (
    CHECKS,
    MATCHERS,
    CheckContext,
    MatchContext,
    PreconditionVerdict,
    Region,
    Verdict,
    VerdictStatus,
)
from warpwise.skills.rewrite import Edit, Fix, RewriteContext, apply_edits

# Importing it installs the hook through which the shared facts see a run spec's launch (analyzers may not
# import the spec layer).
from warpwise.skills.spec_launch import spec_launch as _spec_launch  # noqa: F401
from warpwise.verify import resources

log = logging.getLogger(__name__)


class _Fields(string.Formatter):
    """Format `{name}` placeholders from region facts, leaving unknown names visible instead of failing."""

    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(key, str):
            return kwargs.get(key, "{" + key + "}")
        return super().get_value(key, args, kwargs)


_FMT = _Fields()


def render(template: str, facts: dict[str, Any]) -> str:
    """Fill a card's message template with a region's facts."""
    try:
        return _FMT.vformat(template, (), facts)
    except (ValueError, IndexError):
        return template


@dataclass(frozen=True)
class Match:
    """One card bound to one region, with every precondition's verdict."""

    card: SkillCard
    region: Region
    message: str
    verdicts: tuple[PreconditionVerdict, ...]
    applicability: Applicability
    related: tuple[Related, ...] = field(default=())
    region_severity: Severity | None = None
    """The severity the region itself earned, when lower than the card's (a matcher's `_severity` fact)."""

    @property
    def card_id(self) -> str:
        """Return the card's id."""
        return self.card.skill_id

    @property
    def function(self) -> str:
        """Return the name of the function the region lies in."""
        return self.region.function.name

    @property
    def span(self) -> Span:
        """Return the region's absolute byte span."""
        return self.region.abs_span

    @property
    def severity(self) -> Severity:
        """Return the severity the card is shown with (the region's own, where its matcher proved less)."""
        return self.region_severity or Severity(self.card.header.severity)

    @property
    def has_rewrite(self) -> bool:
        """Return whether a fix with edits can be computed."""
        return self.card.has_rewrite and self.applicability is not Applicability.DISPLAY_ONLY

    @property
    def fix_title(self) -> str:
        """Return the quick-fix title (without verification state)."""
        template = self.card.header.fix_title or self.card.header.title
        return render(template, dict(self.region.facts))

    @property
    def unknown(self) -> list[PreconditionVerdict]:
        """Return the preconditions that could not be decided."""
        return [v for v in self.verdicts if v.status is VerdictStatus.UNKNOWN]

    def finding(self) -> Finding:
        """Return the match as a finding (the rule id is the card id)."""
        return Finding(
            self.card_id,
            self.severity,
            self.message,
            self.span,
            self.function,
            self.related,
            data={"card": self.card_id, "applicability": self.applicability.value, "key": self.region.key},
        )


def _verdicts(card: SkillCard, ctx: CheckContext) -> tuple[PreconditionVerdict, ...]:
    out: list[PreconditionVerdict] = []
    for axis, pre, name, args in card.checks:
        if name is None:
            out.append(
                PreconditionVerdict(
                    pre.id,
                    axis,
                    pre.text,
                    pre.kind,
                    VerdictStatus.UNKNOWN,
                    "not machine-checkable: confirm it by reading the code",
                    False,
                )
            )
            continue
        fn = CHECKS.get(name)
        if fn is None:
            out.append(
                PreconditionVerdict(
                    pre.id, axis, pre.text, pre.kind, VerdictStatus.UNKNOWN, f"check {name!r} is not available", False
                )
            )
            continue
        try:
            verdict: Verdict = fn(ctx, **args)
        except Exception:  # A failing check is logged; its precondition is unknown, never silently "holds".
            log.exception("check %s of card %s failed", name, card.skill_id)
            verdict = Verdict(VerdictStatus.UNKNOWN, f"check {name!r} failed on this code")
        out.append(PreconditionVerdict(pre.id, axis, pre.text, pre.kind, verdict.status, verdict.reason, True))
    return tuple(out)


def _effective(card: SkillCard, verdicts: Iterable[PreconditionVerdict]) -> Applicability:
    declared = card.header.applicability
    if declared is Applicability.DISPLAY_ONLY or card.rewrite_fn is None:
        return Applicability.DISPLAY_ONLY
    # Only soundness preconditions decide safety; an undecided benefit condition cannot change results.
    if declared is Applicability.SAFE and any(
        v.status is VerdictStatus.UNKNOWN and v.kind == "soundness" for v in verdicts
    ):
        return Applicability.UNSAFE
    return declared


def match_function(model: FileModel, fn: Any, cards: Iterable[SkillCard], target_sm: int = 90) -> list[Match]:
    """Return the matches of the given cards in one function."""
    out: list[Match] = []
    if fn.kind is FunctionKind.HOST:
        return out
    if any(fn.base <= p.span[0] < fn.base + fn.length for p in model.budget_problems):
        # Over the analysis budget: the body is not modelled, so no card can read it (and none reports inside it).
        return out
    mctx = MatchContext(model, fn, target_sm)
    for card in cards:
        m, args = card.matcher
        if m is None:
            continue
        checkpoint()
        try:
            regions = list(m(mctx, **args))
        except Exception:  # One failing card never hides the others.
            log.exception("matcher %s of card %s failed on %s", card.header.anchor.matcher, card.skill_id, fn.name)
            continue
        for region in regions:
            verdicts = _verdicts(card, CheckContext(model, fn, region, target_sm))
            if any(v.status is VerdictStatus.VIOLATED for v in verdicts):
                continue
            facts = {"kernel": fn.name, **region.facts}
            related = tuple(facts.pop("_related", ()) or ())
            severity = facts.pop("_severity", None)
            # A matcher may find a region its card's rewrite does not cover (`_display_only`): shown, never fixed.
            display_only = bool(facts.pop("_display_only", False))
            out.append(
                Match(
                    card,
                    region,
                    render(card.header.message, facts),
                    verdicts,
                    Applicability.DISPLAY_ONLY if display_only else _effective(card, verdicts),
                    related,
                    Severity(severity) if severity else None,
                )
            )
    return out


def match_file(
    model: FileModel,
    library: CardLibrary | None = None,
    enabled: set[str] | None = None,
    target_sm: int = 90,
) -> list[Match]:
    """Return every match of the (enabled) cards in a file, sorted by position."""
    lib = library if library is not None else builtin_library()
    cards = [c for c in lib if enabled is None or c.skill_id in enabled]
    cards = [c for c in cards if c.header.status.value != "deprecated"]
    out: list[Match] = []
    for fn in model.functions:
        out.extend(match_function(model, fn, cards, target_sm))
    out.sort(key=lambda m: (m.span[0], m.card_id))
    return out


def explain(
    model: FileModel, card: SkillCard, target_sm: int = 90
) -> list[tuple[Region, tuple[PreconditionVerdict, ...]]]:
    """Return every region the card's matcher finds, with verdicts, including regions where a precondition fails."""
    out: list[tuple[Region, tuple[PreconditionVerdict, ...]]] = []
    m = MATCHERS.get(card.header.anchor.matcher)
    if m is None:
        return out
    for fn in model.functions:
        if fn.kind is FunctionKind.HOST:
            continue
        for region in m(MatchContext(model, fn, target_sm), **card.header.anchor.args):
            out.append((region, _verdicts(card, CheckContext(model, fn, region, target_sm))))
    return out


def compute_fix(model: FileModel, match: Match) -> Fix | None:
    """Return the fix of a match (None for display-only cards or regions the rewrite does not handle exactly)."""
    if not match.has_rewrite or match.card.rewrite_fn is None:
        return None
    ctx = RewriteContext(model, match.region.function, match.region, dict(match.card.header.anchor.args))
    try:
        edits = match.card.rewrite_fn(ctx)
    except Exception:  # A failing rewrite offers no fix; it is logged with the card and the region.
        log.exception("rewrite of card %s failed at %s", match.card_id, match.region.key)
        return None
    if not edits:
        return None
    edits = sorted(set(edits))
    try:
        apply_edits(model.text, edits)
    except ValueError:
        log.exception("rewrite of card %s produced conflicting edits", match.card_id)
        return None
    return Fix(match.card_id, match.fix_title, tuple(edits), match.applicability)


class Superseded:
    """The model-level findings that card matches supersede: one diagnostic per region and problem.

    A card names in `supersedes` the model-level rules it replaces; where a finding of such a rule lies on the
    card's region (the same span, or one that overlaps it, such as the access inside a loop the card binds to),
    only the card's finding is shown. This is the one place the rule is decided (the CLI and the server both ask it).
    """

    def __init__(self, matches: Iterable[Match]) -> None:
        self._by_rule: dict[str, list[Span]] = {}
        for m in matches:
            for rule in m.card.header.supersedes:
                self._by_rule.setdefault(rule, []).append(m.span)

    def __bool__(self) -> bool:
        return bool(self._by_rule)

    def __contains__(self, key: object) -> bool:
        """Return whether a (rule id, span) finding is superseded by a card on an overlapping region."""
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        rule, (start, end) = key
        return any(s == (start, end) or (s[0] < end and start < s[1]) for s in self._by_rule.get(rule, ()))


def superseded(matches: Iterable[Match]) -> Superseded:
    """Return the model-level findings these matches supersede (test membership with `(rule id, span) in ...`)."""
    return Superseded(matches)


def merge_fixes(fixes: Iterable[Fix]) -> list[Edit]:
    """Return the edits of several fixes, skipping any fix that overlaps one already taken.

    An edit that two fixes share (the same range and text, such as the `#include` line each fix of a file adds at
    its top) is made once, and insertions of one card's fixes at one place are joined: without that, every fix after
    the first overlapped and one pass of a card's fixes was not idempotent (issue 18). An insertion within a line
    that two fixes of one card make at one place is not shared but joined: nested expressions each open their own
    parenthesis there (`t / 8 % 2` becomes `((t >> 3) & 1)`; sharing the one `(` broke the build). A fix whose
    edits are all those of a fix already taken is the same fix twice, and is skipped.
    """
    taken: list[Edit] = []
    seen: set[tuple[Edit, ...]] = set()
    inserted_by: dict[int, str] = {}
    """The card whose fixes inserted text at an offset (insertions of one card at one place are joined)."""
    for fix in fixes:
        if fix.edits in seen:
            continue  # The same fix twice (two regions that give one rewrite).
        seen.add(fix.edits)
        edits = set(taken)
        for e in fix.edits:
            in_line = e.start == e.end and "\n" not in e.text
            if e in edits and not (in_line and inserted_by.get(e.start) == fix.card_id):
                continue
            same = next((t for t in edits if t.start == t.end == e.start), None) if e.start == e.end else None
            if same is not None and inserted_by.get(e.start) == fix.card_id:
                # Two fixes of one card insert at one place (a declaration each, before the same loop): both go in,
                # in fix order; another card's insertion there waits for the next round (its order could matter).
                edits.discard(same)
                edits.add(Edit(e.start, e.start, same.text + e.text))
                continue
            edits.add(e)
        candidate = sorted(edits)
        try:
            apply_edits(b"\0" * (max(e.end for e in candidate) + 1), candidate)
        except ValueError:
            continue
        taken = candidate
        for e in fix.edits:
            if e.start == e.end:
                inserted_by.setdefault(e.start, fix.card_id)
    return taken


def card_rewrites(
    model: FileModel, library: CardLibrary | None = None, enabled: set[str] | None = None
) -> dict[tuple[str, str], tuple[list[Match], bytes]]:
    """Return, per (kernel, card) with a rewrite, its matches and the file with all of them applied.

    One candidate per card and kernel, as verification measures them (the card evidence run, admission, the
    ranking's reading of the verification cache): a kernel's fixes of one card merge into one rewrite. The pairs
    come in the order of their first match.
    """
    groups: dict[tuple[str, str], list[Match]] = {}
    for m in match_file(model, library, enabled):
        if m.has_rewrite and m.function is not None:
            groups.setdefault((m.function, m.card_id), []).append(m)
    out: dict[tuple[str, str], tuple[list[Match], bytes]] = {}
    for (kernel, card), ms in groups.items():
        fn = model.function(kernel)
        if fn is None or not fn.is_kernel:
            continue
        edits = merge_fixes(f for f in (compute_fix(model, m) for m in ms) if f is not None)
        if edits:
            out[(kernel, card)] = (ms, apply_edits(model.text, edits))
    return out


@dataclass
class _Entry:
    model: weakref.ref[FileModel]
    """The model the matches were computed on (weakly: an entry must not keep old versions and their trees)."""
    function: Any
    matches: list[Match]
    anchors: list[tuple[_Anchor | None, ...]]
    asked: list[resources.Lookup] | None = None
    """What the matching was told by the resource builds, when one of them was still pending (else None)."""


_Anchor = tuple[str, Any, int, int, int]
"""Where a related location lies, independent of positions: (function name, kind, length, start, end in it)."""


def _anchor(model: FileModel, rel: Related) -> _Anchor | None:
    holder = model.function_at(rel.span[0])
    if holder is None:
        return None
    return (holder.name, holder.kind, holder.length, rel.span[0] - holder.base, rel.span[1] - holder.base)


def _entry(model: FileModel, fn: Any, matches: list[Match]) -> _Entry:
    anchors = [tuple(_anchor(model, r) for r in m.related) for m in matches]
    return _Entry(weakref.ref(model), fn, matches, anchors)


_WORD = re.compile(r"[A-Za-z_]\w*")
_WORD_BYTES = re.compile(rb"[A-Za-z_]\w*")


class _HostIndex:
    """The host functions of one model, the words each mentions, and the keys of the kernels' launch contexts.

    Built when the host code changes; a `match_file` call whose host functions have the same names and text as
    the previous call's reuses the previous index (and the launch keys it computed), since none of it depends on
    where the host functions sit in the file. Word sets of unchanged host functions are reused from the previous
    index.
    """

    def __init__(self, text: tuple[tuple[str, bytes], ...], memo: dict[bytes, frozenset[bytes]]) -> None:
        self.text = text
        self.hosts: list[tuple[str, bytes, frozenset[bytes]]] = []
        self.digests: list[bytes] = []
        self.by_word: dict[bytes, set[int]] = {}
        self.by_caller: dict[str, set[int]] = {}
        self.keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for name, body in text:
            words = memo.get(body)
            if words is None:
                words = frozenset(_WORD_BYTES.findall(body))
            index = len(self.hosts)
            self.hosts.append((name, body, words))
            self.digests.append(hashlib.blake2b(body, digest_size=16).digest())
            self.by_caller.setdefault(name, set()).add(index)
            for w in words:
                self.by_word.setdefault(w, set()).add(index)


MAX_LAUNCH_KEYS = 4096
"""Launch keys kept per host index (one per kernel and launch context)."""


def _host_text(model: FileModel) -> tuple[tuple[str, bytes], ...]:
    """Return the name and text of every host function, in file order."""
    return tuple(
        (h.name, model.text[h.base : h.base + h.length]) for h in model.functions if h.kind is FunctionKind.HOST
    )


def _launches(model: FileModel) -> dict[str, list[Any]]:
    """Return the launches of every kernel, wherever they are."""
    out: dict[str, list[Any]] = {}
    for f in model.functions:
        for launch in f.launches:
            out.setdefault(launch.kernel, []).append(launch)
    return out


def _launch_key(fn: Any, launches: list[Any], hosts: _HostIndex) -> tuple[Any, ...]:
    """Key the launch context of a kernel: each launch's arguments and geometry, and the host code around it.

    Checks read the launching host functions too (allocation sizes, alignment, `dim3` declarations), so the text
    of every host function that launches the kernel or mentions a buffer it is launched with is part of the key.
    """
    shapes = tuple(
        (
            launch.caller,
            launch.args,
            launch.template_values,
            launch.grid,
            launch.block,
            launch.grid_value,
            launch.block_value,
            launch.smem_value,
        )
        for launch in launches
    )
    memo = (fn.name, shapes)
    key = hosts.keys.get(memo)
    if key is not None:
        return key
    relevant: set[int] = set()
    for launch in launches:
        relevant |= hosts.by_caller.get(launch.caller or "", set())
        for arg in launch.args:
            for part in _WORD.findall(arg):
                relevant |= hosts.by_word.get(part.encode(), set())
    key = (
        tuple(shape[1:] for shape in shapes),
        tuple(hosts.digests[i] for i in sorted(relevant)),
    )
    if len(hosts.keys) >= MAX_LAUNCH_KEYS:
        # Launches inside device code can change without the host code changing; keep the memo bounded.
        hosts.keys.clear()
    hosts.keys[memo] = key
    return key


def _functions_by_name(model: FileModel) -> dict[tuple[str, Any], list[Any]]:
    """Return a model's functions by (name, kind), in file order."""
    out: dict[tuple[str, Any], list[Any]] = {}
    for f in model.functions:
        out.setdefault((f.name, f.kind), []).append(f)
    return out


def _rebase_related(
    message: str, anchor: _Anchor | None, functions: dict[tuple[str, Any], list[Any]]
) -> Related | None:
    if anchor is None:
        return None
    name, kind, length, start, end = anchor
    candidates = functions.get((name, kind), [])
    same = [f for f in candidates if f.length == length] or candidates
    if not same:
        return None
    base = same[0].base
    return Related(message, (base + start, base + end))


class MatchCache:
    """Reuse the matches of functions whose text and context did not change (keep one per open document).

    A function's matches depend on its own text, its template binding, its launch sites (arguments and geometry,
    not their positions), the file's constants and the names of the other device functions; all of these form the
    key. Reused matches are rebased onto the new function objects, and related locations in other functions move
    with those functions.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], _Entry] = {}
        self._hosts: _HostIndex | None = None
        self.hits = 0
        self.misses = 0

    def match_file(
        self,
        model: FileModel,
        library: CardLibrary | None = None,
        enabled: set[str] | None = None,
        target_sm: int = 90,
    ) -> list[Match]:
        """Return every match of the (enabled) cards in a file, computing only what changed."""
        lib = library if library is not None else builtin_library()
        cards = [c for c in lib if (enabled is None or c.skill_id in enabled) and c.header.status.value != "deprecated"]
        card_key = (id(lib), frozenset(enabled) if enabled is not None else None, target_sm)
        ctx_key = (
            tuple(sorted(model.constants.items())),
            frozenset(f.name for f in model.functions if f.kind is not FunctionKind.HOST),
        )
        fresh: dict[tuple[Any, ...], _Entry] = {}
        text = _host_text(model)
        hosts = self._hosts
        if hosts is None or hosts.text != text:
            words = {body: ws for _, body, ws in hosts.hosts} if hosts is not None else {}
            hosts = _HostIndex(text, words)
        launches = _launches(model)
        by_name = _functions_by_name(model)
        out: list[Match] = []
        for fn in model.functions:
            if fn.kind is FunctionKind.HOST:
                continue
            key = (
                model.text[fn.base : fn.base + fn.length],
                fn.kind,
                fn.template_binding,
                _launch_key(fn, launches.get(fn.name, []), hosts),
                card_key,
                ctx_key,
            )
            entry = self._entries.get(key) or fresh.get(key)
            if entry is not None and entry.asked is not None and not resources.same_answers(model, entry.asked):
                # A build it was waiting for answered, or this version's text has an answer: match it again.
                entry = None
            if entry is None:
                self.misses += 1
                pending = resources.pending_uses()
                with resources.recording() as asked:
                    entry = _entry(model, fn, match_function(model, fn, cards, target_sm))
                if resources.pending_uses() != pending:
                    # A compile-only build was still running. The matches are kept with what the builds said, and
                    # reused while the builds say the same about the next versions (a pending build stays pending);
                    # a matching that asked about another text as well (a rewritten file) is done again next time.
                    own = resources.text_hash(model)
                    if any(q.text_hash != own for q in asked):
                        out.extend(self._rebase(entry, model, fn, by_name))
                        continue
                    entry.asked = asked
                fresh[key] = entry
                out.extend(entry.matches)
                continue
            self.hits += 1
            rebased = self._rebase(entry, model, fn, by_name)
            fresh[key] = entry
            if rebased is not entry.matches and all(
                len(new.related) == len(old.related) for new, old in zip(rebased, entry.matches, strict=True)
            ):
                # Kept on this model's function object, so that the next version rebases nothing where it reuses it
                # (every related location moved along, so the anchors still pair with them).
                fresh[key] = _Entry(weakref.ref(model), fn, rebased, entry.anchors, entry.asked)
            out.extend(rebased)
        self._entries = fresh
        self._hosts = hosts
        out.sort(key=lambda m: (m.span[0], m.card_id))
        return out

    @staticmethod
    def _rebase(entry: _Entry, model: FileModel, fn: Any, functions: dict[tuple[str, Any], list[Any]]) -> list[Match]:
        """Return an entry's matches on the new model's function object, their related locations moved with theirs.

        A function the analysis reused (the same object: same text, context and place) keeps its match objects
        wherever their related locations did not move, so the server can reuse what it built for them.
        """
        if entry.model() is model and entry.function is fn:
            return entry.matches
        same = entry.function is fn
        out = []
        for m, anchors in zip(entry.matches, entry.anchors, strict=True):
            related = tuple(
                r
                for r in (_rebase_related(rel.message, a, functions) for rel, a in zip(m.related, anchors, strict=True))
                if r is not None
            )
            if same and related == m.related:
                out.append(m)
                continue
            region = dataclasses.replace(m.region, function=fn)
            out.append(dataclasses.replace(m, region=region, related=related))
        return out
