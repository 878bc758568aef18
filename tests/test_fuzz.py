"""Hypothesis fuzzing of the loaders (models/instance.py, experiments/workload/traces.py), end to end.

Valid ``cbalab/instance@1`` documents (docs/interface.md) are mutated the way
a hostile but fair user would: values swapped for other JSON types, fields
and list entries deleted or duplicated, numbers made huge, tiny, negative or
non-finite, values wrapped in deep nesting, and the text re-encoded,
truncated or sprinkled with bytes.  Every outcome must be one of:

* a clean :class:`InstanceError` whose message starts with the path it names;
* a valid instance whose counts are not negative, which dumps as strict JSON,
  and whose solve the referee (models/evaluate.py) accepts: the method's
  allocation is feasible (or the method says ``infeasible`` with a reason),
  the result document is strict JSON with no negative GPU count, and an
  exact method's ``optimal`` agrees with the referee (the certification step,
  models/certify.py) and with CBA's cost.

Mutated traces (the generic CSV of docs/interface.md) likewise give a clean
TraceError or a replay whose numbers are sane (:func:`mutated_traces`).
Any other exception fails the test.  The ``ci`` profile keeps the whole file
under 30 s; ``CBALAB_HYPOTHESIS_PROFILE=thorough`` runs 10,000 documents per
test (count them with ``--hypothesis-show-statistics``).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from cbalab.algorithms import registry
from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import make_workload
from cbalab.models.evaluate import RTOL
from cbalab.models.instance import Instance, InstanceError, load

#: A cost instance with fixed allocations and option tables (both problems), bandwidth cap and budget.
BASE: dict = {
    "schema": "cbalab/instance@1",
    "cluster": {
        "gpus": 64,
        "cache_gb": 300.0,
        "bandwidth_gbps": 10.0,
        "cache_granularity": "continuous",
        "bandwidth_step_gbps": None,
    },
    "prices": {"gpu_per_hour": 2.5, "cache_gb_per_hour": 0.0004, "bandwidth_gbps_per_hour": 0.9},
    "budget_per_hour": 40.0,
    "datasets": [{"id": "imagenet", "size_gb": 147.0}, {"id": "cifar", "size_gb": 0.16}, {"id": "c4", "size_gb": 800}],
    "jobs": [
        {
            "id": "resnet50-a",
            "dataset": "imagenet",
            "gpus": 4,
            "io_gbps": 0.14,
            "options": [
                {"gpus": 1, "io_gbps": 0.035, "utility": 10.0},
                {"gpus": 2, "io_gbps": 0.068, "utility": 18.5},
                {"gpus": 4, "io_gbps": 0.14, "utility": 31.0},
            ],
        },
        {
            "id": "vgg-b",
            "dataset": "cifar",
            "gpus": 1,
            "io_gbps": 0.02,
            "options": [{"gpus": 1, "io_gbps": 0.02, "utility": 3.0}, {"gpus": 8, "io_gbps": 0.1, "utility": 9.0}],
        },
        {
            "id": "bert-c",
            "dataset": "c4",
            "gpus": 8,
            "io_gbps": 0.5,
            "options": [{"gpus": 8, "io_gbps": 0.5, "utility": 20.0}],
        },
    ],
}

#: Values a field may be swapped for: other JSON types, huge, tiny, negative, whole and fractional numbers.
REPLACEMENTS: list[Any] = [
    None,
    True,
    False,
    "",
    "x",
    "imagenet",
    "1",
    [],
    [1],
    {},
    {"block_gb": 10.0},
    "dataset",
    0,
    -1,
    1,
    0.5,
    2**31 - 1,
    2**31,
    2**63,
    10**30,
    10**400,
    -(10**30),
    1e15,
    1e20,
    1e300,
    1e308,
    -1e308,
    5e-324,
    1e-300,
    1e-12,
    -0.0,
    1e-9,
]

#: Stand-ins replaced in the text by constants that Python's json reads but JSON forbids (and one out-of-range float).
NON_FINITE = {"@@NaN@@": "NaN", "@@Inf@@": "Infinity", "@@-Inf@@": "-Infinity", "@@1e999@@": "1e999"}


def _slots(node: Any, trail: tuple = ()) -> list[tuple]:
    """Every (path to a container, key) of the document: the places a mutation can hit."""
    out: list[tuple] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*trail, k))
            out.extend(_slots(v, (*trail, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*trail, i))
            out.extend(_slots(v, (*trail, i)))
    return out


SLOTS = _slots(BASE)


def _at(doc: Any, slot: tuple) -> Any:
    for key in slot:
        doc = doc[key]
    return doc


#: The slots that hold numbers: most mutations change a number and keep the document otherwise valid.
NUMBER_SLOTS = [s for s in SLOTS if isinstance(_at(BASE, s), (int, float)) and not isinstance(_at(BASE, s), bool)]

#: Mutation kinds, repeated by weight: numbers scaled or replaced by other numbers reach the solvers.
KINDS = ["scale"] * 6 + ["number"] * 4 + ["replace"] * 3 + ["non-finite"] * 2 + ["delete"] * 2 + ["duplicate", "nest"]

#: Text mutations, repeated by weight: most documents stay plain UTF-8.
TEXT_KINDS = ["utf-8"] * 10 + ["bom", "utf-16", "latin-1", "truncate", "byte"]


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    """A mutated copy of BASE, as the bytes of a file: 1-4 tree mutations, then maybe a text mutation."""
    doc = json.loads(json.dumps(BASE))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        slot = draw(st.sampled_from(NUMBER_SLOTS if kind in ("scale", "number") else SLOTS))
        try:
            parent = _at(doc, slot[:-1])
            key = slot[-1]
            parent[key]  # the slot may have gone with an earlier mutation
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, dict if isinstance(key, str) else list):
            continue  # an earlier mutation replaced the container (a string can be indexed too)
        if kind == "replace":
            parent[key] = draw(st.one_of(st.sampled_from(REPLACEMENTS), st.floats(), st.integers()))
        elif kind == "number":
            parent[key] = draw(st.one_of(st.sampled_from(REPLACEMENTS[12:]), st.floats(0, 1e6), st.integers(0, 100)))
        elif kind == "delete":
            del parent[key]
        elif kind == "duplicate" and isinstance(parent, list):
            try:
                parent.insert(key, json.loads(json.dumps(parent[key])))
            except RecursionError:  # an entry nested too deeply for json.dumps: not duplicated
                continue
        elif kind == "nest":
            for _ in range(draw(st.sampled_from([1, 2, 5, 70, 2000]))):
                parent[key] = [parent[key]]
        elif kind == "non-finite":
            parent[key] = draw(st.sampled_from(sorted(NON_FINITE)))
        elif kind == "scale" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            factor = draw(st.sampled_from([1e-300, 1e-12, 1e6, 1e14, 1e15, 1e100, 1e300]))
            try:
                parent[key] = parent[key] * factor
            except OverflowError:  # a huge int times a float: the product is +-inf, written as (-)Infinity
                parent[key] = math.inf if parent[key] > 0 else -math.inf
    try:
        text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])))
    except RecursionError:  # json.dumps's own limit: write the nesting by hand
        text = _dumps_deep(doc)
    for stand_in, constant in NON_FINITE.items():
        text = text.replace(f'"{stand_in}"', constant)
    return _text_mutation(draw, text)


def _dumps_deep(node: Any) -> str:
    """JSON text of a document nested deeper than json.dumps allows (lists of one item)."""
    depth = 0
    while isinstance(node, list) and len(node) == 1:
        node, depth = node[0], depth + 1
    if isinstance(node, dict):
        inner = "{" + ", ".join(f"{json.dumps(k)}: {_dumps_deep(v)}" for k, v in node.items()) + "}"
    elif isinstance(node, list):
        inner = "[" + ", ".join(_dumps_deep(v) for v in node) + "]"
    else:
        inner = json.dumps(node)
    return "[" * depth + inner + "]" * depth


def _text_mutation(draw: st.DrawFn, text: str) -> bytes:
    """The document's bytes, possibly re-encoded, truncated, or with a byte inserted."""
    kind = draw(st.sampled_from(TEXT_KINDS))
    if kind == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if kind == "utf-16":
        return text.encode("utf-16")
    if kind == "latin-1":
        return text.replace("imagenet", "imagenét").encode("latin-1", "replace")
    data = text.encode()
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "byte":
        at = draw(st.integers(0, len(data)))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
    return data


