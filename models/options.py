"""Job option tables for the welfare problem P2: (g, r_j(g), U_j(g)) from a throughput curve and a utility shape.

docs/model.md §2 and §5 define a job's elastic choices by two numbers per
GPU count g in its option set O_j: the data-consumption rate r_j(g) (GB/s,
throughput in samples/s times the mean sample size in GB) and the utility per
hour U_j(g).  This module builds those tables from

* a throughput curve: a measured table {g: samples/s} (:func:`table_throughput`)
  or Amdahl-style scaling with a serial fraction (:func:`amdahl_throughput`);
* a :class:`Utility` of the job's speed, one of the shapes §5 names as exact in
  the MILP: linear, logarithmic, square root, α-fair, sigmoid, and a deadline
  step derived from the job's remaining work.

Utilities are functions of the normalised speed x = throughput(g) / reference
(by default the throughput at the job's smallest option), so that a weight
means "utility per hour at the reference speed" whatever the model's raw
samples/s.  Every shape has U(0) = 0 and U ≥ 0, as §2 requires; nothing here
requires concavity or monotonicity (a sigmoid or a deadline step is a legal
table everywhere in cbalab).

:func:`stack` turns many jobs' tables into the CSR arrays that
``models.instance.build(options=(ptr, gpus, io_gbps, utility))`` takes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cbalab.models.instance import InstanceError
from cbalab.models.kernels import libm

#: The utility shapes of docs/model.md §5, by the names the CLI and the generator use.
SHAPES = ("linear", "log", "sqrt", "alpha", "sigmoid", "deadline")


def parse_shares(text: str, field: str, hint: str) -> dict[str, float]:
    """The shares of ``shape=share,...`` (e.g. ``linear=3,deadline=1``) as a dict; which shapes exist, and whether the
    shares may be used, is the caller's to check.  A part without a number is an InstanceError on ``field`` that
    says ``hint`` (what the caller accepts); a shape given twice is one too (a mix holds one share per shape, and
    keeping the last would run another mix than the one asked for)."""
    shares: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip() in shares:
            raise InstanceError(field, text, f"gives {name.strip()!r} two shares; give each shape once")
        try:
            shares[name.strip()] = float(value)
        except ValueError:
            raise InstanceError(field, text, hint) from None
    return shares


@dataclass(frozen=True)
class OptionTable:
    """One job's options: GPU counts (increasing), r_j(g) in GB/s and U_j(g) in utility per hour."""

    gpus: np.ndarray
    io_gbps: np.ndarray
    utility: np.ndarray


def _positive(value: float | None, name: str) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise InstanceError(name, value, "must be a finite number > 0")
    return float(value)


def _gpu_counts(gpus: Sequence[int] | np.ndarray, name: str = "options.gpus") -> np.ndarray:
    g = np.asarray(list(gpus))
    if g.size == 0:
        raise InstanceError(name, list(gpus), "must list at least one GPU count")
    if g.dtype.kind not in "iu" or (g < 1).any():
        raise InstanceError(name, g.tolist(), "GPU counts must be whole numbers >= 1")
    if np.unique(g).size != g.size:
        raise InstanceError(name, g.tolist(), "duplicate GPU count")
    return g.astype(np.int64)


def amdahl_throughput(
    gpus: Sequence[int] | np.ndarray, single_gpu_samples_s: float, serial_fraction: float
) -> np.ndarray:
    """Throughput (samples/s) at each GPU count by Amdahl's law: T(g) = T(1) / (s + (1 - s) / g).

    ``serial_fraction`` s ∈ [0, 1]: 0 is linear scaling, 1 no speedup at all.
    The curve is increasing and concave in g.
    """
    t1 = _positive(single_gpu_samples_s, "options.single_gpu_samples_s")
    if not (isinstance(serial_fraction, (int, float)) and 0.0 <= serial_fraction <= 1.0):
        raise InstanceError("options.serial_fraction", serial_fraction, "must be in [0, 1]")
    g = _gpu_counts(gpus).astype(float)
    return t1 / (serial_fraction + (1.0 - serial_fraction) / g)


