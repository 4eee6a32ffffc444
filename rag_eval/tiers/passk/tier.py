"""The passk tier: n independent trials per case → pass@k, pass^k and stability (the case:
``rag_eval.tiers.passk.case``). A dialogue item runs k independent replays instead
(``rag_eval.tiers.dialogue``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.core.case import CaseResult
from rag_eval.core.errors import ConfigError
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.judge import judge_metric_names
from rag_eval.tiers.base import (
    RATE_KEYS,
    CaseOption,
    Item,
    Options,
    OptionValues,
    Tier,
    as_golden,
    case_options,
    floors,
    package_fragment,
)
from rag_eval.tiers.deterministic.case import DeterministicCaseConfig
from rag_eval.tiers.deterministic.tier import check_answer
from rag_eval.tiers.dialogue.details import DialoguePasskDetails
from rag_eval.tiers.dialogue.tier import DIALOGUE
from rag_eval.tiers.judge.case import JudgeCaseConfig
from rag_eval.tiers.judge.tier import JUDGE
from rag_eval.tiers.passk.aggregate import dialogue_trials
from rag_eval.tiers.passk.case import passk_case
from rag_eval.tiers.passk.details import PasskDetails, TrialOutcome

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession

PASSK_KEYS: tuple[str, ...] = (
    "trial_pass_rate",
    "wilson_low",
    "wilson_high",
    "flaky",
    "stable_pass",
    "stable_fail",
    "flaky_count",
)
PASSK_LOWER: frozenset[str] = frozenset({"flaky", "stable_fail", "flaky_count"})
PASSK_CONDITIONS: tuple[str, ...] = ("deterministic", "judge")
DEFAULT_N, DEFAULT_K = 5, 3


def check_trials(n: int, k: int, where: str) -> None:
    """n < k is a configuration error, said at start-up, never a number."""
    if n < k:
        raise ConfigError(
            f"{where}n = {n} < k = {k}: pass@k needs at least k trials; this is a configuration error, not a number"
        )


@dataclass(frozen=True)
class PasskArgs:
    """``--rag-passk-n`` / ``--rag-passk-k`` (None: not given, ``[passk.case]`` decides)."""

    n: int | None = None
    k: int | None = None


def _positive(values: OptionValues, option: str) -> int | None:
    value: int | None = values.getoption(f"rag_passk_{option}")
    if value is not None and value < 1:
        raise ConfigError(f"--rag-passk-{option} must be at least 1, got {value}")
    return value


@dataclass(frozen=True)
class PasskOptions:
    """``[passk.case]`` with the command line's ``--rag-passk-n`` / ``--rag-passk-k`` applied."""

    n: int = DEFAULT_N
    k: int = DEFAULT_K
    condition: str = "deterministic"  # what one trial's pass means: the deterministic checks or the judge
    floors: Mapping[str, float] = field(default_factory=dict)  # judge floors of a trial (condition = "judge")


