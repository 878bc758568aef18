"""The cbalab data model: an instance of the allocation problems, its validation and JSON I/O.

An instance is what docs/model.md §2 calls the cluster (G, C, B, the integer
variants of §4), the prices (p_g, p_c, p_b), the budget, the datasets (d_k) and
the jobs (k(j), the fixed GPUs g_j and rate r_j of P1, and the option table
O_j with r_j(g) and U_j(g) of P2).  The JSON form is the schema
``cbalab/instance@1`` of docs/interface.md.

Jobs and datasets are kept columnar: numpy arrays by position, with the ids
beside them, so that a 100,000-job instance loads and solves quickly.  Job
options are ragged and kept in CSR form: the options of job ``j`` are the
positions ``option_ptr[j]:option_ptr[j + 1]`` of ``option_gpus``,
``option_io_gbps`` and ``option_utility``.  A job may also carry its remaining
``work`` (docs/interface.md): hours of training left at its smallest option,
which only Optimus reads (docs/model.md §7); without it every job has equal work.

Every bad input raises :class:`InstanceError`, whose message names the field
(a JSON path such as ``jobs[3].dataset``) and the offending value.  That
includes numbers that are well-formed but unusable: a count above
:data:`MAX_COUNT`, a number that is not finite, and magnitudes whose sums or
costs would overflow a double (:func:`check_magnitudes`), so that no figure
the referee reports can become ``Infinity`` or wrap around.  Files are read
defensively (:func:`load`): larger than :data:`MAX_FILE_BYTES`, binary,
not UTF-8, nested too deeply or too big for memory, each is an
InstanceError too.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cbalab.models.files import RepeatedKeyError, loads_json, unreadable

SCHEMA = "cbalab/instance@1"

#: Largest GPU count accepted anywhere (cluster.gpus, jobs[].gpus, options[].gpus): 2^31 − 1.  No cluster comes
#: near it, and totals over up to 2^32 jobs then still fit the int64 arrays exactly (they wrapped before).
MAX_COUNT = 2**31 - 1

#: Largest instance file :func:`load` reads (1 GiB): the parsed document takes several times its size in memory.
MAX_FILE_BYTES = 2**30

#: Smallest nonzero magnitude of a size, rate, utility, price, capacity or budget read from a file.  Below it
#: products underflow to 0 (a price of 5e-324 times a rate of 1e-3 is 0), and divisions by them are infinite.
#: Array-built instances (:func:`build`, :func:`check`) are not held to it: the property tests of
#: tests/test_autocba.py explore subnormal utilities and budgets on purpose.
MIN_MAGNITUDE = 1e-30

#: Most blocks of one dataset, ⌈d_k/u⌉ (docs/model.md §8, "Ranges of the integer variants"): 2^28.  The
#: referee's whole-block test (models/evaluate.py) allows 1e-9·n blocks of slack, so above 5e8 blocks half a
#: block passes as whole and a block cache is a continuous one; below 2^28 CBA's counts are exact in floats and
#: int64 (at 1e26 blocks the int64 cast overflowed into a negative cache), and u/d_k stays above HiGHS's
#: smallest matrix entry (1e-9, below which it dropped the blocks row and called a no-cache answer optimal).
MAX_BLOCKS = 2**28

#: Most bandwidth tiers in the whole demand, Σ_j r_j / β (each job at its largest rate): 2^28, the bound of
#: :data:`MAX_BLOCKS`.  The MILP's tier row holds r_j / β per job (models/milp/cost.py, ``within_tiers``): past
#: about 2^30 tiers HiGHS's answer on the seed-0 repro left its exact optimum (at 2^33 a ``feasible`` cost 50%
#: above CBA's proven optimum, with a bound of 0), and at 10^20 both ``lp`` and ``milp`` stopped with
#: "HiGHS stopped: kNotset", while tiers that fine are continuous bandwidth to every price that can be stated.
MAX_TIERS = 2**28

#: Deepest nesting reported as such; the schema itself nests 4 levels (jobs[].options[]).
MAX_DEPTH = 64

_TOP_KEYS = {"schema", "cluster", "prices", "budget_per_hour", "datasets", "jobs"}
_CLUSTER_KEYS = {"gpus", "cache_gb", "bandwidth_gbps", "cache_granularity", "bandwidth_step_gbps"}
_PRICE_KEYS = {"gpu_per_hour", "cache_gb_per_hour", "bandwidth_gbps_per_hour"}
_DATASET_KEYS = {"id", "size_gb"}
_JOB_KEYS = {"id", "dataset", "gpus", "io_gbps", "options", "work"}
_OPTION_KEYS = {"gpus", "io_gbps", "utility"}


class InstanceError(ValueError):
    """Bad input: the message names the field and the offending value."""

    def __init__(self, path: str, value: Any, problem: str) -> None:
        self.path = path
        self.value = value
        self.problem = problem
        super().__init__(f"{path}: {problem} (got {_show(value)})")


def _show(value: Any) -> str:
    """The value as short strict JSON, or its repr; a structure too deep to print is summarised by its type."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    except RecursionError:
        text = f"a deeply nested {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Instance:
    """One problem instance (docs/model.md §2), columnar.

    ``bandwidth_gbps`` and ``budget_per_hour`` are ``math.inf`` when unlimited
    (``null`` in JSON); ``gpus`` is ``None`` when the cluster has no GPU cap.
    ``cache_granularity`` is ``"continuous"``, ``"dataset"`` or ``"block"``
    (then ``block_gb`` is the block size u of docs/model.md §4).  Jobs lacking a
    fixed allocation have ``job_gpus == -1`` and ``job_io_gbps == nan``.
    ``job_work`` is every job's remaining work in hours at its smallest option
    (> 0), or None when the instance gives none (equal work, docs/model.md §7).
    """

    gpus: int | None
    cache_gb: float
    bandwidth_gbps: float
    price_gpu: float
    price_cache: float
    price_bandwidth: float
    dataset_ids: tuple[str, ...]
    dataset_size_gb: np.ndarray
    job_ids: tuple[str, ...]
    job_dataset: np.ndarray
    job_gpus: np.ndarray
    job_io_gbps: np.ndarray
    option_ptr: np.ndarray
    option_gpus: np.ndarray
    option_io_gbps: np.ndarray
    option_utility: np.ndarray
    budget_per_hour: float = math.inf
    cache_granularity: str = "continuous"
    block_gb: float | None = None
    bandwidth_step_gbps: float | None = None
    job_work: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_jobs(self) -> int:
        """Number of jobs, ``|J|``."""
        return len(self.job_ids)

    @property
    def n_datasets(self) -> int:
        """Number of datasets, ``|K|``."""
        return len(self.dataset_ids)

    @property
    def block_size_gb(self) -> float:
        """The cache block size u under block granularity (docs/model.md §4); an error on any other granularity."""
        if self.block_gb is None:
            raise InstanceError("cluster.cache_granularity", self.cache_granularity, "has no block size")
        return float(self.block_gb)

    @property
    def tier_gbps(self) -> float:
        """The bandwidth tier size β (docs/model.md §4); an error when bandwidth is continuous."""
        if self.bandwidth_step_gbps is None:
            raise InstanceError("cluster.bandwidth_step_gbps", None, "bandwidth is continuous: there is no tier")
        return float(self.bandwidth_step_gbps)

    @property
    def has_fixed(self) -> np.ndarray:
        """Boolean mask of jobs that carry a fixed allocation (gpus, io_gbps) for P1."""
        return self.job_gpus >= 0

    @property
    def has_options(self) -> np.ndarray:
        """Boolean mask of jobs that carry an option table for P2."""
        return np.diff(self.option_ptr) > 0

    def require_fixed(self) -> None:
        """Raise InstanceError unless every job has the fixed allocation the cost problem needs."""
        gpus = self.job_gpus
        if gpus.size == 0 or gpus.min() >= 0:  # one reduction: a replay asks at every event
            return
        missing = np.flatnonzero(~self.has_fixed)
        if missing.size:
            j = int(missing[0])
            raise InstanceError(
                f"jobs[{j}].gpus",
                None,
                f"job {self.job_ids[j]!r} has no fixed gpus/io_gbps, which the cost problem needs",
            )

    def require_options(self) -> None:
        """Raise InstanceError unless every job has the option table the welfare problem needs."""
        missing = np.flatnonzero(~self.has_options)
        if missing.size:
            j = int(missing[0])
            raise InstanceError(
                f"jobs[{j}].options", None, f"job {self.job_ids[j]!r} has no options, which the welfare problem needs"
            )

    def require_continuous(self, purpose: str) -> None:
        """Raise InstanceError unless cache and bandwidth are continuous (no integer variant of docs/model.md §4).

        ``purpose`` completes the message, e.g. "the welfare problem is modelled".
        """
        if self.cache_granularity != "continuous":
            value = {"block_gb": self.block_gb} if self.cache_granularity == "block" else self.cache_granularity
            raise InstanceError("cluster.cache_granularity", value, f'{purpose} for "continuous" caching only')
        if self.bandwidth_step_gbps is not None:
            step = self.bandwidth_step_gbps
            raise InstanceError("cluster.bandwidth_step_gbps", step, f"{purpose} for continuous bandwidth only (null)")

    def dataset_demand(self, rates: np.ndarray) -> np.ndarray:
        """R_k = sum of rates of the jobs reading dataset k (docs/model.md §3)."""
        return np.bincount(self.job_dataset, weights=rates, minlength=self.n_datasets)

    def option_job(self) -> np.ndarray:
        """For every option row, the position of the job it belongs to."""
        if "option_job" not in self._cache:
            self._cache["option_job"] = np.repeat(np.arange(self.n_jobs), np.diff(self.option_ptr))
        return self._cache["option_job"]

    def replace(self, **changes: Any) -> Instance:
        """A copy with some fields changed (arrays are shared, not copied; no re-validation).

        A shallow copy with the fields set in place, so that the simulator can
        afford one per event (150,000 on the Philly replay); derived data is
        not carried over.
        """
        unknown = changes.keys() - self.__dataclass_fields__.keys()
        if unknown:
            raise TypeError(f"Instance has no field {sorted(unknown)[0]!r}")
        inst = object.__new__(type(self))
        inst.__dict__.update(self.__dict__, **changes, _cache={})
        return inst

    def to_dict(self) -> dict:
        """The JSON-ready dict of schema ``cbalab/instance@1``."""
        gran: Any = {"block_gb": self.block_gb} if self.cache_granularity == "block" else self.cache_granularity
        jobs = []
        for j, jid in enumerate(self.job_ids):
            job: dict[str, Any] = {"id": jid, "dataset": self.dataset_ids[int(self.job_dataset[j])]}
            if self.job_gpus[j] >= 0:
                job["gpus"] = int(self.job_gpus[j])
                job["io_gbps"] = float(self.job_io_gbps[j])
            if self.job_work is not None:
                job["work"] = float(self.job_work[j])
            lo, hi = int(self.option_ptr[j]), int(self.option_ptr[j + 1])
            if hi > lo:
                job["options"] = [
                    {"gpus": int(g), "io_gbps": float(r), "utility": float(u)}
                    for g, r, u in zip(self.option_gpus[lo:hi], self.option_io_gbps[lo:hi], self.option_utility[lo:hi])
                ]
            jobs.append(job)
        return {
            "schema": SCHEMA,
            "cluster": {
                "gpus": self.gpus,
                "cache_gb": float(self.cache_gb),
                "bandwidth_gbps": None if math.isinf(self.bandwidth_gbps) else float(self.bandwidth_gbps),
                "cache_granularity": gran,
                "bandwidth_step_gbps": self.bandwidth_step_gbps,
            },
            "prices": {
                "gpu_per_hour": float(self.price_gpu),
                "cache_gb_per_hour": float(self.price_cache),
                "bandwidth_gbps_per_hour": float(self.price_bandwidth),
            },
            "budget_per_hour": None if math.isinf(self.budget_per_hour) else float(self.budget_per_hour),
            "datasets": [{"id": k, "size_gb": float(s)} for k, s in zip(self.dataset_ids, self.dataset_size_gb)],
            "jobs": jobs,
        }

    def dumps(self) -> str:
        """The instance as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def save(self, path: str | Path) -> None:
        """Write the instance as JSON to ``path``, atomically (models/files.py)."""
        from cbalab.models.files import atomic_write_text

        atomic_write_text(path, self.dumps() + "\n")


# ---------------------------------------------------------------- validation


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(
    v: Any, path: str, *, positive: bool = False, allow_null: bool = False, tiny_ok: bool = False
) -> float | None:
    """A finite number >= 0 (> 0 if ``positive``) or None if ``allow_null``; 0 or >= MIN_MAGNITUDE unless tiny_ok."""
    if v is None and allow_null:
        return None
    if not _is_number(v):
        raise InstanceError(path, v, "must be a number" + (" or null" if allow_null else ""))
    try:
        x = float(v)
    except OverflowError:
        raise InstanceError(path, v, "must be finite (too large for a double)") from None
    if not math.isfinite(x):
        raise InstanceError(path, v, "must be finite")
    if positive and x <= 0:
        raise InstanceError(path, v, "must be > 0")
    if x < 0:
        raise InstanceError(path, v, "must be >= 0")
    if 0 < x < MIN_MAGNITUDE and not tiny_ok:
        least = "be" if positive else "be 0 or"
        raise InstanceError(path, v, f"must {least} at least {MIN_MAGNITUDE:g} (smaller values underflow in products)")
    return x


def setting(path: str, value: float, *, unlimited: bool = False) -> float:
    """A replay's setting ``value`` under the rule of an instance file's numbers (:func:`_number`): finite, ≥ 0,
    and 0 or at least :data:`MIN_MAGNITUDE`; +inf too when ``unlimited`` (no cap).  InstanceError naming ``path``
    otherwise, so a value a file may not hold cannot reach a replay through an option either."""
    if unlimited and value == math.inf:
        return value
    return _required_number(value, path)


def _required_number(v: Any, path: str) -> float:
    """A finite number >= 0 that may not be null (:func:`_number` without ``allow_null``)."""
    x = _number(v, path)
    if x is None:  # _number returns None only for null when allow_null is set
        raise InstanceError(path, v, "must be a number")
    return x


def _integer(v: Any, path: str, *, minimum: int = 0, allow_null: bool = False) -> int | None:
    """A whole number in [minimum, MAX_COUNT] (a float with no fraction counts), or None if ``allow_null``."""
    if v is None and allow_null:
        return None
    if isinstance(v, float) and math.isinf(v):
        raise InstanceError(path, v, f"must be a whole number <= {MAX_COUNT}")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InstanceError(path, v, "must be a whole number" + (" or null" if allow_null else ""))
    if v < minimum:
        raise InstanceError(path, v, f"must be >= {minimum}")
    if v > MAX_COUNT:
        raise InstanceError(path, v, f"must be <= {MAX_COUNT}")
    return v


def _object(v: Any, path: str, keys: set[str], required: set[str]) -> dict:
    if not isinstance(v, dict):
        raise InstanceError(path or "document", v, "must be an object")
    unknown = sorted(set(v) - keys)
    if unknown:
        raise InstanceError(f"{path}.{unknown[0]}" if path else unknown[0], v[unknown[0]], "is not a known field")
    missing = sorted(required - set(v))
    if missing:
        raise InstanceError(f"{path}.{missing[0]}" if path else missing[0], None, "is required")
    return v


def _ids(items: list, path: str) -> list[str]:
    ids = [it.get("id") for it in items]
    seen: set[str] = set()
    for i, x in enumerate(ids):
        if not isinstance(x, str) or not x:
            raise InstanceError(f"{path}[{i}].id", x, "must be a non-empty string")
        if x in seen:
            raise InstanceError(f"{path}[{i}].id", x, "duplicate id")
        seen.add(x)
    return ids


def _column(items: list, key: str, path: str, *, positive: bool = False, integer: bool = False) -> np.ndarray:
    """Vectorised check of one numeric column; falls back to a scan to name the first bad entry."""
    values = [it.get(key) for it in items]
    try:
        if any(type(v) not in (int, float) for v in values):
            raise TypeError
        arr = np.asarray(values, dtype=float)
        ok = np.isfinite(arr) & ((arr > 0) if positive else (arr >= 0)) & ((arr == 0) | (arr >= MIN_MAGNITUDE))
        if integer:
            ok &= (arr == np.floor(arr)) & (arr <= MAX_COUNT)
        if not ok.all():
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        for i, v in enumerate(values):
            p = f"{path}[{i}].{key}"
            if integer:
                _integer(v, p, minimum=1 if positive else 0)
            else:
                _number(v, p, positive=positive)
        raise
    return arr.astype(np.int64) if integer else arr


def from_dict(data: Any) -> Instance:
    """Validate a parsed ``cbalab/instance@1`` document and build the Instance.

    Raises InstanceError naming the field and the value on any bad input.
    """
    if isinstance(data, dict) and "schema" in data and data["schema"] != SCHEMA:
        raise InstanceError("schema", data["schema"], f"unknown schema, expected {SCHEMA!r} (not an instance)")
    data = _object(data, "", _TOP_KEYS, {"schema", "cluster", "prices", "datasets", "jobs"})
    cl = _object(data["cluster"], "cluster", _CLUSTER_KEYS, {"cache_gb"})
    gpus = _integer(cl.get("gpus"), "cluster.gpus", allow_null=True)
    cache_gb = _required_number(cl["cache_gb"], "cluster.cache_gb")
    bw = _number(cl.get("bandwidth_gbps"), "cluster.bandwidth_gbps", allow_null=True)
    gran = cl.get("cache_granularity", "continuous")
    block_gb = None
    if isinstance(gran, dict):
        _object(gran, "cluster.cache_granularity", {"block_gb"}, {"block_gb"})
        block_gb = _number(gran["block_gb"], "cluster.cache_granularity.block_gb", positive=True)
        gran = "block"
    elif gran not in ("continuous", "dataset"):
        raise InstanceError("cluster.cache_granularity", gran, 'must be "continuous", "dataset" or {"block_gb": size}')
    step = _number(cl.get("bandwidth_step_gbps"), "cluster.bandwidth_step_gbps", positive=True, allow_null=True)
    pr = _object(data["prices"], "prices", _PRICE_KEYS, _PRICE_KEYS)
    p_g = _required_number(pr["gpu_per_hour"], "prices.gpu_per_hour")
    p_c = _required_number(pr["cache_gb_per_hour"], "prices.cache_gb_per_hour")
    p_b = _required_number(pr["bandwidth_gbps_per_hour"], "prices.bandwidth_gbps_per_hour")
    budget = _number(data.get("budget_per_hour"), "budget_per_hour", allow_null=True)

    datasets = data["datasets"]
    if not isinstance(datasets, list):
        raise InstanceError("datasets", datasets, "must be a list")
    for i, d in enumerate(datasets):
        _object(d, f"datasets[{i}]", _DATASET_KEYS, _DATASET_KEYS)
    dataset_ids = _ids(datasets, "datasets")
    sizes = _column(datasets, "size_gb", "datasets", positive=True)

    jobs = data["jobs"]
    if not isinstance(jobs, list):
        raise InstanceError("jobs", jobs, "must be a list")
    for i, j in enumerate(jobs):
        if not isinstance(j, dict) or not (j.keys() <= _JOB_KEYS) or "dataset" not in j:
            _object(j, f"jobs[{i}]", _JOB_KEYS, {"id", "dataset"})
    job_ids = _ids(jobs, "jobs")
    index = {k: i for i, k in enumerate(dataset_ids)}
    try:
        job_dataset = np.fromiter((index[j["dataset"]] for j in jobs), dtype=np.int64, count=len(jobs))
    except (KeyError, TypeError):
        for i, j in enumerate(jobs):
            if not isinstance(j["dataset"], str) or j["dataset"] not in index:
                raise InstanceError(f"jobs[{i}].dataset", j["dataset"], "unknown dataset") from None
        raise

    n = len(jobs)
    fixed = np.fromiter(("gpus" in j or "io_gbps" in j for j in jobs), dtype=bool, count=n)
    job_gpus = np.full(n, -1, dtype=np.int64)
    job_io = np.full(n, np.nan)
    if fixed.any():
        pos = np.flatnonzero(fixed)
        fixed_jobs = [jobs[i] for i in pos]
        for i, j in zip(pos.tolist(), fixed_jobs):
            if "gpus" not in j or "io_gbps" not in j:
                missing = "io_gbps" if "gpus" in j else "gpus"
                raise InstanceError(f"jobs[{i}].{missing}", None, "is required when the other of gpus/io_gbps is given")
        try:
            job_gpus[pos] = _column(fixed_jobs, "gpus", "jobs", integer=True)
            job_io[pos] = _column(fixed_jobs, "io_gbps", "jobs")
        except InstanceError as e:
            raise InstanceError(_repath(e.path, pos), e.value, e.problem) from None

    job_work = _work(jobs)
    counts = np.zeros(n, dtype=np.int64)
    option_rows: list[dict] = []
    for i, j in enumerate(jobs):
        opts = j.get("options")
        if opts is None:
            continue
        if not isinstance(opts, list) or not opts:
            raise InstanceError(f"jobs[{i}].options", opts, "must be a non-empty list")
        seen: set = set()
        for o, opt in enumerate(opts):
            _object(opt, f"jobs[{i}].options[{o}]", _OPTION_KEYS, _OPTION_KEYS)
            g = _integer(opt["gpus"], f"jobs[{i}].options[{o}].gpus", minimum=1)
            if g in seen:
                raise InstanceError(f"jobs[{i}].options[{o}].gpus", g, "duplicate gpu count in this job's options")
            seen.add(g)
        counts[i] = len(opts)
        option_rows.extend(opts)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if option_rows:
        opt_job = np.repeat(np.arange(n), counts)
        try:
            opt_gpus = _column(option_rows, "gpus", "options", positive=True, integer=True)
            opt_io = _column(option_rows, "io_gbps", "options")
            opt_u = _column(option_rows, "utility", "options")
        except InstanceError as e:
            row = int(e.path.split("[")[1].split("]")[0])
            j = int(opt_job[row])
            raise InstanceError(
                f"jobs[{j}].options[{row - int(ptr[j])}].{e.path.rsplit('.', 1)[1]}", e.value, e.problem
            ) from None
    else:
        opt_gpus, opt_io, opt_u = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)

    inst = Instance(
        gpus=gpus,
        cache_gb=cache_gb,
        bandwidth_gbps=math.inf if bw is None else bw,
        price_gpu=p_g,
        price_cache=p_c,
        price_bandwidth=p_b,
        budget_per_hour=math.inf if budget is None else budget,
        cache_granularity=gran,
        block_gb=block_gb,
        bandwidth_step_gbps=step,
        dataset_ids=tuple(dataset_ids),
        dataset_size_gb=sizes,
        job_ids=tuple(job_ids),
        job_dataset=job_dataset,
        job_gpus=job_gpus,
        job_io_gbps=job_io,
        option_ptr=ptr,
        option_gpus=opt_gpus,
        option_io_gbps=opt_io,
        option_utility=opt_u,
        job_work=job_work,
    )
    return _check_tier_count(check_magnitudes(_check_block_count(inst)))


def _check_block_count(inst: Instance) -> Instance:
    """Refuse a block size u that cuts some dataset into more than :data:`MAX_BLOCKS` blocks; return ``inst``."""
    if inst.cache_granularity != "block" or inst.block_gb is None or not inst.n_datasets:
        return inst
    k = int(np.argmax(inst.dataset_size_gb))
    d = float(inst.dataset_size_gb[k])
    if d > MAX_BLOCKS * inst.block_gb:
        raise InstanceError(
            "cluster.cache_granularity.block_gb",
            inst.block_gb,
            f"too small: datasets[{k}].size_gb = {d:g} is {d / inst.block_gb:.3g} blocks, more than {MAX_BLOCKS} "
            '(2^28) per dataset, where whole blocks are continuous within the referee\'s slack (use "continuous")',
        )
    return inst


def _check_tier_count(inst: Instance) -> Instance:
    """Refuse a tier β that cuts the whole demand into more than :data:`MAX_TIERS` tiers; return ``inst``."""
    if inst.bandwidth_step_gbps is None:
        return inst
    total = float(_largest(inst)[1].sum())
    if total > MAX_TIERS * inst.bandwidth_step_gbps:
        raise InstanceError(
            "cluster.bandwidth_step_gbps",
            inst.bandwidth_step_gbps,
            f"too small: the whole demand of {total:g} GB/s (each job at its largest rate) is "
            f"{total / inst.bandwidth_step_gbps:.3g} tiers, more than {MAX_TIERS} (2^28), past which HiGHS does "
            "not solve the tiers exactly (use null for continuous bandwidth)",
        )
    return inst


def _largest(inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """Each job's largest GPU count and largest rate r_j: its fixed ones, or the largest among its options."""
    fixed = inst.job_gpus >= 0
    most_gpus = np.zeros(inst.n_jobs)
    most_rate = np.where(fixed, inst.job_io_gbps, 0.0)
    most_gpus[fixed] = inst.job_gpus[fixed]
    if inst.option_gpus.size:
        job = inst.option_job()
        np.maximum.at(most_gpus, job, inst.option_gpus.astype(float))
        np.maximum.at(most_rate, job, inst.option_io_gbps)
    return most_gpus, most_rate


