"""Everything that runs over many instances or over time, and the `cbalab` command line."""
