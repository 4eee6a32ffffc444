"""Small utilities every floor may use, with no knowledge of evaluation and importing
nothing of rag_eval outside this package: atomic file writes (``atomic``) and the one
write rule for every file a command writes (``person_files``), terminal-safe text
(``escape``), the garbage collector during a run (``heap``), secret redaction
(``redact``), stable shard partitions (``shard``), model-free term splitting (``text``)
and UTF-8 user files (``utf8``)."""
