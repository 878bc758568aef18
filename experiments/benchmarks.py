"""The benchmarks of ``cbalab bench NAME``: measurements run one at a time, outside the sweep runner.

A benchmark is a module under ``cbalab.experiments.runs`` with a function ``measure`` whose parameters are
keyword-only and typed (``bool``, ``int``, ``float``, ``str``, ``Path``, ``X | None`` or ``tuple[X, ...]``)
and have defaults unless they are required.  ``measure`` returns a JSON-able dict, which ``cbalab bench``
prints, or None when it printed and wrote its own results; a dict whose ``"ok"`` is False is exit 1 (the
measurement found what it looks for, e.g. a false optimum).  Its options are its parameters, each
``--name-with-dashes`` (:func:`options`), so a new benchmark is one line of :data:`BENCHMARKS`; speeds are
reported as ratios, never as bare times (README "Standards").
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbalab.experiments.runner import ExperimentError

#: Benchmark name -> module that implements it (``cbalab bench --list``).
BENCHMARKS: dict[str, str] = {
    "milp-scale": "cbalab.experiments.runs.milp_scale",
    "autocba-hard": "cbalab.experiments.runs.autocba_hard",
    "integer-milp": "cbalab.experiments.runs.integer_milp_bench",
    "magnitude-fuzz": "cbalab.experiments.runs.magnitude_fuzz",
    "exact-fuzz": "cbalab.experiments.runs.exact_fuzz",
    "trace-scale": "cbalab.experiments.runs.trace_scale",
    "p3-trace": "cbalab.experiments.runs.p3_trace",
    "p3-sides": "cbalab.experiments.runs.p3_sides",
    "dask-workers": "cbalab.experiments.runs.dask_workers",
    "replay-speed": "cbalab.experiments.runs.replay_speed",
}

#: The value types an option of ``measure`` may have.
KINDS = (bool, int, float, str, Path)


@dataclass(frozen=True)
class Option:
    """One parameter of a benchmark's ``measure``: its keyword, its value type, its default (``required`` when
    it has none), whether it takes several values (``tuple[X, ...]``) and whether it may be None."""

    name: str
    kind: type
    default: Any
    required: bool
    many: bool
    optional: bool

    @property
    def flag(self) -> str:
        """The command-line option: ``--time-limit`` for ``time_limit`` (``--no-x`` for a bool that is True)."""
        dashed = self.name.replace("_", "-")
        return f"--no-{dashed}" if self.kind is bool and self.default is True else f"--{dashed}"


def _module(name: str) -> types.ModuleType:
    """The module of benchmark ``name``; ExperimentError naming it (with the closest names) if unknown."""
    if name not in BENCHMARKS:
        close = difflib.get_close_matches(name, list(BENCHMARKS), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(map(repr, close))}?" if close else f"one of {', '.join(BENCHMARKS)}"
        raise ExperimentError(f"bench: no benchmark {name!r}; {hint} (cbalab bench --list)")
    return importlib.import_module(BENCHMARKS[name])


def measure_function(name: str) -> Callable[..., dict[str, Any] | None]:
    """The ``measure`` of benchmark ``name`` (ExperimentError if there is no such benchmark)."""
    function: Callable[..., dict[str, Any] | None] = _module(name).measure
    return function


def summary(name: str) -> str:
    """The first paragraph of benchmark ``name``'s module docstring, on one line: what it measures."""
    doc = _module(name).__doc__ or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def options(name: str) -> list[Option]:
    """The options of benchmark ``name``: its ``measure``'s keyword-only parameters, in order.

    TypeError for a parameter that is not keyword-only or whose type is none of :data:`KINDS` (a benchmark
    that does not follow the contract of the module docstring).
    """
    function = measure_function(name)
    hints = typing.get_type_hints(function)
    found = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{name}: measure's parameter {parameter.name!r} must be keyword-only")
        kind, many, optional = _kind(hints[parameter.name], f"{name}: measure's {parameter.name}")
        required = parameter.default is inspect.Parameter.empty
        found.append(Option(parameter.name, kind, None if required else parameter.default, required, many, optional))
    return found


def _kind(hint: Any, where: str) -> tuple[type, bool, bool]:
    """(value type, several values, may be None) of a parameter's annotation."""
    args = typing.get_args(hint)
    optional = isinstance(hint, types.UnionType) and type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        hint, args = rest[0], typing.get_args(rest[0])
    many = typing.get_origin(hint) in (tuple, list)
    if many:
        hint = args[0]
    if hint not in KINDS or (many and hint is bool):
        raise TypeError(f"{where}: type {hint!r} is none of {[k.__name__ for k in KINDS]} (or tuple[X, ...], X | None)")
    return hint, many, optional
