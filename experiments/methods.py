"""The methods the experiments compare, named once: every list is read from the registry.

The sweeps run the methods in registration order (:data:`CACHE_POLICIES`,
:data:`GPU_SCHEDULERS`); the paper reports the GPU schedulers grouped, the
schedulers themselves first and their oracle envelopes after
(:data:`REPORTED_SCHEDULERS`), and takes the strongest baseline over the
faithful ones only (:data:`FAITHFUL`).  How each method is drawn is
experiments/plotting.py's ``STYLE``.
"""

from __future__ import annotations

from cbalab.algorithms import registry

#: The cache policies (CBA first, then the cache baselines), in registration order.
CACHE_POLICIES: tuple[str, ...] = tuple(registry.cache_policies())
#: Every GPU scheduler, each followed by its ``-tuned`` oracle envelope (registration order).
GPU_SCHEDULERS: tuple[str, ...] = tuple(m.name for m in registry.select("welfare", kind=registry.Kind.GPU_SCHEDULER))
#: The GPU schedulers without their envelopes (the ``utility-greedy`` ablation among them), and the envelopes.
UNTUNED: tuple[str, ...] = tuple(s for s in GPU_SCHEDULERS if not s.endswith("-tuned"))
TUNED: tuple[str, ...] = tuple(s for s in GPU_SCHEDULERS if s.endswith("-tuned"))
#: The GPU schedulers in the order the paper's tables and figures list them.
REPORTED_SCHEDULERS: tuple[str, ...] = (*UNTUNED, *TUNED)
#: The GPU schedulers that model a real system (docs/model.md §7): the strongest baseline is taken over them.
#: ``utility-greedy`` (an ablation that reads the utilities) and the ``-tuned`` envelopes are reported apart.
FAITHFUL: tuple[str, ...] = ("gavel-tput", "gavel-fair", "optimus")

#: Methods that never stall a job (their welfare reference is P2) and the time-sharing schedulers (P2's LP).
NO_STALL: tuple[str, ...] = ("autocba", "milp")
TIME_SHARING: tuple[str, ...] = ("gavel-fair", "gavel-fair-tuned")


def reference_form(method: str) -> str:
    """The welfare reference of ``method`` (a registered name or ``SCHEDULER[POLICY]``): ``P2``, ``P2-LP`` or ``P2s``.

    A method that never stalls is held to the no-stall optimum P2; the referee scores every other allocation at its
    stall factor, so its upper bound is the stall-allowed P2s, and a time-shared one's is P2's LP relaxation, which
    bounds fractional GPU shares (docs/model.md §5, "Time sharing").
    """
    if method in NO_STALL:
        return "P2"
    return "P2-LP" if method.split("[")[0] in TIME_SHARING else "P2s"