def _work(jobs: list[dict]) -> np.ndarray | None:
    """The jobs' ``work`` column (hours at the smallest option, > 0): given for every job or for none."""
    given = [("work" in j) for j in jobs]
    if not any(given):
        return None
    if not all(given):
        i = given.index(False)
        raise InstanceError(f"jobs[{i}].work", None, "is required when another job gives its work (all or none)")
    return _column(jobs, "work", "jobs", positive=True)


def check_magnitudes(inst: Instance) -> Instance:
    """Refuse magnitudes whose totals or costs overflow a double; return ``inst`` unchanged.

    Every number is finite on its own, but the referee (models/evaluate.py)
    adds them up: Σ d_k, Σ r_j, Σ U_j, and the cost p_g Σ g + p_c Σ c +
    p_b Σ b of docs/model.md §4 at the most any allocation can use (G or
    every job's largest GPU count; min(C, Σ d_k) of cache, plus a block per
    dataset under blocks; min(B, Σ_j r_j) of bandwidth, plus a tier).  When
    one of these is not finite the instance is refused, naming the price or
    the largest entry that makes it overflow, so that no reported figure can
    be ``Infinity`` (which is not JSON) or NaN.
    """
    n, K = inst.n_jobs, inst.n_datasets
    opt_job = np.repeat(np.arange(n), np.diff(inst.option_ptr))

    def option_path(o: int, key: str) -> str:
        j = int(opt_job[o])
        return f"jobs[{j}].options[{o - int(inst.option_ptr[j])}].{key}"

    with np.errstate(over="ignore", invalid="ignore"):
        fixed = inst.job_gpus >= 0
        columns = (
            (inst.dataset_size_gb, lambda k: f"datasets[{k}].size_gb", "the total dataset size"),
            (np.where(fixed, inst.job_io_gbps, 0.0), lambda j: f"jobs[{j}].io_gbps", "the total IO rate"),
            (inst.option_io_gbps, lambda o: option_path(o, "io_gbps"), "the total IO rate of the options"),
            (inst.option_utility, lambda o: option_path(o, "utility"), "the total utility"),
        )
        for values, path, what in columns:
            if values.size and not math.isfinite(float(values.sum())):
                i = int(np.argmax(values))
                raise InstanceError(path(i), float(values[i]), f"too large: {what} overflows a double")
        most_gpus, most_rate = _largest(inst)
        gpus = float(most_gpus.sum()) if inst.gpus is None else min(float(inst.gpus), float(most_gpus.sum()))
        blocks = K * inst.block_gb if inst.cache_granularity == "block" and inst.block_gb else 0.0
        cache = min(inst.cache_gb, float(inst.dataset_size_gb.sum()) + blocks)
        bandwidth = min(inst.bandwidth_gbps, float(most_rate.sum())) + (inst.bandwidth_step_gbps or 0.0)
        terms = (
            ("prices.gpu_per_hour", inst.price_gpu, gpus, "GPUs"),
            ("prices.cache_gb_per_hour", inst.price_cache, cache, "GB of cache"),
            ("prices.bandwidth_gbps_per_hour", inst.price_bandwidth, bandwidth, "GB/s of remote IO"),
        )
        costs = [price * amount if amount > 0 else 0.0 for _, price, amount, _ in terms]
        if not math.isfinite(sum(costs)):
            i = int(np.argmax(costs))
            field, price, amount, unit = terms[i]
            raise InstanceError(
                field, price, f"too large: the cost of {amount:.6g} {unit} overflows a double (with the other costs)"
            )
    return inst


