"""The ``cbalab`` command line (docs/interface.md): a thin mapping of its arguments onto the facade.

Each command parses its options, hands them to the facade (cbalab/api.py) or to a typed function of
cbalab.experiments (the sweep runner, the benchmarks, the paper), and prints what comes back; the work, the
checks of the values and the rules of which option goes with which problem live there, not here.  This is
the only module that parses arguments (tests/test_architecture.py).  Errors the facade raises name its
keyword (``budget_fraction``); the command renames them to the option that set it (``--budget-fraction``).
What the command checks itself is what its options add (docs/interface.md): the range of an option's text, a
generated instance held to the instance file's rules (naming the option behind a refused field), generator
options next to an instance file, the number of ``--period`` ticks, and the options of a benchmark by their name.

Exit status: 0 on a result (``infeasible`` included), 2 on bad input (with a message naming the option and
the value, never a traceback), 1 on an internal error, 130 on Ctrl-C or SIGTERM (one line, no traceback: a
sweep stops as on Ctrl-C, keeping its finished runs and ending its worker processes).  Every
output file is written atomically (models/files.py); an ``--out`` that cannot be written is refused before
any solving.  ``--no-timing`` leaves out the wall-clock fields (``solve_seconds``, ``wall_seconds``), so
that two runs can be compared byte for byte; ``--no-progress`` turns off the progress bar of ``simulate`` and
``experiment`` alike.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from cbalab import api
from cbalab.algorithms import registry
from cbalab.algorithms.resolve import method_problems
from cbalab.api import MAX_SKEW
from cbalab.experiments import about, runner
from cbalab.experiments.runner import ExperimentError
from cbalab.models import __version__
from cbalab.models.files import (
    atomic_write_text,
    same_file,
    too_long,
    unreadable,
    unwritable_file,
    unwritable_folder,
)
from cbalab.models.instance import MAX_COUNT, Instance, InstanceError, load
from cbalab.models.types import Problem, Status

if TYPE_CHECKING:
    from cbalab.experiments.benchmarks import Option

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: ``cbalab bench``: the measurement found what it looks for (a false optimum, ...), as a failed run of a sweep.
EXIT_FAILED = 1

#: The name of the worker thread HiGHS runs in (models/solve.py, ``_interruptible``).
HIGHS_THREAD = "cbalab-highs"


class BadInputError(Exception):
    """A usage error found after parsing (generated jobs that do not fit in memory)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """argparse's own usage errors: exit 2 with one line naming the option (``--gpus: ...``), no traceback."""
        if message.startswith("argument "):
            message = message[len("argument ") :]
        hint = "" if "(got " in message else f" (see {self.prog} --help)"
        self.exit(EXIT_BAD_INPUT, f"cbalab: error: {message}{hint}\n")


@contextmanager
def _named(options: Mapping[str, str], *, nested: bool = False) -> Iterator[None]:
    """Rename an InstanceError of the facade from the keyword it names to the option that set it.

    ``options`` maps keywords (``budget_fraction``, ``prices[0]``) to options (``--budget-fraction``,
    ``--price-gpu``).  Only an error naming one of them is renamed: an error of a field of an instance file
    (``jobs[0].options``) passes unchanged; with ``nested``, an error of a part of a keyword's value
    (``gpu_options[1]``) is renamed by its keyword.
    """
    try:
        yield
    except InstanceError as e:
        root = e.path.split(".")[0].split("[")[0] if nested and not e.path.startswith("prices[") else e.path
        if root not in options:
            raise
        raise InstanceError(options[root], e.value, e.problem) from None


#: The keywords of :func:`cbalab.solve` and :func:`cbalab.compare` that ``solve`` and ``compare`` set.
SOLVE_OPTIONS = {"method": "--method", "problem": "--problem", "time_limit": "--time-limit"}


def _option_names(p: argparse.ArgumentParser) -> dict[str, str]:
    """Every option of ``p`` by its destination: ``{"time_limit": "--time-limit", ...}``."""
    return {a.dest: a.option_strings[0] for a in p._actions if a.option_strings and a.dest != "help"}


def _whole(text: str, low: int, high: int, high_text: str) -> int:
    """``text`` as a whole number from ``low`` to ``high`` (``high_text`` in the message); ArgumentTypeError
    saying the range otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= {low} (got {text!r})") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high_text} (got {text!r})")
    return value


def _count(text: str) -> int:
    """A whole number from 0 to 2^31 - 1 (the largest count an instance holds, models.instance.MAX_COUNT)."""
    return _whole(text, 0, MAX_COUNT, str(MAX_COUNT))


def _positive_count(text: str) -> int:
    """A whole number from 1 to 2^31 - 1: a count of what a benchmark works on or repeats, where 0 would measure
    nothing."""
    return _whole(text, 1, MAX_COUNT, str(MAX_COUNT))


def _seconds(text: str) -> float:
    """Seconds of a limit or a period: finite and > 0.  ``inf`` is refused as not finite: where an option may be
    left without a limit (``solve --time-limit``, ``simulate --period``) leaving it out says so, and a benchmark's
    limit is its own default when left out, so no one message about leaving it out fits every command."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds (got {text!r})") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds (got {text!r})")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (got {text!r})")
    return value


def _skew(text: str) -> float:
    """A Zipf skew: a finite number from 0 to MAX_SKEW (33), the API's rule (api.check_skew)."""
    try:
        return api.check_skew(_fraction(text))
    except InstanceError as e:
        raise argparse.ArgumentTypeError(f"{e.problem} (got {text!r})") from None


def _gpu_fraction(text: str) -> float:
    """``--gpu-fraction``: a finite number from 0 to MAX_COUNT.  The cluster gets that fraction of Σ_j (largest
    option) GPUs, so at least the fraction itself once there is a job, and an instance holds at most MAX_COUNT
    GPUs (a larger product is refused by the instance rules, naming the option; a fraction near 1e308 made it
    infinite, which the generator could not even round)."""
    value = _fraction(text)
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT}, the most GPUs an instance holds (got {text!r})")
    return value


def _out(text: str) -> str:
    """The path of an ``--out`` (of every command): not empty, which would write into the current folder or be
    taken for no path at all, depending on the command, and not too long for the file system
    (models.files.too_long)."""
    if not text:
        raise argparse.ArgumentTypeError(f"empty path (got {text!r})")
    long = too_long(text)
    if long is not None:
        raise argparse.ArgumentTypeError(f"{long} (got {_shown_path(text)})")
    return text


