"""Outputs rendered from a results file: the HTML report and the Markdown summary.

Everything here reads the results dict written by ``rag_eval.results.build`` (never live
objects), so a report can be re-rendered from a stored file, a CI artifact or merged
shards; a stored file is read with ``rag_eval.results.file.load_results`` (format:
rag_eval/results.schema.json).
"""
