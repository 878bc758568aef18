"""Generated instances must not depend on the SIMD kernels numpy picks for the CPU
(docs/adr/0004-bit-stable-results-across-machines.md).

numpy dispatches its elementwise functions (``tanh``, ``power``, ``log1p`` …) at import to the widest
instruction set the CPU has (X86_V2, X86_V3 = AVX2, X86_V4 = AVX-512), and the kernels can round
differently; ``NPY_DISABLE_CPU_FEATURES`` switches the wider ones off. Each case here generates in two fresh
interpreters, one with every dispatch target this CPU has and one with only numpy's baseline, and compares
the bytes. A rerun on another machine found the sensitivity grid (``np.logspace``: 292 of 2,500 points one ulp
apart between an AVX2 and an AVX-512 machine, now decimal arithmetic) and the welfare generator's utilities
(``np.tanh`` of the sigmoid shape) depending on it; the generators now take every transcendental function from the C
library element by element (models/kernels.py ``libm``): the sigmoid's tanh, log1p and powers of the utility
shapes, the trace generator's exp and the Zipf weights' powers.  This CPU can only show the kernels it has
against the baseline; the AVX-512 ones differ in the same functions, and the same fix covers them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

try:  # numpy >= 2 (pyproject allows 1.26, where the module is numpy.core)
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

#: The dispatch targets this CPU runs; switching them all off leaves numpy's baseline kernels.
WIDER = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]

pytestmark = pytest.mark.skipif(not WIDER, reason="this CPU runs only numpy's baseline kernels: nothing to compare")

#: The bytes of the generated instances of each kind, hashed.
GENERATE = """
import hashlib, json
import numpy as np
from fractions import Fraction
from cbalab.experiments.runs.sensitivity import log_grid
from cbalab.experiments.workload import assign, generate_cost, generate_trace, generate_welfare
from cbalab.experiments.workload.elastic import elastic
from cbalab.models.options import SHAPES, Utility

def digest(obj, names):
    h = hashlib.sha256()
    for name in names:
        h.update(np.ascontiguousarray(getattr(obj, name)).tobytes())
    return h.hexdigest()

INSTANCE = ("dataset_size_gb", "job_io_gbps", "option_gpus", "option_io_gbps", "option_utility")
speeds = np.linspace(0.01, 8.0, 4001)
shapes = {
    s: Utility(shape=s, remaining_samples=1e6, deadline_h=2.0)(speeds * 100.0, 100.0).tobytes().hex()
    for s in SHAPES
}
shapes["alpha 0.5"] = Utility(shape="alpha", alpha=0.5)(speeds, 1.0).tobytes().hex()
trace = generate_trace(3000, 1)
online = elastic(assign(trace, 1, skew=1.5, n_datasets=24), 1)

print(json.dumps({
    "cost": digest(generate_cost(2000, 200, 1), INSTANCE),
    "welfare": digest(generate_welfare(2000, 200, 1, utility_mix="mixed", budget_fraction=0.2), INSTANCE),
    "shapes": shapes,
    "trace": trace[["submit_s", "duration_s", "gpus"]].to_numpy(dtype=float).tobytes().hex(),
    "elastic": digest(online, ("tput", "rate", "base", "value", "work")),
    "grid": log_grid(Fraction(-6), Fraction(1), 25),
}))
"""


def _generated(disabled: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    done = subprocess.run([sys.executable, "-c", GENERATE], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:  # not an AssertionError: a crash must not pass as the expected failure below
        raise RuntimeError(f"with NPY_DISABLE_CPU_FEATURES={disabled}: {done.stderr}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(out, dict)
    return out


@pytest.fixture(scope="module")
def both() -> tuple[dict, dict]:
    return _generated([]), _generated(WIDER)


@pytest.mark.slow
def test_cost_instances_and_the_sensitivity_grid_are_the_same_bytes_on_every_kernel(both: tuple[dict, dict]) -> None:
    """generate_cost (io-cost's, dynamic's and sensitivity's instances) and the sensitivity grid's points are
    byte-identical with and without the wider SIMD kernels."""
    wide, baseline = both
    assert wide["cost"] == baseline["cost"]
    assert wide["grid"] == baseline["grid"]


def test_welfare_instances_are_the_same_bytes_on_every_kernel(both: tuple[dict, dict]) -> None:
    """generate_welfare's options (rates and utilities), every utility shape and online-welfare's elastic
    workload (option tables, utilities and work) are byte-identical with and without the wider SIMD kernels."""
    wide, baseline = both
    assert wide["welfare"] == baseline["welfare"]
    assert wide["shapes"] == baseline["shapes"]
    assert wide["elastic"] == baseline["elastic"]


def test_the_trace_generator_is_the_same_bytes_on_every_kernel(both: tuple[dict, dict]) -> None:
    """generate_trace's arrivals, durations (exp of a normal draw) and GPUs are byte-identical with and without
    the wider SIMD kernels."""
    wide, baseline = both
    assert wide["trace"] == baseline["trace"]
