"""Gates from thresholds.toml: the thresholds parser, aggregates, tier gates and regression gates."""
