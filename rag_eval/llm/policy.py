"""What the openai SDK lacks: one policy per endpoint (what is retried, timeouts, the
total time budget), its circuit breaker and its rate limiter shared by every thread.

The judge (through the SDK's retry loop, kept inside the policy by
:mod:`rag_eval.llm.guard`) and the HTTP adapter (:mod:`rag_eval.adapters.http_retry`) classify
failures with the same functions; docs/judge.md has the table of what is retried.
``timeout`` bounds one attempt, ``budget`` a whole call including the waits (an attempt
never gets more time than is left; a wait that would overrun ends the call).
"""

from __future__ import annotations

import email.utils
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from rag_eval.core.errors import ConfigError

RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 429})  # plus every 5xx
QUOTA_CODE = "insufficient_quota"
FORMAT_HINTS: tuple[str, ...] = ("response_format", "json_schema", "json_object")
# A 400 about the prompt, not the format: falling back to another format cannot help.
NOT_FORMAT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "too long")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BREAKER = 5
DEFAULT_CONCURRENCY = 4  # requests in flight per endpoint and process; 1 = one at a time
DEFAULT_PAUSE_S = 1.0  # a 429 without Retry-After holds every thread this long
_MIN_SPACING_S = 0.001
_CONCURRENCY_HELP = "an integer >= 1 (requests in flight; 1 = one at a time), e.g. 4"
BUDGET_SLACK_S = 30.0  # room for the waits between attempts in the default total budget


