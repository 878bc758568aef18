"""The IO-unaware GPU baselines of docs/model.md §7 on the welfare problem (algorithms/baselines/)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbalab.algorithms import registry as methods
from cbalab.algorithms.baselines import gavel_fair, gavel_tput, io_unaware, optimus, utility_greedy
from cbalab.api import build_instance
from cbalab.experiments.workload import generate_welfare
from cbalab.models.evaluate import RTOL, Allocation, evaluate
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.options import SHAPES
from cbalab.models.solve import welfare_milp

BASELINES = ("gavel-tput", "gavel-fair", "optimus", "utility-greedy")
ALLOCATORS = {
    "gavel-tput": gavel_tput.allocate,
    "gavel-fair": gavel_fair.allocate,
    "optimus": optimus.allocate,
    "utility-greedy": utility_greedy.allocate,
}


@st.composite
def welfare_instances(draw: st.DrawFn) -> Instance:
    """generate_welfare over seeds, sizes, utility mixes, budgets from none to loose, with and without B."""
    return generate_welfare(
        draw(st.integers(0, 25)),
        draw(st.integers(1, 6)),
        draw(st.integers(0, 100_000)),
        utility_mix=draw(st.sampled_from([*SHAPES, "mixed"])),
        budget_fraction=draw(st.sampled_from([0.0, 0.02, 0.1, 0.3, 0.6, 1.0, 2.0])),
        gpu_fraction=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        cache_fraction=draw(st.sampled_from([0.0, 0.05, 0.3, 1.0])),
        bandwidth_fraction=draw(st.sampled_from([None, 0.0, 0.05, 0.5])),
        skew=draw(st.sampled_from([0.0, 1.0, 2.0])),
        prices=draw(st.sampled_from([(2.5, 0.0004, 0.9), (2.5, 0.01, 30.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)])),
    )


def _within_limits(inst: Instance, ev_doc: dict) -> None:
    share = ev_doc.get("time_share", {})
    gpus = sum(g * share.get(j, 1.0) for j, g in ev_doc["gpus"].items())
    cache = sum(ev_doc["cache_gb"].values())
    bandwidth = sum(ev_doc["bandwidth_gbps"].values())
    slack = RTOL * max(1.0, inst.budget_per_hour if math.isfinite(inst.budget_per_hour) else 1.0)
    assert ev_doc["cost_per_hour"]["total"] <= inst.budget_per_hour + slack
    assert inst.gpus is None or gpus <= inst.gpus * (1 + RTOL)
    assert cache <= inst.cache_gb * (1 + RTOL) + RTOL
    assert bandwidth <= inst.bandwidth_gbps * (1 + RTOL) + RTOL


@given(inst=welfare_instances())
def test_every_baseline_is_scored_and_stays_within_budget_and_capacities(inst: Instance) -> None:
    """Every naive and tuned baseline returns an allocation the referee scores as feasible (stalls allowed, §5)."""
    for name in BASELINES:
        for variant in (name, f"{name}-tuned"):
            doc, ev = methods.run(inst, "welfare", variant)
            assert doc["status"] == "feasible", doc.get("violations")
            assert ev is not None and ev.feasible, ev.violations
            _within_limits(inst, doc)
            assert doc["welfare"] >= 0


@given(inst=welfare_instances())
def test_the_naive_rule_feeds_every_running_job_in_full(inst: Instance) -> None:
    """Blind in its choice, not in its bill: a naive scheduler's running jobs are all fed unstalled (io_unaware).

    The cap falls until the cache policy's bill fits the budget and B, so no job it runs stalls; and a job with
    options that fits alone is not left out by every scheduler at once when GPUs and money are plentiful.
    """
    for name in BASELINES:
        alloc = methods.get("welfare", name).function()(inst)
        ev = evaluate(inst, alloc, "welfare")
        assert ev.feasible, ev.violations
        assert alloc.facts.io_factor >= 1.0 - RTOL
        running = np.asarray(alloc.gpus) > 0
        assert np.all(ev.stall_factor[running] >= 1.0 - 1e-9)


@pytest.mark.slow
@given(inst=welfare_instances())
def test_tuned_is_never_worse_than_naive(inst: Instance) -> None:
    """The tuned envelope scores the naive answer first and keeps a split only if better: tuned ≥ naive."""
    for name in BASELINES:
        naive = methods.run(inst, "welfare", name)[0]["welfare"]
        tuned = methods.run(inst, "welfare", f"{name}-tuned")[0]["welfare"]
        assert tuned >= naive - 1e-9 * max(1.0, naive)


@given(
    inst=welfare_instances(),
    policy=st.sampled_from(sorted(methods.cache_policies())),
    split=st.sampled_from([0.3, 1.0]),
)
def test_every_cache_policy_feeds_within_budget(inst: Instance, policy: str, split: float) -> None:
    """Each cache policy, at any GPU share of the budget, gives a feasible allocation; stalls are the common cut.

    Every job gets at least the common factor of its need; for policies whose bandwidth is exactly
    r_j (1 − h_k(j)) every reading job runs at exactly that factor.
    """
    for allocate in ALLOCATORS.values():
        alloc = io_unaware.feed_within_budget(inst, allocate(inst, io_unaware.gpu_cap(inst, split)), policy)
        share = np.ones(inst.n_jobs) if alloc.time_share is None else alloc.time_share
        ev = evaluate(inst, alloc, "welfare")
        assert ev.feasible, ev.violations
        factor = alloc.facts.io_factor
        assert 0.0 <= factor <= 1.0
        assert np.all(ev.stall_factor >= factor * (1 - 1e-9))
        if policy in ("silod", "io-only", "cba"):
            need = ev.rate_gbps * share * (1.0 - ev.hit_ratio[inst.job_dataset])
            # the referee ignores a shortfall within its slack (e.g. a fully cached dataset's rounding residue)
            short = need * (1.0 - factor) > RTOL * np.maximum(1.0, need)
            assert np.allclose(ev.stall_factor[short], factor, rtol=1e-9, atol=1e-12)
            assert np.all(ev.stall_factor[~short] == 1.0)


@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 5),
    cap=st.integers(0, 20),
)
def test_gavel_tput_is_the_exact_max_sum_throughput(seed: int, n: int, cap: int) -> None:
    """Gavel max-sum-throughput's knapsack DP equals enumeration of every option choice within the GPU cap."""
    inst = generate_welfare(n, 2, seed, gpu_options=(1, 2, 3, 8))
    value = io_unaware.speedup(inst)
    gpus = gavel_tput.allocate(inst, cap).gpus
    assert gpus.sum() <= cap
    ptr = inst.option_ptr
    best = 0.0
    for combo in itertools.product(*[[None, *range(int(ptr[j]), int(ptr[j + 1]))] for j in range(n)]):
        rows = [o for o in combo if o is not None]
        if sum(int(inst.option_gpus[o]) for o in rows) <= cap:
            best = max(best, float(sum(value[o] for o in rows)))
    rows = np.flatnonzero(inst.option_gpus == gpus[inst.option_job()])
    assert float(value[rows].sum()) == pytest.approx(best, rel=1e-9)


