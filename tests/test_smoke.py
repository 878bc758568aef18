"""End-to-end smoke test of the README's main job: every cost method agrees on the default instance."""

from __future__ import annotations

from cbalab.algorithms import registry as methods
from cbalab.experiments.workload import generate_cost


def test_every_cost_method_scores_and_exact_ones_agree_with_cba() -> None:
    inst = generate_cost(200, 40, seed=0)
    docs = {name: methods.run(inst, "cost", name)[0] for name in methods.names("cost")}
    assert docs["milp"]["status"] == "optimal"
    assert docs["cba"]["status"] == "optimal"
    ref = docs["milp"]["objective"]
    assert abs(docs["cba"]["objective"] - ref) <= 1e-7 * ref
    assert abs(docs["lp"]["objective"] - ref) <= 1e-7 * ref


def test_methods_command_lists_every_registered_method(capsys) -> None:
    """`cbalab methods` prints each problem's registry, so a user can see what --method accepts."""
    from cbalab.cli import main

    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for problem in ("cost", "welfare"):
        assert f"{problem}:" in out
        for name in methods.names(problem):
            assert f"  {name} " in out