def _shown_path(text: str) -> str:
    """``text`` quoted for a message, its middle elided past 60 characters."""
    return repr(text if len(text) <= 60 else f"{text[:40]}...{text[-17:]}")


def _workers(text: str) -> int:
    """Local worker processes of a sweep: a whole number from 1 to 4096."""
    return _whole(text, 1, 4096, "4096")


def _seed(text: str) -> int:
    """A sweep seed: a whole number from 0 to 2^63 - 1 (numpy's generators take no negative seed)."""
    return _whole(text, 0, 2**63 - 1, "2^63 - 1")


def _emit(doc: dict, out: str | None) -> None:
    """Print ``doc`` as strict JSON (NaN and infinities refused) and, with ``out``, write it there atomically."""
    text = json.dumps(doc, indent=1, allow_nan=False)
    print(text)
    if out:
        atomic_write_text(out, text + "\n")


def _writable_file(option: str, path: str | None) -> None:
    """InstanceError naming ``option`` unless a file can be written at ``path`` (models.files.unwritable_file)."""
    problem = None if path is None else unwritable_file(path)
    if problem is not None:
        raise InstanceError(option, path, problem)


def _not_the_input(out: str | None, source: str, path: str | None, files: Sequence[str] = ()) -> None:
    """InstanceError naming ``--out`` when a file it writes (``out`` itself, or each of ``files`` in the folder
    ``out``) is the input file ``path`` that ``source`` names: the output would replace the input it is computed
    from (a result document where the instance was)."""
    if out is None or path is None:
        return
    for name in files or ("",):
        if same_file(Path(out) / name, path):
            its = f"its {name} " if name else ""
            raise InstanceError("--out", out, f"{its}is the input file {source} ({path!r}); writing would replace it")


def cmd_solve(args: argparse.Namespace) -> int:
    """``cbalab solve INSTANCE --method M [--problem P]``: one scored result document (:func:`cbalab.solve`).

    The problem is the one that both the method and the instance serve (algorithms/resolve.py):
    ``--problem`` is needed only for ``lp`` or ``milp`` on an instance whose jobs carry both problems' fields.
    A misspelt method is refused before the instance is read.
    """
    method_problems(args.method, "--method")
    _writable_file("--out", args.out)
    _not_the_input(args.out, "INSTANCE", args.instance)
    inst = load(args.instance)
    with _named(SOLVE_OPTIONS):
        doc = api.solve(inst, args.method, args.problem, time_limit=args.time_limit).to_dict()
    if args.no_timing:
        del doc["solve_seconds"]
    _emit(doc, args.out)
    return EXIT_OK


#: The option of ``cbalab generate`` / ``compare`` that sets each parameter of generate_instance.
GENERATOR_OPTIONS = {
    "jobs": "--jobs",
    "datasets": "--datasets",
    "seed": "--seed",
    "skew": "--skew",
    "cache_fraction": "--cache-fraction",
    "bandwidth_fraction": "--bandwidth-fraction",
    "prices[0]": "--price-gpu",
    "prices[1]": "--price-cache",
    "prices[2]": "--price-bandwidth",
    "variant": "--variant",
    "block_gb": "--block-gb",
    "tier_fraction": "--tier-fraction",
    "utility_mix": "--utility",
    "budget_fraction": "--budget-fraction",
    "gpu_options": "--gpu-options",
    "gpu_fraction": "--gpu-fraction",
    "alpha": "--alpha",
}


#: The generator options behind each field of a generated instance that the instance rules may refuse
#: (models/instance.py: a capacity, price, budget or utility that is not finite or is below MIN_MAGNITUDE, more
#: GPUs than MAX_COUNT); ``utility`` stands for any job's ``options[i].utility``.
GENERATED_FIELDS = {
    "cluster.gpus": ("--gpu-fraction", "--gpu-options"),
    "cluster.cache_gb": ("--cache-fraction",),
    "cluster.bandwidth_gbps": ("--bandwidth-fraction",),
    "cluster.bandwidth_step_gbps": ("--tier-fraction",),
    "cluster.cache_granularity.block_gb": ("--block-gb",),
    "budget_per_hour": ("--budget-fraction",),
    "prices.gpu_per_hour": ("--price-gpu",),
    "prices.cache_gb_per_hour": ("--price-cache",),
    "prices.bandwidth_gbps_per_hour": ("--price-bandwidth",),
    "utility": ("--alpha", "--utility", "--gpu-options"),
}


@contextmanager
def _field_named(args: argparse.Namespace) -> Iterator[None]:
    """Rename an InstanceError of a generated instance's field to the generator options behind it, with their
    values: ``--bandwidth-fraction 1e-40`` makes a cap of 3.6e-41 GB/s, which no instance file may hold.

    The options given are named (all of them when the field depends on several); when none of them was given, the
    refusal comes from their defaults and all of them are named.  A field no option sets passes unchanged.
    """
    try:
        yield
    except InstanceError as e:
        options = GENERATED_FIELDS.get("utility" if e.path.endswith(".utility") else e.path)
        if options is None:
            raise
        values = {o: getattr(args, o[2:].replace("-", "_")) for o in options}
        given = {o: v for o, v in values.items() if v is not None} or values
        shown = f"{e.value:.6g}" if isinstance(e.value, int | float) else e.value
        value = next(iter(given.values())) if len(given) == 1 else tuple(given.values())
        raise InstanceError(
            "/".join(given), value, f"makes {e.path} {shown}, which an instance may not hold: {e.problem}"
        ) from None


