"""cbalab: cache, remote-IO bandwidth and GPU allocation for deep-learning clusters.

The installed packages are ``cbalab.models`` (the mathematics and the referee),
``cbalab.algorithms`` (fast methods and the registry) and ``cbalab.experiments``
(workloads, replays, measurement runs and the command line).
"""

__version__ = "0.1.0"
