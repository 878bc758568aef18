"""Fast methods in pure Python and numpy (no Pyomo): CBA, AutoCBA and the baselines."""
