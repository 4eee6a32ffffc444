"""RAGChecker's human meta-evaluation set, shipped with the package, and its Table 2 rule.

The set (``ragchecker_meta_eval/``: LICENSE, NOTICE, manifest.json and the two data files,
unmodified) holds 280 instances, each a query, a reference answer and two RAG systems'
responses, labelled by two annotators for which response is better (−2..2: model1 much
better … model2 much better) on correctness, completeness and overall; and RAGChecker's own
scores of both responses. :func:`load_meta_eval` checks both files' sha256 against the
manifest before it reads them.

Table 2 of the paper (Ru et al., arXiv:2408.08067), for a framework's metric:

1. per instance, the score difference d = score(model2) − score(model1);
2. a difference that is NaN (a score the framework could not give) becomes the median of
   the others (:func:`fill_median`);
3. d is min–max normalised to −2..2 (:func:`normalise`; a constant d is left as it is);
4. each instance's value is paired with *both* of its annotators' labels (560 pairs);
5. Pearson and Spearman over those pairs, ×100.

People's own agreement is annotator 1 against annotator 2 over the 280 instances. Step 3 is
a positive linear map, so it changes neither correlation; it is kept because the paper
states it. The intervals bootstrap whole instances (both of an instance's pairs together).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval.stats.correlation import bootstrap_correlation, pearson, spearman
from rag_eval.stats.interval import Interval

DATA = Path(__file__).resolve().parent / "ragchecker_meta_eval"
HUMAN_FILE = "human_labeled_data.json"
RAGCHECKER_FILE = "baseline_ragchecker.json"
METRICS: tuple[str, ...] = ("correctness", "completeness", "overall")
SIDES: tuple[str, ...] = ("model1", "model2")


class MetaEvalError(ValueError):
    """The shipped set is missing, altered or not in the shape the paper's rule needs."""


@dataclass(frozen=True)
class Instance:
    """One meta-evaluation instance: the two responses, both annotators' labels, RAGChecker's scores.

    ``labels[metric]`` = (annotator 1, annotator 2); ``ragchecker[metric]`` = (model1's
    score, model2's score), ``None`` where RAGChecker gave none.
    """

    id: str
    dataset: str
    query: str
    reference: str
    responses: tuple[str, str]
    systems: tuple[str, str]
    labels: Mapping[str, tuple[float, float]]
    ragchecker: Mapping[str, tuple[float | None, float | None]]


@dataclass(frozen=True)
class MetaEval:
    instances: tuple[Instance, ...]
    manifest: Mapping[str, Any]

    @property
    def commit(self) -> str:
        return str(self.manifest.get("commit", ""))


@dataclass(frozen=True)
class Agreement:
    """Pearson and Spearman (as fractions, with bootstrap intervals over instances) of one row.

    ``n`` instances; ``imputed``: differences that were NaN and became the median.
    """

    pearson: Interval
    spearman: Interval
    n: int
    imputed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pearson": self.pearson.to_dict(), "spearman": self.spearman.to_dict(), "n": self.n,
                "imputed": self.imputed}  # fmt: skip


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(folder: Path = DATA) -> dict[str, Any]:
    """The manifest, after checking each data file's sha256 against it (MetaEvalError naming the file)."""
    manifest_path = folder / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MetaEvalError(f"{manifest_path}: cannot read the meta-evaluation manifest: {exc}") from None
    for name, entry in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file():
            raise MetaEvalError(f"{path}: missing; reinstall rag-eval-gate (the file ships in the package)")
        got = sha256_of(path)
        if got != entry.get("sha256"):
            raise MetaEvalError(
                f"{path}: sha256 {got} is not the manifest's {entry.get('sha256')}: the file was altered; "
                "restore it from the package (it must stay as RAGChecker published it)"
            )
    return dict(manifest)


