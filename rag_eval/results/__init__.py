"""The results of a run: the case record, the results dict and its file, baseline, merge, finalize."""
