"""One module per measurement of spec/EXPERIMENTS.md, each run as ``python -m cbalab.experiments.runs.NAME``.

Each script parses its own command line in ``main`` and calls typed functions;
results go through :mod:`.common` (atomic tidy CSV plus a meta JSON with the
seed and arguments).  Scripts import library code only, never each other.
"""
