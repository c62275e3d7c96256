"""laketide benchmarks: ratios against the floors (pyarrow, Spark) and the peers, measured in one run."""
