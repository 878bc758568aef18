"""Everything that runs over many instances or over time, and the ``cbalab`` command line.

- :mod:`.workload`: seeded instance and trace generators, the catalog (catalog.csv), trace loading, assignment.
- :mod:`.simulate`: the trace replay of docs/model.md §6 (class ``Replay``; entry ``simulate`` and ``SimConfig``).
- :mod:`.cli`: the ``cbalab`` command line; it owns argparse, library functions take typed arguments.
- :mod:`.runs`: one module per measurement script (``python -m cbalab.experiments.runs.NAME``), writing
  through runs/common.py; no script imports another.
"""