def _generated(args: argparse.Namespace, kind: str) -> Instance:
    """The seeded instance of the generator options (:func:`cbalab.generate`); errors name the option.

    The instance is held to the rules of the instance loader (models.instance.from_dict), so that ``generate``
    never writes a file that ``solve`` then refuses, and ``compare`` never runs on one: a field they refuse is
    named by the option that set it (:func:`_field_named`).  numpy's warnings are silenced while generating: a
    value they would warn of (an α that overflows the utilities) is not finite, and refused that way.
    """
    try:
        with _named(GENERATOR_OPTIONS, nested=True), _field_named(args), np.errstate(all="ignore"):
            inst = api.generate(
                kind,
                jobs=args.jobs,
                datasets=args.datasets,
                seed=args.seed,
                skew=args.skew,
                cache_fraction=args.cache_fraction,
                bandwidth_fraction=args.bandwidth_fraction,
                prices=_given_prices(args),
                variant=args.variant,
                block_gb=args.block_gb,
                tier_fraction=args.tier_fraction,
                utility_mix=args.utility,
                budget_fraction=args.budget_fraction,
                gpu_options=None if args.gpu_options is None else tuple(args.gpu_options),
                gpu_fraction=args.gpu_fraction,
                alpha=args.alpha,
            )
            return inst
    except MemoryError:
        raise BadInputError(f"--jobs: {args.jobs} jobs do not fit in memory") from None


def _given_prices(args: argparse.Namespace) -> tuple[float, float, float] | None:
    """(p_g, p_c, p_b) of ``generate``, ``compare`` and ``simulate``: the ones given, the package's defaults for
    the others; None when none is given."""
    from cbalab.experiments.workload import DEFAULT_PRICES

    given = (args.price_gpu, args.price_cache, args.price_bandwidth)
    if given == (None, None, None):
        return None
    return (
        DEFAULT_PRICES[0] if given[0] is None else given[0],
        DEFAULT_PRICES[1] if given[1] is None else given[1],
        DEFAULT_PRICES[2] if given[2] is None else given[2],
    )


def cmd_generate(args: argparse.Namespace) -> int:
    """``cbalab generate --kind K --jobs N --datasets D --seed S``: a seeded instance as JSON."""
    _writable_file("--out", args.out)
    inst = _generated(args, args.kind)
    text = inst.dumps()
    if args.out:
        path = atomic_write_text(args.out, text + "\n")
        print(
            f"wrote {path}: a {args.kind} instance (cbalab/instance@1) with {inst.n_jobs} jobs and "
            f"{inst.n_datasets} datasets, seed {args.seed}"
        )
    else:
        print(text)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """``cbalab compare``: :func:`cbalab.compare` on one instance, printed as a table (the README's main job),
    with a footnote under it giving the reason of every row that is ``error`` or ``infeasible``.

    A generator option next to an instance file is refused, naming it: the file is compared as it is, so the
    option would be ignored.
    """
    if args.instance is not None:
        if args.given:
            dest, option = next(iter(args.given.items()))
            raise InstanceError(option, getattr(args, dest), "only with a generated instance (not with a file)")
        inst = load(args.instance)
        origin = args.instance
    else:
        args.problem = args.problem or "cost"
        inst = _generated(args, args.problem)
        origin = f"generated --kind {args.problem} --jobs {args.jobs} --datasets {args.datasets} --seed {args.seed}"
    with _named(SOLVE_OPTIONS):
        table = api.compare(inst, args.problem, time_limit=args.time_limit)
    problem = table.attrs["problem"]
    print(f"instance: {origin} ({inst.n_jobs} jobs, {inst.n_datasets} datasets)")
    print(f"every {problem} method, each answer scored by the referee:")
    what = "io $/h" if problem == Problem.COST else "welfare"
    width = max(len(m) for m in table["method"])
    spec: tuple[tuple[str, str], ...] = ((f"<{width}", "method"), ("<10", "status"), (">10", what))
    spec += ((">8", "vs milp"), (">10", "bound"))
    spec += ((">9", "total $/h"), (">9", "cache $/h"), (">9", "bw $/h"), (">7", "seconds"))
    header = " ".join(f"{name:{align}}" for align, name in spec)
    print(header)
    print("-" * len(header))
    for r in table.itertuples(index=False):
        gap = "" if math.isnan(r.vs_milp) else _percent(r.vs_milp)
        cells: tuple[str, ...] = (r.method, r.status, _fmt(r.value), gap, _fmt(r.bound), _fmt(r.total_per_hour, 5))
        cells += (_fmt(r.cache_per_hour, 5), _fmt(r.bandwidth_per_hour, 5), f"{r.solve_seconds:.4f}")
        print(" ".join(f"{cell:{align}}" for (align, _), cell in zip(spec, cells)))
    for r in table.itertuples(index=False):
        if r.status in (Status.ERROR, Status.INFEASIBLE):
            print(f"* {r.method} ({r.status}): {r.reason or 'no reason given'}")
    if problem == Problem.COST:
        print("io $/h = cache + bandwidth (the GPU bill is the same for all); vs milp: against the proven optimum;")
        print("bound: the method's proven lower bound on the io $/h.")
    else:
        print("welfare as the referee scores it (a stalled job earns U x/r); vs milp: against the proven optimum;")
        print("bound: the method's proven upper bound on the welfare.")
    return EXIT_OK


def _percent(x: float) -> str:
    """A relative gap as +1.23%; a rounding-level difference prints as +0.00%, not -0.00%."""
    return f"{0.0 if abs(x) < 5e-5 else x:+.2%}"


def _fmt(x: float | None, digits: int = 6) -> str:
    """A table cell: ``digits`` significant digits, or "-" for none."""
    return "-" if x is None or math.isnan(x) else f"{x:.{digits}g}"


def cmd_methods(args: argparse.Namespace) -> int:
    """``cbalab methods``: the registry, by problem (what ``--method`` accepts), with what is proven of each."""
    width = max(len(m.name) for m in registry.all_methods()) + 2
    for problem in ("cost", "welfare"):
        print(f"{problem}:")
        for name in registry.names(problem):
            entry = registry.get(problem, name)
            lines = textwrap.wrap(entry.summary, 98 - width - 7, break_on_hyphens=False)
            if entry.optimal_on:
                lines += textwrap.wrap(f"optimal on: {entry.optimal_on}", 98 - width - 7, break_on_hyphens=False)
            print(f"  {name:<{width}}{'exact' if entry.exact else '':<7}{lines[0]}")
            for line in lines[1:]:
                print(f"  {'':<{width + 7}}{line}")
    print("exact: solved by HiGHS at MIP gap 0, so optimal is the solver's proof for the model the method")
    print("       builds (for lp the relaxation); optimal on: where the answer is proven optimal (the theorem)")
    return EXIT_OK


