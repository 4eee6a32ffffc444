"""The ``json`` format: the results file itself (rag_eval/results.schema.json).

``RunResults.to_dict`` in the file's key order, without indent (indented output takes
json's pure-Python encoder: 2x slower at 5,000 cases). The results file is written by
``outputs.write.write_outputs`` through ``results.build.write_results``, which adds the
"another run wrote this file meanwhile" check to the write.
"""

from __future__ import annotations

import json

from rag_eval.outputs.writers import Context, register
from rag_eval.results.model import RunResults


class JsonWriter:
    name = "json"
    append = False

    def render(self, results: RunResults, context: Context) -> bytes:
        return json.dumps(results.to_dict(), ensure_ascii=False).encode("utf-8")


register(JsonWriter())
