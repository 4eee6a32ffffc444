"""Authoring a golden set: drafting candidate items with a model, a person's review, and
keeping gold true as the system changes (docs/golden-sets.md, "Drafting and reviewing a
golden set" and "Keeping gold true").

* :mod:`~rag_eval.authoring.passages` -- the corpus cut into passages, the skip rule, the seeded sample;
* :mod:`~rag_eval.authoring.quote` -- the quote check and the near-duplicate guard;
* :mod:`~rag_eval.authoring.recipes` -- one prompt and reply reader per scenario, Chinese and English;
* :mod:`~rag_eval.authoring.drafting` -- the drafting run through rag_eval's one LLM client;
* :mod:`~rag_eval.authoring.accept` -- reviewed decisions merged into a golden file;
* :mod:`~rag_eval.authoring.evidence` -- a run's non-gold evidence as candidates, and their decisions;
* :mod:`~rag_eval.authoring.page` -- the review page (self-contained HTML);
* :mod:`~rag_eval.authoring.cli` -- the ``draft``, ``review``, ``accept`` and ``evidence`` commands.

Every file these commands write goes through the one write rule, ``rag_eval.util.person_files``
(no output is an input, a draft file is never replaced, written whole or not at all).

Nothing here imports pytest or the plugin.
"""
