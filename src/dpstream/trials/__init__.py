"""Trial functions: ``run_trial(params, seed) -> dict`` for each mechanism family (see docs/harness.md)."""
