"""Re-derive the bound of a welfare ``optimal`` from the instance file and its proof, without cbalab or a solver.

    python scripts/check_welfare_proof.py INSTANCE.json PROOF.json

PROOF.json is what ``cbalab.models.solve.welfare_proof`` writes (docs/model.md §8, "Re-checking an optimal
welfare").  Only the standard library is used, and every number is the exact rational its float stands for.
The check (proofs/welfare_milp_forms.md, Theorems F1, F4 and F5, Lemma F2):

1. every dropped option cannot run alone (Lemma F2 (i), at the limits the referee accepts);
2. the allocation meets G, C, B and the budget as the referee accepts them (to the resolution of its float
   sums, 4 units in the last place of the limit), and its welfare W is
   Σ U_o min(1, b_j / (r_o (1 − h))) over the chosen options, exactly;
3. for each range [lo, hi] of GPU counts, its multipliers bound U·y over the LP of P2 (b eliminated, Theorem F1
   (c)) with lo ≤ Σ g y ≤ hi by their Neumaier–Shcherbina value, or its Farkas ray proves that LP empty; a range
   HiGHS solved also carries HiGHS's bound, used (and reported as trusted) only where the multipliers do not
   close the range;
4. the ranges cover every GPU count from 0 to n_max.

It prints the re-derived bound max(W, every range's bound) and whether it rests on HiGHS anywhere; it exits 0 when
the proof holds (the re-derived bound is at most the reported one), 1 otherwise.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from typing import Any

RTOL = 1e-9  # the referee's slack (8.1)
INF = math.inf


def accepted(limit: Any) -> Fraction | None:
    """A limit as the referee accepts it, the float L + 1e-9 max(1, |L|) that it compares with (None: unlimited)."""
    if limit is None:
        return None
    x = float(limit)
    return Fraction(x + RTOL * (1.0 if abs(x) <= 1.0 else abs(x)))


def beyond(total: Fraction, limit: Fraction | None) -> bool:
    """Whether an exact total exceeds a limit by more than the referee's resolution: it adds its totals in floats,
    so a total within 4 units in the last place of the limit is one the referee accepts (docs/model.md (8.2))."""
    return limit is not None and total > limit + 4 * Fraction(math.ulp(float(limit)))


class P2:
    """The instance's P2 (docs/model.md §5): columns y_o, w_o, h_k in [0, 1] and b_j ≥ 0."""

    def __init__(self, data: dict[str, Any]) -> None:
        index = {d["id"]: k for k, d in enumerate(data["datasets"])}
        self.d = [Fraction(d["size_gb"]) for d in data["datasets"]]
        self.job_k, self.opts = [], []
        for j, job in enumerate(data["jobs"]):
            self.job_k.append(index[job["dataset"]])
            for opt in job["options"]:
                self.opts.append((j, int(opt["gpus"]), Fraction(opt["io_gbps"]), Fraction(opt["utility"])))
        cluster, prices = data["cluster"], data["prices"]
        self.G = cluster.get("gpus")
        self.C, self.B = accepted(cluster["cache_gb"]), accepted(cluster.get("bandwidth_gbps"))
        self.W = accepted(data.get("budget_per_hour"))
        self.pg, self.pc, self.pb = (
            Fraction(prices[k]) for k in ("gpu_per_hour", "cache_gb_per_hour", "bandwidth_gbps_per_hour")
        )
        n_o, self.n_j, self.n_k = len(self.opts), len(data["jobs"]), len(self.d)
        self.y, self.w, self.h = range(n_o), range(n_o, 2 * n_o), range(2 * n_o, 2 * n_o + self.n_k)
        self.b = range(2 * n_o + self.n_k, 2 * n_o + self.n_k + self.n_j)

    def rows(self, lo: Fraction, hi: Fraction) -> dict[str, list[tuple[dict[int, Fraction], Any, Any]]]:
        """The row groups (named as models/milp/welfare.py's) of the LP with lo ≤ Σ g y ≤ hi: (terms, lo, hi)."""
        one, ninf = Fraction(1), -INF
        g: dict[str, list[tuple[dict[int, Fraction], Any, Any]]] = {}
        per_job: list[dict[int, Fraction]] = [{} for _ in range(self.n_j)]
        for o, (j, _, _, _) in enumerate(self.opts):
            per_job[j][self.y[o]] = one
        g["one_option"] = [(t, ninf, one) for t in per_job]
        g["w_below_y"] = [({self.w[o]: one, self.y[o]: -one}, ninf, 0) for o in range(len(self.opts))]
        wj: list[dict[int, Fraction]] = [{} for _ in range(self.n_j)]
        for o, (j, _, _, _) in enumerate(self.opts):
            wj[j][self.w[o]] = one
        for j in range(self.n_j):
            wj[j][self.h[self.job_k[j]]] = -one
        g["w_per_job"] = [(t, ninf, 0) for t in wj]
        hit = [self.h[self.job_k[j]] for j, *_ in self.opts]  # h_k(j(o)) per option row
        g["w_below_h"] = [({self.w[o]: one, hit[o]: -one}, ninf, 0) for o in range(len(self.opts))]
        g["w_above"] = [({hit[o]: one, self.y[o]: one, self.w[o]: -one}, ninf, one) for o in range(len(self.opts))]
        g["gpu_capacity"] = [({self.y[o]: Fraction(gp) for o, (_, gp, _, _) in enumerate(self.opts)}, lo, hi)]
        g["cache_capacity"] = [({self.h[k]: self.d[k] for k in range(self.n_k)}, ninf, self.C)]
        feed: list[dict[int, Fraction]] = [{self.b[j]: -one} for j in range(self.n_j)]
        for o, (j, _, r, _) in enumerate(self.opts):
            if r:
                feed[j][self.y[o]], feed[j][self.w[o]] = r, -r
        g["feed"] = [(t, ninf, 0) for t in feed]
        demand = {self.b[j]: one for j in range(self.n_j)}
        g["bandwidth_capacity"] = [] if self.B is None else [(demand, ninf, self.B)]
        if self.W is None:
            g["budget"] = []
        else:
            money = {c: self.pb * v for c, v in demand.items()}
            for o, (_, gp, _, _) in enumerate(self.opts):
                money[self.y[o]] = money.get(self.y[o], Fraction(0)) + self.pg * gp
            for k in range(self.n_k):
                money[self.h[k]] = self.pc * self.d[k]
            g["budget"] = [({c: v for c, v in money.items() if v}, ninf, self.W)]
        return g

    def value(self, cost: dict[int, Fraction], upper: list[Fraction], groups: dict, mult: dict) -> Fraction | None:
        """Neumaier–Shcherbina: min cᵀx ≥ Σ_i (m_i lo_i if m_i > 0 else m_i hi_i) + Σ_j min(r_j l_j, r_j u_j),
        r = c − Aᵀm, x in [0, upper]; a multiplier against an infinite side is taken as 0 (any m is valid).
        None: −∞."""
        reduced = dict(cost)
        total = Fraction(0)
        for name, rows in groups.items():
            given = mult.get(name, [0.0] * len(rows))
            if len(given) != len(rows):
                raise ValueError(f"{name}: {len(given)} multipliers for {len(rows)} rows")
            for (terms, lo, hi), m in zip(rows, given):
                m = Fraction(m)
                side = lo if m > 0 else hi
                if m == 0 or side in (INF, -INF):
                    continue
                total += m * Fraction(side)
                for c, a in terms.items():
                    reduced[c] = reduced.get(c, Fraction(0)) - m * a
        for c, r in reduced.items():
            if r < 0:
                if upper[c] == INF:
                    return None
                total += r * upper[c]
        return total

    def repaired(self, mult: dict[str, list[float]]) -> dict[str, list[Fraction]]:
        """The multipliers with every row side's sign kept (a ≤ row's multiplier at most 0 in the min form) and each
        feeding row's raised to m_B + p_b m_W where that is more, so that no b_j has a negative reduced cost against
        its infinite upper bound (any multipliers are valid: this only keeps the value finite)."""
        out = {
            name: [min(Fraction(0), Fraction(m)) if name != "gpu_capacity" else Fraction(m) for m in ms]
            for name, ms in mult.items()
        }
        m_b = out.get("bandwidth_capacity") or [Fraction(0)]
        m_w = out.get("budget") or [Fraction(0)]
        floor = m_b[0] + self.pb * m_w[0]
        out["feed"] = [max(m, floor) for m in out.get("feed", [Fraction(0)] * self.n_j)]
        return out