def _repath(path: str, pos: np.ndarray) -> str:
    """Map ``jobs[i].x`` of a sub-list back to the job's position in the full list."""
    i = int(path.split("[")[1].split("]")[0])
    return f"jobs[{int(pos[i])}]{path.split(']', 1)[1]}"


def loads(text: str) -> Instance:
    """Parse and validate JSON text.

    Malformed JSON is an InstanceError naming the line and the column; ``NaN``
    and ``Infinity`` (which Python's json accepts but JSON does not) name the
    field they stand in and their line and column; nesting deeper than the
    parser's recursion limit names the line and the column where it passes
    :data:`MAX_DEPTH`; a key given twice in one object names its path
    (models.files.loads_json).  Integers of more than 4000 digits are read as floats
    (+inf), so that the range checks, not the parser, refuse them.
    """
    try:
        data = loads_json(text, parse_constant=_NonFinite, parse_int=_parse_int)
    except RepeatedKeyError as e:
        raise InstanceError(
            e.path, e.values, f"key given {len(e.values)} times in one object; JSON leaves open which value holds"
        ) from None
    except json.JSONDecodeError as e:
        raise InstanceError(f"JSON line {e.lineno} column {e.colno}", text[e.pos : e.pos + 20], e.msg) from None
    except RecursionError:
        line, column = _too_deep(text)
        raise InstanceError(
            f"JSON line {line} column {column}", "[" * 3, f"nested deeper than {MAX_DEPTH} levels"
        ) from None
    found = _find_non_finite(data, "")
    if found is not None:
        path, constant = found
        line, column = _constant_position(text, constant.name)
        raise InstanceError(
            path or "JSON", constant.name, f"NaN and Infinity are not valid JSON numbers (line {line} column {column})"
        )
    return from_dict(data)


