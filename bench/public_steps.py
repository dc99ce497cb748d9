"""Explain the measured steps of the public expert lineages, put them on the cards, propose cards (issue 21).

Reads the H200 batch's result files (`bench/results/public_lineages-<owner>+<name>-DATE.json`, written by
`bench/gpu/public_lineages.py run`), the index and the expert-change mapping (`lineages/public/`), and the
versions' code from the mirrors (bare git directories, read at analysis time; no public code is written
anywhere). On the CPU, for every step k -> k+1 whose two versions were timed:

* **measured**: the speedup of k+1 over k, with bounds from the quartiles (k's q1 over k+1's q3, k's q3 over
  k+1's q1) widened by 2% for the run-to-run variation one run cannot show: `faster` when the low bound clears 1,
  `slower` when the high bound is under 1, else `within spread`;
* **structural diff**: every built-in card is matched against version k's kernel and version k+1's; the cards
  whose pattern k matches and k+1 no longer does are the ones the expert's change removed;
* **our rewrite**: where the batch ran a card's rewrite of version k (the same checks and timing), its speedup
  over k and its time against the expert's k+1;
* **explanation**: the built-in cards the mapping names (written before warpwise ran) that match version k:
  `explained` when k+1 removed the pattern of one of them, `named, pattern kept` when they still match k+1,
  `named, not detected` when none matches k (a matcher gap), `no card` when the mapping names only proposed
  cards or none.

With `--write`, each timed step becomes an evidence record on every built-in card the mapping names (slower steps
too: the "when"), carrying the code facts of version k (the ranking's features of the card's matches there, when
it binds; the build's registers and the launch); our measured rewrites become records too. Steps no built-in card
names become proposed cards (`lineages/public/proposed_cards.yaml`, ranked by how many steps name them, with the
measured effect), and every lineage gets a report with a chart of time per version (`lineages/public/reports/`).
Admission: a built-in card is admitted for a repository's lineages when its rewrite of some version of another
repository (not the one its evidence was mined from) ran correct and measurably faster there.

    .venv/bin/python bench/public_steps.py --mirrors /work/.mirror --date 2026-12-02 \\
        --results 2026-12-01 --results 2026-12-02 --write
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PUBLIC = ROOT / "lineages" / "public"
MEASURED_BY = (
    "bench/gpu/public_lineages.py on the H200: NVRTC build of the extracted device code, outputs checked against "
    "the problem's reference (tiny preset and three seeds at full size), L2 flushed, CUDA-event median of many runs"
)


def _git_head() -> str | None:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def load_results(dates: list[str]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Return every measured entry by id, and each repository's result documents (without their rows) by repo.

    The batches of `dates` are read in order and a later batch's entry replaces an earlier one of the same id (a
    lineage whose problem file was fixed is re-run whole, so both versions of a step come from one batch; a step
    whose versions come from different batches is not compared). Each entry records its result file and date
    (`_file`, `_date`); a repository's document is its latest batch's, with `files` listing every batch it has.
    """
    by_id: dict[str, dict[str, Any]] = {}
    docs: dict[str, dict[str, Any]] = {}
    for date in dates:
        for path in sorted(RESULTS.glob(f"public_lineages-*-{date}.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            rel = path.relative_to(ROOT).as_posix()
            for r in doc["results"]:
                by_id[r["id"]] = {**r, "_file": rel, "_date": date}
            files = [*docs.get(doc["repo"], {}).get("files", []), rel]
            why_not = {
                **docs.get(doc["repo"], {}).get("why_not_run", {}),
                **{n["id"]: n["why"] for n in doc["not_run"]},
            }
            docs[doc["repo"]] = {k: v for k, v in doc.items() if k not in ("results", "steps", "not_run")} | {
                "file": rel,
                "files": files,
                "why_not_run": why_not,
            }
    return by_id, docs


def timing(r: dict[str, Any] | None) -> dict[str, float] | None:
    """Return a result's kernel timing (median, q1, q3 in ms) when it ran correct."""
    if not r or r.get("status") != "ok":
        return None
    k = (r.get("timing") or {}).get("kernel") or {}
    return k if k.get("median_ms") else None


# One run shows the spread within it (quartiles), not between runs: the bounds are widened by this factor for the
# run-to-run variation of a kernel's time on the same machine (a claim must clear both).
RUN_TO_RUN = 1.02


def ratio(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Return after's speedup over before, with bounds from the quartiles widened by RUN_TO_RUN."""
    sp = before["median_ms"] / after["median_ms"]
    low = before["q1_ms"] / after["q3_ms"] / RUN_TO_RUN
    high = before["q3_ms"] / after["q1_ms"] * RUN_TO_RUN
    return {"median": round(sp, 4), "low": round(low, 4), "high": round(high, 4)}


def verdict(sp: dict[str, float]) -> str:
    """Return `faster`, `slower` or `within spread`."""
    return "faster" if sp["low"] > 1.0 else "slower" if sp["high"] < 1.0 else "within spread"


def kernel_matches(text: bytes, path: str, kernel: str) -> tuple[Any, Any, list[Any]]:
    """Return the file model, the kernel's function and every card match in it."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import match_file

    model = analyze_text(text, path)
    fn = model.function(kernel)
    return model, fn, [m for m in match_file(model) if m.function == kernel]


def report_of(r: dict[str, Any] | None) -> dict[str, float]:
    """Return the compiler report and launch geometry of a result, named as the ranking's features are."""
    rep: dict[str, float] = {}
    if not r:
        return rep
    build = r.get("build") or {}
    if build.get("registers") is not None:
        rep["k_registers"] = float(build["registers"])
        rep["k_spills"] = float((build.get("spill_loads") or 0) + (build.get("spill_stores") or 0))
    geom = (r.get("timing") or {}).get("geometry")
    if isinstance(geom, list) and len(geom) >= 2:
        block = math.prod(int(v) for v in (geom[1] if isinstance(geom[1], list) else [geom[1]]))
        grid = math.prod(int(v) for v in (geom[0] if isinstance(geom[0], list) else [geom[0]]))
        rep["k_block_log2"] = math.log2(block)
        rep["k_threads_log2"] = math.log2(block * grid)
    return rep


def analyse(mirrors: Path, dates: list[str]) -> dict[str, Any]:
    """Return every step of the measured lineages with its measurement, structural diff, rewrites and explanation."""
    from warpwise.lineages.public_index import load_changes, load_index
    from warpwise.ranking.dataset import recorded_gpus
    from warpwise.ranking.features import pair_features
    from warpwise.skills.library import builtin_library

    by_id, docs = load_results(dates)
    builtin = {c.skill_id for c in builtin_library()}
    gpus = recorded_gpus(ROOT)
    cmap = load_changes()
    import yaml

    raw_index = yaml.safe_load((PUBLIC / "INDEX.yaml").read_text(encoding="utf-8"))
    no_problem = {li["id"]: li.get("no_problem_because") for li in raw_index["lineages"]}
    steps: list[dict[str, Any]] = []
    lineages: list[dict[str, Any]] = []
    for li in load_index():
        if li.repo not in docs:
            continue
        versions = []
        for v in li.versions:
            r = by_id.get(f"{li.id}/{v.id}")
            versions.append(
                {
                    "id": v.id,
                    "kernel": v.kernel,
                    "file": v.file,
                    "lines": list(v.lines) if v.lines else None,
                    "adds": v.adds,
                    "status": r["status"] if r else "not run",
                    "why": _why(r) if r else _not_run_why(docs[li.repo], f"{li.id}/{v.id}", no_problem.get(li.id)),
                    "timing": timing(r),
                    "eager": ((r or {}).get("timing") or {}).get("eager"),
                    "registers": ((r or {}).get("build") or {}).get("registers"),
                    "reported": v.reported,
                    "result_file": (r or {}).get("_file"),
                    "measured_on": (r or {}).get("_date"),
                }
            )
        lineages.append(
            {"lineage": li.id, "repo": li.repo, "commit": li.commit, "family": li.family, "versions": versions}
        )
        texts: dict[str, tuple[Any, Any, list[Any]] | None] = {}
        signatures = input_signatures(li.problem)

        for a, b in li.steps():
            ra, rb = by_id.get(f"{li.id}/{a.id}"), by_id.get(f"{li.id}/{b.id}")
            ta, tb = timing(ra), timing(rb)
            change = cmap.for_step(li.id, a.id, b.id)
            named = list(change.cards) if change else []
            row: dict[str, Any] = {
                "lineage": li.id,
                "repo": li.repo,
                "commit": li.commit,
                "family": li.family,
                "step": f"{a.id} -> {b.id}",
                "kernel_before": a.kernel,
                "file_before": a.file,
                "lines_before": list(a.lines) if a.lines else None,
                "kind": change.kind if change else "unmapped",
                "note": change.note if change else "",
                "named_builtin": [c for c in named if c in builtin],
                "named_proposed": [c for c in named if c not in builtin],
                "status_before": ra["status"] if ra else "not run",
                "status_after": rb["status"] if rb else "not run",
            }
            if ta:
                row["ms_before"] = round(ta["median_ms"], 5)
            if tb:
                row["ms_after"] = round(tb["median_ms"], 5)
            same_inputs = signatures.get(f"{li.id}/{a.id}") == signatures.get(f"{li.id}/{b.id}")
            row["same_inputs"] = same_inputs
            row["result_file"] = (ra or {}).get("_file")
            row["measured_on"] = (ra or {}).get("_date")
            same_batch = (ra or {}).get("_file") == (rb or {}).get("_file")
            if ta and tb and not same_inputs:
                row["status_after"] += " (other inputs than k: not compared)"
            elif ta and tb and not same_batch:
                row["status_after"] += " (measured in another batch than k: not compared)"
            if ta and tb and same_inputs and same_batch:
                row["speedup"] = ratio(ta, tb)
                row["measured"] = verdict(row["speedup"])
            ma, mb = _matched(mirrors, li, a, texts), _matched(mirrors, li, b, texts)
            cards_a = sorted({m.card_id for m in ma[2]}) if ma else []
            cards_b = sorted({m.card_id for m in mb[2]}) if mb else []
            row["cards_before"], row["cards_after"] = cards_a, cards_b
            row["pattern_removed"] = sorted(set(cards_a) - set(cards_b))
            row["pattern_added"] = sorted(set(cards_b) - set(cards_a))
            present = [c for c in row["named_builtin"] if c in cards_a]
            if not row["named_builtin"]:
                row["explanation"] = "no card"
            elif not present:
                row["explanation"] = "named, not detected"
            elif any(c in row["pattern_removed"] for c in present):
                row["explanation"] = "explained"
            else:
                row["explanation"] = "named, pattern kept"
            row["explained_by"] = [c for c in present if c in row["pattern_removed"]] or present
            # The code facts of version k: the ranking's features of each named card's matches there.
            gpu = gpus.get(((docs[li.repo].get("device") or {}).get("gpu")) or "")
            rep = report_of(ra)
            row["facts_before"] = {"registers": (ra or {}).get("build", {}).get("registers"), **rep}
            feats = {}
            if ma and ma[1] is not None:
                for card in {*row["named_builtin"], *(x.split("+", 1)[1] for x in _rewrite_ids(by_id, li.id, a.id))}:
                    ms = [m for m in ma[2] if m.card_id == card]
                    if ms:
                        feats[card] = pair_features(ma[0], ma[1], ms, gpu, rep).to_dict()
            row["features"] = feats
            fn_facts = _facts(feats)
            row["facts_before"].update(fn_facts)
            rewrites = []
            for ident in _rewrite_ids(by_id, li.id, a.id):
                rr = by_id[ident]
                tr = timing(rr) if rr.get("_file") == (ra or {}).get("_file") else None
                rw: dict[str, Any] = {"card": ident.split("+", 1)[1], "status": rr["status"], "why": _why(rr)}
                if ta and tr:
                    rw["ms"] = round(tr["median_ms"], 5)
                    rw["speedup_over_before"] = ratio(ta, tr)
                    rw["measured"] = verdict(rw["speedup_over_before"])
                    if tb:
                        rw["against_expert"] = ratio(tr, tb)  # > 1: the expert's k+1 is faster than our rewrite
                rewrites.append(rw)
            row["rewrites"] = rewrites
            steps.append(row)
    return {"steps": steps, "lineages": lineages, "repositories": docs, "by_id": by_id}


FACTS = (
    "k_global_accesses",
    "k_frac_contiguous",
    "k_frac_strided",
    "k_min_width",
    "k_vector_access",
    "k_syncs",
    "k_shared_arrays",
    "k_loops",
    "k_dtype_f16",
    "k_atomics",
)


def _facts(feats: dict[str, Any]) -> dict[str, Any]:
    """Return a few kernel-level code facts of version k (the same for every card's features), for the records."""
    for f in feats.values():
        num = f.get("numeric", {})
        return {k: num[k] for k in FACTS if k in num and num[k] == num[k]}
    return {}


def input_signatures(problem: str | None) -> dict[str, Any]:
    """Return, per variant of a problem file, what its inputs are made from (versions with different inputs differ).

    A variant that brings its own `make_inputs` (a closure over its sizes) or `SIZES` runs on other inputs than
    the problem's default; two versions are comparable only when their signatures are equal. A variant whose
    `make_inputs` differs only in the size of an output (a partial-sum array as long as the version's grid) says
    so with `inputs_id`, naming what it reads: variants with the same `inputs_id` and `SIZES` are comparable.
    """
    if not problem:
        return {}
    path = PUBLIC / "problems" / f"{problem}.problem.py"
    ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)
    out: dict[str, Any] = {}
    for key, spec in ns.get("VARIANTS", {}).items():
        fn = spec.get("make_inputs")
        made: Any = None
        if "inputs_id" in spec:
            made = ("inputs_id", spec["inputs_id"])
        elif fn is not None:
            cells = tuple(repr(c.cell_contents) for c in (getattr(fn, "__closure__", None) or ()))
            made = (getattr(fn, "__qualname__", repr(fn)), cells)
        out[key] = (made, repr(spec.get("SIZES")))
    return out


def _matched(mirrors: Path, li: Any, v: Any, cache: dict[str, Any]) -> tuple[Any, Any, list[Any]] | None:
    """Return (model, function, matches) of a version's kernel, read from its mirror once."""
    from warpwise.lineages.public_index import PublicIndexError, version_text

    if v.id not in cache:
        try:
            cache[v.id] = kernel_matches(version_text(mirrors, li, v), v.file, v.kernel)
        except PublicIndexError:
            cache[v.id] = None
    return cache[v.id]


def _rewrite_ids(by_id: dict[str, Any], lineage: str, version: str) -> list[str]:
    prefix = f"{lineage}/{version}+"
    return sorted(k for k in by_id if k.startswith(prefix))


def _not_run_why(repo_doc: dict[str, Any], ident: str, no_problem: str | None) -> str:
    """Return why a version was not sent to the GPU: the batch's reason, and the index's for a missing problem."""
    why = repo_doc.get("why_not_run", {}).get(ident, "")
    if no_problem and why == "the lineage has no problem file":
        why += f" ({no_problem})"
    return why


def _why(r: dict[str, Any] | None) -> str:
    if not r:
        return ""
    if r.get("error"):
        return str(r["error"])[:300]
    if r.get("status") == "compile_failed":
        log = (r.get("build") or {}).get("log", "")
        return next((ln.strip() for ln in log.splitlines() if "error" in ln), "does not compile")[:300]
    for c in r.get("checks") or []:
        if c.get("problems"):
            return str(c["problems"][0])[:300]
    return ""


def features_file(doc: dict[str, Any], records: dict[str, list[Any]]) -> dict[str, Any]:
    """Return the features of version k for every record whose card binds there, keyed `source|card`."""
    feats: dict[str, Any] = {}
    by_step = {(s["repo"], s["lineage"], s["step"]): s for s in doc["steps"]}
    for card, recs in records.items():
        for rec in recs:
            s = by_step[(rec.context["repo"], rec.context["lineage"], rec.context["step"])]
            if card in s["features"]:
                feats[f"{rec.source}|{card}"] = s["features"][card]
    return {
        "schema": 1,
        "note": "features of version k's code (public code read from mirrors, never stored) per evidence record",
        "features": dict(sorted(feats.items())),
    }


def evidence(doc: dict[str, Any]) -> dict[str, list[Any]]:
    """Return the evidence records per card: the timed steps on the cards the mapping names, and our rewrites."""
    from warpwise.skills.model import EvidenceRecord

    out: dict[str, list[Any]] = defaultdict(list)
    for s in doc["steps"]:
        dev = doc["repositories"][s["repo"]].get("device") or {}
        result_file = s.get("result_file") or doc["repositories"][s["repo"]]["file"]
        base_ctx = {
            "file": f"public:{s['repo']}@{s['commit'][:12]}:{s['file_before']}",
            "repo": s["repo"],
            "commit": s["commit"],
            "lineage": s["lineage"],
            "step": s["step"],
            "lines": s["lines_before"],
            "result_file": result_file,
            "measured_by": MEASURED_BY,
            "facts": s["facts_before"],
        }
        common = {
            "kernel": s["kernel_before"],
            "operator": s["family"],
            "gpu": dev.get("gpu") or "unknown GPU",
            "toolkit": f"NVRTC {dev.get('nvrtc', 'unknown')}",
            "date": _dt.date.fromisoformat((s.get("measured_on") or "1970-01-01")[:10]),
        }
        if "speedup" in s:
            sp = s["speedup"]
            for card in s["named_builtin"]:
                ctx = {
                    **base_ctx,
                    "what": "the expert's next version",
                    "kind": s["kind"],
                    "explanation": s["explanation"],
                    "pattern_removed": card in s["pattern_removed"],
                    "combined_with": [c for c in s["named_builtin"] + s["named_proposed"] if c != card],
                    "speedup_low": sp["low"],
                    "speedup_high": sp["high"],
                }
                ctx["binds"] = card in s["features"]
                out[card].append(
                    EvidenceRecord(
                        **common,
                        baseline_ms=s["ms_before"],
                        candidate_ms=s["ms_after"],
                        speedup=sp["median"],
                        spread=round((sp["high"] - sp["low"]) / sp["median"], 4),
                        source=f"public lineage {s['repo']} {s['lineage']} {s['step']}",
                        context=ctx,
                    )
                )
        for rw in s["rewrites"]:
            if "speedup_over_before" not in rw:
                continue
            sp = rw["speedup_over_before"]
            ctx = {
                **base_ctx,
                "what": "warpwise's rewrite of version k",
                "speedup_low": sp["low"],
                "speedup_high": sp["high"],
            }
            if "against_expert" in rw:
                ctx["expert_over_rewrite"] = rw["against_expert"]["median"]
            ctx["binds"] = rw["card"] in s["features"]
            out[rw["card"]].append(
                EvidenceRecord(
                    **common,
                    baseline_ms=s["ms_before"],
                    candidate_ms=rw["ms"],
                    speedup=sp["median"],
                    spread=round((sp["high"] - sp["low"]) / sp["median"], 4),
                    source=f"public rewrite {s['repo']} {s['lineage']} {s['step'].split(' ')[0]}",
                    context=ctx,
                )
            )
    return dict(out)


def proposed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the proposed cards (changes no built-in card names), most frequent first, with measured effects."""
    from warpwise.lineages.public_index import load_changes

    descriptions = load_changes().proposed
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in doc["steps"]:
        if s["kind"] in ("refactor", "correctness"):
            continue
        for c in s["named_proposed"]:
            groups[c].append(s)
        if not s["named_builtin"] and not s["named_proposed"]:
            groups["(no card named: " + (s["note"] or "unread") + ")"].append(s)
    out = []
    for card, ss in groups.items():
        timed = [s for s in ss if "speedup" in s]
        logs = [math.log(s["speedup"]["median"]) for s in timed]
        out.append(
            {
                "id": card,
                "description": descriptions.get(card, ""),
                "steps": len(ss),
                "repositories": sorted({s["repo"] for s in ss}),
                "families": sorted({s["family"] for s in ss}),
                "timed_steps": len(timed),
                "geomean_speedup": round(math.exp(sum(logs) / len(logs)), 4) if logs else None,
                "faster": sum(s["measured"] == "faster" for s in timed),
                "slower": sum(s["measured"] == "slower" for s in timed),
                "within_spread": sum(s["measured"] == "within spread" for s in timed),
                # What version k had where the step applied: the cards that matched it (the code facts we read).
                "preconditions_seen": sorted({c for s in ss for c in s["cards_before"]}),
                "measured": [
                    {
                        "lineage": s["lineage"],
                        "repo": s["repo"],
                        "step": s["step"],
                        "kernel": s["kernel_before"],
                        "speedup": s.get("speedup"),
                        "registers_before": s["facts_before"].get("registers"),
                    }
                    for s in ss
                ],
            }
        )
    out.sort(key=lambda d: (-d["steps"], -d["timed_steps"], d["id"]))
    return out


def load_roundtrips(dates: list[str]) -> list[dict[str, Any]]:
    """Return the admission roundtrips: each card's rewrite of a version, timed beside that version in one batch.

    Read from `bench/results/public_roundtrips-<owner>+<name>-DATE.json` (`bench/gpu/public_lineages.py prepare
    --roundtrips`: every mined card rewritten on the versions of the other repositories).
    """
    rows: list[dict[str, Any]] = []
    for date in dates:
        for path in sorted(RESULTS.glob(f"public_roundtrips-*-{date}.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            by_id = {r["id"]: r for r in doc["results"]}
            for ident, r in by_id.items():
                if "+" not in ident:
                    continue
                version, card = ident.split("+", 1)
                base = by_id.get(version)
                tb, tr = timing(base), timing(r)
                row: dict[str, Any] = {
                    "repo": doc["repo"],
                    "version": version,
                    "card": card,
                    "status": r["status"] if base and base["status"] == "ok" else f"version {version}: not run",
                    "why": _why(r),
                    "file": path.relative_to(ROOT).as_posix(),
                }
                if tb and tr:
                    row["speedup"] = ratio(tb, tr)
                    row["measured"] = verdict(row["speedup"])
                rows.append(row)
    return rows


def admission(doc: dict[str, Any], roundtrips: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Return, per built-in card with evidence, where it was mined and where its rewrite was measured faster.

    Mined: the repositories whose expert steps the card explains (timed). Tried: our rewrites of version k of the
    steps, and the admission roundtrips (`load_roundtrips`). A card is admitted when its rewrite ran correct and
    measurably faster in a repository other than one it was mined from: evidence mined from R is confirmed on R'
    (a card mined from two repositories and faster in both is confirmed across them). A card whose rewrite was
    incorrect on any version or roundtrip is never admitted, whatever ran faster elsewhere.
    """
    mined: dict[str, set[str]] = defaultdict(set)
    faster: dict[str, set[str]] = defaultdict(set)
    tried: dict[str, list[str]] = defaultdict(list)
    wrong: dict[str, list[str]] = defaultdict(list)
    for s in doc["steps"]:
        if "speedup" in s:
            for c in s["explained_by"] if s["explanation"] in ("explained", "named, pattern kept") else []:
                mined[c].add(s["repo"])
        for rw in s["rewrites"]:
            label = f"{s['lineage']} {s['step'].split(' ')[0]}: {rw.get('measured') or rw['status']}"
            tried[rw["card"]].append(label)
            if rw.get("measured") == "faster":
                faster[rw["card"]].add(s["repo"])
            if rw.get("status") == "incorrect":
                wrong[rw["card"]].append(f"{s['lineage']} {s['step'].split(' ')[0]}")
    for rt in roundtrips or []:
        sp = f" {_sp(rt['speedup'])}" if "speedup" in rt else ""
        tried[rt["card"]].append(f"roundtrip {rt['version']}: {rt.get('measured') or rt['status']}{sp}")
        if rt.get("measured") == "faster":
            faster[rt["card"]].add(rt["repo"])
        if rt.get("status") == "incorrect":
            wrong[rt["card"]].append(f"roundtrip {rt['version']}")
    rows = []
    for card in sorted(set(mined) | set(tried)):
        pairs = sorted((r, o) for r in mined[card] for o in faster[card] if o != r)
        if wrong[card]:
            # A rewrite that computed a wrong result anywhere is a bug in the card: no speedup elsewhere admits
            # it until the fixed rewrite is measured again.
            pairs = []
            why = "its rewrite was incorrect on " + ", ".join(wrong[card]) + ": not admitted until re-measured"
        elif not mined[card]:
            why = "no expert step of these repositories is explained by it: nothing mined to admit"
        elif pairs:
            why = "mined from " + "; ".join(
                f"{r}, confirmed on {', '.join(o for rr, o in pairs if rr == r)}" for r in sorted({r for r, _ in pairs})
            )
        elif faster[card]:
            why = "measured faster only in the repositories it was mined from (" + ", ".join(sorted(faster[card])) + ")"
        elif tried[card]:
            why = "its rewrite never ran measurably faster on another repository's lineage"
        else:
            why = "no rewrite of it ran on another repository's lineage (no version there offered it)"
        rows.append(
            {
                "card": card,
                "mined_from": sorted(mined[card]),
                "rewrite_faster_in": sorted(faster[card]),
                "rewrites": tried[card],
                "admitted": bool(pairs),
                "confirmed_on": sorted({o for _, o in pairs}),
                "why": why,
            }
        )
    return rows


def summary(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Return one row per repository: versions, what ran, steps timed, faster/slower, explained, GPU-seconds."""
    from warpwise.lineages.public_index import load_index

    rows = []
    index = load_index()
    for repo, rd in doc["repositories"].items():
        lis = [li for li in index if li.repo == repo]
        versions = [v for li in lis for v in li.versions]
        ids = {f"{li.id}/{v.id}" for li in lis for v in li.versions}
        rs = [r for k, r in doc["by_id"].items() if k in ids]
        rewrites = [r for k, r in doc["by_id"].items() if "+" in k and k.split("+", 1)[0] in ids]
        steps = [s for s in doc["steps"] if s["repo"] == repo]
        timed = [s for s in steps if "speedup" in s]
        logs = [math.log(s["speedup"]["median"]) for s in timed]
        rows.append(
            {
                "repo": repo,
                "commit": rd.get("commit"),
                "versions_indexed": len(versions),
                "sent": len(rs),
                "correct": sum(r["status"] == "ok" for r in rs),
                "compile_failed": sum(r["status"] == "compile_failed" for r in rs),
                "incorrect": sum(r["status"] == "incorrect" for r in rs),
                "other": sum(r["status"] not in ("ok", "compile_failed", "incorrect") for r in rs),
                "steps": len(steps),
                "timed": len(timed),
                "faster": sum(s["measured"] == "faster" for s in timed),
                "slower": sum(s["measured"] == "slower" for s in timed),
                "within_spread": sum(s["measured"] == "within spread" for s in timed),
                "geomean_step": round(math.exp(sum(logs) / len(logs)), 3) if logs else None,
                "explained": sum(s["explanation"] == "explained" for s in steps),
                "no_card": sum(s["explanation"] == "no card" for s in steps),
                "rewrites_run": len(rewrites),
                "rewrites_faster": sum(1 for s in steps for r in s["rewrites"] if r.get("measured") == "faster"),
                "gpu_seconds": round(sum(r.get("seconds", 0.0) for r in rs + rewrites), 1),
            }
        )
    return rows


def summary_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """Return the per-repository summary table."""
    out = [
        "| repository | versions indexed | sent / correct / no build / wrong / other | steps (timed) | faster / slower "
        "/ within | geomean step | explained by a card / no card | our rewrites run (faster) | GPU-s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        gm = f"{r['geomean_step']}x" if r["geomean_step"] else "-"
        out.append(
            f"| {r['repo']} | {r['versions_indexed']} | {r['sent']} / {r['correct']} / {r['compile_failed']} / "
            f"{r['incorrect']} / {r['other']} | {r['steps']} ({r['timed']}) | {r['faster']} / {r['slower']} / "
            f"{r['within_spread']} | {gm} | {r['explained']} / {r['no_card']} | {r['rewrites_run']} "
            f"({r['rewrites_faster']}) | {r['gpu_seconds']} |"
        )
    return out


def _sp(sp: dict[str, float] | None) -> str:
    return f"{sp['median']:.3g}x ({sp['low']:.3g}..{sp['high']:.3g})" if sp else "not measured"


def steps_markdown(
    doc: dict[str, Any], props: list[dict[str, Any]], adm: list[dict[str, Any]], meta: dict[str, Any]
) -> str:
    """Return the step report as Markdown."""
    steps = doc["steps"]
    timed = [s for s in steps if "speedup" in s]
    counts: dict[str, int] = defaultdict(int)
    for s in steps:
        counts[s["explanation"]] += 1
    out = [
        f"# Public expert lineages: every step explained, measured on the H200 ({meta['date']})",
        "",
        f"Command: `{meta['command']}` (warpwise `{meta['warpwise_commit']}`), from the result files "
        + ", ".join(f"`{f}`" for d in doc["repositories"].values() for f in d["files"])
        + f". Measured by {MEASURED_BY}. Nothing here went through warpwise's gate: 'faster' means the quartile "
        "bounds of the ratio, widened by 2% for run-to-run variation (one run per version), clear 1; not 'verified'.",
        "",
        f"{len(steps)} steps in the lineages of the measured repositories, {len(timed)} with both versions timed: "
        f"{sum(s['measured'] == 'faster' for s in timed)} faster, {sum(s['measured'] == 'slower' for s in timed)} "
        f"slower, {sum(s['measured'] == 'within spread' for s in timed)} within the spread. Explanations (all "
        "steps): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ".",
        "",
        "`explained`: a built-in card the mapping names matches version k and no longer matches k+1 (the structural "
        "diff of the cards' matches); `named, pattern kept`: it matches both; `named, not detected`: no named card "
        "matches k (a matcher gap); `no card`: only proposed cards or none are named.",
        "",
        "## Per repository",
        "",
        *summary_markdown(summary(doc)),
        "",
        "GPU-s: the seconds the batch's child processes spent on the repository's entries (build, checks, timing), "
        "not counting the machine's start.",
        "",
        "## Steps",
        "",
        "| lineage | step | measured k+1 over k | verdict | explanation | by | pattern removed by k+1 "
        "| our rewrite of k (speedup; expert k+1 over it) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in steps:
        rws = "; ".join(
            f"`{r['card']}` "
            + (
                f"{_sp(r['speedup_over_before'])}"
                + (f", {r['against_expert']['median']:.3g}x" if "against_expert" in r else "")
                if "speedup_over_before" in r
                else r["status"]
            )
            for r in s["rewrites"]
        )
        shown = s["explained_by"] or s["named_builtin"]
        by = ", ".join(f"`{c}`" for c in shown) or ", ".join(s["named_proposed"]) or "-"
        meas = _sp(s["speedup"]) if "speedup" in s else f"{s['status_before']} / {s['status_after']}"
        removed = ", ".join(s["pattern_removed"]) or "-"
        out.append(
            f"| {s['lineage']} | {s['step']} | {meas} | {s.get('measured', '-')} | {s['explanation']} | {by} "
            f"| {removed} | {rws or '-'} |"
        )
    out += [
        "",
        "## Proposed cards, by how many steps they name",
        "",
        "Our descriptions (`lineages/public/expert_changes.yaml`); the measured effect is the expert's step, the "
        "geometric mean over the timed steps. Data: `lineages/public/proposed_cards.yaml`.",
        "",
        "| proposed card | steps | timed | geomean | faster / slower / within | repositories |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in props:
        gm = f"{p['geomean_speedup']:.3g}x" if p["geomean_speedup"] else "-"
        out.append(
            f"| {p['id']} | {p['steps']} | {p['timed_steps']} | {gm} | {p['faster']} / {p['slower']} / "
            f"{p['within_spread']} | {', '.join(p['repositories'])} |"
        )
    out += [
        "",
        "## Admission across repositories",
        "",
        "A built-in card is admitted when its rewrite of a version of a repository other than one its explained "
        "steps come from ran correct and measurably faster (same checks and timing as the versions): evidence mined "
        "from one repository, confirmed on another. Tried: our rewrites of version k of the steps, and the admission "
        "roundtrips (every mined card's rewrite on every version of the other repositories that offers it, "
        "`public_roundtrips-*.json`) where they were run.",
        "",
        "| card | mined from | rewrite faster in | admitted | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for a in adm:
        out.append(
            f"| `{a['card']}` | {', '.join(a['mined_from']) or '-'} | {', '.join(a['rewrite_faster_in']) or '-'} | "
            f"{'yes' if a['admitted'] else 'no'} | {a['why']} |"
        )
    return "\n".join(out) + "\n"


def _batches(versions: list[dict[str, Any]], key: str) -> list[str]:
    """Return the distinct values of `key` over a lineage's measured versions, in order."""
    return list(dict.fromkeys(v[key] for v in versions if v.get(key)))


def lineage_reports(doc: dict[str, Any], out_dir: Path, date: str) -> list[str]:
    """Write one Markdown report and one SVG chart of time per version per lineage; return the written paths."""
    from warpwise.lineages.report import svg_bar_chart, text_bar_chart

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    by_lineage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in doc["steps"]:
        by_lineage[s["lineage"]].append(s)
    for li in doc["lineages"]:
        vs = li["versions"]
        labels = [v["id"] for v in vs]
        med = [v["timing"]["median_ms"] if v["timing"] else None for v in vs]
        rd = doc["repositories"][li["repo"]]
        dev = rd.get("device") or {}
        lines = [
            f"# {li['lineage']} ({li['repo']} @ `{li['commit'][:12]}`): time per version on the H200",
            "",
            f"Family `{li['family']}`. Measured {', '.join(_batches(vs, 'measured_on')) or date} by "
            f"`bench/gpu/public_lineages.py` (result file {', '.join(f'`{f}`' for f in _batches(vs, 'result_file'))}; "
            f"device {dev.get('gpu')}, NVRTC {dev.get('nvrtc')}). "
            "Versions that did not build or run are listed with the reason. No code of the repository is "
            "reproduced: kernel names, files and line ranges only.",
            "",
        ]
        if any(med):
            chart = svg_bar_chart(
                f"{li['lineage']}: time per version (H200)",
                labels,
                med,
                "ms (median, IQR)",
                [v["timing"]["q1_ms"] if v["timing"] else None for v in vs],
                [v["timing"]["q3_ms"] if v["timing"] else None for v in vs],
                log=max(m for m in med if m) > 30 * min(m for m in med if m),
            )
            if chart:
                svg = out_dir / f"{li['lineage']}.svg"
                svg.write_text(chart, encoding="utf-8")
                written.append(str(svg))
                lines += [f"![time per version]({svg.name})", ""]
            lines += ["```", text_bar_chart(labels, med, "ms"), "```", ""]
        lines += [
            "| version | kernel | file:lines | adds (our words) | status | ms (median) | IQR ms | registers "
            "| authors' figure |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for v in vs:
            t = v["timing"]
            rep = v["reported"]
            rep_s = (
                f"{rep.get('value')} {rep.get('unit', '')} ({rep.get('where', '')})" if isinstance(rep, dict) else ""
            )
            where = f"{v['file']}:{v['lines'][0]}-{v['lines'][1]}" if v["lines"] else v["file"]
            status = v["status"] + (f": {v['why'][:120]}" if v["why"] else "")
            lines.append(
                f"| {v['id']} | `{v['kernel']}` | {where} | {v['adds']} | {status.replace('|', '/')} | "
                f"{format(t['median_ms'], '.4g') if t else ''} | {format(t['iqr_ms'], '.2g') if t else ''} "
                f"| {v['registers'] or ''} | {rep_s} |"
            )
        lines += [
            "",
            "| step | measured | explanation | named cards | pattern removed | our rewrite of k |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for s in by_lineage[li["lineage"]]:
            named = ", ".join([f"`{c}`" for c in s["named_builtin"]] + [f"{c} (proposed)" for c in s["named_proposed"]])
            rws = "; ".join(
                f"`{r['card']}` {_sp(r.get('speedup_over_before')) if 'speedup_over_before' in r else r['status']}"
                for r in s["rewrites"]
            )
            lines.append(
                f"| {s['step']} | {_sp(s.get('speedup'))} {s.get('measured', '')} | {s['explanation']} "
                f"| {named or 'none'} | "
                f"{', '.join(s['pattern_removed']) or '-'} | {rws or '-'} |"
            )
        md = out_dir / f"{li['lineage']}.md"
        md.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(str(md))
    return written


def main(argv: list[str] | None = None) -> int:
    """Analyse the measured steps; with --write, add evidence, proposed cards and reports."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--date", required=True, help="the date of this analysis (public_steps-DATE.*)")
    ap.add_argument(
        "--results",
        action="append",
        help="a date of result files (public_lineages-*-DATE.json) to read; repeatable, later dates replace "
        "earlier entries of the same id (default: --date)",
    )
    ap.add_argument(
        "--roundtrips", action="append", help="a date of admission roundtrip files (public_roundtrips-*-DATE.json)"
    )
    ap.add_argument("--write", action="store_true", help="add the evidence records to the cards, write reports")
    ap.add_argument(
        "--features-only",
        action="store_true",
        help="only re-derive lineages/public/features.json from the mirrors (after the ranking's features changed)",
    )
    args = ap.parse_args(argv)
    doc = analyse(args.mirrors, args.results or [args.date])
    if args.features_only:
        feats = features_file(doc, evidence(doc))
        (PUBLIC / "features.json").write_text(json.dumps(feats, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(feats['features'])} records' features written to {PUBLIC / 'features.json'}")
        return 0
    props = proposed(doc)
    adm = admission(doc, load_roundtrips(args.roundtrips or []))
    meta = {
        "date": args.date,
        "command": "python bench/public_steps.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "warpwise_commit": _git_head(),
    }
    out = {
        **meta,
        "repositories": doc["repositories"],
        "expert_steps": doc["steps"],
        "summary": summary(doc),
        "proposed": props,
        "admission": adm,
    }
    (RESULTS / f"public_steps-{args.date}.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    (RESULTS / f"public_steps-{args.date}.md").write_text(steps_markdown(doc, props, adm, meta), encoding="utf-8")
    if args.write:
        import yaml

        from warpwise.skills.evidence import add_records
        from warpwise.skills.library import builtin_library

        records = evidence(doc)
        for card, recs in records.items():
            c = builtin_library().get(card)
            if c is None or c.path is None:
                continue
            add_records(Path(c.path), recs, replace_prefix="public ")
        (PUBLIC / "features.json").write_text(
            json.dumps(features_file(doc, records), indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        data = {
            "schema": 1,
            "date": args.date,
            "source": f"bench/results/public_steps-{args.date}.json",
            "note": "cards warpwise lacks, from expert steps no built-in card names (our words, measured effects)",
            "proposed": [
                {k: v for k, v in p.items() if k != "measured"} | {"steps_measured": p["measured"]} for p in props
            ],
        }
        (PUBLIC / "proposed_cards.yaml").write_text(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8"
        )
        lineage_reports(doc, PUBLIC / "reports", args.date)
    timed = [s for s in doc["steps"] if "speedup" in s]
    admitted = sum(a["admitted"] for a in adm)
    print(f"{len(doc['steps'])} steps, {len(timed)} timed; {len(props)} proposed cards; {admitted} admitted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
