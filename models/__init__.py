"""The mathematics of cbalab (installed as ``cbalab.models``); imports neither algorithms/ nor experiments/.

- ``instance.py``: the ``cbalab/instance@1`` format, validation with field-naming errors.
- ``evaluate.py``: the one referee that scores every allocation (docs/model.md §6).
- ``types.py``: ``Status``, ``Problem`` and ``SolveOptions``, shared by every method.
- ``result.py``: ``Allocation``, the one typed result every method returns, and its declared facts.
- ``kernels.py``: numerical kernels used by several methods (prefix fill by density, scaling into limits, weak dual).
- ``files.py``: atomic file writers.
- ``milp/`` and ``solve.py``: the exact Pyomo formulations of P1 and P2 and their HiGHS solve.
- ``flow.py``: the uncapped continuous P1 as a certified min-cost flow.
"""

from importlib.metadata import version as _version

#: The installed cbalab's version, from its metadata (pyproject.toml is the one statement of it); re-exported
#: as ``cbalab.__version__``, and here so that the layers below the facade can record it without importing it.
__version__ = _version("cbalab")
