"""The one registry (algorithms/registry.py): properties as fields, queries, one call signature."""

from __future__ import annotations

import inspect

import pytest

from cbalab.algorithms import registry
from cbalab.models.types import Problem, SolveOptions


def test_select_by_property() -> None:
    """Aggregable cost methods, cache policies and GPU schedulers are registry queries, not name tables."""
    assert [m.name for m in registry.select("cost", aggregable=True)] == [
        "cba",
        "lp",
        "milp",
        "io-only",
        "silod",
        "cba-keep",
    ]
    assert registry.cache_policies() == ["cba", "io-only", "cache-all", "coordl", "quiver", "silod"]
    schedulers = registry.select(Problem.WELFARE, kind="gpu-scheduler")
    assert {m.name for m in schedulers} == {
        f"{b}{t}" for b in ("gavel-tput", "gavel-fair", "optimus", "utility-greedy") for t in ("", "-tuned")
    }
    assert all(m.takes_cache_policy for m in schedulers)
    assert {m.name for m in registry.select(exact=True)} == {"lp", "milp", "milp-stall"}
    assert len(registry.select()) == len(registry.all_methods())


def test_every_entry_has_one_signature() -> None:
    """Every registered function is (instance, options=SolveOptions()) -> Allocation."""
    for m in registry.all_methods():
        if m.exact:
            continue  # importing them imports Pyomo; their signature is checked below
        params = list(inspect.signature(m.function()).parameters.values())
        assert params[1].name == "options", m.name
        assert params[1].default == SolveOptions(), m.name
    from cbalab.models import solve

    for fn in (solve.cost_lp, solve.cost_milp, solve.welfare_lp, solve.welfare_milp):
        assert list(inspect.signature(fn).parameters)[:2] == ["inst", "options"]


def test_unknown_names_are_clear_errors() -> None:
    """An unknown method or cache policy names the known ones."""
    with pytest.raises(KeyError, match="known: cba"):
        registry.get("cost", "nope")
    with pytest.raises(KeyError, match="no method"):
        registry.get("nope", "cba")
    with pytest.raises(ValueError, match="cache policy must be one of"):
        registry.cache_policy("lp")
