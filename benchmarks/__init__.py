"""Hand-run benchmarks (not part of the test suite). See benchmarks/README.md."""
