"""examples/noisy_system.py: seeded ranking noise over a BM25 retriever, and a real drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.noisy_system import BM25, NoisySystem, degrade, make_pipeline, perturb, read_passages, tokenize
from tests.rag_eval._plugin_sandbox import Sandbox

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "golden_sets" / "demo_maths"


@pytest.fixture(scope="module")
def index() -> BM25:
    return BM25(read_passages(DEMO / "corpus", 400))


@pytest.fixture(scope="module")
def questions() -> list[str]:
    with (DEMO / "golden.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


def rankings(system: NoisySystem, questions: list[str]) -> list[list[tuple[int, float]]]:
    return [system.ranked(q) for q in questions]


def test_the_same_seed_gives_the_same_rankings(index: BM25, questions: list[str]) -> None:
    first = rankings(NoisySystem(index, 0.5, seed=7), questions)
    again = rankings(NoisySystem(index, 0.5, seed=7), list(reversed(questions)))[
        ::-1
    ]  # order of asking does not matter
    other = rankings(NoisySystem(index, 0.5, seed=8), questions)

    assert first == again
    assert first != other  # the seed is what makes the noise


def test_a_fresh_process_index_gives_the_same_rankings(index: BM25, questions: list[str]) -> None:
    built = make_pipeline({"corpus": str(DEMO / "corpus"), "rank_noise": 0.15, "rank_noise_seed": 3})

    assert rankings(built, questions) == rankings(NoisySystem(index, 0.15, seed=3), questions)


def test_no_noise_is_the_base_retriever(index: BM25, questions: list[str]) -> None:
    for k in (5, 10):
        noisy = [NoisySystem(index, 0.0, seed=s).ranked(q, k) for s in (1, 2) for q in questions]
        base = [index.ranking(q, 20)[:k] for _ in (1, 2) for q in questions]
        assert noisy == base


def test_noise_swaps_the_top_hit_with_one_of_the_top_10_in_about_q_of_questions(
    index: BM25, questions: list[str]
) -> None:
    moved = 0
    for q in questions:
        base = index.ranking(q, 20)
        noisy = perturb(base, q, 0.3, seed=1)
        if noisy != base:
            moved += 1
            j = noisy.index(base[0])
            assert 1 <= j <= 9 and noisy[0] == base[j]
            assert noisy[:j] + noisy[j + 1 :] == [base[j]] + base[1:j] + base[j + 1 :]
    assert 0.15 * len(questions) <= moved <= 0.45 * len(questions)  # a Binomial(97, 0.3) draw, seeded


def test_the_drop_pushes_the_top_10_below_the_rest_regardless_of_the_seed(index: BM25, questions: list[str]) -> None:
    q = questions[0]
    base = index.ranking(q, 20)
    assert degrade(base, q, 0.0) == base
    assert degrade(base, q, 1.0) == base[10:] + base[:10]
    dropped = {s: NoisySystem(index, 0.0, seed=s, drop_rate=0.2) for s in (1, 2)}
    assert rankings(dropped[1], questions) == rankings(dropped[2], questions)
    assert rankings(dropped[1], questions) != rankings(NoisySystem(index, 0.0), questions)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rank_noise": 1.5}, "[options] rank_noise = 1.5: must be a number from 0 to 1"),
        ({"drop_rate": "0.1"}, "[options] drop_rate = '0.1': must be a number from 0 to 1"),
        ({"rank_nosie": 0.1}, "[options] rank_nosie: unknown"),
    ],
)
def test_bad_options_name_the_option_and_the_fix(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as err:
        make_pipeline({"corpus": str(DEMO / "corpus"), **options})
    assert message in str(err.value)


def test_the_gate_runs_it_and_two_seeds_give_other_numbers(sandbox: Sandbox) -> None:
    (sandbox.root / "pytest.ini").write_text(
        (sandbox.root / "pytest.ini").read_text(encoding="utf-8") + f"pythonpath = {REPO}\n", encoding="utf-8"
    )
    values = {}
    for seed in (1, 2, 1):
        config = sandbox.root / "noisy.toml"
        config.write_text(
            'pipeline = "examples.noisy_system:make_pipeline"\ngold = "ids"\n[options]\n'
            f'corpus = "{sandbox.dataset / "corpus.jsonl"}"\nrank_noise = 1.0\nrank_noise_seed = {seed}\n',
            encoding="utf-8",
        )
        sandbox.run("-m", "retrieval", "--rag-pipeline-config", str(config))
        results = sandbox.results()
        assert results["run"]["system"]["adapter"] == "python"
        ranks = {i: c["details"]["stages"]["final"] for i, c in sandbox.cases().items()}
        values.setdefault(seed, []).append(ranks)
    assert values[1][0] == values[1][1]
    assert values[1][0] != values[2][0]


def test_chinese_is_tokenized_by_characters_and_pairs_and_a_latin_run_stops_at_cjk() -> None:
    assert tokenize("含n个元素的集合A Sets") == [
        "含",
        "n",
        "个",
        "元",
        "素",
        "的",
        "集",
        "合",
        "个元",
        "元素",
        "素的",
        "的集",
        "集合",
        "a",
        "sets",
    ]
