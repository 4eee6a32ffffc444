"""The passk tier, one folder: ``tier`` (the :class:`~rag_eval.tiers.base.Tier`: n trials per
golden item, k replays per dialogue item) and ``case`` (a golden item's case and its typed details)."""