class _NonFinite:
    """Stands in for a ``NaN``/``Infinity`` constant while parsing, so that the error can name its field."""

    def __init__(self, name: str) -> None:
        self.name = name


#: Longer integer literals are read as floats (so +inf, refused by the range checks): Python refuses to parse
#: integers of more than 4300 digits, and would raise a bare ValueError.
_INT_DIGITS = 4000


def _parse_int(digits: str) -> int | float:
    return int(digits) if len(digits) <= _INT_DIGITS else float(digits)


def _find_non_finite(node: Any, path: str) -> tuple[str, _NonFinite] | None:
    """The JSON path of the first stand-in for NaN/Infinity in a parsed document (iterative: no recursion limit)."""
    stack = [(path, node)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _NonFinite):
            return where, item
        if isinstance(item, dict):
            stack.extend(reversed([(f"{where}.{k}" if where else str(k), v) for k, v in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(item)]))
    return None


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?Infinity|NaN')


def _line_column(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _constant_position(text: str, name: str) -> tuple[int, int]:
    """Line and column of the first ``name`` (NaN, Infinity, -Infinity) outside a string."""
    for m in _TOKENS.finditer(text):
        if m.group() == name:
            return _line_column(text, m.start())
    return 0, 0


def _too_deep(text: str) -> tuple[int, int]:
    """Line and column of the bracket that first nests deeper than MAX_DEPTH (strings skipped)."""
    depth = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return _line_column(text, m.start())
        elif token in "]}":
            depth -= 1
    return 0, 0


def load(path: str | Path) -> Instance:
    """Read and validate an instance file (UTF-8 JSON of at most MAX_FILE_BYTES).

    A file that cannot be read, is larger than :data:`MAX_FILE_BYTES`, holds a
    NUL byte (binary, or UTF-16/32), is not UTF-8, or does not fit in memory
    is an InstanceError naming the file; ``/dev/zero`` fails on its first
    block instead of filling memory.  An empty path is refused as such (Path
    reads it as the current folder).
    """
    if not str(path):
        raise InstanceError("INSTANCE", str(path), "empty path")
    p = Path(path)
    try:
        data = _read_limited(p)
        text = data.decode("utf-8")
    except InstanceError:
        raise
    except UnicodeDecodeError as e:
        line, column = _line_column(data[: e.start].decode("utf-8", "replace"), e.start)
        raise InstanceError("INSTANCE", str(path), f"not UTF-8 at line {line} column {column}") from None
    except OSError as e:
        raise InstanceError("INSTANCE", str(path), unreadable(e)) from None
    except MemoryError:
        raise InstanceError("INSTANCE", str(path), "out of memory while reading the file") from None
    try:
        return loads(text)
    except MemoryError:
        raise InstanceError("INSTANCE", str(path), f"out of memory while parsing {len(data)} bytes") from None


def _read_limited(p: Path) -> bytes:
    """The bytes of ``p``, read in 1 MiB blocks: refused past MAX_FILE_BYTES or at the first NUL byte."""
    blocks: list[bytes] = []
    size = 0
    with p.open("rb") as fh:
        while block := fh.read(1 << 20):
            nul = block.find(b"\x00")
            if nul >= 0:
                raise InstanceError(
                    "INSTANCE", str(p), f"binary content (NUL byte at offset {size + nul}), not JSON text"
                )
            size += len(block)
            if size > MAX_FILE_BYTES:
                raise InstanceError("INSTANCE", str(p), f"larger than {MAX_FILE_BYTES} bytes")
            blocks.append(block)
    return b"".join(blocks)


def build(
    *,
    dataset_size_gb: np.ndarray,
    job_dataset: np.ndarray,
    cache_gb: float,
    prices: tuple[float, float, float],
    job_gpus: np.ndarray | None = None,
    job_io_gbps: np.ndarray | None = None,
    bandwidth_gbps: float = math.inf,
    gpus: int | None = None,
    budget_per_hour: float = math.inf,
    options: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    cache_granularity: str = "continuous",
    block_gb: float | None = None,
    bandwidth_step_gbps: float | None = None,
    dataset_ids: tuple[str, ...] | None = None,
    job_ids: tuple[str, ...] | None = None,
    job_work: np.ndarray | None = None,
) -> Instance:
    """Build an Instance from arrays (generators, tests), validated like JSON input.

    ``options`` is ``(ptr, gpus, io_gbps, utility)`` in CSR form.  Validation
    goes through :func:`from_dict` semantics by checking the same rules on the
    arrays, so an array-built instance is never laxer than a loaded one (except MIN_MAGNITUDE, files only).
    """
    sizes = np.asarray(dataset_size_gb, dtype=float)
    jd = np.asarray(job_dataset, dtype=np.int64)
    n = jd.size
    inst = Instance(
        gpus=gpus,
        cache_gb=float(cache_gb),
        bandwidth_gbps=float(bandwidth_gbps),
        price_gpu=float(prices[0]),
        price_cache=float(prices[1]),
        price_bandwidth=float(prices[2]),
        budget_per_hour=float(budget_per_hour),
        cache_granularity=cache_granularity,
        block_gb=block_gb,
        bandwidth_step_gbps=bandwidth_step_gbps,
        dataset_ids=dataset_ids or tuple(f"d{k}" for k in range(sizes.size)),
        dataset_size_gb=sizes,
        job_ids=job_ids or tuple(f"j{j}" for j in range(n)),
        job_dataset=jd,
        job_gpus=np.full(n, -1, np.int64) if job_gpus is None else np.asarray(job_gpus, dtype=np.int64),
        job_io_gbps=np.full(n, np.nan) if job_io_gbps is None else np.asarray(job_io_gbps, dtype=float),
        option_ptr=np.zeros(n + 1, np.int64) if options is None else np.asarray(options[0], np.int64),
        option_gpus=np.zeros(0, np.int64) if options is None else np.asarray(options[1], np.int64),
        option_io_gbps=np.zeros(0) if options is None else np.asarray(options[2], float),
        option_utility=np.zeros(0) if options is None else np.asarray(options[3], float),
        job_work=None if job_work is None else np.asarray(job_work, dtype=float),
    )
    return check(inst)


def check(inst: Instance) -> Instance:
    """Validate an array-built Instance with the rules of :func:`from_dict`; return it unchanged."""
    _number(inst.cache_gb, "cluster.cache_gb", tiny_ok=True)
    if not (inst.bandwidth_gbps >= 0):
        raise InstanceError("cluster.bandwidth_gbps", inst.bandwidth_gbps, "must be >= 0")
    if not (inst.budget_per_hour >= 0):
        raise InstanceError("budget_per_hour", inst.budget_per_hour, "must be >= 0")
    for name, v in (
        ("gpu_per_hour", inst.price_gpu),
        ("cache_gb_per_hour", inst.price_cache),
        ("bandwidth_gbps_per_hour", inst.price_bandwidth),
    ):
        _number(v, f"prices.{name}", tiny_ok=True)
    if inst.cache_granularity == "block":
        _number(inst.block_gb, "cluster.cache_granularity.block_gb", positive=True, tiny_ok=True)
    elif inst.cache_granularity not in ("continuous", "dataset"):
        raise InstanceError("cluster.cache_granularity", inst.cache_granularity, "unknown granularity")
    _number(inst.bandwidth_step_gbps, "cluster.bandwidth_step_gbps", positive=True, allow_null=True, tiny_ok=True)
    bad = np.flatnonzero(~(np.isfinite(inst.dataset_size_gb) & (inst.dataset_size_gb > 0)))
    if bad.size:
        raise InstanceError(
            f"datasets[{bad[0]}].size_gb", float(inst.dataset_size_gb[bad[0]]), "must be finite and > 0"
        )
    bad = np.flatnonzero((inst.job_dataset < 0) | (inst.job_dataset >= inst.n_datasets))
    if bad.size:
        raise InstanceError(f"jobs[{bad[0]}].dataset", int(inst.job_dataset[bad[0]]), "unknown dataset")
    fixed = inst.has_fixed
    bad = np.flatnonzero(fixed & ~(np.isfinite(inst.job_io_gbps) & (inst.job_io_gbps >= 0)))
    if bad.size:
        raise InstanceError(f"jobs[{bad[0]}].io_gbps", float(inst.job_io_gbps[bad[0]]), "must be finite and >= 0")
    if inst.option_ptr.size != inst.n_jobs + 1 or inst.option_ptr[-1] != inst.option_gpus.size:
        raise InstanceError("jobs[].options", int(inst.option_ptr.size), "option table does not match the jobs")
    for name, arr, lo in (
        ("gpus", inst.option_gpus, 1),
        ("io_gbps", inst.option_io_gbps, 0),
        ("utility", inst.option_utility, 0),
    ):
        bad = np.flatnonzero(~(np.isfinite(arr) & (arr >= lo)))
        if bad.size:
            raise InstanceError(f"options[{bad[0]}].{name}", float(arr[bad[0]]), f"must be finite and >= {lo}")
    if inst.gpus is not None:
        _integer(inst.gpus, "cluster.gpus")
    bad = np.flatnonzero(fixed & (inst.job_gpus > MAX_COUNT))
    if bad.size:
        raise InstanceError(f"jobs[{bad[0]}].gpus", int(inst.job_gpus[bad[0]]), f"must be <= {MAX_COUNT}")
    bad = np.flatnonzero(inst.option_gpus > MAX_COUNT)
    if bad.size:
        raise InstanceError(f"options[{bad[0]}].gpus", int(inst.option_gpus[bad[0]]), f"must be <= {MAX_COUNT}")
    if inst.job_work is not None:
        work = inst.job_work
        if work.shape != (inst.n_jobs,):
            raise InstanceError("jobs[].work", int(work.size), f"must give one value per job ({inst.n_jobs})")
        bad = np.flatnonzero(~(np.isfinite(work) & (work > 0)))
        if bad.size:
            raise InstanceError(f"jobs[{bad[0]}].work", float(work[bad[0]]), "must be finite and > 0")
    if len(set(inst.dataset_ids)) != inst.n_datasets:
        raise InstanceError("datasets[].id", None, "duplicate id")
    if len(set(inst.job_ids)) != inst.n_jobs:
        raise InstanceError("jobs[].id", None, "duplicate id")
    return _check_tier_count(check_magnitudes(_check_block_count(inst)))


def aggregate(
    size_gb: np.ndarray, demand_gbps: np.ndarray, cache_gb: float, bandwidth_gbps: float, prices: tuple[float, ...]
) -> Instance:
    """The aggregate cost instance: one pseudo-job of rate R_k per dataset k (docs/model.md §4), which gives a
    policy that depends on the jobs only through R_k its whole answer; ``prices`` are (p_g, p_c, p_b).

    A replay builds it once and changes only the demands per event (:meth:`Instance.replace`)."""
    k = size_gb.size
    return check(
        Instance(
            gpus=None,
            cache_gb=float(cache_gb),
            bandwidth_gbps=float(bandwidth_gbps),
            price_gpu=float(prices[0]),
            price_cache=float(prices[1]),
            price_bandwidth=float(prices[2]),
            dataset_ids=tuple(f"d{i}" for i in range(k)),
            dataset_size_gb=size_gb,
            job_ids=tuple(f"j{i}" for i in range(k)),
            job_dataset=np.arange(k, dtype=np.int64),
            job_gpus=np.zeros(k, dtype=np.int64),
            job_io_gbps=demand_gbps,
            option_ptr=np.zeros(k + 1, dtype=np.int64),
            option_gpus=np.zeros(0, dtype=np.int64),
            option_io_gbps=np.zeros(0),
            option_utility=np.zeros(0),
        )
    )
