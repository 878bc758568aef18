"""The one usage error of the experiment layer (exit 2 on the command line): an unknown or unavailable
experiment, a bad option, a meta.json or an ``--out`` that cannot be used, a scheduler that is none."""

from __future__ import annotations


class ExperimentError(Exception):
    """A usage error: unknown experiment, an experiment whose module is missing, a bad option (exit 2)."""
