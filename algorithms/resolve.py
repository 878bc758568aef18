"""Which problem a method is asked to solve on an instance: the one inference of ``cbalab solve``,
``cbalab compare`` and :func:`cbalab.solve`.

An instance file says which problem it poses by its jobs' fields (docs/interface.md): fixed ``gpus`` and
``io_gbps`` pose the cost problem P1, ``options`` the welfare problem P2, both pose both.  A method is
registered for one problem or for both (``lp``, ``milp``).  The problem is the one they have in common, so
that ``--problem`` is needed only when both share two; every refusal is an InstanceError that names the
option (``--method``, ``--problem``) or argument it is about, says each problem in words and, for a
misspelt method, offers the closest registered names (difflib).  The cost problem is also refused on an
instance whose jobs' fixed GPUs do not fit in its ``cluster.gpus``.
"""

from __future__ import annotations

import difflib

from cbalab.algorithms import registry
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.types import Problem

#: Each problem in words, as every message of this module says it.
WORDS = {Problem.COST: "cost problem (P1, fixed GPUs)", Problem.WELFARE: "welfare problem (P2, elastic GPUs)"}

#: The fields of a job that pose each problem, for the messages.
FIELDS = {Problem.COST: "fixed gpus/io_gbps", Problem.WELFARE: "options"}


def instance_problems(instance: Instance) -> list[Problem]:
    """The problems ``instance`` poses: cost when every job has fixed gpus/io_gbps, welfare when every job has
    options (an instance without jobs poses both)."""
    found = []
    if instance.has_fixed.all():
        found.append(Problem.COST)
    if instance.has_options.all():
        found.append(Problem.WELFARE)
    return found


def parse_problem(problem: str, field: str = "problem") -> Problem:
    """``problem`` as a Problem; InstanceError naming ``field`` unless it is "cost" or "welfare"."""
    try:
        return Problem(problem)
    except ValueError:
        raise InstanceError(field, problem, "must be cost or welfare") from None


def method_problems(method: str, field: str = "method") -> list[Problem]:
    """The problems ``method`` is registered for; InstanceError naming ``field`` for an unknown name.

    The message offers the registered names closest to a misspelling ("did you mean 'cba'?") and lists every
    name only when none is close.
    """
    serving = [p for p in Problem if method in registry.names(p)]
    if serving:
        return serving
    known = sorted({m.name for m in registry.all_methods()})
    close = difflib.get_close_matches(method, known, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "? (cbalab methods lists them all)"
    else:
        hint = "known: " + ", ".join(known)
    raise InstanceError(field, method, f"no such method; {hint}")


def _kind(method: str, problems: list[Problem]) -> str:
    """The phrase for a method's problems: 'cba' is a cost method, 'lp' is a cost and welfare method."""
    return f"{method!r} is a " + " and ".join(str(p) for p in problems) + " method"


def choose_problem(
    instance: Instance,
    method: str,
    problem: str | None = None,
    *,
    method_field: str = "method",
    problem_field: str = "problem",
) -> Problem:
    """The problem to solve ``instance`` with ``method``: ``problem`` when given, else the one both serve.

    InstanceError, naming ``method_field`` or ``problem_field`` (the CLI passes ``--method`` and
    ``--problem``), when the method is unknown, when it does not serve the problem asked or the problem the
    instance poses ("'autocba' is a welfare method; INSTANCE poses the cost problem: its jobs have no
    options"), or when two problems remain and none was named.
    """
    serving = method_problems(method, method_field)
    posed = instance_problems(instance)
    if problem is not None:
        asked = parse_problem(problem, problem_field)
        if asked not in serving:
            raise InstanceError(method_field, method, f"{_kind(method, serving)}; it does not solve the {WORDS[asked]}")
        return _require(instance, asked)
    common = [p for p in serving if p in posed]
    if len(common) == 1:
        return _require(instance, common[0])
    if len(common) > 1:
        raise InstanceError(
            problem_field,
            None,
            f"method {method!r} solves both problems and the instance poses both (its jobs have fixed "
            "gpus/io_gbps and options); name cost or welfare",
        )
    if not posed:  # some job lacks the fields of either problem: name it, for the method's (first) problem
        _require(instance, serving[0])
    theirs = " and ".join(WORDS[p] for p in posed)
    lacking = " or ".join(FIELDS[p] for p in serving)
    raise InstanceError(
        method_field,
        method,
        f"{_kind(method, serving)}, but the instance poses the {theirs}: its jobs have no {lacking}",
    )


def posed_problem(instance: Instance, problem: str | None = None, *, problem_field: str = "problem") -> Problem:
    """The problem whose every method ``cbalab compare`` runs on ``instance``: ``problem``, or the one it poses.

    InstanceError naming ``problem_field`` when the instance poses both and none was named, or naming the
    first job that lacks the fields of the problem asked (or of either problem).
    """
    if problem is not None:
        return _require(instance, parse_problem(problem, problem_field))
    posed = instance_problems(instance)
    if len(posed) > 1:
        raise InstanceError(
            problem_field,
            None,
            "the instance poses both problems (its jobs have fixed gpus/io_gbps and options); name cost or welfare",
        )
    if not posed:  # some job lacks the fields of either problem: name it, for the cost problem
        _require(instance, Problem.COST)
    return _require(instance, posed[0])


def _require(instance: Instance, problem: Problem) -> Problem:
    """``problem`` once ``instance`` can pose it; InstanceError naming the first job that lacks the fields it
    needs (docs/interface.md), or, for the cost problem, ``cluster.gpus`` when the jobs' fixed GPUs add up to
    more than G: P1 runs every job at once on its fixed GPUs (docs/model.md §4), and a cluster that cannot
    hold them is a mistake in the instance, not a number P1 may leave unread."""
    if problem == Problem.WELFARE:
        instance.require_options()
        return problem
    instance.require_fixed()
    asked = int(instance.job_gpus.sum())
    if instance.gpus is not None and asked > instance.gpus:
        raise InstanceError(
            "cluster.gpus",
            instance.gpus,
            f"the jobs ask {asked} GPUs in all, more than the cluster has (the cost problem runs every job at once)",
        )
    return problem


def check_policy(policy: str, problem: str, known: list[str], field: str = "policy") -> None:
    """InstanceError naming ``field`` unless ``policy`` is one of ``known``, the policies of ``problem``'s replay.

    A misspelt name gets the closest registered names; a method of the other problem is named as such
    ("'autocba' is a welfare method: the welfare replay runs it").
    """
    if policy in known:
        return
    asked = parse_problem(problem)
    serving = method_problems(policy, field)
    other = [p for p in serving if p != asked]
    if other:
        raise InstanceError(field, policy, f"{_kind(policy, serving)}: the {other[0]} replay runs it")
    raise InstanceError(field, policy, f"is not a policy of the {asked} replay; known: {', '.join(known)}")
