"""Elastic workloads: every trace job gets an option table, a work amount and a utility shape (docs/model.md §6b).

A trace row says when a job arrived, how long it ran and on how many GPUs.
The elastic replay (experiments/elastic.py) may run it on other GPU counts, so
each job needs what docs/model.md §2 and §5 call its option table:

* **GPU counts.**  The counts its model's throughput is measured at in the
  catalog (Gavel: 1, 2, 4, 8; Pollux: 1, 2, 4, 8, 16, 32, 64; the two Gavel
  models measured on one GPU only have just 1), plus the trace's own count,
  the job's *reference option*.  A reference count outside the measured ones
  gets the catalog's interpolated (or linearly extrapolated) throughput
  (experiments.workload.ModelSpec.samples_per_second).
* **Rates.**  r_j(g) = samples/s at g × the dataset's mean sample size (§2).
* **Work.**  W_j = duration_s × samples/s at the reference option (§6b): run
  at its reference option and never stalled, the job takes exactly its trace
  duration, its *isolated run time*.
* **Utility.**  U_j(g) is a function of the speed x = throughput(g) /
  throughput(reference), scaled so that U_j(reference) = v_j · g_ref, with
  v_j log-normal around ``value_per_gpu_hour`` (utility per reference
  GPU-hour; a GPU-hour costs 2.5 $ at the default prices).  The shape is drawn
  per job from a seeded mix (:class:`UtilityMix`):

  - ``linear``:   x;
  - ``concave``:  √x;
  - ``sigmoid``:  (σ(k(x − 1)) − σ(−k)) / (σ(0) − σ(−k)), σ the logistic
    function, k = ``sigmoid_steepness``: little value below the reference
    speed, saturating above it;
  - ``deadline``: 1 while the job can still finish by its deadline at g
    (now + restart delay + remaining work / throughput(g) ≤ deadline), else
    ``late_value`` · x.  The deadline is submit + s · (isolated run time),
    s uniform in ``deadline_slack``.  The late value keeps a job that missed
    its deadline worth running, so that it still finishes (a job worth
    nothing would wait forever under any welfare-maximising policy).

  All shapes have U(0) = 0 and U > 0 at every option, so every job is worth
  running and a replay that ends with every job finished exists.

The deadline shape depends on the time and on the job's remaining work, so
the replay re-evaluates it at every decision (:meth:`ElasticWorkload.utility`);
the other shapes are fixed tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from cbalab.experiments.workload.assign import Workload
from cbalab.experiments.workload.catalog import Catalog
from cbalab.models.instance import InstanceError
from cbalab.models.options import logistic, parse_shares

#: The utility shapes of the elastic replay, in the order of their codes in ``ElasticWorkload.shape``.
ELASTIC_SHAPES = ("linear", "concave", "sigmoid", "deadline")


@dataclass(frozen=True)
class UtilityMix:
    """The seeded, tunable mix of utility shapes and their parameters (module docstring)."""

    shares: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(ELASTIC_SHAPES, 0.25))
    value_per_gpu_hour: float = 3.0
    value_sigma: float = 0.6
    sigmoid_steepness: float = 6.0
    deadline_slack: tuple[float, float] = (1.2, 3.0)
    late_value: float = 0.1

    def __post_init__(self) -> None:
        unknown = sorted(set(self.shares) - set(ELASTIC_SHAPES))
        if unknown:
            raise InstanceError(f"utility_mix.{unknown[0]}", self.shares[unknown[0]], f"known: {ELASTIC_SHAPES}")
        values = [float(v) for v in self.shares.values()]
        if not all(math.isfinite(v) and v >= 0 for v in values) or sum(values) <= 0:
            raise InstanceError("utility_mix", dict(self.shares), "shares must be >= 0 with a positive sum")
        lo, hi = self.deadline_slack
        if not (1.0 <= lo <= hi and math.isfinite(hi)):
            raise InstanceError("deadline_slack", [lo, hi], "must satisfy 1 <= low <= high < inf")
        for name in ("value_per_gpu_hour", "sigmoid_steepness", "late_value"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise InstanceError(name, v, "must be finite and > 0")
        if not (math.isfinite(self.value_sigma) and self.value_sigma >= 0):
            raise InstanceError("value_sigma", self.value_sigma, "must be finite and >= 0")

    @classmethod
    def parse(cls, text: str) -> UtilityMix:
        """``mixed`` (equal shares), one shape's name, or ``shape=share,...`` (e.g. ``linear=3,deadline=1``)."""
        text = text.strip()
        if text == "mixed":
            return cls()
        if text in ELASTIC_SHAPES:
            return cls(shares={text: 1.0})
        return cls(shares=parse_shares(text, "utility_mix", "expected 'mixed', a shape, or shape=share,..."))

    def normalised(self) -> dict[str, float]:
        """Shares summing to 1, in ELASTIC_SHAPES order (shapes left out have share 0)."""
        total = sum(float(v) for v in self.shares.values())
        return {s: float(self.shares.get(s, 0.0)) / total for s in ELASTIC_SHAPES}

    def record(self) -> dict:
        """The mix as recorded in summary.json."""
        doc = asdict(self)
        doc["shares"] = self.normalised()
        doc["deadline_slack"] = list(self.deadline_slack)
        return doc