def check(data: dict[str, Any], proof: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``proof`` proves its bound for the instance ``data``, and what was found."""
    p = P2(data)
    upper: list[Any] = [Fraction(1)] * (2 * len(p.opts) + p.n_k) + [INF] * p.n_j
    for o in proof["dropped"]:
        j, gp, r, _ = p.opts[o]
        k = p.job_k[j]
        top = min(Fraction(1), p.C / p.d[k])
        low = Fraction(0) if p.B is None or r == 0 else max(Fraction(0), 1 - p.B / r)
        cheapest = min(p.pg * gp + p.pc * p.d[k] * h + p.pb * r * (1 - h) for h in (min(low, top), top))
        if not ((p.G is not None and gp > p.G) or low > top or (p.W is not None and cheapest > p.W)):
            return False, f"option row {o} is dropped but runs alone (Lemma F2)"
        upper[p.y[o]] = Fraction(0)
    welfare = Fraction(0)
    alloc = proof.get("allocation")
    if alloc is not None:
        cache = [Fraction(c) for c in alloc["cache_gb"]]
        bw = [Fraction(b) for b in alloc["bandwidth_gbps"]]
        ptr, start = [], 0
        for job in data["jobs"]:
            ptr.append(start)
            start += len(job["options"])
        gpus = money = Fraction(0)
        for j, choice in enumerate(alloc["option"]):
            if choice is None:
                continue
            _, gp, r, u = p.opts[ptr[j] + choice]
            hit = min(cache[p.job_k[j]], p.d[p.job_k[j]]) / p.d[p.job_k[j]]
            need = r * (1 - hit)
            fed = bw[j] >= need - Fraction(RTOL) * max(Fraction(1), need)  # the referee's stall slack (8.1)
            welfare += u if fed else u * bw[j] / need
            gpus += gp
        money = p.pg * gpus + p.pc * sum(cache) + p.pb * sum(bw)
        if (p.G is not None and gpus > p.G) or beyond(sum(cache), p.C) or beyond(sum(bw), p.B):
            return False, "the allocation breaks G, C or B"
        if beyond(money, p.W):
            return False, "the allocation breaks the budget"
    cost = {p.y[o]: -u for o, (_, _, _, u) in enumerate(p.opts) if u}
    bound, trusted, covered = welfare, [], []
    for rng in proof["ranges"]:
        lo, hi = Fraction(rng["lo"]), Fraction(rng["hi"])
        groups = p.rows(lo, hi)
        ray = None if "ray" not in rng else p.value({}, upper, groups, p.repaired(rng["ray"]))
        if ray is not None and ray > 0:
            covered.append((lo, hi))
            continue
        level = None
        value = None if "duals" not in rng else p.value(cost, upper, groups, p.repaired(rng["duals"]))
        if value is not None:
            level = -value
        if level is not None and level <= welfare:
            covered.append((lo, hi))
            continue
        if "highs" in rng:
            highs = rng["highs"]
            taken = Fraction(-INF if highs is None else highs) if highs is not None else None
            if taken is None:
                trusted.append(f"[{lo}, {hi}]: HiGHS found no integer point")
            else:
                taken = taken if level is None else min(taken, level)
                trusted.append(f"[{lo}, {hi}]: HiGHS's bound {float(taken)!r}")
                bound = max(bound, taken)
            covered.append((lo, hi))
            continue
        if level is not None:
            bound = max(bound, level)
            covered.append((lo, hi))
    ns = set()
    for lo, hi in covered:
        ns.update(range(math.ceil(lo), math.floor(hi) + 1))
    missing = [n for n in range(int(proof["n_max"]) + 1) if n not in ns]
    if missing:
        return False, f"no range covers the GPU counts {missing[:10]}"
    reported = proof.get("bound")
    lines = [f"welfare W = {float(welfare)!r} (exact {welfare})", f"re-derived bound = {float(bound)!r}"]
    lines += ["taken on HiGHS's word: " + t for t in trusted] or ["every range closed exactly (no HiGHS bound used)"]
    ok = reported is not None and bound <= Fraction(reported)
    lines.append(f"reported bound {reported!r}: " + ("holds" if ok else "NOT re-derived"))
    return ok, "\n".join(lines)


def main(argv: list[str]) -> int:
    """Command line: INSTANCE.json PROOF.json."""
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    with open(argv[1]) as f:
        proof = json.load(f)
    ok, text = check(data, proof)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
