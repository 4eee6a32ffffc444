"""The judge tier, one folder: ``tier`` (the :class:`~rag_eval.tiers.base.Tier`), ``runner``
(the process's one :class:`~rag_eval.tiers.judge.runner.JudgeRunner`: engine, cache, usage) and
``case`` (a verdict → the case, and its typed details). The judge's prompts, schema and
engines are ``rag_eval.judge``: this folder is the tier that uses them."""