def _load_bytes(data: bytes) -> Instance:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "instance.json"
        path.write_bytes(data)
        return load(path)


def _strict(doc: Any) -> str:
    return json.dumps(doc, allow_nan=False)


def _assert_clean_error(error: InstanceError) -> None:
    assert isinstance(error.path, str) and error.path
    assert str(error).startswith(error.path + ": ")


def _assert_valid_instance(inst: Instance) -> None:
    assert inst.gpus is None or inst.gpus >= 0
    assert (inst.job_gpus[inst.has_fixed] >= 0).all() and (inst.job_gpus >= -1).all()
    assert (inst.option_gpus >= 1).all()
    assert np.isfinite(inst.dataset_size_gb).all() and (inst.dataset_size_gb > 0).all()
    json.loads(inst.dumps())  # dumps() refuses NaN/Infinity itself


def _solve(inst: Instance, problem: str, method: str) -> dict | None:
    """The scored result document, or None when the method refuses the instance with a clean InstanceError."""
    try:
        doc, ev = registry.run(inst, problem, method)
    except InstanceError as e:
        _assert_clean_error(e)
        return None
    _strict(doc)
    if doc["gpus"] is not None:
        assert min(doc["gpus"].values(), default=0) >= 0
    if doc["status"] in ("optimal", "feasible", "time_limit") and ev is not None:
        assert ev.feasible, doc.get("violations")
    return doc


