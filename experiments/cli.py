"""The ``cbalab`` command line (spec/INTERFACE.md).

Exit status: 0 on a result (``infeasible`` included), 2 on bad input (with a
message naming the field and the value, never a traceback), 1 on an internal
error, 130 on Ctrl-C (one line, no traceback).  Every output file is written
atomically (models/files.py); an ``--out`` that cannot be written is refused
before any solving.  ``--no-timing`` leaves out the wall-clock fields
(``solve_seconds``, ``wall_seconds``), so that two runs can be compared
byte for byte.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from cbalab.algorithms import registry as methods
from cbalab.models.files import atomic_write_text
from cbalab.models.instance import Instance, InstanceError, load

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

#: The name of the worker thread HiGHS runs in (models/solve.py, ``_interruptible``).
HIGHS_THREAD = "cbalab-highs"


class BadInputError(Exception):
    """A usage error found after parsing (unknown method, wrong problem for the instance, ...)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors: exit 2, no traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"cbalab: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _emit(doc: dict, out: str | None) -> None:
    """Print ``doc`` as strict JSON (NaN and infinities refused) and, with ``out``, write it there atomically."""
    text = json.dumps(doc, indent=1, allow_nan=False)
    print(text)
    if out:
        atomic_write_text(out, text + "\n")


def _writable_file(option: str, path: str | None) -> None:
    """BadInputError unless ``path`` can be written: its folder exists and is writable, and it is no folder."""
    if path is None:
        return
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise BadInputError(f"{option}: the folder {str(folder)!r} does not exist")
    if target.is_dir():
        raise BadInputError(f"{option}: {path!r} is a folder, not a file")
    if not os.access(folder, os.W_OK):
        raise BadInputError(f"{option}: the folder {str(folder)!r} is not writable")


