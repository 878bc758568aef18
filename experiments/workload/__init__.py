"""Workloads: seeded instance generators, the catalog of models × datasets, job traces and dataset assignment.

- :mod:`.generate`: cost (P1) and welfare (P2) instances and Philly-calibrated traces, with the one Zipf draw.
- :mod:`.catalog`: measured throughputs of public models on public datasets (data in catalog.csv beside it).
- :mod:`.traces`: reading the Philly trace and the generic CSV trace.
- :mod:`.assign`: giving every job of a trace a model, a dataset and its rate r_j(g_j).
- :mod:`.elastic`: option tables, work and utility shapes of trace jobs for the elastic replay (welfare over time).
"""

from cbalab.experiments.workload.assign import Workload, assign, datasets_total_gb, make_workload, workload_datasets
from cbalab.experiments.workload.catalog import (
    CATALOG_DATASETS,
    CATALOG_MODELS,
    GAVEL_JOB_TYPES,
    POLLUX_MODELS,
    Catalog,
    DatasetSpec,
    ModelSpec,
    check_catalog,
)
from cbalab.experiments.workload.generate import (
    DEFAULT_PRICES,
    PHILLY_ARRIVALS_PER_S,
    PHILLY_DURATION_RANGE_S,
    PHILLY_GPU_SHARES,
    PHILLY_LOG_DURATION,
    ZipfDraw,
    dataset_sizes,
    generate_cost,
    generate_trace,
    generate_welfare,
    philly_gpus,
    zipf_draw,
    zipf_weights,
)
from cbalab.experiments.workload.traces import (
    PHILLY_COLUMNS,
    TRACE_COLUMNS,
    TRACE_OPTIONAL,
    TraceError,
    load_trace,
)

__all__ = [
    "CATALOG_DATASETS",
    "CATALOG_MODELS",
    "DEFAULT_PRICES",
    "GAVEL_JOB_TYPES",
    "PHILLY_ARRIVALS_PER_S",
    "PHILLY_COLUMNS",
    "PHILLY_DURATION_RANGE_S",
    "PHILLY_GPU_SHARES",
    "PHILLY_LOG_DURATION",
    "POLLUX_MODELS",
    "TRACE_COLUMNS",
    "TRACE_OPTIONAL",
    "Catalog",
    "DatasetSpec",
    "ModelSpec",
    "TraceError",
    "Workload",
    "ZipfDraw",
    "assign",
    "check_catalog",
    "dataset_sizes",
    "datasets_total_gb",
    "generate_cost",
    "generate_trace",
    "generate_welfare",
    "load_trace",
    "make_workload",
    "philly_gpus",
    "workload_datasets",
    "zipf_draw",
    "zipf_weights",
]
