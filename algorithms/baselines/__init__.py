"""Policies from the literature (spec/MODEL.md §7), one small module each."""
