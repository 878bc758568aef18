"""``cbalab paper`` and ``cbalab paper --check``: build the paper, or list how the committed one is out of step.

Figures are compared by their data, not their bytes: matplotlib's PDF and PNG bytes depend on its version
and on FreeType, which a fresh clone's pip may resolve differently, so the check compares every text file
(``.tex``, ``.csv``, ``claims.md``) byte for byte, and for a figure its data file and that its PDF and PNG
exist.  What else it verifies, so that the paper cannot drift from its results unnoticed:

* every runs.csv against the sha256 that numbers.tex stores (a changed row, quoted or not, is found) and
  against the one its meta.json recorded when the runner wrote it (a meta.json that records none is a problem);
* the abstract, the introduction and the evaluation for numbers typed by hand (experiments/paper/lint.py),
  and that the numbers of a claim of the seed paper appear only in the sentence generated for it
  (``\\Claim<key>Text``, with its verdict and conditions);
* that paper.pdf embeds the hash of its current inputs (build.inputs_sha256): a PDF not rebuilt is stale;
* which experiments' rows are stale: code that their runs executed, a data file that they read or their grid
  changed since they were computed or last verified (:func:`stale_results`, experiments/provenance.py):
  reported always, a problem under ``strict``; toolchain differences are reported as notes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from cbalab.experiments.meta import read_meta
from cbalab.experiments.paper.build import (
    INPUTS_TEX,
    PDF_INPUTS,
    build_paper,
    experiments,
    inputs_sha256,
    inputs_tex,
    prefixes,
)
from cbalab.experiments.paper.claims import measure_claims
from cbalab.experiments.paper.lint import claim_numbers_outside_sentences, hand_typed_numbers, undefined_macros
from cbalab.models.files import sha256_file


def check_paper(paper_dir: Path, results_dir: Path | None = None, strict: bool = False) -> list[str]:
    """``cbalab paper --check``: every way the committed paper differs from what its results generate.

    Regenerates into a temporary folder and compares with ``paper_dir/generated`` (text files byte for
    byte; a figure by its data file, and that its PDF and PNG exist) and ``paper_dir/claims.md``; checks
    each runs.csv against its meta.json's sha256; looks for hand-typed numbers (:func:`hand_typed_numbers`),
    claim numbers outside their generated sentences and undefined number macros; compares the inputs' hash
    that paper.pdf embeds with the current one.  With ``strict``, results older than the code that computes
    them (:func:`stale_results`) are problems too.
    """
    paper_dir = Path(paper_dir)
    results_dir = Path(results_dir) if results_dir is not None else paper_dir / "results"
    problems = []
    committed = paper_dir / "generated"
    with tempfile.TemporaryDirectory() as tmp:
        gen, claims_md = Path(tmp) / "generated", Path(tmp) / "claims.md"
        built = build_paper(results_dir, gen, compile=False, claims_path=claims_md)
        fresh = {p.name: p for p in (Path(tmp) / "generated").iterdir() if p.name != INPUTS_TEX}
        old = {p.name: p for p in committed.iterdir() if p.name != INPUTS_TEX} if committed.is_dir() else {}
        for name in sorted(set(fresh) | set(old)):
            if name not in old:
                problems.append(f"generated/{name}: missing from the committed paper (run `cbalab paper`)")
            elif name not in fresh:
                problems.append(f"generated/{name}: committed but no longer generated (run `cbalab paper`)")
            elif name.endswith((".tex", ".csv")) and old[name].read_bytes() != fresh[name].read_bytes():
                problems.append(f"generated/{name}: differs from what the results generate (run `cbalab paper`)")
        claims = paper_dir / "claims.md"
        if not claims.exists() or claims.read_text() != built.claims:
            problems.append("claims.md: out of step with the results (run `cbalab paper`)")
        numbers = (Path(tmp) / "generated" / "numbers.tex").read_text()
    problems += recorded_hashes(results_dir)
    tex_path = paper_dir / "paper.tex"
    if not tex_path.exists():
        return [*problems, f"{tex_path}: missing"]
    tex = tex_path.read_text()
    problems += [f"paper.tex {p}" for p in hand_typed_numbers(tex)]
    problems += undefined_macros(tex, numbers, prefixes(), built.missing)
    problems += claim_numbers_outside_sentences(tex, measure_claims(built.sections, built.missing))
    problems += pdf_in_step(paper_dir)
    if strict:
        problems += [f"stale: {line}" for line in stale_results(results_dir)]
    return problems


def recorded_hashes(results_dir: Path) -> list[str]:
    """Each runs.csv whose sha256 is not the one its meta.json recorded (``runs_sha256``), or of which no meta.json
    records one: the runner records it with every sweep, so a missing record would switch the check off unseen."""
    out = []
    for name in experiments():
        csv, meta = results_dir / name / "runs.csv", read_meta(results_dir / name / "meta.json")
        if not csv.is_file():
            continue
        if meta is None:
            out.append(f"{name}/meta.json: missing beside runs.csv, so the sha256 of runs.csv cannot be checked")
            continue
        recorded = meta.get("runs_sha256")
        if not isinstance(recorded, str) or not recorded:
            out.append(f"{name}/meta.json: no runs_sha256, so the sha256 of runs.csv cannot be checked (rerun)")
        elif sha256_file(csv) != recorded:
            out.append(f"{name}/runs.csv: its sha256 is not the one meta.json recorded (edited after the run?)")
    return out


def pdf_in_step(paper_dir: Path) -> list[str]:
    """Whether generated/inputs.tex and paper.pdf carry the hash of the paper's current inputs."""
    digest = inputs_sha256(paper_dir)
    inputs = paper_dir / "generated" / INPUTS_TEX
    out = []
    if not inputs.is_file() or inputs.read_text() != inputs_tex(digest):
        out.append(f"generated/{INPUTS_TEX}: not the hash of the current inputs (run `cbalab paper`)")
    pdf = paper_dir / "paper.pdf"
    if not pdf.is_file():
        return [*out, "paper.pdf: missing (run `cbalab paper` with latexmk installed)"]
    found = PDF_INPUTS.findall(pdf.read_bytes())
    if not found:
        out.append("paper.pdf: embeds no inputs hash; it predates this check (run `cbalab paper`)")
    elif found[-1].decode() != digest:
        out.append("paper.pdf: built from other inputs than paper.tex and generated/ (run `cbalab paper`)")
    return out


