"""Pyomo formulations of cbalab's problems (spec/MODEL.md §4-§6), one builder per group of constraints."""
