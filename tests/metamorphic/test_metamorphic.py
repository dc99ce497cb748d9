"""Metamorphic tests: every card reads what code computes, not how it is spelled.

Every positive and near-miss fixture of every card is restyled by each variant of `tests.metamorphic.restyle`.
On each restyled positive the card fires as often as on the original and, where it has a rewrite, the rewrite
still applies, re-parses without new syntax problems, compiles with nvcc (where nvcc is installed; cached by
content) and leaves nothing for the card to fire on when the original's rewrite does; on each restyled near-miss
it still does not fire. A card that cannot meet this for a variant lists the variant, with the reason, under
`## Restyled variants it refuses` in its card.md; the test then requires exactly that list to fail, so a card that
learns a spelling must drop it from the list and a new miss cannot hide.
"""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.metamorphic.restyle import VARIANTS
from tests.nvcc import compile_many
from tests.skills.cardtest import CARD_FOLDERS, card_of, matches, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.parse import parse_tree
from warpwise.skills.library import CARD_FILE, builtin_library

LIB = builtin_library()
HEADING = "## Restyled variants it refuses"
_ITEM = re.compile(r"^- `([a-z-]+)`: (.+)$")


def refused(card_id: str) -> dict[str, str]:
    """Return the variants a card's card.md says it refuses, with the reasons given."""
    text = (Path(LIB.cards[card_id].path).parent / CARD_FILE).read_text()
    if HEADING not in text:
        return {}
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = _ITEM.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


@dataclass
class Outcome:
    """What one card did on the restyled variants of its fixtures: the failures per variant, and what was tried."""

    failures: dict[str, list[str]] = field(default_factory=dict)
    tried: set[str] = field(default_factory=set)
    compiles: list[tuple[str, str, bytes]] = field(default_factory=list)

    def fail(self, variant: str, why: str) -> None:
        self.failures.setdefault(variant, []).append(why)


def _fixtures(folder: Path) -> tuple[list[Path], list[Path]]:
    fx = folder / "fixtures"
    pos = sorted(p for p in fx.glob("pos_*.cu") if not p.name.endswith(".expected.cu"))
    return pos, sorted(fx.glob("neg_*.cu"))


def _run_card(card_id: str, folder: Path) -> Outcome:
    out = Outcome()
    has_rewrite = LIB.cards[card_id].has_rewrite
    positives, negatives = _fixtures(folder)
    for path in positives:
        src = path.read_bytes()
        fired = len(matches(card_id, src))
        rewritten = rewrite_all(card_id, src) if has_rewrite else src
        converges = has_rewrite and rewritten != src and not matches(card_id, rewritten)
        for name, restyle in VARIANTS.items():
            variant = restyle(src)
            if variant is None:
                continue
            out.tried.add(name)
            n = len(matches(card_id, variant))
            if n != fired:
                out.fail(name, f"{path.name}: fires {n} times, {fired} on the original")
                continue
            if not has_rewrite or rewritten == src:
                continue
            fixed = rewrite_all(card_id, variant)
            if fixed == variant:
                out.fail(name, f"{path.name}: the rewrite does not apply")
                continue
            if len(analyze_text(fixed).syntax_problems) > len(analyze_text(variant).syntax_problems):
                out.fail(name, f"{path.name}: the rewrite adds syntax problems")
                continue
            if converges and matches(card_id, fixed):
                out.fail(name, f"{path.name}: the card still fires after its own fix")
                continue
            out.compiles.append((name, path.name, fixed))
    for path in negatives:
        src = path.read_bytes()
        for name, restyle in VARIANTS.items():
            variant = restyle(src)
            if variant is None:
                continue
            out.tried.add(name)
            found = matches(card_id, variant)
            if found:
                out.fail(name, f"{path.name}: a near-miss fires ({len(found)} times)")
    return out


def combined(sources: list[bytes]) -> bytes:
    """Return one translation unit holding several variants of one fixture: their `#include`s once at the top,
    each variant's code in a namespace of its own (so the same kernel names do not collide)."""
    includes: list[bytes] = []
    bodies = []
    for i, src in enumerate(sources):
        tree = parse_tree(src)
        body = bytearray(src)
        for child in tree.root_node.children:
            if child.type == "preproc_include":
                line = src[child.start_byte : child.end_byte].rstrip()
                if line not in includes:
                    includes.append(line)
                body[child.start_byte : child.end_byte] = b" " * (child.end_byte - child.start_byte)
        bodies.append(b"namespace ww_v%d {\n%s\n}\n" % (i, bytes(body)))
    return b"\n".join(includes) + b"\n" + b"".join(bodies)


@functools.cache
def outcomes() -> dict[str, Outcome]:
    """Run every card on every variant of its fixtures, then compile the rewritten variants: one translation unit
    per fixture (nvcc costs about a second a file), each variant on its own only when that unit fails."""
    result = {card_of(f / "fixtures" / "x"): _run_card(card_of(f / "fixtures" / "x"), f) for f in CARD_FOLDERS}
    if shutil.which("nvcc") is None:
        return result
    groups: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    for card, o in result.items():
        for name, fixture, fixed in o.compiles:
            groups.setdefault((card, fixture), []).append((name, fixed))
    keys = sorted(groups)
    built = compile_many([combined([src for _, src in groups[k]]) for k in keys])
    for key, (ok, _) in zip(keys, built, strict=True):
        if ok:
            continue
        card, fixture = key
        one_by_one = compile_many([src for _, src in groups[key]])
        for (name, _), (ok_one, log) in zip(groups[key], one_by_one, strict=True):
            if not ok_one:
                result[card].fail(name, f"{fixture}: the rewritten variant does not compile: {log.strip()[:200]}")
    return result


CARDS = sorted(card_of(folder / "fixtures" / "x") for folder in CARD_FOLDERS)


@pytest.mark.slow
@pytest.mark.parametrize("card_id", CARDS)
def test_card_reads_semantics_not_spelling(card_id: str) -> None:
    """Every restyled positive fires and rewrites, every restyled near-miss stays quiet, except listed refusals."""
    o = outcomes()[card_id]
    refusals = refused(card_id)
    unknown = sorted(set(refusals) - set(VARIANTS))
    assert not unknown, f"card.md lists variants the restyler does not have: {unknown}"
    failing = set(o.failures)
    unexpected = {v: o.failures[v] for v in sorted(failing - set(refusals))}
    assert not unexpected, f"variants that change the answer (fix the matcher or list them in card.md): {unexpected}"
    stale = sorted(set(refusals) - failing)
    assert not stale, f"card.md refuses variants the card now handles (drop them from its list): {stale}"


def test_every_variant_restyles_some_fixture() -> None:
    """A variant that changes no fixture would test nothing."""
    tried = set().union(*(o.tried for o in outcomes().values()))
    assert set(VARIANTS) <= tried, sorted(set(VARIANTS) - tried)


def test_there_are_at_least_ten_variants() -> None:
    assert len(VARIANTS) >= 10
