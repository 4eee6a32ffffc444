"""Statistics for gates: intervals, floor rules, paired tests, power, PPI and agreement.

Pure functions on numpy (no pytest, no scipy), one concern per module, formulas in the
docstrings and STATISTICS.md of the project's steering docs as the definition:

- ``distributions``: normal and Student-t quantiles;
- ``interval``: the ``Interval`` record (estimate, se, bounds, or the reason there are none);
- ``closed_form``: the closed-form intervals, Wilson and t; ``bootstrap``: content-seeded bootstrap of a mean
  over whole units and of a pooled ratio;
- ``floors``: estimate / clearly_below / clearly_above, each with its sentence;
- ``paired``: McNemar, paired bootstrap, sign-flip test, tolerance form, Holm–Bonferroni;
- ``power``: items needed for a drop and the minimum detectable drop;
- ``ppi``: prediction-powered inference (PPI, PPI++, labels only);
- ``agreement``: accuracy, Cohen's κ, Spearman ρ, MAE, bias, Krippendorff's α;
- ``correlation``: Pearson r, Spearman ρ, and their bootstrap over clustered units.
"""
