"""Secret scans for rag_app's leak tests: every 12-character window of a key in every form.

The forms are tests/support/leaks.py's (one list for rag_eval's and rag_app's scans), which
is written independently of ``rag_app.redact`` on purpose: a test that used the redactor's
own list of forms could not notice a form it forgot.
"""

from __future__ import annotations

from tests.support.leaks import WINDOW
from tests.support.leaks import forms as key_forms

__all__ = ["WINDOW", "key_forms", "leaks"]


def leaks(text: str, key: str) -> list[str]:
    """Each ``form: window`` of the key found in ``text`` (empty: nothing leaked)."""
    found = []
    for name, form in key_forms(key).items():
        for i in range(max(1, len(form) - WINDOW + 1)):
            window = form[i : i + WINDOW]
            if window in text:
                found.append(f"{name}: {window!r}")
                break
    return found
