"""Compare configurations of one system on one golden set (``python -m rag_eval grid``).

A grid file names settings and their values; each combination is a configuration, run as
an independent pytest job (as a user would run it) into its own results file; the
comparison reads those files, tests each configuration against a reference with the
gate's own paired tests (Holm over configurations × metrics), and writes JSON, Markdown,
an HTML page and a quality-against-latency plot. Choosing on ``tune`` and confirming on
``holdout`` is :mod:`rag_eval.grid.select`. Nothing here imports pytest: jobs are
subprocesses.
"""
