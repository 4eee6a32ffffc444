"""Where the shared external datasets are, as bench/_common.py finds them.

``RAG_EVAL_DATASETS`` names the folder; else it is ``../shared/datasets`` beside the
repository. A test that needs one skips, naming this folder, when it is not there.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("RAG_EVAL_DATASETS") or REPO.parent / "shared" / "datasets")
