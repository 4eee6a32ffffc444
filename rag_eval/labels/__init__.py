"""Human labels for judged metrics: the labels file, its join with a run, the labelling sheet.

- ``model``: one ``Label`` (a person's value for a case's metric, or for one claim or key fact);
- ``load``: the JSONL labels file, every error with ``file:line`` (docs/human-labels.md);
- ``judged``: what a run's judge said per case and metric, read from a results dict;
- ``compare``: labels against the judge: agreement, bias, inter-annotator α and the three
  estimates (judge-only, labels-only, PPI++) with intervals, as a typed ``LabelReport``;
- ``sample``: a seeded (optionally stratified) sample of judged cases and its labelling sheet;
- ``page``: the one-file labelling page for that sample.
"""