class PasskTier(Tier):
    name = "passk"
    details_type = PasskDetails
    marker = "repeated trials: pass@k, pass^k and stability per case"
    items = (GoldenItem, DialogueItem)
    option_help = "RAG evaluation: repeated trials"
    case_options = (
        CaseOption("condition", "name", PASSK_CONDITIONS, "deterministic"),
        CaseOption("n", "int", (), DEFAULT_N),
        CaseOption("k", "int", (), DEFAULT_K),
    )

    @property
    def valid_names(self) -> str:  # the judge's registered metrics now, with any registered after import
        floors = ", ".join(judge_metric_names())
        return f"pass@<k>, pass^<k>, {', '.join(PASSK_KEYS + RATE_KEYS)}; as [passk.case] floors: {floors}"

    def schema_fragment(self) -> Mapping[str, Any]:
        return package_fragment(str(Path(__file__).parent))

    def metric_ok(self, key: str) -> bool:
        """pass@k / pass^k for any k, the stability keys, and judge metrics as trial floors."""
        name, at, k = key.partition("@") if "@" in key else key.partition("^")
        if at and name == "pass" and k.isdigit() and int(k) >= 1:
            return True
        return key in RATE_KEYS or key in PASSK_KEYS or key in judge_metric_names()

    def read_details(self, case: CaseResult) -> PasskDetails | DialoguePasskDetails | None:
        """A golden item's trials (``PasskDetails``) or a dialogue item's replays (``DialoguePasskDetails``)."""
        if case.outcome == "skip" or "traceback" in case.details:
            return None
        return (DialoguePasskDetails if case.details.get("dialogue") else PasskDetails).from_dict(case.details)

    def lower_is_better(self, key: str) -> bool:
        """flaky, stable_fail, flaky_count; a judge metric (a trial's floor) as the judge says."""
        return key in PASSK_LOWER or JUDGE.lower_is_better(key)

    def results_block(self, cases: Sequence[CaseResult]) -> dict[str, Any]:
        """``dialogue_rates.passk``: PASS@k and PASS^k over the dialogues it replayed."""
        return dialogue_trials(cases, self.name)

    def check_options(self, options: Mapping[str, Any], where: str) -> None:
        if "n" in options and "k" in options:
            check_trials(int(options["n"]), int(options["k"]), where)

    def unmeasured_reason(self, metric: str, scoped: Sequence[CaseResult]) -> str | None:
        name, at, k = metric.partition("@") if "@" in metric else metric.partition("^")
        if not (at and name == "pass" and k.isdigit()):
            return None
        ks = sorted({int(c.details["k"]) for c in scoped if isinstance(c.details.get("k"), int)})
        if not ks or int(k) in ks:
            return None
        run_k = ", ".join(str(v) for v in ks)
        return (
            f"{metric} is not measured: this run's k is {run_k} (set [passk.case] k = {k} or "
            f"--rag-passk-k {k}, with n >= {k} trials, or gate pass{at}{run_k})"
        )

    def add_options(self, options: Options) -> None:
        options.addoption("--rag-passk-n", type=int, default=None, help="trials per case (overrides [passk.case] n)")
        options.addoption(
            "--rag-passk-k", type=int, default=None, help="k of pass@k and pass^k (overrides [passk.case] k)"
        )

    def read_options(self, values: OptionValues) -> PasskArgs:
        return PasskArgs(_positive(values, "n"), _positive(values, "k"))

    def options(self, config: EvalConfig) -> PasskOptions:
        given = case_options(config, self.name)
        args = self.args(config) or PasskArgs()
        n = args.n or int(given.get("n", DEFAULT_N))
        k = args.k or int(given.get("k", DEFAULT_K))
        check_trials(n, k, "passk (from --rag-passk-n/--rag-passk-k or [passk.case]): ")
        return PasskOptions(n, k, str(given.get("condition", "deterministic")), floors(config, self.name))

    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        if isinstance(item, DialogueItem):
            return DIALOGUE.skip_reason(session, item)
        condition = session.tier_options(self).condition
        reason = session.answer_skip_reason() or (JUDGE.missing_reason(session) if condition == "judge" else None)
        return None if reason is None else f"passk condition 'judge': {reason}"

    def ahead(self, session: EvalSession) -> bool:
        return session.tier_options(self).condition == "judge" or super().ahead(session)

    def terminal_lines(self, cases: Sequence[CaseResult], usage: Mapping[str, Mapping[str, float]]) -> list[str]:
        one = [c for c in cases if c.tier == self.name and c.details.get("deterministic_generator")]
        if not one:
            return []
        return [
            f"passk: the generator is deterministic, so each of {len(one)} cases ran one trial "
            f"standing for n={one[0].details.get('n')} (no pretend repeats)"
        ]

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        if isinstance(item, DialogueItem):  # k independent replays
            return DIALOGUE.replays(session, item, self.name, session.tier_options(self).k)
        return self._trials(session, as_golden(item))

    def _trials(self, session: EvalSession, item: GoldenItem) -> CaseResult:
        """n independent trials of the stochastic stages; one trial when nothing is stochastic."""
        t0 = time.perf_counter()
        opts: PasskOptions = session.tier_options(self)
        judged = opts.condition == "judge"
        deterministic = bool(session.system_info.get("generator_deterministic")) and not judged
        trials: list[TrialOutcome] = []
        for trial in range(1 if deterministic else opts.n):
            # A fresh generation per trial (no memo, no shared cache entry: the judge keys its
            # cache by trial index), so trials are independent draws.
            chat = session.answer(item)
            if judged:
                case = JUDGE.runner(session).run(item, chat, JudgeCaseConfig(opts.floors), trial=trial, tier=self.name)
            else:
                case = check_answer(session, item, chat, DeterministicCaseConfig())
            trials.append(TrialOutcome(trial, case.outcome, case.failed_stage, case.message, chat.answer))
        usage = JUDGE.runner(session).usage_for(item.id, self.name) if judged else None
        case = passk_case(
            item,
            trials,
            n=opts.n,
            k=opts.k,
            deterministic=deterministic,
            duration=time.perf_counter() - t0,
            usage=usage,
        )
        return session.with_system(case)


PASSK = PasskTier()
