"""Public data shipped with cbalab (package data): the Philly trace, Gavel throughputs, Pollux step times.

See README.md in this folder for the sources and licences; read the files through
:func:`cbalab.experiments.data.data_path`.
"""