def table_throughput(table: Mapping[int, float], gpus: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A measured throughput table {g: samples/s}, as (GPU counts, samples/s) sorted by g.

    ``gpus`` selects a subset of the table's counts (every one of them must be
    measured).  Throughput need not grow with g: a table that slows down at
    8 GPUs is what it is.
    """
    if not table:
        raise InstanceError("options.throughput", dict(table), "must have at least one entry")
    keys = _gpu_counts(sorted(table), "options.throughput")
    chosen = keys if gpus is None else np.sort(_gpu_counts(gpus))
    missing = sorted(set(chosen.tolist()) - set(keys.tolist()))
    if missing:
        raise InstanceError("options.gpus", missing[0], "has no measured throughput in the table")
    tput = np.array([float(table[int(g)]) for g in chosen])
    bad = np.flatnonzero(~(np.isfinite(tput) & (tput > 0)))
    if bad.size:
        raise InstanceError(f"options.throughput[{int(chosen[bad[0]])}]", float(tput[bad[0]]), "must be > 0")
    return chosen, tput


@dataclass(frozen=True)
class Utility:
    """A utility per hour U(x) of the normalised speed x = throughput / reference (docs/model.md §5).

    Shapes, each scaled by ``weight`` (utility per hour) and with U(0) = 0:

    * ``linear``:   x
    * ``log``:      log(1 + x)
    * ``sqrt``:     √x
    * ``alpha``:    α-fair, ((1 + x)^(1-α) − 1) / (1 − α), and log(1 + x) at α = 1
                    (shifted by one so that U(0) = 0 and U ≥ 0 for every α > 0)
    * ``sigmoid``:  σ(k (x − m)) − σ(−k m), with σ the logistic function, steepness
                    k = ``steepness`` and midpoint m = ``midpoint``: convex then
                    concave, the textbook non-concave utility
    * ``deadline``: 1 if the job's ``remaining_samples`` finish within
                    ``deadline_h`` hours at this throughput, else 0: a step

    The deadline shape reads the raw throughput (samples/s), not x.
    """

    shape: str = "linear"
    weight: float = 1.0
    alpha: float = 2.0
    steepness: float = 4.0
    midpoint: float = 2.0
    remaining_samples: float | None = None
    deadline_h: float | None = None

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise InstanceError("utility.shape", self.shape, f"must be one of {', '.join(SHAPES)}")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise InstanceError("utility.weight", self.weight, "must be finite and >= 0")
        if self.shape == "alpha":
            _positive(self.alpha, "utility.alpha")
        if self.shape == "sigmoid":
            _positive(self.steepness, "utility.steepness")
            if not math.isfinite(self.midpoint):
                raise InstanceError("utility.midpoint", self.midpoint, "must be finite")
        if self.shape == "deadline":
            if self.remaining_samples is None or self.deadline_h is None:
                raise InstanceError("utility.deadline_h", self.deadline_h, "needs remaining_samples and deadline_h")
            _positive(self.remaining_samples, "utility.remaining_samples")
            _positive(self.deadline_h, "utility.deadline_h")

    def __call__(self, throughput: np.ndarray, reference: float) -> np.ndarray:
        """U at each throughput (samples/s); ``reference`` is the throughput where x = 1."""
        t = np.asarray(throughput, dtype=float)
        x = t / _positive(reference, "options.reference")
        if self.shape == "linear":
            u = x
        elif self.shape == "log":
            u = libm(math.log1p, x)
        elif self.shape == "sqrt":
            u = np.sqrt(x)
        elif self.shape == "alpha":
            a = self.alpha
            u = libm(math.log1p, x) if a == 1.0 else (libm(math.pow, 1.0 + x, 1.0 - a) - 1.0) / (1.0 - a)
        elif self.shape == "sigmoid":
            k, m = self.steepness, self.midpoint
            u = logistic(k * (x - m)) - logistic(-k * m)
        else:
            work, deadline = _positive(self.remaining_samples, "utility.remaining_samples"), self.deadline_h
            with np.errstate(divide="ignore"):
                hours = work / t / 3600.0
            u = (hours <= _positive(deadline, "utility.deadline_h")).astype(float)
        return self.weight * np.maximum(u, 0.0)


def logistic(z: np.ndarray | float) -> np.ndarray:
    """The logistic function 1 / (1 + e^(−z)) = (1 + tanh(z/2)) / 2 of the sigmoid utility (docs/model.md §5), by
    the C library's tanh (:func:`cbalab.models.kernels.libm`): the same bits on every CPU."""
    return 0.5 * (1.0 + libm(math.tanh, 0.5 * np.asarray(z, dtype=float)))


def option_table(
    gpus: Sequence[int] | np.ndarray,
    throughput_samples_s: Sequence[float] | np.ndarray,
    sample_gb: float,
    utility: Utility,
    *,
    reference: float | None = None,
) -> OptionTable:
    """One job's option table: r_j(g) = throughput(g) × ``sample_gb`` and U_j(g) = ``utility(throughput(g))``.

    ``reference`` is the throughput at which the utility's x = 1 (default:
    the throughput at the smallest GPU count).  Rows come out sorted by g.
    """
    g = _gpu_counts(gpus)
    t = np.asarray(throughput_samples_s, dtype=float)
    if t.shape != g.shape:
        raise InstanceError("options.throughput", t.tolist(), f"needs one value per GPU count ({g.size})")
    bad = np.flatnonzero(~(np.isfinite(t) & (t > 0)))
    if bad.size:
        raise InstanceError(f"options.throughput[{int(g[bad[0]])}]", float(t[bad[0]]), "must be finite and > 0")
    size = _positive(sample_gb, "options.sample_gb")
    order = np.argsort(g, kind="stable")
    g, t = g[order], t[order]
    ref = float(t[0]) if reference is None else reference
    return OptionTable(gpus=g, io_gbps=t * size, utility=utility(t, ref))


class OptionCSR(NamedTuple):
    """Many jobs' option tables in CSR form: job j's options are rows ``ptr[j]:ptr[j + 1]``."""

    ptr: np.ndarray
    gpus: np.ndarray
    io_gbps: np.ndarray
    utility: np.ndarray


def stack(tables: Sequence[OptionTable]) -> OptionCSR:
    """Many jobs' tables (job order) as CSR ``(ptr, gpus, io_gbps, utility)`` for ``models.instance.build``."""
    counts = np.fromiter((t.gpus.size for t in tables), dtype=np.int64, count=len(tables))
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if not tables:
        return OptionCSR(ptr, np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    return OptionCSR(
        ptr,
        np.concatenate([t.gpus for t in tables]).astype(np.int64),
        np.concatenate([t.io_gbps for t in tables]).astype(float),
        np.concatenate([t.utility for t in tables]).astype(float),
    )