#: The ``simulate`` options whose destination is a field of :class:`cbalab.ReplaySpec` under the same name.
REPLAY_FIELDS = (
    "policy",
    "problem",
    "gpus",
    "cache_gb",
    "bandwidth_gbps",
    "period_s",
    "seed",
    "skew",
    "n_datasets",
    "gpu_type",
    "window",
    "offline_optimum",
    "time_limit",
    "cache_policy",
    "utility_mix",
    "budget_per_hour",
    "budget_fraction",
    "restart_delay_s",
    "out",
)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``cbalab simulate --trace T | --generate N --policy P``: :func:`cbalab.simulate` of the options' spec.

    ``--problem cost`` (the default) replays fixed-GPU jobs under a cost policy (docs/model.md §6);
    ``--problem welfare`` is the elastic replay (§6b).  The facade refuses, before any work, an option the
    problem does not have, a bad ``--policy`` and an ``--out`` that cannot be written.
    """
    source = "--trace" if args.trace is not None else "--generate"
    if args.out is not None:
        from cbalab.experiments.replay import OUTPUT_FILES

        _not_the_input(args.out, "--trace", args.trace, OUTPUT_FILES)
    spec = api.ReplaySpec(
        trace=args.trace if args.trace is not None else args.generate,
        prices=_given_prices(args),
        warmup=not args.no_warmup,
        timing=not args.no_timing,
        progress=not args.no_progress,
        **{name: getattr(args, name) for name in REPLAY_FIELDS},
    )
    prices = {"prices[0]": "--price-gpu", "prices[1]": "--price-cache", "prices[2]": "--price-bandwidth"}
    with _named({**args.options, **prices, "trace": source}), _gpu_type_hint():
        api.check_replay(spec)
        result = api.simulate(spec)
    for setting, remark in result.notes:
        print(f"cbalab: note: {args.options.get(setting, setting)} {remark}", file=sys.stderr)
    _emit(result.summary, None)
    return EXIT_OK


@contextmanager
def _gpu_type_hint() -> Iterator[None]:
    """Add to an InstanceError of ``gpu_type`` (a job's model is not measured on that GPU type) what the setting
    needs: every job's model measured on the type, which generated jobs are not (they draw models measured on
    different types), so a trace whose jobs pin such models."""
    try:
        yield
    except InstanceError as e:
        if e.path != "gpu_type":
            raise
        raise InstanceError(
            e.path,
            e.value,
            f"{e.problem}; every job's model must be measured on the type, so give a --trace whose jobs pin such "
            "models (generated jobs mix models measured on different types)",
        ) from None


def cmd_experiment(args: argparse.Namespace) -> int:
    """``cbalab experiment NAME | all | --list``: one sweep of experiments/runner.py (:func:`run_experiment`), or every
    experiment in order (:func:`run_all`)."""
    from cbalab.experiments import runner

    if args.list:
        for line in about.listing():
            print(line)
        return EXIT_OK
    if args.stale:
        from cbalab.experiments.verify import catch_up

        if args.name:
            raise ExperimentError("--stale reruns every stale experiment: give no NAME")
        return catch_up(Path(args.out or "paper/results"), workers=args.workers)
    if not args.name:
        raise ExperimentError("experiment: give a NAME, all, --stale or --list")
    if args.verify or args.sample is not None or args.record or args.exact:
        return _cmd_verify(args)
    out = args.out or "results"
    seed = 0 if args.seed is None else args.seed
    if args.name == "all":
        return runner.run_all(
            out,
            quick=args.quick,
            workers=args.workers,
            scheduler=args.scheduler,
            seed=seed,
            progress=not args.no_progress,
        )
    return runner.run_experiment(
        args.name,
        out,
        quick=args.quick,
        seed=seed,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        argv=sys.argv[1:],
    )


def _cmd_verify(args: argparse.Namespace) -> int:
    """``cbalab experiment NAME|all --verify [--sample S] [--seed S] [--record]`` (experiments/verify.py): the
    committed rows of paper/results (paper/quick with ``--quick``, or ``--out``) recomputed and compared; with
    ``all``, every experiment in order, and the worst status."""
    from cbalab.experiments.runner import EXPERIMENTS
    from cbalab.experiments.verify import verify

    if not args.verify:
        raise ExperimentError("--sample, --record and --exact go with --verify")
    if args.scheduler:
        raise ExperimentError("--verify runs on local workers: drop --scheduler")
    base = Path(args.out or ("paper/quick" if args.quick else "paper/results"))
    names = list(EXPERIMENTS) if args.name == "all" else [args.name]
    status = EXIT_OK
    for name in names:
        sample = args.sample or "default"
        code = verify(
            name,
            base / name,
            sample=sample,
            seed=args.seed,
            quick=args.quick,
            record_it=args.record,
            workers=args.workers,
            exact=args.exact,
        )
        status = max(status, code)
    return status


def cmd_bench(args: argparse.Namespace) -> int:
    """``cbalab bench NAME [OPTIONS]`` (or ``--list``): a benchmark's ``measure`` (experiments/benchmarks.py)
    with the options of its signature; prints the dict it returns as JSON, exit 1 when its ``ok`` is False."""
    from cbalab.experiments import benchmarks

    if args.list:
        width = max(len(n) for n in benchmarks.BENCHMARKS) + 2
        for name in benchmarks.BENCHMARKS:
            print(f"{name:<{width}}{benchmarks.summary(name)}")
        return EXIT_OK
    if not args.name:
        raise ExperimentError("bench: give a NAME or --list")
    options = benchmarks.options(args.name)
    p = _Parser(prog=f"cbalab bench {args.name}", description=benchmarks.summary(args.name))
    for option in options:
        _bench_argument(p, option)
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(p.parse_args(args.arguments)).items()}
    for option in options:
        _bench_paths(option, given[option.name])
    with _named({o.name: o.flag for o in options}):
        found = benchmarks.measure_function(args.name)(**given)
    if found is None:
        return EXIT_OK
    _emit(found, None)
    return EXIT_FAILED if found.get("ok") is False else EXIT_OK


#: The benchmark options, by name, that count what a measure works on or repeats: at least 1, as 0 would measure
#: nothing or break the measure (``autocba-hard --candidates 0`` printed that it wrote a file it never wrote,
#: ``integer-milp --datasets 0`` and ``replay-speed --jobs 0`` failed as internal errors).
BENCH_FROM_ONE = ("candidates", "repeats", "sweeps", "jobs", "datasets", "n_datasets", "chunk_pairs")

#: The benchmark options, by name, besides those of type Path, that name a file the measure reads.
BENCH_INPUTS = ("reuse",)

#: The benchmark options, by name, that hold names of registered methods (cbalab.algorithms.registry), and the
#: problem whose methods they are: a benchmark's ``policies`` are those of the cost replay (replay-speed).
BENCH_METHODS = {"policy": Problem.COST, "policies": Problem.COST}


def _bench_type(option: Option) -> Callable[[str], Any]:
    """The converter of a benchmark option's text, chosen by its name and type, whatever the benchmark: the same
    range as the other commands' options (a count, a seed, a ``--skew``, seconds, a fraction, an ``--out``, a
    policy), so that no measure runs on a value they refuse.  Whole numbers are counts from 0 (BENCH_FROM_ONE
    from 1; ``seed`` and ``seeds`` up to 2^63 - 1); a ``time_limit`` or a number whose name ends ``_s`` is
    seconds, one whose name holds ``share`` a share from 0 to 1 and one whose name holds ``fraction`` a finite
    number >= 0; a name of BENCH_METHODS is a method of its problem."""
    if option.kind is int:
        if option.name in BENCH_FROM_ONE:
            return _positive_count
        return _seed if option.name in ("seed", "seeds") else _count
    if option.kind is float:
        if option.name == "time_limit" or option.name.endswith("_s"):
            return _seconds
        if "share" in option.name:
            return _share
        if "fraction" in option.name:
            return _fraction
        return _skew if option.name == "skew" else _number
    if option.name == "out":
        return _out
    if option.name in BENCH_METHODS:
        return _bench_method(BENCH_METHODS[option.name])
    return option.kind


def _bench_method(problem: Problem) -> Callable[[str], str]:
    """The converter of a benchmark option that holds a method of ``problem`` (BENCH_METHODS): the name when the
    registry has it, else ArgumentTypeError listing the known ones, before the measure starts any work (an
    unknown policy of replay-speed failed in a child process, with its traceback)."""
    known = registry.names(problem)

    def method(text: str) -> str:
        if text not in known:
            raise argparse.ArgumentTypeError(f"must be a {problem} policy, one of {', '.join(known)} (got {text!r})")
        return text

    return method


def _bench_paths(option: Option, value: Any) -> None:
    """InstanceError naming a benchmark's path option that cannot serve: an ``out`` folder that cannot be
    written (models.files.unwritable_folder), or an input file (type Path, or named in BENCH_INPUTS) given on the
    command line that cannot be read.  An input file left at its default is the measure's to judge: it may not
    read it (``trace-scale --autocba-only``)."""
    if value is None:
        return
    if option.name == "out":
        problem = unwritable_folder(value)
        if problem is not None:
            raise InstanceError(option.flag, value, problem)
    elif (option.kind is Path or option.name in BENCH_INPUTS) and value != option.default:
        for path in value if option.many else (value,):
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                raise InstanceError(option.flag, str(path), unreadable(e)) from None


def _bench_argument(p: argparse.ArgumentParser, option: Option) -> None:
    """The argparse option of one parameter of a benchmark's ``measure`` (experiments.benchmarks.Option)."""
    if option.kind is bool:
        action = "store_false" if option.default is True else "store_true"
        p.add_argument(option.flag, dest=option.name, action=action, help=f"sets {option.name}")
        return
    convert = _bench_type(option)
    default = list(option.default) if option.many and option.default is not None else option.default
    p.add_argument(
        option.flag,
        dest=option.name,
        type=convert,
        nargs="+" if option.many else None,
        required=option.required,
        default=default,
        help=f"{option.name} ({option.kind.__name__}{', several' if option.many else ''})",
    )


