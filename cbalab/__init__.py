"""cbalab: cache, remote-IO bandwidth and GPU allocation for deep-learning clusters.

The public API (implemented in cbalab/api.py)::

    import cbalab
    inst = cbalab.generate("cost", jobs=200, datasets=40, seed=0)
    res = cbalab.solve(inst, "cba")          # scored by the referee
    res.status, res.objective, res.jobs_frame()
    cbalab.examples.toy_cluster()            # named teaching instances

The installed packages are ``cbalab.models`` (the mathematics and the referee),
``cbalab.algorithms`` (fast methods and the registry) and ``cbalab.experiments``
(workloads, replays and measurement runs); ``cbalab.cli`` is the command line, a thin mapping
of its arguments onto this API.
"""

from cbalab import examples
from cbalab.api import (
    Allocation,
    Evaluation,
    Instance,
    Problem,
    ReplayResult,
    ReplaySpec,
    Result,
    SolveOptions,
    Status,
    build_instance,
    build_model,
    compare,
    evaluate,
    generate,
    load,
    loads,
    methods,
    replay,
    save,
    simulate,
    solve,
    solve_model,
)
from cbalab.models import __version__
from cbalab.models.instance import InstanceError

__all__ = [
    "Allocation",
    "Evaluation",
    "Instance",
    "InstanceError",
    "Problem",
    "ReplayResult",
    "ReplaySpec",
    "Result",
    "SolveOptions",
    "Status",
    "__version__",
    "build_instance",
    "build_model",
    "compare",
    "evaluate",
    "examples",
    "generate",
    "load",
    "loads",
    "methods",
    "replay",
    "save",
    "simulate",
    "solve",
    "solve_model",
]
