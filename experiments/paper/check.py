"""``cbalab paper`` and ``cbalab paper --check``: build the paper, or list how the committed one is out of step.

Figures are compared by their data, not their bytes: matplotlib's PDF and PNG bytes depend on its version
and on FreeType, which a fresh clone's pip may resolve differently, so the check compares every text file
(``.tex``, ``.csv``, ``claims.md``) byte for byte, and for a figure its data file and that its PDF and PNG
exist.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from cbalab.experiments.paper.build import build_paper, prefixes
from cbalab.experiments.paper.lint import hand_typed_numbers, undefined_macros


def check_paper(paper_dir: Path, results_dir: Path | None = None) -> list[str]:
    """``cbalab paper --check``: every way the committed paper differs from what its results generate.

    Regenerates into a temporary folder and compares with ``paper_dir/generated`` (text files byte for
    byte; a figure by its data file, and that its PDF and PNG exist) and ``paper_dir/claims.md``; then
    looks for hand-typed numbers in the evaluation (:func:`hand_typed_numbers`) and undefined number macros.
    """
    paper_dir = Path(paper_dir)
    results_dir = Path(results_dir) if results_dir is not None else paper_dir / "results"
    problems = []
    committed = paper_dir / "generated"
    with tempfile.TemporaryDirectory() as tmp:
        built = build_paper(results_dir, Path(tmp) / "generated", compile=False, claims_path=Path(tmp) / "claims.md")
        fresh = {p.name: p for p in (Path(tmp) / "generated").iterdir()}
        old = {p.name: p for p in committed.iterdir()} if committed.is_dir() else {}
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
    tex_path = paper_dir / "paper.tex"
    if not tex_path.exists():
        return [*problems, f"{tex_path}: missing"]
    tex = tex_path.read_text()
    problems += [f"paper.tex {p}" for p in hand_typed_numbers(tex)]
    problems += undefined_macros(tex, numbers, prefixes(), built.missing)
    return problems


def main_paper(paper: str, results: str | None, check: bool, echo: Callable[[str], None] = print) -> int:
    """What ``cbalab paper`` does; returns the exit status (0 ok, 1 the check found differences)."""
    paper_dir = Path(paper)
    results_dir = Path(results) if results else paper_dir / "results"
    if check:
        problems = check_paper(paper_dir, results_dir)
        for p in problems:
            echo(p)
        echo(f"paper --check: {len(problems)} problem(s)" if problems else "paper --check: in step with the results")
        return 1 if problems else 0
    built = build_paper(results_dir, paper_dir / "generated", compile=True, claims_path=paper_dir / "claims.md")
    echo(f"wrote {len(built.files)} files to {built.out_dir} and {paper_dir / 'claims.md'}")
    for name, why in built.missing.items():
        echo(f"{name}: not reported ({why})")
    echo(built.message)
    return 0
