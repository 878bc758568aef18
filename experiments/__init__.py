"""Everything that runs over many instances or over time (installed as ``cbalab.experiments``).

Workload generation and the trace simulator (library code), the ``cbalab``
command line (``cli.py``), and one module per measurement script under ``runs/``.
"""
