"""How far the configured judge agrees with people: RAGChecker's human meta-evaluation.

- ``meta_eval``: the shipped set (checked against its manifest) and the paper's Table 2 rule;
- ``published``: Table 2's published figures, cited;
- ``judging``: the native judge on both responses of each instance (three scores per verdict);
- ``run``: one calibration (judge, baselines on the same instances, cost) → the record;
- ``record``: the record's file and its lines (terminal and HTML report);
- ``command``: ``python -m rag_eval calibrate``.
"""
