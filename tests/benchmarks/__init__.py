"""Tests of the benchmarks that hold logic of their own (benchmarks/)."""