def latest_provenance(meta: dict) -> tuple[dict | None, str]:
    """The record the rows of ``meta`` are fresh against, and what made it: the last recorded verification's
    (``verifications``, written by ``cbalab experiment NAME --verify --record``) or else the sweep's own
    (``provenance``, written by the runner); (None, "") when meta.json predates provenance."""
    verified = [
        v for v in meta.get("verifications") or [] if isinstance(v, dict) and isinstance(v.get("provenance"), dict)
    ]
    if verified:
        v = verified[-1]
        return v[
            "provenance"
        ], f"verified at {str((v.get('git') or {}).get('commit', '?'))[:8]} on {v.get('rows')} rows"
    prov = meta.get("provenance")
    return (prov, "computed") if isinstance(prov, dict) else (None, "")


def stale_results(results_dir: Path) -> list[str]:
    """The experiments whose rows are stale, with why: code that their runs executed changed (a module whose
    normalised digest differs, or is gone), a data file that they read changed, or their grid did
    (experiments/provenance.py).  Edits that change no computation (docstrings, comments, layout) and code
    that their runs never imported stale nothing.  A meta.json without a complete record is stale as such.
    Toolchain differences are not staleness (:func:`toolchain_notes`)."""
    from cbalab.experiments.provenance import differences
    from cbalab.experiments.runner import sweep_params

    out = []
    for name, module in experiments().items():
        meta = read_meta(results_dir / name / "meta.json")
        if meta is None:
            continue
        prov, how = latest_provenance(meta)
        if prov is None:
            out.append(
                f"{name}: meta.json records no provenance (rows older than the rule): verify with --record or rerun"
            )
            continue
        if not prov.get("complete", True):
            out.append(f"{name}: some runs recorded no provenance (an older runner): verify with --record or rerun")
        params = prov.get("params") or {}
        now = sweep_params(module, bool(params.get("quick")), int(params.get("seed", 0)))
        out += [f"{name} ({how}): {d}" for d in differences(prov, now)]
    return out


def toolchain_notes(results_dir: Path) -> list[str]:
    """Each experiment whose toolchain (Python minor, numpy, pandas, highspy, pyomo) differs from this one's:
    reported, not stale; the canaries (``cbalab experiment NAME --verify``) decide whether a row moved."""
    from cbalab.experiments.provenance import toolchain_differences

    out = []
    for name in experiments():
        meta = read_meta(results_dir / name / "meta.json")
        prov = latest_provenance(meta)[0] if meta else None
        diff = toolchain_differences(prov) if prov else []
        if diff:
            out.append(f"{name}: toolchain {', '.join(diff)} (the canaries decide: cbalab experiment {name} --verify)")
    return out


def verdict_line(problems: list[str], stale: list[str]) -> str:
    """The last line of ``paper --check``: the problems counted, else in step, and then whether the results of
    some experiments are stale at this code (``stale``: the lines of :func:`stale_results`, each "NAME ...")."""
    if problems:
        return f"{len(problems)} problem(s)"
    names = sorted({line.split(" ", 1)[0].rstrip(":") for line in stale})
    if not names:
        return "in step with the results"
    return (
        f"the paper is in step with its results, but the results of {len(names)} experiment(s) are stale at this "
        f"code ({', '.join(names)}): verify or rerun them (--strict makes this a problem)"
    )


def main_paper(
    paper: str, results: str | None, check: bool, echo: Callable[[str], None] = print, strict: bool = False
) -> int:
    """What ``cbalab paper`` does; returns the exit status (0 ok, 1 the check found differences).

    ``check`` lists the stale results too; ``strict`` makes them problems (exit 1).
    """
    paper_dir = Path(paper)
    results_dir = Path(results) if results else paper_dir / "results"
    if check:
        problems = check_paper(paper_dir, results_dir, strict=strict)
        for p in problems:
            echo(p)
        stale = [] if strict else stale_results(results_dir)
        for line in stale:
            echo(f"note (a problem under --strict): stale: {line}")
        for line in toolchain_notes(results_dir):
            echo(f"note: {line}")
        echo(f"paper --check: {verdict_line(problems, stale)}")
        return 1 if problems else 0
    built = build_paper(results_dir, paper_dir / "generated", compile=True, claims_path=paper_dir / "claims.md")
    echo(f"wrote {len(built.files)} files to {built.out_dir} and {paper_dir / 'claims.md'}")
    for name, why in built.missing.items():
        echo(f"{name}: not reported ({why})")
    echo(built.message)
    return 0
