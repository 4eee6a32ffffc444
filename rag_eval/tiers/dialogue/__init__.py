"""The dialogue tier, one folder: ``tier`` (the :class:`~rag_eval.tiers.base.Tier`: replays
against the system's dialogue call) and ``case`` (the cases and their typed details)."""