def _check_solves(inst: Instance) -> None:
    """Solve every problem the instance supports; the referee must accept each answer, exact ones must agree."""
    if inst.has_fixed.all():
        fast = _solve(inst, "cost", "cba")
        exact = _solve(inst, "cost", "milp")
        if fast and exact and exact["status"] == "optimal" and fast["status"] in ("optimal", "feasible"):
            # A proven optimum is at most what CBA pays, and agrees with its own bound.
            assert exact["objective"] <= fast["objective"] + 1e-6 * max(1.0, abs(fast["objective"]))
            assert math.isclose(exact["objective"], exact["bound"], rel_tol=1e-6, abs_tol=1e-6)
        if fast and exact and exact["status"] == "infeasible" and "reason" in exact and fast["status"] == "optimal":
            raise AssertionError(f"milp says infeasible ({exact['reason']}) where CBA found an optimum")
    if inst.has_options.all() and inst.cache_granularity == "continuous" and inst.bandwidth_step_gbps is None:
        auto = _solve(inst, "welfare", "autocba")
        exact = _solve(inst, "welfare", "milp")
        if auto and exact and exact["status"] == "optimal" and auto["welfare"] is not None:
            assert auto["welfare"] <= exact["objective"] + 1e-6 * max(1.0, abs(exact["objective"])) + RTOL


@given(mutated_documents())
def test_mutated_instances_give_a_clean_error_or_a_result_the_referee_accepts(data: bytes) -> None:
    """A mutated instance file loads as a valid instance or fails with an InstanceError naming a path."""
    try:
        inst = _load_bytes(data)
    except InstanceError as e:
        _assert_clean_error(e)
        event(f"refused: {e.problem.split(' (')[0][:40]}")
        return
    event("loaded and solved")
    _assert_valid_instance(inst)
    _check_solves(inst)


@given(st.binary(max_size=400))
def test_arbitrary_bytes_give_a_clean_error(data: bytes) -> None:
    """Bytes that are no instance (binary, text, nothing) are an InstanceError naming a path."""
    try:
        inst = _load_bytes(data)
    except InstanceError as e:
        _assert_clean_error(e)
        return
    _assert_valid_instance(inst)


def test_the_fuzz_base_document_is_valid() -> None:
    """The unmutated document loads and both problems solve: the fuzz starts from a valid instance."""
    inst = _load_bytes(json.dumps(BASE).encode())
    assert inst.n_jobs == 3 and inst.has_fixed.all() and inst.has_options.all()
    assert _solve(inst, "cost", "milp")["status"] == "optimal"
    assert _solve(inst, "welfare", "milp")["status"] == "optimal"


# ---------------------------------------------------------------- trace CSV (experiments/workload/traces.py)

