"""The deterministic tier, one folder: ``tier`` (the :class:`~rag_eval.tiers.base.Tier`) and
``case`` (the pure case builder over the model-free checks, and its typed details)."""