def _read(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise MetaEvalError(f"{path}: expected a JSON list of rows")
    return data


def _score(row: Mapping[str, Any], side: str, metric: str, where: str) -> float | None:
    scores = row.get(side, {}).get("ragchecker")
    if not isinstance(scores, Mapping):
        raise MetaEvalError(f"{where}: {side}.ragchecker is missing")
    value = scores.get(f"{metric}_label")
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else float(value)


def load_meta_eval(folder: Path = DATA) -> MetaEval:
    """Both files, checked against the manifest and paired: human rows 2i, 2i+1 with RAGChecker row i."""
    manifest = verify(folder)
    human, scores = _read(folder / HUMAN_FILE), _read(folder / RAGCHECKER_FILE)
    if len(human) != 2 * len(scores):
        raise MetaEvalError(f"{folder}: {len(human)} human rows for {len(scores)} instances; expected two per instance")
    out = []
    for i, row in enumerate(scores):
        first, second = human[2 * i], human[2 * i + 1]
        where = f"{folder / RAGCHECKER_FILE}: row {i}"
        if not first["instance_id"] == second["instance_id"] == row["instance_id"]:
            raise MetaEvalError(
                f"{where}: instance_id {row['instance_id']} is not that of human rows {2 * i}, {2 * i + 1}"
            )
        out.append(
            Instance(
                id=str(row["instance_id"]),
                dataset=str(row["dataset"]),
                query=str(row["query"]),
                reference=str(row["gt_answer"]),
                responses=(str(row["model1"]["response"]), str(row["model2"]["response"])),
                systems=(str(row["model1"]["model_name"]), str(row["model2"]["model_name"])),
                labels={m: (float(first[f"{m}_label"]), float(second[f"{m}_label"])) for m in METRICS},
                ragchecker={m: (_score(row, "model1", m, where), _score(row, "model2", m, where)) for m in METRICS},
            )
        )
    return MetaEval(tuple(out), manifest)


def differences(scores: Sequence[tuple[float | None, float | None]]) -> np.ndarray:
    """model2 − model1 per instance; NaN where either score is missing."""
    return np.array([np.nan if a is None or b is None else b - a for a, b in scores], dtype=float)


def fill_median(d: np.ndarray) -> tuple[np.ndarray, int]:
    """NaN → the median of the other differences (the paper's rule); (filled, how many were NaN).

    Every difference NaN: MetaEvalError (there is nothing to take a median of)."""
    missing = np.isnan(d)
    if missing.all():
        raise MetaEvalError("every score difference is missing: no median to fill them with")
    out = d.copy()
    out[missing] = float(np.median(d[~missing]))
    return out, int(missing.sum())


def normalise(d: np.ndarray) -> np.ndarray:
    """Min–max to −2..2: ((d − min)/(max − min) − 0.5)·4; a constant d is returned as it is."""
    lo, hi = float(d.min()), float(d.max())
    return d.copy() if hi == lo else ((d - lo) / (hi - lo) - 0.5) * 4.0


Units = dict[str, list[tuple[float, float]]]


def framework_units(
    instances: Sequence[Instance], scores: Sequence[tuple[float | None, float | None]], metric: str
) -> tuple[Units, int]:
    """Steps 1-4 of Table 2's rule (module doc): instance id → its two (value, label) pairs,
    and how many differences were NaN and became the median."""
    if len(scores) != len(instances):
        raise ValueError(f"{len(scores)} score pairs for {len(instances)} instances")
    filled, imputed = fill_median(differences(scores))
    values = normalise(filled)
    units = {inst.id: [(float(v), inst.labels[metric][0]), (float(v), inst.labels[metric][1])]
             for inst, v in zip(instances, values)}  # fmt: skip
    return units, imputed


def human_units(instances: Sequence[Instance], metric: str) -> Units:
    """People against people: instance id → [(annotator 1's label, annotator 2's)]."""
    return {inst.id: [inst.labels[metric]] for inst in instances}


def agreement(units: Units, imputed: int = 0, confidence: float = 0.95) -> Agreement:
    """Pearson and Spearman over every pair, bootstrapped over instances."""
    return Agreement(
        pearson=bootstrap_correlation(units, "pearson", confidence),
        spearman=bootstrap_correlation(units, "spearman", confidence),
        n=len(units),
        imputed=imputed,
    )


def point(units: Units) -> tuple[float | None, float | None]:
    """(Pearson, Spearman) over every pair, without an interval."""
    pairs = [p for unit in units.values() for p in unit]
    x, y = [a for a, _ in pairs], [b for _, b in pairs]
    return pearson(x, y), spearman(x, y)


def ragchecker_scores(instances: Sequence[Instance], metric: str) -> list[tuple[float | None, float | None]]:
    """RAGChecker's own (model1, model2) scores of ``metric``, shipped in the set."""
    return [inst.ragchecker[metric] for inst in instances]


def sample(instances: Sequence[Instance], n: int | None, seed: int) -> tuple[Instance, ...]:
    """A seeded sample of ``n`` instances (all of them, in set order, when ``n`` is None or ≥ the set).

    The first ``n`` of one seeded permutation, in that order: a larger ``n`` with the same seed
    extends a smaller one's sample, and instances are judged in that order, so a run stopped
    after k instances is answered by the cache when rerun with ``--n k``."""
    if n is None or n >= len(instances):
        return tuple(instances)
    if n < 2:
        raise ValueError(f"--n {n}: a correlation needs at least 2 instances")
    return tuple(instances[int(i)] for i in np.random.default_rng(seed).permutation(len(instances))[:n])
