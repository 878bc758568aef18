"""The mathematics of cbalab: instances, the referee, and the exact Pyomo formulations."""