def _number(text: str) -> float:
    """A finite number (of a benchmark's option)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number (got {text!r})") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite (got {text!r})")
    return value


def _share(text: str) -> float:
    """A share of a whole (a benchmark's ``*share*`` option: p3-trace's ``--exact-share`` of the cache): a number
    from 0 to 1."""
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a share from 0 to 1 (got {text!r})")
    return value


def cmd_paper(args: argparse.Namespace) -> int:
    """``cbalab paper [--results DIR] [--check]``: the paper's numbers, tables and figures (experiments/paper/).

    Every meta.json of the results is read through experiments.meta.read_meta first, so a broken one is exit 2 naming
    the file before anything is generated.
    """
    from cbalab.experiments.meta import read_meta
    from cbalab.experiments.paper import main_paper

    for option, folder in (("--paper", args.paper), ("--results", args.results)):
        if folder == "":
            raise InstanceError(option, folder, "empty path")
        if folder is not None and not os.path.isdir(folder):
            raise InstanceError(
                option, folder, "is a file, not a folder" if os.path.exists(folder) else "no such folder"
            )
    results = Path(args.results) if args.results else Path(args.paper) / "results"
    for meta in sorted(results.glob("*/meta.json")):
        read_meta(meta)
    return main_paper(args.paper, args.results, args.check, strict=args.strict)


def _window(text: str) -> tuple[float, float]:
    """``START:END`` in seconds of the trace, START < END."""
    parts = text.split(":")
    try:
        start, end = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be START:END in seconds (got {text!r})") from None
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise argparse.ArgumentTypeError(f"needs finite START < END (got {text!r})")
    return start, end


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number (got {text!r})") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (got {text!r})")
    return value


def _money(text: str) -> float:
    """A price in $ per unit-hour: finite, from 0 to MAX_PRICE (experiments/workload/synthetic.py)."""
    from cbalab.experiments.workload.synthetic import MAX_PRICE

    value = _fraction(text)
    if value > MAX_PRICE:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_PRICE:g} $ per hour (got {text!r})")
    return value


def _delay(text: str) -> float:
    """A delay in seconds from 0 to the longest trace time, 10^12 s (experiments.workload.traces)."""
    from cbalab.experiments.workload.traces import MAX_TRACE_SECONDS

    value = _fraction(text)
    if value > MAX_TRACE_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_TRACE_SECONDS:g} s, as trace times (got {text!r})")
    return value


def _utility_mix(text: str) -> str | Mapping[str, float]:
    """``mixed``, one utility shape, or shares ``shape=share,...`` (e.g. ``linear=3,deadline=1``), each shape
    once: the API's reading (api.generator_mix), its refusal as argparse's."""
    try:
        return api.generator_mix(text)
    except InstanceError as e:
        raise argparse.ArgumentTypeError(f"{e.problem} (got {text!r})") from None


def _gpu_counts(text: str) -> list[int]:
    """Comma-separated GPU counts, e.g. ``1,2,4,8``."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be whole numbers separated by commas (got {text!r})") from None