@dataclass
class ElasticWorkload:
    """Jobs with padded option tables (one row per job, ``width`` columns, valid where ``valid``).

    ``gpus``, ``tput`` (samples/s), ``rate`` (GB/s) and ``base`` (U_j(g) for
    the fixed shapes; for deadline jobs the speed x) are (n, width) arrays;
    ``ref`` is the column of the reference option; ``work`` W_j in samples;
    ``shape`` a code into ELASTIC_SHAPES; ``value`` U_j(reference) in utility/h;
    ``deadline_s`` the absolute deadline (nan unless deadline).
    """

    jobs: pd.DataFrame
    datasets: pd.DataFrame
    gpus: np.ndarray
    tput: np.ndarray
    rate: np.ndarray
    base: np.ndarray
    valid: np.ndarray
    ref: np.ndarray
    work: np.ndarray
    shape: np.ndarray
    value: np.ndarray
    deadline_s: np.ndarray
    mix: UtilityMix
    settings: dict

    @property
    def n(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    def utility(
        self, idx: np.ndarray, t: float, remaining: np.ndarray, current: np.ndarray, ran: np.ndarray, delay: float
    ) -> np.ndarray:
        """U_j(g) at time ``t`` of the jobs ``idx`` ((m, width); invalid columns hold -inf).

        ``remaining`` is each job's work left (samples), ``current`` its GPU
        count now (0: waiting), ``ran`` whether it has run before, ``delay``
        the restart delay that a job which has run pays when its count changes
        (experiments/elastic.py); the deadline test counts it.
        """
        u = np.where(self.valid[idx], self.base[idx], -np.inf)
        dl = self.shape[idx] == ELASTIC_SHAPES.index("deadline")
        if dl.any():
            rows = idx[dl]
            g = self.gpus[rows]
            pause = np.where((g != current[dl, None]) & ran[dl, None], delay, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                finish = t + pause + remaining[dl, None] / self.tput[rows]
            meets = finish <= self.deadline_s[rows, None]
            x = self.base[rows]
            v = self.value[rows, None]
            u[dl] = np.where(self.valid[rows], np.where(meets, v, self.mix.late_value * v * x), -np.inf)
        return u


def shape_values(shape: str, x: np.ndarray, mix: UtilityMix) -> np.ndarray:
    """The shape's U / U(reference) at speeds x (the deadline shape returns x: it is evaluated per decision).

    Public so that a hand-built workload (tests/workloads.py) states its utilities by the same rule.
    """
    if shape == "linear" or shape == "deadline":
        return x
    if shape == "concave":
        return np.sqrt(x)
    k = mix.sigmoid_steepness
    return (logistic(k * (x - 1.0)) - logistic(-k)) / (logistic(0.0) - logistic(-k))


def elastic(
    workload: Workload,
    seed: int,
    mix: UtilityMix | None = None,
    *,
    gpu_type: str | None = None,
    catalog: Catalog | None = None,
) -> ElasticWorkload:
    """Give every job of ``workload`` (experiments.workload.assign) its option table, work and utility; seeded."""
    cat = catalog or Catalog.default()
    mix = mix or UtilityMix()
    jobs = workload.jobs.reset_index(drop=True)
    n = len(jobs)
    models = jobs["model"].to_numpy(dtype=object)
    g_ref = jobs["gpus"].to_numpy(dtype=np.int64)
    dur = jobs["duration_s"].to_numpy(dtype=float)
    sizes = workload.datasets["size_gb"].to_numpy(dtype=float)
    sample_gb = np.array([cat.dataset(k).sample_gb for k in workload.datasets["dataset"]])
    kj = jobs["dataset_index"].to_numpy(dtype=np.int64)
    counts: dict[str, list[int]] = {}
    for name in set(models):
        spec = cat.model(name)
        counts[name] = sorted(spec.throughput[gpu_type or spec.default_gpu])
    width = max((len(set(counts[m]) | {int(g)}) for m, g in zip(models, g_ref)), default=1)
    gpus: np.ndarray = np.zeros((n, width), dtype=np.int64)
    valid: np.ndarray = np.zeros((n, width), dtype=bool)
    ref: np.ndarray = np.zeros(n, dtype=np.int64)
    for j in range(n):
        row = sorted(set(counts[models[j]]) | {int(g_ref[j])})
        gpus[j, : len(row)] = row
        valid[j, : len(row)] = True
        ref[j] = row.index(int(g_ref[j]))
    tput = np.ones((n, width))
    for name in set(models):
        mask = models == name
        tput[mask] = cat.model(name).samples_per_second(np.maximum(gpus[mask], 1), gpu_type)
    tput = np.where(valid, tput, 1.0)
    rows = np.arange(n)
    t_ref = tput[rows, ref]
    x = tput / t_ref[:, None]
    rng = np.random.default_rng(seed)
    shares = mix.normalised()
    shape = rng.choice(len(ELASTIC_SHAPES), size=n, p=np.array(list(shares.values())))
    value = g_ref * rng.lognormal(math.log(mix.value_per_gpu_hour), mix.value_sigma, size=n)
    slack = rng.uniform(*mix.deadline_slack, size=n)
    base = np.zeros((n, width))
    for code, name in enumerate(ELASTIC_SHAPES):
        mask = shape == code
        if mask.any():
            scale = 1.0 if name == "deadline" else value[mask, None]
            base[mask] = scale * shape_values(name, x[mask], mix)
    base = np.where(valid, base, 0.0)
    is_deadline = shape == ELASTIC_SHAPES.index("deadline")
    submit = jobs["submit_s"].to_numpy(dtype=float)
    deadline = np.where(is_deadline, submit + slack * dur, np.nan)
    rate = tput * sample_gb[kj][:, None] * valid
    table = jobs.copy()
    table["shape"] = [ELASTIC_SHAPES[s] for s in shape]
    table["value_per_hour"] = value
    table["work_samples"] = dur * t_ref
    table["deadline_s"] = deadline
    table["options"] = [" ".join(str(int(g)) for g in gpus[j, valid[j]]) for j in range(n)]
    settings = {
        **workload.settings,
        "utility_mix": mix.record(),
        "elastic_seed": seed,
        "shape_counts": {s: int((shape == i).sum()) for i, s in enumerate(ELASTIC_SHAPES)},
        "option_gpu_counts": sorted({int(g) for g in gpus[valid]}),
        "dataset_gb_total": float(sizes.sum()),
    }
    return ElasticWorkload(
        jobs=table,
        datasets=workload.datasets.reset_index(drop=True),
        gpus=gpus,
        tput=tput,
        rate=rate,
        base=base,
        valid=valid,
        ref=ref,
        work=dur * t_ref,
        shape=shape,
        value=value,
        deadline_s=deadline,
        mix=mix,
        settings=settings,
    )


def reference_spend(w: ElasticWorkload, prices: tuple[float, float, float]) -> float:
    """The peak spend rate ($/h) of the reference schedule: the base of ``--budget-fraction``.

    The reference schedule runs every job at its reference option from its
    submission for its trace duration, fed by remote IO only (no cache):
    job j then spends p_g g_ref + p_b r_j(g_ref) per hour.  Its spend rate
    over time is a step function; this is its maximum.  At budget fraction 1
    the reference schedule is affordable at every instant; a fraction below 1
    makes the budget bind at the trace's busiest moments (on the Philly trace
    the peak is about 3.3 times the time-average).
    """
    if w.n == 0:
        return 0.0
    rows = np.arange(w.n)
    cost = prices[0] * w.gpus[rows, w.ref] + prices[2] * w.rate[rows, w.ref]
    start = w.jobs["submit_s"].to_numpy(dtype=float)
    end = start + w.jobs["duration_s"].to_numpy(dtype=float)
    times = np.concatenate([start, end])
    delta = np.concatenate([cost, -cost])
    order = np.lexsort((delta, times))  # departures before arrivals at the same instant
    return float(max(np.cumsum(delta[order]).max(), 0.0))


def reference_horizon(w: ElasticWorkload) -> float:
    """Seconds from the first submission to the end of the reference schedule: the welfare horizon of a replay.

    The same for every policy on a trace, so welfare integrals over it compare.
    """
    if w.n == 0:
        return 0.0
    submit = w.jobs["submit_s"].to_numpy(dtype=float)
    return float((submit + w.jobs["duration_s"].to_numpy(dtype=float)).max() - submit.min())