def _writable_folder(option: str, path: str | None) -> None:
    """BadInputError unless ``path`` is, or can be created as, a writable folder."""
    if path is None:
        return
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise BadInputError(f"{option}: {path!r} exists and is not a folder")
    existing = next(p for p in (target, *target.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise BadInputError(f"{option}: {str(existing)!r} is not a writable folder")


def cmd_solve(args: argparse.Namespace) -> int:
    """``cbalab solve INSTANCE --problem P --method M``: one scored result document."""
    _writable_file("--out", args.out)
    inst = load(args.instance)
    try:
        methods.get(args.problem, args.method)
    except KeyError as e:
        raise BadInputError(f"--method: {e.args[0]}") from None
    doc, _ = methods.run(inst, args.problem, args.method, time_limit=args.time_limit)
    if args.no_timing:
        del doc["solve_seconds"]
    _emit(doc, args.out)
    return EXIT_OK


def _generated(args: argparse.Namespace) -> Instance:
    from cbalab.experiments.workload import generate_cost, generate_welfare

    if args.datasets < 1:
        raise BadInputError(f"--datasets: must be >= 1, got {args.datasets}")
    if args.kind == "welfare":
        return generate_welfare(
            args.jobs, args.datasets, args.seed, utility_mix=args.utility, budget_fraction=args.budget_fraction
        )
    kinds: dict[str, Callable[..., Instance]] = {"cost": generate_cost}
    return kinds[args.kind](args.jobs, args.datasets, args.seed)


def cmd_generate(args: argparse.Namespace) -> int:
    """``cbalab generate --kind K --jobs N --datasets D --seed S``: a seeded instance as JSON."""
    inst = _generated(args)
    text = inst.dumps()
    if args.out:
        atomic_write_text(args.out, text + "\n")
    else:
        print(text)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """``cbalab compare``: every method of a problem on one instance, as a table (the README's main job)."""
    if args.instance:
        inst = load(args.instance)
        origin = args.instance
    else:
        args.kind = args.problem
        inst = _generated(args)
        origin = f"generated --kind {args.problem} --jobs {args.jobs} --datasets {args.datasets} --seed {args.seed}"
    print(f"instance: {origin} ({inst.n_jobs} jobs, {inst.n_datasets} datasets)")
    rows = [
        methods.run(inst, args.problem, name, time_limit=args.time_limit)[0] for name in methods.names(args.problem)
    ]
    exact = [r for r in rows if r["method"] == "milp" and r["status"] == "optimal"]
    ref = exact[0] if exact else None
    cost_problem = args.problem == "cost"
    value = _io_cost if cost_problem else _welfare
    what = "io $/h" if cost_problem else "welfare"
    header = (
        f"{'method':<18}{'status':<12}{what:>12}{'vs milp':>10}{'bound':>12}"
        f"{'total $/h':>12}{'cache $/h':>11}{'bw $/h':>10}{'seconds':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        x, x_ref = value(r), None if ref is None else value(ref)
        gap = "" if x is None or not x_ref else f"{(x - x_ref) / abs(x_ref):+.2%}"
        cost = r["cost_per_hour"] or {}
        print(
            f"{r['method']:<18}{r['status']:<12}{_fmt(x):>12}{gap:>10}{_fmt(r['bound']):>12}"
            f"{_fmt(cost.get('total')):>12}{_fmt(cost.get('cache')):>11}{_fmt(cost.get('bandwidth')):>10}"
            f"{r['solve_seconds']:>10.4f}"
        )
    if cost_problem:
        print("io $/h = cache + bandwidth (the GPU bill is the same for all); vs milp: against the proven optimum.")
    else:
        print("welfare as the referee scores it (a stalled job earns U x/r); bound: the method's proven upper bound.")
    return EXIT_OK


def _io_cost(doc: dict) -> float | None:
    cost = doc["cost_per_hour"]
    return None if cost is None or doc["status"] == "infeasible" else cost["cache"] + cost["bandwidth"]


def _welfare(doc: dict) -> float | None:
    return None if doc["status"] == "infeasible" else doc["welfare"]


def cmd_methods(args: argparse.Namespace) -> int:
    """``cbalab methods``: the registry, by problem (what ``--method`` accepts)."""
    for problem in ("cost", "welfare"):
        print(f"{problem}:")
        for name in methods.names(problem):
            print(f"  {name:<18}{methods.get(problem, name).summary}")
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    """``cbalab simulate --trace T | --generate N --policy P``: a trace-driven replay (experiments/simulate.py)."""
    from cbalab.experiments.simulate import SimConfig, simulate
    from cbalab.experiments.workload import DEFAULT_PRICES, make_workload

    try:
        methods.get("cost", args.policy)
    except KeyError as e:
        raise BadInputError(f"--policy: {e.args[0]}") from None
    _writable_folder("--out", args.out)
    workload = make_workload(
        trace=args.trace,
        n_jobs=args.generate,
        seed=args.seed,
        skew=args.skew,
        n_datasets=args.datasets,
        gpu_type=args.gpu_type,
    )
    given = (args.price_gpu, args.price_cache, args.price_bandwidth)
    prices = tuple(DEFAULT_PRICES[i] if value is None else value for i, value in enumerate(given))
    cfg = SimConfig(
        policy=args.policy,
        gpus=args.gpus,
        cache_gb=args.cache_gb,
        bandwidth_gbps=math.inf if args.bandwidth_gbps is None else args.bandwidth_gbps,
        prices=prices,
        warmup=not args.no_warmup,
        period_s=args.period,
        seed=args.seed,
        progress=not args.quiet and len(workload.jobs) >= 10_000,
    )
    result = simulate(workload, cfg)
    if args.no_timing:
        del result.summary["wall_seconds"]
    if args.out:
        result.write(args.out)
    _emit(result.summary, None)
    return EXIT_OK


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _welfare_arguments(p: argparse.ArgumentParser) -> None:
    """Options of generated welfare instances (experiments.workload.generate_welfare)."""
    from cbalab.models.options import SHAPES

    p.add_argument(
        "--utility", default="mixed", choices=[*SHAPES, "mixed"], help="utility shape of every job (welfare)"
    )
    p.add_argument(
        "--budget-fraction",
        type=_fraction,
        default=0.5,
        help="budget as a fraction of running every job at its largest option on remote IO (welfare)",
    )


def parser() -> argparse.ArgumentParser:
    """The argument parser of every ``cbalab`` command."""
    p = _Parser(prog="cbalab", description="Cache, bandwidth and GPU allocation for DL clusters (CBA / AutoCBA).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("solve", help="solve one instance with one method")
    s.add_argument("instance")
    s.add_argument("--problem", required=True, choices=["cost", "welfare"])
    s.add_argument("--method", required=True)
    s.add_argument("--time-limit", type=_seconds, default=None)
    s.add_argument("--out", help="also write the result here (atomically; the folder must exist)")
    s.add_argument("--no-timing", action="store_true", help="leave out solve_seconds: identical runs, identical bytes")
    s.set_defaults(run=cmd_solve)

    g = sub.add_parser("generate", help="write a seeded instance")
    g.add_argument("--kind", required=True, choices=["cost", "welfare"])
    g.add_argument("--jobs", type=_positive_int, required=True)
    g.add_argument("--datasets", type=_positive_int, required=True)
    g.add_argument("--seed", type=_positive_int, default=0)
    g.add_argument("--out")
    _welfare_arguments(g)
    g.set_defaults(run=cmd_generate)

    c = sub.add_parser("compare", help="every method of a problem on one instance, as a table")
    c.add_argument("instance", nargs="?")
    c.add_argument("--problem", default="cost", choices=["cost", "welfare"])
    c.add_argument("--jobs", type=_positive_int, default=200)
    c.add_argument("--datasets", type=_positive_int, default=40)
    c.add_argument("--seed", type=_positive_int, default=0)
    c.add_argument("--time-limit", type=_seconds, default=None)
    _welfare_arguments(c)
    c.set_defaults(run=cmd_compare)

    m = sub.add_parser("methods", help="list the registered methods of each problem")
    m.set_defaults(run=cmd_methods)

    m = sub.add_parser("simulate", help="replay a job trace under a cost policy (MODEL.md §6)")
    source = m.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", help="generic CSV (submit_time_s,duration_s,gpus[,job_id,model,dataset]) or Philly")
    source.add_argument("--generate", type=_positive_int, metavar="N", help="N jobs, Philly-calibrated generator")
    m.add_argument("--policy", required=True, help="a cost method: cba, io-only, cache-all, coordl, quiver, silod, ...")
    m.add_argument("--out", help="directory for jobs.csv, timeseries.csv, summary.json")
    m.add_argument("--seed", type=_positive_int, default=0, help="seeds the generator and the dataset assignment")
    m.add_argument("--skew", type=_fraction, default=1.0, help="Zipf skew of dataset popularity (0 = uniform)")
    m.add_argument("--datasets", type=_positive_int, default=48, help="number of datasets jobs are spread over")
    m.add_argument("--gpu-type", default=None, help="k80, p100, v100 or t4 (default: each model's measured type)")
    m.add_argument("--gpus", type=_positive_int, default=768, help="GPUs in the cluster (FIFO queue beyond)")
    m.add_argument("--cache-gb", type=_fraction, default=500.0, help="cache capacity C in GB")
    m.add_argument("--bandwidth-gbps", type=_fraction, default=None, help="remote-IO cap B in GB/s (default: none)")
    m.add_argument("--price-gpu", type=_fraction, default=None, help="$ per GPU-hour")
    m.add_argument("--price-cache", type=_fraction, default=None, help="$ per GB-hour of cache")
    m.add_argument("--price-bandwidth", type=_fraction, default=None, help="$ per (GB/s)-hour of remote IO")
    m.add_argument("--no-warmup", action="store_true", help="instant caches (no warm-up, MODEL.md §6)")
    m.add_argument("--period", type=_seconds, default=None, help="also re-allocate every PERIOD seconds")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.add_argument("--no-timing", action="store_true", help="leave out wall_seconds: identical runs, identical bytes")
    m.set_defaults(run=cmd_simulate)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cbalab`` console script; returns the exit status."""
    stderr_fd = os.dup(2)
    logging.getLogger("pyomo.core").addFilter(_not_an_interrupt)
    try:
        args = parser().parse_args(argv)
        return args.run(args)
    except (InstanceError, BadInputError) as e:
        print(f"cbalab: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return _interrupted(stderr_fd)
    except Exception as e:  # an internal error: one line, exit 1; CBALAB_DEBUG=1 shows the traceback
        if os.environ.get("CBALAB_DEBUG"):
            raise
        print(f"cbalab: internal error: {e.__class__.__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        os.close(stderr_fd)


def _interrupted(stderr_fd: int) -> int:
    """Ctrl-C: the line ``cbalab: interrupted`` on stderr and exit 130 (128 + SIGINT).

    If HiGHS has not left its worker thread within its grace period, Pyomo
    still holds the process's stdout and stderr (it captures the file
    descriptors while HiGHS runs): the line then goes to the stderr saved at
    start, and the process ends at once rather than wait for HiGHS.  No
    output file is half-written either way: they are written atomically.
    """
    if any(t.name == HIGHS_THREAD and t.is_alive() for t in threading.enumerate()):
        os.write(stderr_fd, b"cbalab: interrupted\n")
        os._exit(EXIT_INTERRUPTED)
    print("cbalab: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _not_an_interrupt(record: logging.LogRecord) -> bool:
    """Drops Pyomo's "Constructing component ... failed: KeyboardInterrupt" log line: Ctrl-C gets one line, ours."""
    return "KeyboardInterrupt" not in record.getMessage()


if __name__ == "__main__":
    sys.exit(main())