class _Given(argparse.Action):
    """argparse's plain store, which also notes the option as given: ``given`` of the namespace maps each given
    option's destination to the option as written, so that ``compare`` can refuse a generator option next to an
    instance file rather than ignore it (a value equal to the default is given too)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.given = {**namespace.given, self.dest: option_string}


def _generator_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """Every parameter of the seeded generators (experiments/workload/synthetic.py: generate_instance), each
    noted in ``given`` when it is given (:class:`_Given`)."""
    from cbalab.experiments.workload.synthetic import WELFARE_ONLY
    from cbalab.experiments.workload.variants import CONTINUOUS, DEFAULT_BLOCK_GB, DEFAULT_TIER_FRACTION, VARIANTS

    p.set_defaults(given={})
    defaults = {} if required else {"jobs": 200, "datasets": 40}
    p.add_argument(
        "--jobs", action=_Given, type=_count, required=required, default=defaults.get("jobs"), help="number of jobs"
    )
    p.add_argument(
        "--datasets",
        action=_Given,
        type=_count,
        required=required,
        default=defaults.get("datasets"),
        help="number of datasets the jobs read (at least 1)",
    )
    p.add_argument(
        "--seed", action=_Given, type=_count, default=0, help="seed of the generator: same seed, same instance"
    )
    p.add_argument(
        "--skew",
        action=_Given,
        type=_skew,
        default=1.0,
        help=f"Zipf skew of dataset popularity, 0 (uniform) to {MAX_SKEW}",
    )
    p.add_argument(
        "--cache-fraction",
        action=_Given,
        type=_fraction,
        default=0.2,
        help="cache C as a fraction of all dataset bytes",
    )
    p.add_argument(
        "--bandwidth-fraction",
        action=_Given,
        type=_fraction,
        default=None,
        help="bandwidth cap B as a fraction of the total demand (default: no cap)",
    )
    p.add_argument(
        "--price-gpu", action=_Given, type=_money, default=None, help=f"$ per GPU-hour (default: {_price(0)})"
    )
    p.add_argument(
        "--price-cache", action=_Given, type=_money, default=None, help=f"$ per GB-hour of cache (default: {_price(1)})"
    )
    p.add_argument(
        "--price-bandwidth",
        action=_Given,
        type=_money,
        default=None,
        help=f"$ per (GB/s)-hour of remote IO (default: {_price(2)})",
    )
    p.add_argument(
        "--variant",
        action=_Given,
        choices=[CONTINUOUS, *VARIANTS],
        default=CONTINUOUS,
        help="cost only: the integer variant of P1 (docs/model.md §4): whole datasets, blocks, bandwidth tiers",
    )
    p.add_argument(
        "--block-gb",
        action=_Given,
        type=_fraction,
        default=None,
        help=f"cost, block variants: the cache block size in GB (default: {DEFAULT_BLOCK_GB:g})",
    )
    p.add_argument(
        "--tier-fraction",
        action=_Given,
        type=_fraction,
        default=None,
        help=f"cost, tiers variants: the bandwidth tier as a fraction of the total demand "
        f"(default: {DEFAULT_TIER_FRACTION:g})",
    )
    p.add_argument(
        "--utility",
        "--utility-mix",
        action=_Given,
        type=_utility_mix,
        default=None,
        help=f"welfare only: mixed, one utility shape, or shares such as linear=3,deadline=1 "
        f"(default: {WELFARE_ONLY['utility_mix']})",
    )
    p.add_argument(
        "--budget-fraction",
        action=_Given,
        type=_fraction,
        default=None,
        help="welfare only: the budget as a fraction of running every job at its largest option on remote IO "
        f"(default: {WELFARE_ONLY['budget_fraction']:g})",
    )
    p.add_argument(
        "--gpu-options",
        action=_Given,
        type=_gpu_counts,
        default=None,
        help=f"welfare only: every job's GPU counts (default: {_counts(WELFARE_ONLY['gpu_options'])})",
    )
    p.add_argument(
        "--gpu-fraction",
        action=_Given,
        type=_gpu_fraction,
        default=None,
        help="welfare only: cluster GPUs as a fraction of every job at its largest option "
        f"(default: {WELFARE_ONLY['gpu_fraction']:g})",
    )
    p.add_argument(
        "--alpha",
        action=_Given,
        type=_fraction,
        default=None,
        help=f"welfare only: the α of α-fair utilities (default: {WELFARE_ONLY['alpha']:g})",
    )


def _counts(counts: Any) -> str:
    """GPU counts as ``--gpu-options`` takes them: ``1,2,4,8``."""
    return ",".join(str(c) for c in counts)


class _Formatter(argparse.HelpFormatter):
    """Help text that always shows an option's default, or says that the option is required.

    A default of None is left to the help text itself, which says what leaving the option out means
    ("default: no time limit"); flags (store_true) have no default worth printing.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or "default" in text or isinstance(action, _NO_DEFAULT):
            return text
        if action.required:
            return f"{text} (required)"
        if action.default is None or action.default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)"


_NO_DEFAULT = (argparse._StoreTrueAction, argparse._HelpAction, argparse._VersionAction)