def test_gavel_tput_ties_go_to_more_gpus() -> None:
    """A flat table (8 GPUs no faster than 4) under a cap of 8: the tie goes to 8 GPUs, none left idle for nothing."""
    inst = _one_job_table([4, 8], [1.0, 1.0])
    assert gavel_tput.allocate(inst, 8).gpus.tolist() == [8]
    assert gavel_tput.allocate_hull(inst, 8).gpus.tolist() in ([4], [8])


def test_regression_hull_greedy_takes_an_option_under_a_superlinear_first_step() -> None:
    """Table {1: 1, 2: 3} (superlinear), cap 1: the hull step 0→2 does not fit, yet the 1-GPU option does."""
    inst = _one_job_table([1, 2], [1.0, 3.0])
    assert gavel_tput.allocate_hull(inst, 1).gpus.tolist() == [1]
    assert gavel_tput.allocate(inst, 1).gpus.tolist() == [1]
    assert gavel_tput.allocate_hull(inst, 2).gpus.tolist() == [2]


def test_gavel_tput_raw_sums_rates_and_the_default_normalises() -> None:
    """Raw (Gavel's code): Σ r_j(g), so the faster job wins the one GPU; normalised (cbalab's default): each job's
    throughput relative to its smallest option, 1 for both single-option jobs whatever their speed."""
    inst = _two_jobs([1.0, 5.0])
    assert gavel_tput.allocate(inst, 1, raw=True).gpus.tolist() == [0, 1]
    assert gavel_tput.values(inst).tolist() == [1.0, 1.0]


