"""Model-free term splitting for the framework's own checks (key-fact traceability),
for Chinese and English alike, with no dictionary: a run of CJK characters gives its
characters and character bigrams; any other run of letters or digits is one lowercased
term. Good enough to ask "does this fact share its key terms with its source?"."""

from __future__ import annotations

import re
import unicodedata

_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def terms(text: str) -> list[str]:
    """Terms of ``text`` in order (NFKC-normalised, case-folded)."""
    out: list[str] = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out