#: A valid generic trace with the optional columns: pinned and unpinned models, fractional and equal times.
TRACE_HEADER = ["submit_time_s", "duration_s", "gpus", "job_id", "model"]
TRACE_ROWS = [
    ["0", "3600", "1", "a", "resnet50"],
    ["30", "600", "2", "b", ""],
    ["45.5", "7200", "4", "c", ""],
    ["45.5", "60", "8", "d", ""],
]

#: Cell values a trace mutation may write: huge, tiny, negative, non-finite, malformed.
TRACE_CELLS = [
    "",
    " ",
    "x",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e400",
    "-1e308",
    "1e12",
    "1e13",
    "-5",
    "-0",
    "0",
    "1e-320",
    "0.5",
    "2147483647",
    "2147483648",
    "100000000000000000000",
    "9" * 400,
    "a",
    "resnet50",
    "no-such-model",
    '"quoted, comma"',
    "1,2",
]

#: Text mutations of a trace, repeated by weight: most stay plain UTF-8.
TRACE_TEXT_KINDS = ["utf-8"] * 8 + ["bom", "utf-16", "truncate", "byte", "crlf"]


@st.composite
def mutated_traces(draw: st.DrawFn) -> bytes:
    """A mutated copy of the valid trace, as file bytes: cells replaced, rows and columns dropped or duplicated."""
    header = list(TRACE_HEADER)
    rows = [list(r) for r in TRACE_ROWS]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["cell"] * 6 + ["drop-row", "duplicate-row", "drop-cell", "header", "no-rows"]))
        if kind == "cell" and rows:
            row = draw(st.integers(0, len(rows) - 1))
            col = draw(st.integers(0, len(rows[row]) - 1))
            rows[row][col] = draw(
                st.one_of(st.sampled_from(TRACE_CELLS), st.floats().map(repr), st.integers().map(str))
            )
        elif kind == "drop-row" and rows:
            rows.pop(draw(st.integers(0, len(rows) - 1)))
        elif kind == "duplicate-row" and rows:
            rows.append(list(rows[draw(st.integers(0, len(rows) - 1))]))
        elif kind == "drop-cell" and rows:
            row = rows[draw(st.integers(0, len(rows) - 1))]
            row.pop(draw(st.integers(0, len(row) - 1)))
        elif kind == "header":
            header[draw(st.integers(0, len(header) - 1))] = draw(st.sampled_from(["", "gpu", "timestamp", "job_id"]))
        elif kind == "no-rows":
            rows = []
    text = "\n".join(",".join(r) for r in [header, *rows]) + "\n"
    kind = draw(st.sampled_from(TRACE_TEXT_KINDS))
    if kind == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if kind == "utf-16":
        return text.encode("utf-16")
    if kind == "crlf":
        return text.replace("\n", "\r\n").encode()
    data = text.encode()
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "byte":
        at = draw(st.integers(0, len(data)))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
    return data


@given(mutated_traces())
def test_mutated_traces_give_a_clean_error_or_a_replay_the_referee_accepts(data: bytes) -> None:
    """A mutated trace is a TraceError/InstanceError naming a path, or a replay with sane numbers.

    A replay must give strict JSON, GPU counts in [1, G], finite times with end ≥ start ≥ submit and
    JCT ≥ duration, and finite non-negative costs.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_bytes(data)
        try:
            workload = make_workload(trace=path, seed=0, n_datasets=4)
            result = simulate(workload, SimConfig(gpus=16, cache_gb=100.0))
        except InstanceError as e:  # TraceError is one
            _assert_clean_error(e)
            event(f"refused: {e.problem.split(' (')[0][:40]}")
            return
    event("replayed")
    _strict(result.summary)
    jobs = result.jobs
    assert ((jobs["gpus"] >= 1) & (jobs["gpus"] <= 16)).all()
    times = jobs[["submit_s", "start_s", "end_s", "jct_s", "cost"]].to_numpy(dtype=float)
    assert np.isfinite(times).all()
    assert (jobs["start_s"] >= jobs["submit_s"]).all() and (jobs["end_s"] >= jobs["start_s"]).all()
    assert (jobs["jct_s"] >= jobs["duration_s"] * (1 - 1e-9)).all()
    assert (jobs["cost"] >= 0).all() and all(v >= 0 and math.isfinite(v) for v in result.summary["cost"].values())