@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), cap=st.integers(0, 60))
def test_gavel_fair_gives_every_job_an_equal_gpu_time_share(seed: int, n: int, cap: int) -> None:
    """Water-filling (gavel_fair): every job with options gets GPU-time min(t, its largest option the cluster can
    hold), Σ = the cap (or all at their largest), each held on the fewest GPUs that can carry it, a share in
    (0, 1]: none starves."""
    inst = generate_welfare(n, 2, seed, gpu_options=(1, 2, 3, 8))
    sched = gavel_fair.allocate(inst, cap)
    assert sched.share is not None
    time_held = sched.gpus * sched.share
    assert inst.gpus is not None
    fits = inst.option_gpus <= inst.gpus
    assert fits.all() or np.any(inst.option_gpus == 8)
    top = np.maximum.reduceat(np.where(fits, inst.option_gpus, 0), inst.option_ptr[:-1])
    if cap == 0:
        assert time_held.sum() == 0
        return
    assert np.all(sched.share > 0) and np.all(sched.share <= 1)
    if top.sum() <= cap:
        assert sched.gpus.tolist() == top.tolist() and np.all(sched.share == 1)
        return
    assert time_held.sum() == pytest.approx(cap, rel=1e-12)
    t = gavel_fair.level(top, float(cap))
    np.testing.assert_allclose(time_held, np.minimum(t, top), rtol=1e-12)
    for j in range(n):
        counts = inst.option_gpus[inst.option_ptr[j] : inst.option_ptr[j + 1]]
        counts = counts[counts <= inst.gpus]
        assert sched.gpus[j] == counts[counts >= time_held[j] * (1 - 1e-12)].min()


def test_regression_gavel_fair_never_time_shares_a_job_on_more_gpus_than_the_cluster_has() -> None:
    """A 4-GPU job on a 3-GPU cluster got a 0.75 share of 4 GPUs: 3 on average, but 4 at once in every round,
    which no round can hold, and the referee took it (welfare 23.25 above milp-stall's proven 18).  Gavel places a
    job on a whole scale factor of GPUs, so gavel_fair uses only options the cluster holds, and the referee
    refuses a time-shared job whose g_j exceeds G (docs/model.md §5, "Time sharing")."""
    inst = build_instance(
        [
            {"id": "big", "dataset": "d", "options": [{"gpus": 4, "io_gbps": 0.1, "utility": 31.0}]},
            {"id": "small", "dataset": "d", "options": [{"gpus": 1, "io_gbps": 0.01, "utility": 3.0}]},
        ],
        [{"id": "d", "size_gb": 10.0}],
        gpus=3,
        cache_gb=10.0,
        prices=(1.0, 0.01, 1.0),
    )
    sched = gavel_fair.allocate(inst, 3)
    assert sched.share is not None
    assert sched.gpus.tolist() == [0, 1] and sched.share.tolist() == [0.0, 1.0]
    shared = Allocation(np.array([4, 1]), np.zeros(1), np.array([0.075, 0.01]), time_share=np.array([0.5, 1.0]))
    ev = evaluate(inst, shared, "welfare")
    assert "gpus[big] = 4 exceed the cluster's G = 3 (1 jobs)" in ev.violations


