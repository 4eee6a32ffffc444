"""The retrieval tier, one folder: ``tier`` (the :class:`~rag_eval.tiers.base.Tier`: options,
metric names, running a case) and ``case`` (the pure case builder and its typed details)."""