@dataclass(frozen=True)
class CallPolicy:
    """Timeouts, retries, total budget and breaker of one endpoint, plus the names of
    the settings that set them (messages tell the user which one to change)."""

    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    total_budget_s: float | None = None  # None: every attempt its full timeout plus BUDGET_SLACK_S
    breaker_after: int = DEFAULT_BREAKER  # 0 = no breaker
    max_retry_after: float = 30.0  # a server's Retry-After is honoured up to this
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_setting: str = "timeout"
    retries_setting: str = "max_retries"
    breaker_setting: str = "breaker"

    def __post_init__(self) -> None:
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ConfigError(f"{self.timeout_setting} must be a number of seconds > 0, got {self.timeout!r}")
        if isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise ConfigError(f"{self.retries_setting} must be an integer >= 0, got {self.max_retries!r}")
        if isinstance(self.breaker_after, bool) or self.breaker_after < 0:
            raise ConfigError(f"{self.breaker_setting} must be an integer >= 0 (0 = off), got {self.breaker_after!r}")
        if isinstance(self.concurrency, bool) or self.concurrency < 1:
            raise ConfigError(
                f"concurrency must be an integer >= 1 (1 = one request at a time), got {self.concurrency!r}"
            )
        if self.total_budget_s is not None and not self.total_budget_s > 0:
            raise ConfigError(f"the total time budget must be > 0 seconds, got {self.total_budget_s!r}")

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    @property
    def budget(self) -> float:
        """The total time budget of one call in seconds."""
        if self.total_budget_s is not None:
            return self.total_budget_s
        return self.timeout * self.attempts + BUDGET_SLACK_S

    @classmethod
    def from_env(
        cls,
        prefix: str,
        env: Mapping[str, str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        breaker_after: int = DEFAULT_BREAKER,
        concurrency: int | None = None,
    ) -> CallPolicy:
        """``{prefix}_TIMEOUT`` (seconds per attempt), ``{prefix}_MAX_RETRIES``,
        ``{prefix}_BREAKER``, ``{prefix}_CONCURRENCY``; a bad value is a ``ConfigError``
        naming the variable."""
        t, r, b, c = (f"{prefix}_{n}" for n in ("TIMEOUT", "MAX_RETRIES", "BREAKER", "CONCURRENCY"))
        breaker_help = "an integer >= 0 (consecutive failures before the endpoint is given up; 0 = never), e.g. 5"
        return cls(
            timeout=env_number(env, t, timeout, "a number of seconds > 0, e.g. 30", float, minimum=0.0, exclusive=True),
            max_retries=int(env_number(env, r, max_retries, "an integer >= 0, e.g. 3", int, minimum=0)),
            breaker_after=int(env_number(env, b, breaker_after, breaker_help, int, minimum=0)),
            concurrency=int(env_number(env, c, concurrency or DEFAULT_CONCURRENCY, _CONCURRENCY_HELP, int, minimum=1)),
            timeout_setting=t,
            retries_setting=r,
            breaker_setting=b,
        )


def env_number(
    env: Mapping[str, str],
    name: str,
    default: float,
    expected: str,
    kind: Callable[[str], float] | type[int] | type[float],
    *,
    minimum: float,
    exclusive: bool = False,
) -> float:
    """A numeric environment variable; unset or blank gives ``default``."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < minimum or (exclusive and value == minimum):
        raise ConfigError(f"{name}={raw!r} is not valid: expected {expected}; fix or unset {name}")
    return value


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff(attempt: int, random: Callable[[], float], *, base: float = 0.5, ceiling: float = 8.0) -> float:
    """Exponential backoff with jitter after failed attempt ``attempt`` (1-based), as the
    openai SDK does it: ``min(8, 0.5 * 2**(attempt-1))`` less up to 25 %."""
    return min(ceiling, base * 2 ** (attempt - 1)) * (1 - 0.25 * random())


def names_format(body: str, sent_format: bool) -> bool:
    """Whether an error body is about the ``response_format`` that was sent."""
    if not sent_format:
        return False
    text = body.lower()
    return any(h in text for h in FORMAT_HINTS) and not any(h in text for h in NOT_FORMAT_HINTS)


def status_kind(code: int, body: str, *, sent_format: bool = False) -> tuple[str, bool]:
    """(kind, retryable) of an HTTP error status; ``body`` is the raw error text."""
    if names_format(body, sent_format):
        return "format", False
    if code == 429 and QUOTA_CODE in body:
        return "quota", False
    if code == 429:
        return "rate_limit", True
    if code in RETRYABLE_STATUS or code >= 500:
        return "server", True
    if code in (401, 403):
        return "auth", False
    return "client", False


def transport_failure(exc: BaseException, timeout: float) -> tuple[str, str]:
    """(kind, detail) of an httpx transport error: ``timeout``, ``refused`` (nothing
    listens: waiting cannot help) or ``connection``."""
    import httpx  # loaded by every caller already; not by importing this module

    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"no response within the {timeout:g}s timeout"
    if is_refused(exc):
        return "refused", f"connection refused ({root_cause(exc)})"
    return "connection", f"connection failed ({root_cause(exc)})"


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the innermost cause (what actually went wrong)."""
    last = exc
    for cur in _chain(exc):
        last = cur
    return f"{type(last).__name__}: {last}"


def is_refused(exc: BaseException) -> bool:
    """True when nothing listens at the address: waiting cannot help."""
    return any(isinstance(c, ConnectionRefusedError) or "connection refused" in str(c).lower() for c in _chain(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    seen: set[int] = set()
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


class CircuitBreaker:
    """After ``threshold`` consecutive transport failures (timeout, refused or dropped
    connection, reset mid-reply, 5xx, time budget, a whole call of replies that are no
    chat completion) every later call fails at once; any answer resets the count. One per
    endpoint and process (under ``pytest -n N`` each worker finds out on its own)."""

    def __init__(self, threshold: int, *, name: str, setting: str = "") -> None:
        self.threshold, self.name, self.setting = threshold, name, setting  # threshold 0 = never opens
        self._lock = threading.Lock()
        self._failures = 0
        self._last = ""

    @property
    def open(self) -> bool:
        with self._lock:
            return self.threshold > 0 and self._failures >= self.threshold

    def message(self) -> str:
        """Why calls are no longer sent (the last failure, redacted by the caller)."""
        with self._lock:
            n, last = self._failures, self._last
        how = f" (set {self.setting} to change the threshold, 0 = never)" if self.setting else ""
        return (
            f"{self.name} gave up after {n} consecutive failed attempts "
            "(timeouts or transport failures); no further call is sent in this "
            f"process{how}. Last failure: {last}"
        )

    def record(self, *, transport_failure: bool, detail: str = "") -> None:
        with self._lock:
            if transport_failure:
                self._failures += 1
                self._last = detail
            else:
                self._failures = 0


class RateLimited(Exception):
    """The limiter would make the caller wait past its deadline."""


class RateLimiter:
    """One per endpoint, shared by every thread: at most ``concurrency`` requests in
    flight; after a 429 *every* thread waits until ``Retry-After`` (or
    :data:`DEFAULT_PAUSE_S`) has passed, then goes one at a time that far apart, each
    answer that is not a 429 halving the spacing; never waits past the call's deadline."""

    def __init__(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self._not_before = 0.0
        self._spacing = 0.0

    def hold(self, seconds: float | None) -> None:
        """The server said 429: nobody sends for ``seconds``, then one at a time."""
        wait = DEFAULT_PAUSE_S if seconds is None else max(seconds, _MIN_SPACING_S)
        with self._lock:
            self._not_before = max(self._not_before, self._clock() + wait)
            self._spacing = max(self._spacing, wait)

    def passed(self) -> None:
        """An answer that was not a 429: the spacing halves."""
        with self._lock:
            self._spacing = self._spacing / 2 if self._spacing / 2 >= _MIN_SPACING_S else 0.0

    @contextmanager
    def slot(self, deadline: float) -> Iterator[None]:
        """A place to send one request; ``RateLimited`` past ``deadline``."""
        if not self._slots.acquire(timeout=max(0.0, deadline - self._clock())):
            raise RateLimited(f"all {self.concurrency} request slots stayed busy until the time budget ran out")
        try:
            with self._lock:
                now = self._clock()
                turn = max(now, self._not_before)
                if turn >= deadline:
                    raise RateLimited(f"the server asked to wait {turn - now:.1f}s more, past the time budget")
                self._not_before = turn + self._spacing if self._spacing else self._not_before
            if turn > now:
                self._sleep(turn - now)
            yield
        finally:
            self._slots.release()
