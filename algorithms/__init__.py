"""Fast methods in numpy, no Pyomo (installed as ``cbalab.algorithms``); imports models/ only.

- ``registry.py``: the one registry of every method, cache policy and GPU scheduler, one call signature.
- ``cba.py``: CBA's closed form (Theorem 1); ``cba_integer.py``: its roundings for the integer variants.
- ``autocba/``: AutoCBA for the welfare problem (greedy, feeder, certificate, driver).
- ``baselines/``: SiloD, Quiver, CoorDL, cache-all, io-only, and the IO-unaware GPU schedulers.
"""
