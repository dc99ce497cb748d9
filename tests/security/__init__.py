"""Adversarial tests: each reproducer of issue 16 (forged results, trust, stale edits, unbounded work)."""
