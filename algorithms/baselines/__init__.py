"""Policies from the literature (docs/model.md §7), one small module each."""