def test_regression_gavel_fair_starves_no_job_when_gpus_are_fewer_than_jobs() -> None:
    """12 jobs, 5 GPUs: progressive filling starved 7 jobs; max-min time shares give each 5/12 of a GPU."""
    inst = generate_welfare(12, 3, seed=5)
    sched = gavel_fair.allocate(inst, 5)
    assert sched.share is not None
    np.testing.assert_allclose(sched.gpus * sched.share, 5 / 12)
    alloc = gavel_fair.gavel_fair(inst.replace(budget_per_hour=math.inf, gpus=5))
    ev = evaluate(inst.replace(budget_per_hour=math.inf, gpus=5), alloc, "welfare")
    assert ev.feasible and np.all(ev.time_share > 0)


def test_optimus_gives_each_job_one_gpu_in_arrival_order_then_cuts_remaining_time() -> None:
    """Optimus (Pollux artifact): 3 GPUs for 4 jobs go to the first three; with 6, the longest job grows first."""
    inst = _linear_jobs(4, work=[1.0, 5.0, 2.0, 1.0])
    assert optimus.allocate(inst, 3).gpus.tolist() == [1, 1, 1, 0]
    # one GPU each, then the gain work·(1/1 − 1/2) per GPU: job 1 (2.5), then job 2 (1) ...
    assert optimus.allocate(inst, 6).gpus.tolist() == [1, 2, 2, 1]
    # ... then job 1 again, 5·(1/2 − 1/3) = 0.83 beats jobs 0 and 3 (0.5 each) and job 2 (0.33) ...
    assert optimus.allocate(inst, 7).gpus.tolist() == [1, 3, 2, 1]
    # ... and jobs 0 and 3 tie at 0.5: the earlier job wins, as upstream's max over its dict
    assert optimus.allocate(inst, 8).gpus.tolist() == [2, 3, 2, 1]


def test_optimus_never_reads_a_utility_and_reads_the_remaining_work() -> None:
    """Scrambling every utility leaves Optimus's GPUs unchanged; giving one job more work moves GPUs to it."""
    inst = generate_welfare(20, 4, seed=3)
    cap = 30
    base = optimus.allocate(inst, cap).gpus
    rng = np.random.default_rng(0)
    scrambled = inst.replace(option_utility=rng.permutation(inst.option_utility) * 1e3)
    assert optimus.allocate(scrambled, cap).gpus.tolist() == base.tolist()
    work = np.ones(inst.n_jobs)
    work[7] = 1e3
    assert optimus.allocate(inst.replace(job_work=work), cap).gpus[7] >= base[7]
    assert optimus.allocate(inst.replace(job_work=work), cap).gpus[7] == inst.option_gpus[inst.option_ptr[8] - 1]


def test_utility_greedy_takes_every_top_option_when_nothing_binds() -> None:
    """With GPUs and budget unlimited, the utility greedy moves every job to its best-utility option."""
    inst = generate_welfare(15, 3, seed=2, utility_mix="linear").replace(gpus=None, budget_per_hour=math.inf)
    gpus = utility_greedy.allocate(inst, io_unaware.gpu_cap(inst, 1.0)).gpus
    assert gpus.tolist() == [8] * 15
    alloc = utility_greedy.utility_greedy(inst)
    assert alloc.facts.io_factor == 1.0
    assert evaluate(inst, alloc, "welfare").welfare == pytest.approx(inst.option_utility[inst.option_ptr[1:] - 1].sum())


def test_regression_naive_schedulers_buy_io_instead_of_stalling_on_a_tight_budget() -> None:
    """IO ×30, budget 0.2: the old naive form spent everything on GPUs and stalled; the billed rule cuts GPUs
    until its cache policy's bill fits, so no running job stalls, and the oracle envelope is at least as good."""
    inst = generate_welfare(40, 8, seed=1, budget_fraction=0.2, prices=(2.5, 0.01, 30.0))
    for name in BASELINES:
        alloc = methods.get("welfare", name).function()(inst)
        ev = evaluate(inst, alloc, "welfare")
        assert ev.feasible
        assert alloc.facts.io_factor >= 1.0 - RTOL and alloc.facts.caps_tried > 1
        assert ev.stall_factor[np.asarray(alloc.gpus) > 0].min() == 1.0
        assert ev.cost_total <= inst.budget_per_hour * (1 + 1e-9)
        assert ev.welfare <= methods.run(inst, "welfare", f"{name}-tuned")[0]["welfare"] + 1e-9


