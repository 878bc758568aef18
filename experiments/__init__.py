"""Everything that runs over many instances or over time; the ``cbalab`` command line (cbalab/cli.py) maps onto it.

- :mod:`.workload`: seeded instance and trace generators, the catalog (catalog.csv), trace loading, assignment.
- :mod:`.simulate`: the trace replay of docs/model.md §6 (class ``Replay``; entry ``simulate`` and ``SimConfig``).
- :mod:`.runner`: the sweep runner behind ``cbalab experiment NAME`` (local processes or Dask, resumable).
- :mod:`.runs`: one module per experiment (grid, run_one, figures, its paper section), run by the runner.
- :mod:`.benchmarks`: the measurements ``cbalab bench NAME`` runs, each a run module's typed ``measure``.
- :mod:`.paper`: ``cbalab paper``, the paper's numbers, tables, figures and claims, assembled from the runs' sections.
- :mod:`.methods` and :mod:`.plotting`: the methods the experiments compare, and how each is drawn.
- :mod:`.data`: the shipped data (Philly trace, Gavel and Pollux measurements) as package data.
"""
