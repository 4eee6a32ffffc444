"""The shipped RAGChecker meta-evaluation set: unaltered, licensed, and Table 2 reproduced.

Parity: RAGChecker's rows (correctness, completeness, overall) and people's own agreement,
computed from the shipped files with rag_eval's statistics, equal the published figures to
0.01 (rag_eval.calibrate.published says where each figure comes from); scipy, the test
extra's reference, gives the same numbers from the same arrays.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rag_eval.calibrate.meta_eval import (
    DATA,
    METRICS,
    MetaEval,
    MetaEvalError,
    differences,
    fill_median,
    framework_units,
    human_units,
    load_meta_eval,
    normalise,
    point,
    ragchecker_scores,
    sample,
    verify,
)
from rag_eval.calibrate.published import PUBLISHED

PEOPLE = "people (annotator 1 vs 2)"


@pytest.fixture(scope="module")
def meta() -> MetaEval:
    return load_meta_eval()


def test_files_match_the_manifest_sha256() -> None:
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["files"]) == {"human_labeled_data.json", "baseline_ragchecker.json"}
    for name, entry in manifest["files"].items():
        data = (DATA / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert len(json.loads(data)) == entry["rows"], name


def test_licence_notice_and_source_commit_ship_with_the_data() -> None:
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    assert "Apache License" in (DATA / "LICENSE").read_text(encoding="utf-8")
    notice = (DATA / "NOTICE").read_text(encoding="utf-8")
    assert manifest["commit"] in notice and "amazon-science/RAGChecker" in notice
    assert "data/meta_evaluation/human_labeled_data.json" in notice


def test_an_altered_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "set"
    shutil.copytree(DATA, copy)
    path = copy / "baseline_ragchecker.json"
    path.write_bytes(path.read_bytes().replace(b"0.52", b"0.53", 1))
    with pytest.raises(MetaEvalError, match="baseline_ragchecker.json: sha256 .* the file was altered"):
        load_meta_eval(copy)


def test_the_set_is_paired_as_the_paper_says(meta: MetaEval) -> None:
    assert len(meta.instances) == 280
    assert len({i.dataset for i in meta.instances}) == 10
    assert len({s for i in meta.instances for s in i.systems}) == 8
    assert meta.commit == verify()["commit"]


def test_fill_median_and_normalise_by_hand() -> None:
    d = differences([(0.0, 1.0), (None, 0.5), (1.0, 4.0), (0.0, 5.0)])  # 1, NaN, 3, 5
    filled, imputed = fill_median(d)
    assert list(filled) == [1.0, 3.0, 3.0, 5.0] and imputed == 1  # median of (1, 3, 5) = 3
    assert list(normalise(filled)) == [-2.0, 0.0, 0.0, 2.0]  # ((d − 1)/4 − 0.5)·4
    assert list(normalise(np.array([2.0, 2.0]))) == [2.0, 2.0]  # constant: left as it is
    with pytest.raises(MetaEvalError, match="every score difference is missing"):
        fill_median(differences([(None, 1.0)]))


@pytest.mark.parametrize("metric", METRICS)
def test_ragchecker_row_reproduces_table_2(meta: MetaEval, metric: str) -> None:
    units, _ = framework_units(meta.instances, ragchecker_scores(meta.instances, metric), metric)
    r, rho = point(units)
    assert r is not None and rho is not None
    want_r, want_rho = PUBLISHED["RAGChecker"][metric]
    assert abs(100 * r - want_r) <= 0.01 and abs(100 * rho - want_rho) <= 0.01
    assert len(units) == 280 and sum(len(u) for u in units.values()) == 560


@pytest.mark.parametrize("metric", METRICS)
def test_human_row_reproduces_table_2(meta: MetaEval, metric: str) -> None:
    r, rho = point(human_units(meta.instances, metric))
    assert r is not None and rho is not None
    want_r, want_rho = PUBLISHED[PEOPLE][metric]
    assert abs(100 * r - want_r) <= 0.01 and abs(100 * rho - want_rho) <= 0.01


@pytest.mark.parametrize("metric", METRICS)
def test_scipy_agrees_from_the_raw_files(metric: str) -> None:
    """Independently of rag_eval's loader: the paper's rule on the raw JSON, through scipy."""
    human = json.loads((DATA / "human_labeled_data.json").read_text(encoding="utf-8"))
    rows = json.loads((DATA / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    key = f"{metric}_label"
    d = np.array([r["model2"]["ragchecker"][key] - r["model1"]["ragchecker"][key] for r in rows])
    d[np.isnan(d)] = np.nanmedian(d)
    x = np.repeat((d - d.min()) / (d.max() - d.min()) * 4 - 2, 2)
    labels = np.array([h[key] for h in human], dtype=float)
    meta = load_meta_eval()
    r, rho = point(framework_units(meta.instances, ragchecker_scores(meta.instances, metric), metric)[0])
    assert r == pytest.approx(stats.pearsonr(x, labels)[0], abs=1e-9)
    assert rho == pytest.approx(stats.spearmanr(x, labels)[0], abs=1e-9)
    hr, hrho = point(human_units(meta.instances, metric))
    assert hr == pytest.approx(stats.pearsonr(labels[0::2], labels[1::2])[0], abs=1e-9)
    assert hrho == pytest.approx(stats.spearmanr(labels[0::2], labels[1::2])[0], abs=1e-9)


def test_sample_is_seeded_and_a_larger_n_extends_a_smaller_one(meta: MetaEval) -> None:
    a, b = sample(meta.instances, 12, seed=7), sample(meta.instances, 12, seed=7)
    assert a == b and len(a) == 12 and len({i.id for i in a}) == 12
    assert sample(meta.instances, 12, seed=8) != a
    assert sample(meta.instances, 5, seed=7) == a[:5]
    assert sample(meta.instances, None, seed=0) == meta.instances
    with pytest.raises(ValueError, match="at least 2"):
        sample(meta.instances, 1, seed=0)