def test_regression_only_the_ablation_reaches_the_gpu_only_optimum() -> None:
    """Only utility-greedy reads U_j: the old optimus (now utility-greedy) reached 0.999 of the GPU-only welfare
    optimum; the faithful schedulers, blind to utilities, stay well below it on average (on the welfare
    experiment's 100 instances: means 0.69, 0.66, 0.68 for gavel-tput, gavel-fair, optimus; closing note)."""
    from cbalab.models.evaluate import option_lookup

    shares: dict[str, list[float]] = {name: [] for name in ALLOCATORS}
    for seed, mix, budget in itertools.product(range(3), ("mixed", "sigmoid"), (0.1, 0.3)):
        inst = generate_welfare(30, 6, seed, utility_mix=mix, budget_fraction=budget)
        best = option_lookup(inst, np.asarray(welfare_milp(inst.replace(price_cache=0.0, price_bandwidth=0.0)).gpus))
        cap = io_unaware.gpu_cap(inst, 1.0)
        for name, allocate in ALLOCATORS.items():
            sched = allocate(inst, cap)
            share = np.ones(inst.n_jobs) if sched.share is None else sched.share
            shares[name].append(float(np.dot(option_lookup(inst, sched.gpus).utility, share) / best.utility.sum()))
    assert min(shares["utility-greedy"]) >= 0.98 and np.mean(shares["utility-greedy"]) >= 0.99
    for name in ("gavel-tput", "gavel-fair", "optimus"):
        assert np.mean(shares[name]) < 0.95, name


def test_affordable_cache_keeps_the_largest_prefix_whose_bill_fits() -> None:
    """One 10 GB dataset read at 1 GB/s, p_b = 2: a GB cached saves 0.2 $/h of bandwidth.  At p_c = 0.1 the bill
    2 − 0.1 x falls with x, so all 10 GB are kept; at p_c = 0.5 it rises, 2 + 0.3 x: 2.6 $/h keeps 2 GB, and 1.9
    $/h fits no cut, so the least bill (no cache) is kept."""
    from cbalab.models.instance import build

    def inst(p_c: float) -> Instance:
        return build(
            dataset_size_gb=np.array([10.0]),
            job_dataset=np.array([0]),
            cache_gb=10.0,
            prices=(1.0, p_c, 2.0),
            options=(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([1.0])),
        )

    full, R = np.array([10.0]), np.array([1.0])
    assert io_unaware.affordable_cache(inst(0.1), full, R, 1.5).tolist() == [10.0]
    assert io_unaware.affordable_cache(inst(0.5), full, R, 2.6).tolist() == pytest.approx([2.0])
    assert io_unaware.affordable_cache(inst(0.5), full, R, 1.9).tolist() == [0.0]


def _one_job_table(gpus: list[int], rates: list[float]) -> Instance:
    """One job on one 10 GB dataset with the option table ``gpus`` → ``rates`` (utility = rate)."""
    from cbalab.models.instance import build

    k = len(gpus)
    return build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0]),
        cache_gb=0.0,
        prices=(1.0, 0.0, 0.0),
        options=(np.array([0, k]), np.array(gpus), np.array(rates), np.array(rates)),
    )


def _two_jobs(rates: list[float]) -> Instance:
    """Two jobs, each with one 1-GPU option at ``rates`` (utility 1 each)."""
    from cbalab.models.instance import build

    return build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0, 0]),
        cache_gb=0.0,
        prices=(1.0, 0.0, 0.0),
        options=(np.array([0, 1, 2]), np.array([1, 1]), np.array(rates), np.array([1.0, 1.0])),
    )


def _linear_jobs(n: int, work: list[float]) -> Instance:
    """``n`` jobs with options 1, 2, 3 GPUs at linear speed (rates 1, 2, 3) and the given remaining ``work``."""
    from cbalab.models.instance import build

    return build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.zeros(n, dtype=np.int64),
        cache_gb=0.0,
        prices=(1.0, 0.0, 0.0),
        options=(
            np.arange(0, 3 * n + 1, 3),
            np.tile([1, 2, 3], n),
            np.tile([1.0, 2.0, 3.0], n),
            np.ones(3 * n),
        ),
        job_work=np.asarray(work),
    )


