"""Tests of the expert kernel corpus (skills/lineages/corpus) and the naive suite (bench/suite)."""
