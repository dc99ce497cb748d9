"""Tests of the expert kernel corpus (lineages/corpus) and the naive suite (bench/suite)."""