@pytest.mark.slow
@given(seed=st.integers(0, 10_000), budget=st.sampled_from([0.1, 0.3, 0.6]))
def test_unstalled_baselines_never_beat_the_milp_optimum(seed: int, budget: float) -> None:
    """An allocation with no stalls is feasible for P2, so its welfare is at most the MILP's proven optimum."""
    inst = generate_welfare(8, 3, seed, budget_fraction=budget)
    opt = evaluate(inst, welfare_milp(inst), "welfare").welfare
    for name in BASELINES:
        for variant in (name, f"{name}-tuned"):
            doc, ev = methods.run(inst, "welfare", variant)
            if ev.stall_factor.min() >= 1.0:
                assert doc["welfare"] <= opt + 1e-6 * max(1.0, opt)


@pytest.mark.parametrize("name", [*BASELINES, *(f"{b}-tuned" for b in BASELINES)])
def test_non_continuous_instances_are_rejected_by_name(name: str) -> None:
    """Like the MILP, the baselines answer P2 for continuous cache and bandwidth only: an InstanceError otherwise."""
    inst = generate_welfare(3, 2, seed=0).replace(cache_granularity="dataset")
    with pytest.raises(InstanceError, match=r"cluster\.cache_granularity"):
        methods.get("welfare", name).function()(inst)


@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), cap=st.integers(0, 120))
def test_gavel_hull_greedy_is_within_one_job_of_the_exact_knapsack(seed: int, n: int, cap: int) -> None:
    """Gavel's LP (hull greedy, rounded down) fits the cap and loses at most one job's speedup to the exact DP.

    The LP relaxation bounds the DP optimum and has at most one fractional job (Sinha-Zoltners), whose
    step is worth at most that job's largest speedup.
    """
    inst = generate_welfare(n, 3, seed, gpu_options=(1, 2, 3, 8))
    value = io_unaware.speedup(inst)

    def total(gpus: np.ndarray) -> float:
        return float(value[np.flatnonzero(inst.option_gpus == gpus[inst.option_job()])].sum())

    hull = gavel_tput.allocate_hull(inst, cap).gpus
    exact = gavel_tput.allocate(inst, cap).gpus
    assert hull.sum() <= cap
    assert total(hull) <= total(exact) + 1e-9 * max(1.0, total(exact))
    assert total(hull) >= total(exact) - float(value.max()) - 1e-9


def test_gavel_switches_to_the_hull_greedy_when_the_table_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above DP_CELLS the allocation is the hull greedy's (same answer as calling it directly)."""
    inst = generate_welfare(40, 4, seed=9)
    monkeypatch.setattr(gavel_tput, "DP_CELLS", 0)
    assert gavel_tput.allocate(inst, 37).gpus.tolist() == gavel_tput.allocate_hull(inst, 37).gpus.tolist()


# ------------------------------------------------ the tuned envelopes keep the time limit


def test_regression_tuned_baselines_stop_their_grid_search_at_the_time_limit() -> None:
    """``gavel-tput-tuned`` with 1 s ran 1.9 s and said ``feasible``; now it stops between splits with ``time_limit``.

    The naive split is scored first, so the stopped answer is never worse than the naive scheduler.
    """
    inst = generate_welfare(60, 8, seed=3, budget_fraction=0.3)
    for name in ("gavel-tput", "gavel-fair", "optimus"):
        stopped, ev = methods.run(inst, "welfare", f"{name}-tuned", time_limit=1e-9)
        naive, _ = methods.run(inst, "welfare", name)
        full, _ = methods.run(inst, "welfare", f"{name}-tuned")
        assert stopped["status"] == "time_limit" and "GPU/IO splits" in stopped["reason"], name
        assert ev is not None and ev.feasible
        assert naive["welfare"] <= stopped["welfare"] <= full["welfare"]
        assert full["status"] == "feasible"