def _command(sub: argparse._SubParsersAction, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command whose one-line summary is both its entry in ``cbalab --help`` and its description."""
    return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")


def parser() -> argparse.ArgumentParser:
    """The argument parser of every ``cbalab`` command; every option has help text that shows its default."""
    p = _Parser(prog="cbalab", description="Cache, bandwidth and GPU allocation for DL clusters (CBA / AutoCBA).")
    p.add_argument("--version", action="version", version=f"cbalab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    s = _command(sub, "solve", "solve one instance with one method; print the scored cbalab/result@1 document")
    s.add_argument("instance", help="a cbalab/instance@1 JSON file")
    s.add_argument(
        "--method", required=True, help="a registered method of the problem (see `cbalab methods`): cba, milp, ..."
    )
    s.add_argument(
        "--problem",
        choices=["cost", "welfare"],
        default=None,
        help="the problem to solve (default: the one that both the method and the instance serve)",
    )
    s.add_argument("--time-limit", type=_seconds, default=None, help="seconds for exact methods (default: no limit)")
    s.add_argument(
        "--out",
        type=_out,
        help="also write the result document to this file, atomically; its folder must exist (default: stdout only)",
    )
    s.add_argument("--no-timing", action="store_true", help="leave out solve_seconds: identical runs, identical bytes")
    s.set_defaults(run=cmd_solve)

    g = _command(sub, "generate", "write a seeded synthetic instance")
    g.add_argument("--kind", required=True, choices=["cost", "welfare"], help="which problem the instance is for")
    g.add_argument("--out", type=_out, help="file to write (default: print the JSON to stdout)")
    _generator_arguments(g, required=True)
    g.set_defaults(run=cmd_generate)

    c = _command(sub, "compare", "every method of a problem on one instance, as a table")
    c.add_argument(
        "instance", nargs="?", help="a cbalab/instance@1 JSON file (default: generate one with --jobs, --datasets)"
    )
    c.add_argument(
        "--problem",
        default=None,
        choices=["cost", "welfare"],
        help="which problem's methods to run (default: the one the instance poses; cost for a generated one)",
    )
    c.add_argument("--time-limit", type=_seconds, default=None, help="seconds for exact methods (default: no limit)")
    _generator_arguments(c, required=False)
    c.set_defaults(run=cmd_compare)

    m = _command(sub, "methods", "list the registered methods of each problem")
    m.set_defaults(run=cmd_methods)

    m = _command(sub, "simulate", "replay a job trace: cost policies (docs/model.md §6) or elastic welfare (§6b)")
    source = m.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--trace",
        help="generic CSV (submit_time_s,duration_s,gpus[,job_id,model,dataset]) or the Philly form (or --generate)",
    )
    source.add_argument(
        "--generate", type=_count, metavar="N", help="N jobs from the Philly-calibrated generator (or --trace)"
    )
    m.add_argument(
        "--problem", default="cost", choices=["cost", "welfare"], help="cost: fixed GPUs; welfare: elastic GPUs (§6b)"
    )
    m.add_argument(
        "--policy",
        required=True,
        help="cost: cba, io-only, cache-all, coordl, quiver, silod, ...; "
        "welfare: autocba, gavel-tput, gavel-fair, optimus, utility-greedy (and -tuned)",
    )
    m.add_argument(
        "--out",
        type=_out,
        help="directory for jobs.csv, timeseries.csv, summary.json (default: summary to stdout only)",
    )
    m.add_argument("--seed", type=_count, default=0, help="seeds the generator and the dataset assignment")
    m.add_argument(
        "--skew", type=_skew, default=1.0, help=f"Zipf skew of dataset popularity, 0 (uniform) to {MAX_SKEW}"
    )
    m.add_argument(
        "--datasets", dest="n_datasets", type=_count, default=48, help="number of datasets jobs are spread over"
    )
    m.add_argument(
        "--gpu-type",
        default=None,
        help="k80, p100, v100 or t4: every job's model must be measured on it, so it needs a --trace whose jobs pin "
        "such models (generated jobs mix models measured on different types) (default: each model's measured type)",
    )
    m.add_argument("--gpus", type=_count, default=768, help="GPUs in the cluster (FIFO queue beyond)")
    m.add_argument("--cache-gb", type=_fraction, default=500.0, help="cache capacity C in GB")
    m.add_argument("--bandwidth-gbps", type=_fraction, default=None, help="remote-IO cap B in GB/s (default: none)")
    m.add_argument("--price-gpu", type=_money, default=None, help=f"$ per GPU-hour (default: {_price(0)})")
    m.add_argument("--price-cache", type=_money, default=None, help=f"$ per GB-hour of cache (default: {_price(1)})")
    m.add_argument(
        "--price-bandwidth", type=_money, default=None, help=f"$ per (GB/s)-hour of remote IO (default: {_price(2)})"
    )
    m.add_argument("--no-warmup", action="store_true", help="instant caches (no warm-up, docs/model.md (6.1))")
    m.add_argument(
        "--cache-policy",
        default=None,
        help="welfare: the cache policy feeding a GPU scheduler (silod, io-only, cache-all, coordl, quiver, cba; "
        "default: silod; autocba sets its caches itself)",
    )
    budget = m.add_mutually_exclusive_group()
    budget.add_argument(
        "--budget-per-hour", type=_fraction, default=None, help="welfare: the budget in $/h (or --budget-fraction)"
    )
    budget.add_argument(
        "--budget-fraction",
        type=_fraction,
        default=None,
        help="welfare: budget as a fraction of the reference spend, the peak spend rate of running every job at "
        "its trace GPU count from its submission on remote IO (default 0.5; or --budget-per-hour)",
    )
    m.add_argument(
        "--restart-delay-s",
        type=_delay,
        default=None,
        help="welfare: pause in seconds when a job's GPUs change, at most 1e12 as trace times (default: 0)",
    )
    m.add_argument(
        "--utility-mix",
        default=None,
        help="welfare: mixed, linear, concave, sigmoid, deadline, or shares such as linear=3,deadline=1 "
        "(default: mixed)",
    )
    m.add_argument(
        "--period",
        "--period-s",
        dest="period_s",
        type=_seconds,
        default=None,
        help="also re-allocate every PERIOD seconds (default: only at events)",
    )
    _no_progress(m)
    m.add_argument("--no-timing", action="store_true", help="leave out wall_seconds: identical runs, identical bytes")
    m.add_argument(
        "--offline-optimum",
        action="store_true",
        help="also solve P3 over the replay's schedule: a lower bound on every online policy (docs/model.md §6)",
    )
    m.add_argument(
        "--window", type=_window, default=None, metavar="START:END", help="only jobs submitted in it (s; default: all)"
    )
    m.add_argument(
        "--time-limit",
        type=_seconds,
        default=None,
        help="seconds for the offline optimum (cost, with --offline-optimum), from building its schedule to its last "
        "HiGHS run (default: none)",
    )
    m.set_defaults(run=cmd_simulate, options=_option_names(m))

    e = _command(sub, "experiment", "run one of the paper's experiments into DIR/NAME/ (runs.csv, meta.json, figures)")
    e.description = about.plain((runner.__doc__ or "").split("\n\n")[0])
    e.add_argument("name", nargs="?", help="the experiment (see --list), or all: every experiment in order")
    e.add_argument(
        "--list", action="store_true", help="print every experiment with what it measures and its measured times"
    )
    e.add_argument(
        "--quick", action="store_true", help="the small grid, for CI: 3 s to 1 min each on 2 cores (see --list)"
    )
    e.add_argument(
        "--out",
        type=_out,
        default=None,
        help="output folder; a rerun with the same folder resumes (default: results; with --verify the committed "
        "paper/results, or paper/quick with --quick; with --stale paper/results)",
    )
    e.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help="the sweep seed; every run derives its own from it (default: 0); with --verify, the sample's seed "
        "(default: from the commit)",
    )
    e.add_argument("--workers", type=_workers, default=1, help="local worker processes (1: in this process)")
    e.add_argument(
        "--scheduler",
        default=None,
        help="a Dask scheduler address tcp://HOST:PORT instead of local workers (default: none)",
    )
    _no_progress(e)
    e.add_argument(
        "--verify",
        action="store_true",
        help="recompute a sample of the committed rows and compare every column but the timings by its kind (as "
        "text, or a solver's number within 1e-9 relative): exit 0 equal, 1 naming the first differing run key and "
        "column; prints each column's largest difference (docs/reproduce.md)",
    )
    e.add_argument(
        "--exact",
        action="store_true",
        help="with --verify: compare every column as text, the solver's numbers too",
    )
    e.add_argument(
        "--sample",
        default=None,
        help="with --verify: all, canaries (fixed + rotating with the commit), claims (the rows that "
        "decide a number or verdict of paper/claims.md) or a count N (every arm covered, then drawn by --seed); "
        "default canaries and claims (all with --quick)",
    )
    e.add_argument(
        "--record",
        action="store_true",
        help="with --verify: note a passing verification in meta.json, so the rows count fresh at this commit "
        "(needs a sample that covers every arm)",
    )
    e.add_argument(
        "--stale",
        action="store_true",
        help="rerun exactly the experiments that `cbalab paper --check` calls stale, at this (clean) commit",
    )
    e.set_defaults(run=cmd_experiment)

    b = _command(sub, "bench", "run one benchmark of experiments/benchmarks.py with the options of its measure")
    b.add_argument("name", nargs="?", help="the benchmark (see --list); `cbalab bench NAME --help` lists its options")
    b.add_argument("--list", action="store_true", help="print every benchmark with what it measures")
    b.add_argument("arguments", nargs=argparse.REMAINDER, help="the benchmark's own options (see bench NAME --help)")
    b.set_defaults(run=cmd_bench)

    pp = sub.add_parser("paper", help="write paper/generated/ and paper/claims.md from the results; build the PDF")
    pp.add_argument("--paper", default="paper", help="the paper folder (paper.tex, generated/, claims.md)")
    pp.add_argument("--results", default=None, help="results folder (default: PAPER/results)")
    pp.add_argument("--check", action="store_true", help="exit 1 if the committed paper is out of step")
    pp.add_argument("--strict", action="store_true", help="with --check: results older than their code fail too")
    pp.set_defaults(run=cmd_paper)
    return p


def _no_progress(p: argparse.ArgumentParser) -> None:
    """The progress switch of ``simulate`` and ``experiment``, one for both: ``--no-progress``.  ``--quiet`` is
    taken as another spelling of it and left out of the help, so that one spelling is documented; it comes
    first, so that errors and the option map (:func:`_option_names`) name ``--no-progress``."""
    p.add_argument("--quiet", dest="no_progress", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _price(i: int) -> str:
    """The replay's default price i (0 gpu, 1 cache, 2 bandwidth) as the help text shows it."""
    from cbalab.experiments.workload import DEFAULT_PRICES

    return f"{DEFAULT_PRICES[i]:g}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cbalab`` console script; returns the exit status."""
    stderr_fd = os.dup(2)
    logging.getLogger("pyomo.core").addFilter(_not_an_interrupt)
    main_thread = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        args = parser().parse_args(argv)
        return args.run(args)
    except (InstanceError, BadInputError, ExperimentError) as e:
        print(f"cbalab: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader left (``cbalab generate ... | head``): not an error of cbalab's
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return _interrupted(stderr_fd)
    except Exception as e:  # an internal error: one line, exit 1; CBALAB_DEBUG=1 shows the traceback
        if os.environ.get("CBALAB_DEBUG"):
            raise
        print(f"cbalab: internal error: {e.__class__.__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        os.close(stderr_fd)
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)


def _terminated(signum: int, frame: object) -> NoReturn:
    """SIGTERM (``kill``, a batch system's time limit) is taken as Ctrl-C: without it the process ended at once,
    and a sweep's worker processes were left behind, idle, with neither runs.csv nor meta.json written."""
    raise KeyboardInterrupt


def _interrupted(stderr_fd: int) -> int:
    """Ctrl-C: the line ``cbalab: interrupted`` on stderr and exit 130 (128 + SIGINT).

    If HiGHS has not left its worker thread within its grace period, Pyomo
    still holds the process's stdout and stderr (it captures the file
    descriptors while HiGHS runs): the line then goes to the stderr saved at
    start, and the process ends at once rather than wait for HiGHS.  No
    output file is half-written either way: they are written atomically.  The same hard exit follows any
    cancelled HiGHS run (``models.solve.highs_interrupted``): HiGHS's own threads may still be joinable, and
    a normal exit would then abort in C++.
    """
    solve_module = sys.modules.get("cbalab.models.solve")
    cancelled = bool(getattr(solve_module, "highs_interrupted", False))
    if cancelled or any(t.name == HIGHS_THREAD and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        os.write(stderr_fd, b"cbalab: interrupted\n")
        os._exit(EXIT_INTERRUPTED)
    print("cbalab: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _not_an_interrupt(record: logging.LogRecord) -> bool:
    """Drops Pyomo's "Constructing component ... failed: KeyboardInterrupt" log line: Ctrl-C gets one line, ours."""
    return "KeyboardInterrupt" not in record.getMessage()


if __name__ == "__main__":
    sys.exit(main())
