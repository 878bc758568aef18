"""AutoCBA: greedy welfare maximisation under a budget (P2, docs/model.md §5), with a certified bound.

AutoCBA chooses every job's GPU option.  For fixed options the cheapest way
to feed them is P1, which CBA solves in closed form (algorithms/cba.py), so
the IO cost is a known function F(R) of the dataset demands R_k; with B = ∞
it is concave (proofs/feeding_cost_concave.md), which is why jobs that share a
cached dataset get cheaper together.

The algorithm (proofs/autocba_guarantee.md):

1. **Options that fit alone.**  An option is kept only if the job running it
   alone fits G, B and the budget; nothing else can appear in a feasible
   answer.
2. **Greedy by utility per unit of true marginal cost.**  Every job proposes
   its best jump to *any* option of higher utility (so non-concave tables are
   followed along their upper concave hull); the cost of a jump is the GPU
   price × Δg plus the exact change of the least feeding cost, computed
   incrementally by :class:`_Feeder` (cache the dataset from free capacity,
   then by displacing cached bytes of lower IO density, as CBA's threshold rule
   does, Lemma B2; no re-solve).  Under a finite B a move
   whose incremental feeding would exceed B is re-priced by a full CBA solve,
   which may cache past profitability as B forces.  The "unit of cost" is the
   dollar, and, when the GPU capacity or the IO cap can bind as well, a second
   run normalises dollars, GPUs and remote IO by their limits and adds them
   (the 1/(2d) guarantee of proofs/autocba_guarantee.md needs that run); when
   B can bind, a third run charges the raw rate against B.  The best run wins.
3. **Group moves.**  For a dataset that is not fully cached, the jobs on it
   propose jointly: the best prefix of them (ranked by utility per GPU dollar,
   as if the dataset were cached) priced with the exact joint feeding change,
   so that several jobs can together justify a cache none justifies alone.
4. **Partial enumeration** (small instances, at most 256 options that fit
   alone; algorithms/autocba/enumerate.py): the greedy again with one job
   (then, up to 24 options, two jobs) held at each of its options, with and
   without capping the others at the held utility (Theorem E), and with each
   of the four most demanded datasets held cached; then a downgrade pass holds
   one chosen job a notch lower and lets the greedy spend what that frees.
5. **Exact mode** (opt-in, ``exact=True``; up to 24 jobs, when the certificate leaves a gap;
   algorithms/autocba/exact.py): a branch and bound over the jobs' options,
   pruned by the certificate's dual with the fixed jobs' rows restricted;
   ``optimal`` only when it finishes within 5,000 nodes (Theorem F).
6. **Best single job.**  The best option of one job alone is a candidate
   answer (the safeguard of the classic ½ guarantee).
7. **CBA pass.**  The chosen options are fed at least cost by
   :func:`algorithms.cba.feed`; if that frees money, the greedy resumes from
   the optimal feeding, then (up to 500 jobs) a swap pass tries to drop one
   job's option to fund better upgrades.  Above 2,000 jobs only one greedy
   runs (the normalised one when G or B can bind), to stay near-linear.
   Group moves and the swap pass are heuristics: Theorem C needs neither, and
   outside its assumption no constant factor is claimed.

Every answer carries a proven upper bound on the P2 optimum, the Lagrangian
dual of :func:`welfare_bound` (proofs/autocba_certificate.md), so the gap
``bound − welfare`` is certified, and the status is ``optimal`` only when the
two meet or the opt-in exact search of step 5 finishes (then ``bound`` is the proven
optimum).  Nothing here imports Pyomo.
"""

from cbalab.algorithms.autocba.certificate import Certificate, welfare_bound
from cbalab.algorithms.autocba.driver import autocba
from cbalab.algorithms.autocba.limits import fits_alone, standalone_cost

__all__ = ["Certificate", "autocba", "fits_alone", "standalone_cost", "welfare_bound"]
