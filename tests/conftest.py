"""Test configuration: hypothesis profiles chosen by CBALAB_HYPOTHESIS_PROFILE (dev, ci, thorough)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True, derandomize=True)
settings.register_profile("thorough", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("CBALAB_HYPOTHESIS_PROFILE", "dev"))
