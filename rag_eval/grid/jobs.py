"""A grid's jobs: one pytest run per configuration (and shard), as a user would run it.

A job writes its results file and, once pytest has ended with a complete results file, a
``job.json`` beside it that records what it ran (the command's settings and the grid's
fingerprint). A job whose ``job.json`` matches is finished and is not run again, so an
interrupted grid resumes where it stopped and a second run of a finished grid runs
nothing. Shards of one configuration are merged with ``rag_eval merge``'s own code, so a
sharded grid gives the same numbers as one machine. Indexes are the system's business:
rag_app keeps one per index fingerprint in its cache, so configurations that share a
chunking share one index build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from rag_eval.grid.spec import Configuration, GridError, GridSpec, Scalar
from rag_eval.results.file import ResultsFileError, load_results

#: pytest's exit codes after which a results file is a run's honest outcome (0 passed, 1 a gate failed).
FINISHED_EXITS = (0, 1)
JOB_FILE = "job.json"


@dataclass(frozen=True)
class Job:
    """One pytest run: a configuration on a split, optionally one shard of it."""

    spec: GridSpec
    config: Configuration
    split: str
    shard: int = 1  # 1-based
    shards: int = 1

    @property
    def folder(self) -> Path:
        return self.spec.out / self.split / self.config.slug

    @property
    def results(self) -> Path:
        name = "results.json" if self.shards == 1 else f"shard-{self.shard}-of-{self.shards}.json"
        return self.folder / name

    @property
    def record(self) -> Path:
        return self.results.with_suffix(".job.json")

    @property
    def label(self) -> str:
        part = f" shard {self.shard}/{self.shards}" if self.shards > 1 else ""
        return f"{self.config.name} [{self.split}]{part}"

    def identity(self) -> dict[str, Any]:
        """What must match for a finished job to stand: the grid's inputs and this job's settings."""
        return {
            "grid": self.spec.fingerprint(),
            "settings": dict(self.config.settings),
            "split": self.split,
            "shard": [self.shard, self.shards],
        }

    def command(self, pipeline_config: Path | None) -> list[str]:
        cmd = [sys.executable, "-m", "pytest", *self.spec.pytest_args, "-p", "no:cacheprovider", "-q"]
        cmd += ["--rag-results", str(self.results), "--rag-no-report", "--rag-split", self.split]
        if self.shards > 1:
            cmd += ["--rag-shard", f"{self.shard}/{self.shards}"]
        if self.spec.pipeline:
            cmd += ["--rag-pipeline", self.spec.pipeline]
        if pipeline_config is not None:
            cmd += ["--rag-pipeline-config", str(pipeline_config)]
        kind = kind_of(self.spec)
        for name, value in self.config.settings.items():
            if name == "top_k":
                cmd += ["--rag-top-k", str(value)]
            elif "." not in name and _takes_settings(kind):
                cmd += ["--rag-set", f"{name}={_cli_text(value)}"]
        return cmd


def kind_of(spec: GridSpec, base: Mapping[str, Any] | None = None) -> str:
    """rag_app | python | http | dify: from [grid] pipeline, else the base configuration's
    (``base``: that configuration, when the caller has read it already)."""
    choice = spec.pipeline or str((_base_config(spec) if base is None else base).get("pipeline", ""))
    return "python" if ":" in choice else choice


def _takes_settings(kind: str) -> bool:
    """A plain setting goes to ``--rag-set`` for a kind whose system takes settings (rag_app)."""
    from rag_eval.adapters import kinds

    return kinds.takes_settings(kind)


def _base_config(spec: GridSpec) -> dict[str, Any]:
    if spec.pipeline_config is None:
        return {}
    try:
        return tomllib.loads(spec.pipeline_config.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GridError(
            f"{spec.where}: [grid] pipeline_config {spec.pipeline_config}: not valid TOML ({exc})"
        ) from None


def _cli_text(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def pipeline_config(job: Job) -> dict[str, Any] | None:
    """The --rag-pipeline-config this job needs (None: none): the base file with the
    configuration's dotted settings set at their paths and, for a Python factory, its
    plain settings in ``[options]``; a relative ``id_map`` made absolute (the file moves)."""
    data = _base_config(job.spec)
    kind = kind_of(job.spec, data)
    changed = False
    for name, value in job.config.settings.items():
        if name == "top_k":
            continue
        if "." in name:
            _set_path(data, name.split("."), value, job.spec)
            changed = True
        elif kind == "python":
            data.setdefault("options", {})[name] = value
            changed = True
        elif not _takes_settings(kind):
            raise GridError(
                f"{job.spec.where}: [axes] {name}: a {kind} system takes its settings in the pipeline configuration; "
                f"name the key's path there, e.g. retrieve.body.{name}"
            )
    if job.spec.pipeline_config is None and not changed:
        return None
    if isinstance(data.get("id_map"), str) and job.spec.pipeline_config is not None:
        data["id_map"] = str((job.spec.pipeline_config.parent / data["id_map"]).resolve())
    return data


def _set_path(data: dict[str, Any], parts: Sequence[str], value: Scalar, spec: GridSpec) -> None:
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise GridError(
                f"{spec.where}: [axes] {'.'.join(parts)}: {part} is not a table in the pipeline configuration"
            )
        node = child
    node[parts[-1]] = value


def jobs(spec: GridSpec, configs: Sequence[Configuration], split: str) -> list[Job]:
    return [Job(spec, c, split, s, spec.shards) for c in configs for s in range(1, spec.shards + 1)]


def finished(job: Job) -> bool:
    """A complete results file with the job's record beside it, recording the same identity."""
    try:
        record = json.loads(job.record.read_text(encoding="utf-8"))
        results = load_results(job.results)
    except (OSError, ValueError, ResultsFileError):
        return False
    return record.get("identity") == job.identity() and bool(results.get("run", {}).get("complete"))


