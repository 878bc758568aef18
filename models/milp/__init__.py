"""Pyomo formulations of cbalab's problems (docs/model.md §4-§6), one builder per group of constraints."""
