"""thresholds.toml parsing: every accepted form, and an error for every mistake that
names the file, the table and the key, and lists what would have been valid."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval import tiers
from rag_eval.gates import thresholds as th
from rag_eval.gates.thresholds import (
    CaseRules,
    Gate,
    Thresholds,
    ThresholdsError,
    load_thresholds,
    parse_thresholds,
)
from rag_eval.metrics.deterministic import CHECK_NAMES
from rag_eval.tiers import CaseOption, Tier


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    message = str(info.value)
    assert message.startswith(str(path)), message  # every message names the file
    return message


def only_gate(t: Thresholds) -> Gate:
    assert len(t.gates) == 1, t.gates
    return t.gates[0]


# --------------------------------------------------------------------------- accepted forms


def test_bare_number_is_a_min_gate_with_the_default_min_cases(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[defaults]\nmin_cases = 5\n[retrieval]\n"recall@5" = 0.8\n'))
    g = only_gate(t)
    assert (g.tier, g.metric, g.op, g.threshold, g.min_cases) == ("retrieval", "recall@5", "min", 0.8, 5)
    assert g.tags == {}
    assert g.label == "retrieval.recall@5"
    assert t.min_cases == 5


def test_integer_bare_number_becomes_a_float(tmp_path: Path) -> None:
    g = only_gate(load_thresholds(write(tmp_path, '[retrieval]\n"hit@1" = 1\n')))
    assert g.threshold == 1.0 and isinstance(g.threshold, float)


def test_min_and_max_tables(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[retrieval]\n"mrr" = { min = 0.6 }\nerror_rate = { max = 0.0 }\n'))
    by_metric = {g.metric: g for g in t.gates}
    assert (by_metric["mrr"].op, by_metric["mrr"].threshold) == ("min", 0.6)
    assert (by_metric["error_rate"].op, by_metric["error_rate"].threshold) == ("max", 0.0)


def test_min_cases_per_gate_overrides_the_default(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path, "[defaults]\nmin_cases = 5\n[retrieval]\npass_rate = { min = 0.9, min_cases = 12 }\nmrr = 0.5\n"
        )
    )
    by_metric = {g.metric: g for g in t.gates}
    assert by_metric["pass_rate"].min_cases == 12
    assert by_metric["mrr"].min_cases == 5


def test_without_defaults_min_cases_is_one(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, "[retrieval]\nmrr = 0.5\n"))
    assert t.min_cases == 1
    assert only_gate(t).min_cases == 1


def test_stage_and_doc_prefixed_retrieval_metrics(tmp_path: Path) -> None:
    keys = [
        "vector.recall@5",
        "bm25.doc.mrr@10",
        "fused.ndcg@10",
        "reranked.hit@1",
        "context.precision@5",
        "doc.recall@5",
    ]
    body = "\n".join(f'"{k}" = 0.1' for k in keys)
    t = load_thresholds(write(tmp_path, f"[retrieval]\n{body}\n"))
    assert [g.metric for g in t.gates] == keys


def test_negative_and_rate_keys(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            '[retrieval]\n"negative.any_above_threshold" = { max = 0.2 }\n"negative.empty_context" = 0.5\n'
            "fail_count = { max = 2 }\n",
        )
    )
    assert {(g.metric, g.op) for g in t.gates} == {
        ("negative.any_above_threshold", "max"),
        ("negative.empty_context", "min"),
        ("fail_count", "max"),
    }


def test_deterministic_check_gates(tmp_path: Path) -> None:
    body = "\n".join(f'"check.{name}" = 1.0' for name in CHECK_NAMES)
    t = load_thresholds(write(tmp_path, f"[deterministic]\n{body}\npass_rate = 0.6\n"))
    assert {g.metric for g in t.gates} == {f"check.{n}" for n in CHECK_NAMES} | {"pass_rate"}


def test_case_table_options_and_floors(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            '[retrieval.case]\nrequire = "reranked"\nnegative = "no_vector_hit"\n"recall@5" = { min = 0.5 }\n'
            '"doc.mrr" = 0.25\n'
            '[deterministic.case]\nskip_checks = ["numbers_grounded", "must_contain"]\n',
        )
    )
    assert t.gates == ()
    assert t.case_rules("retrieval") == CaseRules(
        {"require": "reranked", "negative": "no_vector_hit"}, {"recall@5": 0.5, "doc.mrr": 0.25}
    )
    assert t.case_rules("deterministic").options == {"skip_checks": ["numbers_grounded", "must_contain"]}
    assert t.case_rules("judge") == CaseRules()  # a tier without a case table: no rules


def test_list_option_given_as_one_name_becomes_a_list(tmp_path: Path) -> None:
    # Before the fix the string was kept and later iterated character by character,
    # so skip_checks = "numbers_grounded" skipped nothing.
    t = load_thresholds(write(tmp_path, '[deterministic.case]\nskip_checks = "numbers_grounded"\n'))
    assert t.case_rules("deterministic").options == {"skip_checks": ["numbers_grounded"]}


def test_case_table_next_to_aggregate_gates(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[retrieval]\n"recall@5" = 0.8\n[retrieval.case]\nrequire = "context"\n'))
    assert only_gate(t).metric == "recall@5"
    assert t.case_rules("retrieval").options == {"require": "context"}


def test_tag_gates(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            "[defaults]\nmin_cases = 4\n"
            '[tag."scenario=negative".deterministic]\npass_rate = { min = 1.0, min_cases = 3 }\n'
            '"check.expected_action" = 0.5\n'
            '[tag."scenario=negative".retrieval]\n"negative.empty_context" = 0.5\n',
        )
    )
    by_label = {g.label: g for g in t.gates}
    assert set(by_label) == {
        "deterministic.pass_rate [scenario=negative]",
        "deterministic.check.expected_action [scenario=negative]",
        "retrieval.negative.empty_context [scenario=negative]",
    }
    g = by_label["deterministic.pass_rate [scenario=negative]"]
    assert (g.tier, g.metric, g.op, g.threshold, g.min_cases, dict(g.tags)) == (
        "deterministic",
        "pass_rate",
        "min",
        1.0,
        3,
        {"scenario": "negative"},
    )
    assert by_label["deterministic.check.expected_action [scenario=negative]"].min_cases == 4
    # tag gates do not create case rules
    assert t.cases == {}


def test_multi_tag_selector_with_spaces(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[tag."topic=set, difficulty = easy".retrieval]\n"recall@5" = 0.5\n'))
    g = only_gate(t)
    assert dict(g.tags) == {"topic": "set", "difficulty": "easy"}
    assert g.label == "retrieval.recall@5 [difficulty=easy,topic=set]"  # sorted, stable


def test_sha256_and_path_of_the_file(tmp_path: Path) -> None:
    import hashlib

    text = "[retrieval]\nmrr = 0.5\n"
    path = write(tmp_path, text)
    t = load_thresholds(path)
    assert t.path == str(path)
    assert t.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert only_gate(t).where == f"{path} [retrieval] mrr"


def test_the_project_thresholds_file_parses() -> None:
    t = load_thresholds(Path(__file__).resolve().parents[2] / "thresholds.toml")
    assert {g.tier for g in t.gates} == {"retrieval", "deterministic", "judge", "passk", "dialogue"}
    assert t.min_cases == 5


# --------------------------------------------------------------------------- errors


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ThresholdsError, match=r"nope\.toml: thresholds file not found \(pass --rag-thresholds PATH"):
        load_thresholds(tmp_path / "nope.toml")


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval]\n"recall@5" = 0.8\nmrr = = 0.5\n')
    assert "not valid TOML" in msg
    assert "line 3" in msg


def test_unknown_tier_table_lists_the_valid_tables(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retreival]\n"recall@5" = 0.8\n')
    assert "unknown table [retreival]" in msg
    assert "valid tables: deterministic, dialogue, judge, passk, retrieval, defaults, tag" in msg


def test_unknown_tier_inside_a_tag_table(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[tag."scenario=negative".judgement]\nx = 1\n')
    assert "unknown table [judgement]" in msg and "retrieval" in msg


def test_unknown_retrieval_metric_names_table_key_and_valid_names(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval]\n"recal@5" = 0.8\n')
    assert "unknown metric 'recal@5' in [retrieval]" in msg
    assert "valid names for retrieval:" in msg
    for name in ("recall@k", "ndcg@k", "mrr", "pass_rate", "negative.empty_context", "bm25"):
        assert name in msg


@pytest.mark.parametrize(
    "key",
    [
        "recall",  # no cutoff
        "recall@0",
        "vector.bm25.recall@5",  # two stages
        "doc.doc.mrr",
        "Recall@5",  # gates look metrics up by their canonical spelling
        "check.answer_not_empty",  # a deterministic key in the retrieval tier
    ],
)
def test_malformed_retrieval_metric_names(tmp_path: Path, key: str) -> None:
    msg = error_of(tmp_path, f'[retrieval]\n"{key}" = 0.5\n')
    assert f"unknown metric {key!r} in [retrieval]" in msg


def test_unknown_deterministic_metric_lists_the_checks(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[deterministic]\n"check.spelling" = 1.0\n')
    assert "unknown metric 'check.spelling' in [deterministic]" in msg
    assert all(name in msg for name in CHECK_NAMES)


def test_unknown_metric_in_a_tag_table_names_that_table(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[tag."scenario=negative".deterministic]\n"check.nope" = 1\n')
    assert """unknown metric 'check.nope' in [tag."scenario=negative".deterministic]""" in msg


def test_unknown_defaults_key(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "[defaults]\nmin_case = 5\n")
    assert "unknown key 'min_case' in [defaults]; valid keys: confidence, decide, min_cases, ungated, unmeasured" in msg


def test_defaults_unmeasured_is_fail_unless_set_to_pass(tmp_path: Path) -> None:
    assert parse_thresholds({}, "t.toml").unmeasured == "fail"
    assert parse_thresholds({"defaults": {"unmeasured": "pass"}}, "t.toml").unmeasured == "pass"
    msg = error_of(tmp_path, '[defaults]\nunmeasured = "skip"\n')
    assert "[defaults] unmeasured = 'skip'; valid: 'fail', 'pass'" in msg


@pytest.mark.parametrize("value", ["-1", "2.5", "true", '"5"'])
def test_defaults_min_cases_must_be_a_non_negative_integer(tmp_path: Path, value: str) -> None:
    msg = error_of(tmp_path, f"[defaults]\nmin_cases = {value}\n")
    assert "[defaults] min_cases must be a non-negative integer" in msg


def test_both_min_and_max(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval]\n"recall@5" = { min = 0.5, max = 0.9 }\n')
    assert "[retrieval] recall@5: give exactly one of min or max, got ['max', 'min']" in msg


def test_neither_min_nor_max(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval]\n"recall@5" = { min_cases = 3 }\n')
    assert "[retrieval] recall@5: give exactly one of min or max, got ['min_cases']" in msg


def test_unknown_key_in_a_gate_lists_the_valid_keys(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval]\n"recall@5" = { minimum = 0.5 }\n')
    assert "unknown key 'minimum' in [retrieval] recall@5; valid keys: decide, estimate, max, min, min_cases" in msg


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ('"high"', "[retrieval] mrr: expected a number or { min = x } / { max = x }, got 'high'"),
        ("true", "[retrieval] mrr: expected a number or { min = x } / { max = x }, got True"),
        ('{ min = "0.5" }', "[retrieval] mrr: min must be a number, got '0.5'"),
        ("{ max = false }", "[retrieval] mrr: max must be a number, got False"),
        ("{ min = 0.5, min_cases = 2.0 }", "[retrieval] mrr.min_cases must be a non-negative integer, got 2.0"),
    ],
)
def test_non_numeric_thresholds(tmp_path: Path, spec: str, expected: str) -> None:
    assert expected in error_of(tmp_path, f"[retrieval]\nmrr = {spec}\n")


def test_tier_body_must_be_a_table(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "retrieval = 5\n")
    assert "[retrieval] must be a table" in msg


def test_bad_case_option_value_lists_the_valid_values(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\nnegative = "refuse"\n')
    assert (
        "[retrieval.case] negative = 'refuse' is not one of measure, no_threshold_hit, no_vector_hit, empty_context"
        in msg
    )
    msg = error_of(tmp_path, '[deterministic.case]\nskip_checks = ["numbers_grounded", "spelling"]\n')
    assert "[deterministic.case] skip_checks = 'spelling' is not one of answer_not_empty" in msg


def test_scalar_case_option_rejects_a_list(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\nrequire = ["context"]\n')
    assert "[retrieval.case] require takes one name, not a list; a stage of the system" in msg


def test_unknown_case_key_lists_options_and_floors(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\nrequires = "context"\n')
    assert "unknown key 'requires' in [retrieval.case]; valid: require, negative or a per-case metric floor" in msg


def test_rate_keys_are_not_per_case_floors(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "[retrieval.case]\npass_rate = 1.0\n")
    assert "unknown key 'pass_rate' in [retrieval.case]" in msg


def test_negative_keys_are_not_per_case_floors(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\n"negative.empty_context" = 1.0\n')
    assert "[retrieval.case] negative.empty_context: negatives are checked per case with negative = one of " in msg
    assert "measure, no_threshold_hit, no_vector_hit, empty_context" in msg


def test_per_case_floors_are_min_only(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\n"recall@5" = { max = 0.5 }\n')
    assert "[retrieval.case] recall@5: per-case thresholds are floors; use min" in msg


def test_per_case_floor_rejects_min_cases(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[retrieval.case]\n"recall@5" = { min = 0.5, min_cases = 3 }\n')
    assert "[retrieval.case] recall@5: min_cases applies to aggregate gates" in msg


@pytest.mark.parametrize("selector", ["scenario", "scenario=", "=negative", "scenario=negative,", "a=b,,c=d"])
def test_malformed_tag_selector(tmp_path: Path, selector: str) -> None:
    msg = error_of(tmp_path, f'[tag."{selector}".retrieval]\nmrr = 0.5\n')
    assert f'[tag."{selector}"]: a tag selector is key=value[,key=value], e.g. "scenario=negative"' in msg


def test_tag_selector_with_a_key_twice(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[tag."topic=a,topic=b".retrieval]\nmrr = 0.5\n')
    assert """[tag."topic=a,topic=b"]: tag key 'topic' is given twice""" in msg


def test_tag_table_shape_errors(tmp_path: Path) -> None:
    assert "[tag] holds tables like" in error_of(tmp_path, "tag = 1\n")
    assert """[tag."scenario=negative"] must hold tier tables""" in error_of(
        tmp_path, '[tag]\n"scenario=negative" = 1\n'
    )


# --------------------------------------------------------------------------- a registered tier, metric_names


class _Latency(Tier):
    name = "latency"
    marker = "latency tier (test)"
    case_options = (CaseOption("unit", "name", ("ms", "s"), "ms"),)
    valid_names = "p50, p95, pass_rate"

    def metric_ok(self, key: str) -> bool:
        return key in ("p50", "p95", "pass_rate")


@pytest.fixture
def latency_tier() -> Iterator[None]:
    tiers.register(_Latency())
    yield
    tiers.unregister("latency")


@pytest.mark.usefixtures("latency_tier")
def test_a_registered_tier_gets_its_tables_metrics_and_options(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[latency]\np95 = { max = 2.0 }\n[latency.case]\nunit = "s"\np50 = 0.5\n'))
    assert only_gate(t).label == "latency.p95"
    assert t.case_rules("latency").floors == {"p50": 0.5}
    assert dict(t.case_rules("latency").options) == {"unit": "s"}
    msg = error_of(tmp_path, "[latency]\np99 = 0.8\n")
    assert "unknown metric 'p99' in [latency]; valid names for latency: p50, p95, pass_rate" in msg
    assert "[latency.case] unit = 'h' is not one of ms, s" in error_of(tmp_path, '[latency.case]\nunit = "h"\n')
    msg = error_of(tmp_path, "[latncy]\nx = 1\n")
    assert "valid tables: deterministic, dialogue, judge, latency, passk, retrieval, defaults, tag" in msg


def test_unregistered_tier_is_unknown(tmp_path: Path) -> None:
    assert "unknown table [trials]" in error_of(tmp_path, '[trials]\n"pass@3" = 0.8\n')


def test_passk_gates_options_and_n_below_k(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            '[passk]\n"pass@3" = 0.9\n"pass^3" = 0.8\nflaky_count = { max = 1 }\n'
            '[passk.case]\nn = 5\nk = 3\ncondition = "judge"\nfaithfulness = 0.7\n',
        )
    )
    assert [(g.metric, g.op) for g in t.gates] == [("pass@3", "min"), ("pass^3", "min"), ("flaky_count", "max")]
    assert dict(t.case_rules("passk").options) == {"n": 5, "k": 3, "condition": "judge"}
    assert dict(t.case_rules("passk").floors) == {"faithfulness": 0.7}
    assert "n = 2 < k = 3" in error_of(tmp_path, "[passk.case]\nn = 2\nk = 3\n")
    assert "n must be a whole number >= 1" in error_of(tmp_path, "[passk.case]\nn = 0\n")


def test_judge_tier_gates_and_floors(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            "[judge]\nfaithfulness = 0.8\nunknown_share = { max = 0.2 }\nerror_rate = { max = 0.02 }\n[judge.case]\nfaithfulness = 0.5\n",
        )
    )
    assert [(g.metric, g.op) for g in t.gates] == [
        ("faithfulness", "min"),
        ("unknown_share", "max"),
        ("error_rate", "max"),
    ]
    assert dict(t.case_rules("judge").floors) == {"faithfulness": 0.5}
    assert "unknown metric 'faithfulnes'" in error_of(tmp_path, "[judge]\nfaithfulnes = 0.8\n")


def test_a_lower_is_better_per_case_limit_is_a_ceiling(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, "[judge.case]\nhallucination = { max = 0.2 }\ncoverage = 0.5\n"))
    assert dict(t.case_rules("judge").floors) == {"hallucination": 0.2, "coverage": 0.5}
    message = error_of(tmp_path, "[judge.case]\nnoise_sensitivity_relevant = 0.2\n")
    assert (
        "lower is better, so the per-case limit is a ceiling; write noise_sensitivity_relevant = { max = x }" in message
    )
    assert "per-case thresholds are floors; use min" in error_of(tmp_path, "[judge.case]\ncoverage = { max = 0.5 }\n")


def test_metric_names_are_base_names_of_gates_and_floors(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            '[retrieval]\n"bm25.doc.recall@7" = 0.5\n"mrr" = 0.5\npass_rate = 0.9\n"negative.empty_context" = 0.5\n'
            '[retrieval.case]\n"ndcg@3" = 0.1\nrequire = "fused"\n'
            '[tag."scenario=standard".retrieval]\n"hit@2" = 0.5\n'
            '[deterministic]\n"check.must_contain" = 1.0\n',
        )
    )
    assert t.metric_names("retrieval") == {"recall@7", "mrr", "ndcg@3", "hit@2"}
    assert t.metric_names("deterministic") == set()


def test_deterministic_case_floors_are_refused_with_the_way_out() -> None:
    doc = {"deterministic": {"case": {"check.must_contain": {"min": 1.0}}}}
    with pytest.raises(
        ThresholdsError, match=r"t\.toml: \[deterministic\.case\] check\.must_contain: .*use skip_checks"
    ):
        th.parse_thresholds(doc, "t.toml")


# --------------------------------------------------------------------------- [regression]


def test_regression_table_no_new_failures_and_max_drops(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[regression]\nno_new_failures = true\n"
        '"retrieval.recall@5" = { max_drop = 0.02 }\n"deterministic.pass_rate" = { max_drop = 0 }\n'
        '"passk.pass^3" = { max_drop = 0.1 }\n"retrieval.bm25.doc.mrr@10" = { max_drop = 0.05 }\n',
    )
    t = load_thresholds(path)
    assert t.gates == ()  # regression rules are not tier gates
    assert t.regression.no_new_failures is True
    assert [(d.metric, d.max_drop) for d in t.regression.max_drops] == [
        ("retrieval.recall@5", 0.02),
        ("deterministic.pass_rate", 0.0),
        ("passk.pass^3", 0.1),
        ("retrieval.bm25.doc.mrr@10", 0.05),
    ]
    assert isinstance(t.regression.max_drops[1].max_drop, float)
    assert t.regression.max_drops[0].where == f"{path} [regression] retrieval.recall@5"
    assert t.regression


def test_without_a_regression_table_there_are_no_regression_rules(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, '[retrieval]\n"recall@5" = 0.8\n'))
    assert not t.regression and t.regression.max_drops == () and t.regression.no_new_failures is False


def test_the_project_thresholds_file_has_regression_gates() -> None:
    t = load_thresholds(Path(__file__).resolve().parents[2] / "thresholds.toml")
    assert t.regression.no_new_failures
    assert {d.metric for d in t.regression.max_drops} >= {"retrieval.recall@5", "deterministic.pass_rate"}


def test_regression_unknown_tier_lists_the_valid_form(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[regression]\n"retreival.recall@5" = { max_drop = 0.1 }\n')
    assert "unknown key 'retreival.recall@5' in [regression]" in msg
    assert (
        "valid: no_new_failures, or <tier>.<metric>" in msg
        and "deterministic, dialogue, judge, passk, retrieval" in msg
    )


def test_regression_a_bare_metric_without_tier_is_refused(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[regression]\n"recall@5" = { max_drop = 0.1 }\n')
    assert "unknown key 'recall@5' in [regression]" in msg


def test_regression_unknown_metric_lists_the_tiers_valid_names(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[regression]\n"retrieval.Recall@5" = { max_drop = 0.1 }\n')
    assert "unknown metric 'retrieval.Recall@5' in [regression]; valid names for retrieval: retrieval.<name>" in msg
    assert "recall@k" in msg
    msg = error_of(tmp_path, '[regression]\n"deterministic.check.typo" = { max_drop = 0.1 }\n')
    assert "valid names for deterministic" in msg
    for check in CHECK_NAMES:
        assert check in msg


def test_regression_refuses_gate_only_counts(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[regression]\n"retrieval.fail_count" = { max_drop = 1 }\n')
    assert "unknown metric 'retrieval.fail_count' in [regression]" in msg and "except fail_count, flaky_count" in msg


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('"retrieval.recall@5" = 0.02', "expected { max_drop = x }"),
        (
            '"retrieval.recall@5" = { min = 0.8 }',
            "unknown key 'min' in [regression] retrieval.recall@5; valid keys: alpha, max_drop",
        ),
        ('"retrieval.recall@5" = { max_drop = -0.1 }', "max_drop must be a finite number >= 0, got -0.1"),
        ('"retrieval.recall@5" = { max_drop = "a" }', "max_drop must be a finite number >= 0, got 'a'"),
        ('"retrieval.recall@5" = { max_drop = true }', "max_drop must be a finite number >= 0, got True"),
        ("no_new_failures = 1", "[regression] no_new_failures must be true, false or { alpha = 0.05 }, got 1"),
    ],
)
def test_regression_value_errors(tmp_path: Path, body: str, expected: str) -> None:
    assert expected in error_of(tmp_path, f"[regression]\n{body}\n")


def test_regression_must_be_a_table(tmp_path: Path) -> None:
    assert "[regression] must be a table" in error_of(tmp_path, "regression = 1\n")


def test_regression_is_a_top_level_table_only(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[tag."scenario=negative".regression]\nno_new_failures = true\n')
    assert (
        "unknown table [regression]; valid tables: deterministic, dialogue, judge, passk, retrieval, defaults, tag"
        in msg
    )
    assert "tag, regression" not in msg
    top = error_of(tmp_path, "[regresion]\nno_new_failures = true\n")
    assert "valid tables: deterministic, dialogue, judge, passk, retrieval, defaults, tag, regression" in top


def test_stage_names_are_the_systems_own_and_checked_against_its_stages(tmp_path: Path) -> None:
    """Any stage name parses ('dense.recall@10'); one the system does not have is named
    with the file, table and key, so the caller can list the stages it has."""
    path = tmp_path / "thresholds.toml"
    path.write_text(
        '[retrieval]\n"dense.recall@10" = 0.8\n"rerank.doc.mrr" = 0.5\n[retrieval.case]\nrequire = "hybrid"\n',
        encoding="utf-8",
    )
    t = load_thresholds(path)
    assert t.stage_problems(["dense", "sparse", "hybrid", "final"]) == [
        f"{path} [retrieval] rerank.doc.mrr names stage 'rerank'",
    ]
    assert t.stage_problems(["dense", "final"]) == [
        f"{path} [retrieval] rerank.doc.mrr names stage 'rerank'",
        f"{path}: [retrieval.case] require = 'hybrid' names stage 'hybrid'",
    ]
    assert t.stage_problems(["dense", "rerank", "hybrid"]) == []


# --------------------------------------------------------------------------- hostile values and bytes (issue 26.12, 26.15)


@pytest.mark.parametrize(
    "body, key",
    [
        ('[retrieval]\n"recall@5" = { min = nan }\n', "recall@5"),
        ('[retrieval]\n"recall@5" = { min = inf }\n', "recall@5"),
        ('[retrieval]\n"recall@5" = { max = -inf }\n', "recall@5"),
        ('[retrieval]\n"recall@5" = 1e999\n', "recall@5"),
        ('[retrieval]\n"recall@5" = nan\n', "recall@5"),
        ("[retrieval]\nerror_rate = { max = -1 }\n", "error_rate"),
        ('[retrieval.case]\n"recall@5" = { min = nan }\n', "recall@5"),
        ('[tag."scenario=negative".deterministic]\npass_rate = { min = -0.5 }\n', "pass_rate"),
    ],
)
def test_a_threshold_no_value_can_meet_is_refused_naming_file_and_key(tmp_path: Path, body: str, key: str) -> None:
    message = error_of(tmp_path, body)
    assert key in message and ("not a finite number" in message or "below 0" in message), message


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_max_drop_that_is_not_a_finite_number_at_least_0_is_refused(tmp_path: Path, value: str) -> None:
    message = error_of(tmp_path, f'[regression]\n"retrieval.recall@5" = {{ max_drop = {value} }}\n')
    assert "[regression] retrieval.recall@5: max_drop must be a finite number >= 0" in message


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_bytes(b'\xef\xbb\xbf[retrieval]\n"recall@5" = 0.8\n')
    assert only_gate(load_thresholds(path)).threshold == 0.8


def test_a_byte_that_is_not_utf8_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_bytes(b'[retrieval]\n"recall@5" = 0.8 # caf\xff\n')
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    assert str(info.value) == f"{path}:2: byte 0xff at column 23 is not UTF-8; save the file as UTF-8"


def test_deep_nesting_is_an_error_not_a_recursion_traceback(tmp_path: Path) -> None:
    message = error_of(tmp_path, "x = " + "[" * 100_000 + "\n")
    assert "not valid TOML" in message


def test_defaults_ungated_is_fail_unless_set_to_pass(tmp_path: Path) -> None:
    assert load_thresholds(write(tmp_path, "[retrieval]\nerror_rate = { max = 0.0 }\n")).ungated == "fail"
    assert load_thresholds(write(tmp_path, '[defaults]\nungated = "pass"\n')).ungated == "pass"
    message = error_of(tmp_path, '[defaults]\nungated = "ignore"\n')
    assert "[defaults] ungated = 'ignore'; valid: 'fail', 'pass'" in message


def test_a_judged_gate_may_decide_on_the_corrected_estimate(tmp_path: Path) -> None:
    t = load_thresholds(
        write(
            tmp_path,
            '[judge]\nfaithfulness = { min = 0.8, estimate = "ppi" }\n'
            'relevance = { min = 0.7, estimate = "labels" }\ncoverage = { min = 0.5 }\n',
        )
    )
    by_key = {g.metric: g for g in t.gates}
    assert [by_key[k].estimate for k in ("faithfulness", "relevance", "coverage")] == ["ppi", "labels", "judge"]
    assert by_key["faithfulness"].label == "judge.faithfulness (ppi estimate)"
    assert by_key["coverage"].label == "judge.coverage"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[judge]\nfaithfulness = { min = 0.8, estimate = "best" }\n',
            "estimate = 'best'; valid: 'judge', 'labels', 'ppi'",
        ),
        ('[retrieval]\n"recall@5" = { min = 0.8, estimate = "ppi" }\n', "only [judge], [dialogue] gates take it"),
        (
            '[tag."lang=zh".judge]\nfaithfulness = { min = 0.8, estimate = "ppi" }\n',
            "put this gate in the untagged table",
        ),
    ],
)
def test_a_wrong_estimate_is_refused_at_load(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(tmp_path, text)