@dataclass(frozen=True)
class JobOutcome:
    job: Job
    ran: bool  # False: finished before, not run again
    exit_code: int | None
    seconds: float
    problem: str = ""  # why the job has no usable results

    @property
    def ok(self) -> bool:
        return not self.problem


def run_job(job: Job, cwd: Path, env: Mapping[str, str] | None = None) -> JobOutcome:
    """Run one job unless finished; its output goes to a log file beside its results."""
    if finished(job):
        return JobOutcome(job, False, None, 0.0)
    job.folder.mkdir(parents=True, exist_ok=True)
    config = pipeline_config(job)
    config_path = None
    if config is not None:
        config_path = job.results.with_suffix(".pipeline.toml")
        config_path.write_text(tomli_w.dumps(config), encoding="utf-8")
    job.record.unlink(missing_ok=True)
    log = job.results.with_suffix(".log")
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(
            job.command(config_path), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=dict(env or os.environ)
        )
    seconds = time.monotonic() - start
    problem = _problem(job, proc.returncode, log)
    if not problem:
        job.record.write_text(json.dumps({"identity": job.identity(), "exit_code": proc.returncode}, indent=1))
    return JobOutcome(job, True, proc.returncode, seconds, problem)


def _problem(job: Job, code: int, log: Path) -> str:
    if code not in FINISHED_EXITS:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        return f"pytest exited {code} (see {log}): " + " / ".join(tail)
    try:
        results = load_results(job.results)
    except (OSError, ResultsFileError) as exc:
        return f"no usable results file ({exc})"
    if not results.get("run", {}).get("complete"):
        return f"the results file {job.results} is incomplete (the run stopped early)"
    return ""


def run_jobs(
    todo: Sequence[Job], cwd: Path, say: Callable[[str], None] = print, env: Mapping[str, str] | None = None
) -> list[JobOutcome]:
    outcomes = []
    for i, job in enumerate(todo, 1):
        outcome = run_job(job, cwd, env)
        state = "finished before: not rerun" if not outcome.ran else f"ran in {outcome.seconds:.1f} s"
        say(
            f"grid job {i}/{len(todo)} {job.label}: {state}"
            + (f" — FAILED: {outcome.problem}" if outcome.problem else "")
        )
        outcomes.append(outcome)
    return outcomes
