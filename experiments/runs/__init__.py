"""One module per experiment of ``cbalab experiment NAME`` (the registry is experiments/runner.py's EXPERIMENTS).

Each exposes ``NAME``, ``grid(quick, seed)``, ``run_one(params)``, ``figures(runs, outdir)`` and optionally
``tables(runs)``; the runner evaluates the grid, writes every run atomically and assembles runs.csv, meta.json,
the figures and the tables under ``DIR/NAME/``.  Each also owns its section of the paper, ``PREFIX`` (of its
macros) and ``paper_section(res)``, which ``cbalab paper`` (experiments/paper/) assembles.  Modules import
library code only, never each other's runs (scaling imports milp_scale's grid when it is installed).

A benchmark, measured one at a time rather than swept (milp_scale, autocba_hard, integer_milp_bench,
magnitude_fuzz, ...), exposes a typed keyword-only ``measure(...)``; ``cbalab bench NAME`` runs it with the
options of its signature once its module is named in experiments/benchmarks.py's BENCHMARKS.
"""
