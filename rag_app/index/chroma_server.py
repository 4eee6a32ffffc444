"""Where a Chroma server is, how to authenticate to it, and what to say when it is not there.

Server mode is chosen by ``Settings.chroma_host`` (empty: the embedded store inside the
index directory). Host, port and TLS are settings; the auth token is not: it is read
from ``CHROMA_AUTH_TOKEN`` when the client is opened, like every other secret here
(see ``rag_app.env``), so settings dumps, fingerprints, manifests and results never
hold it. It is sent the way chromadb's own ``TokenAuthClientProvider`` sends it:
``Authorization: Bearer <token>`` by default, or ``X-Chroma-Token: <token>`` when
``CHROMA_AUTH_TOKEN_TRANSPORT_HEADER=X-Chroma-Token`` (Chroma's variable for the choice).

Timeouts: chromadb's ``HttpClient`` sends its requests with no timeout at all, so a
server that accepts connections but never answers (stopped, deadlocked, a wrong port
held by another program) would hang the run. Every request here gets
``Settings.chroma_timeout`` seconds: ``connect`` first asks for a heartbeat within that
time (the client's own first requests, made while it is constructed, cannot be given a
timeout), then sets the timeout on the client's HTTP session, so every later call
(add, query, get, count, heartbeat) fails after that long with a ``ServiceError``
naming the setting instead of waiting forever.

Why a diagnosis on failure instead of chromadb's message: chromadb says "Could not
connect to tenant default_tenant. Are you sure it exists?" both for a rejected token
and for a server that is not Chroma. One heartbeat request tells these apart, and the
message can then name the address and the fix.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_app.errors import ConfigError, ServiceError
from rag_app.redact import Redactor

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

    from rag_app.settings import Settings

DEFAULT_PORT = 8000
TOKEN_ENV = "CHROMA_AUTH_TOKEN"
TOKEN_HEADER_ENV = "CHROMA_AUTH_TOKEN_TRANSPORT_HEADER"
TOKEN_HEADERS: tuple[str, ...] = ("Authorization", "X-Chroma-Token")
DEFAULT_TIMEOUT = 30.0  # seconds per request, as Settings.chroma_timeout
TIMEOUT_HINT = "raise chroma_timeout (RAG_APP_CHROMA_TIMEOUT) if the server is just slow"
START_HINT = "chroma run --path .rag_cache/chroma-server --host {host} --port {port}"

log = logging.getLogger(__name__)


@dataclass(frozen=True, repr=False)
class ChromaServer:
    """A Chroma server address plus the token to send; ``repr`` never shows the token."""

    host: str
    port: int = DEFAULT_PORT
    ssl: bool = False
    token: str = ""
    token_header: str = TOKEN_HEADERS[0]
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str] = os.environ) -> ChromaServer | None:
        """The configured server, or None for the embedded store (``chroma_host`` empty)."""
        host = settings.chroma_host.strip()
        if not host:
            return None
        header = (env.get(TOKEN_HEADER_ENV) or "").strip() or TOKEN_HEADERS[0]
        canonical = {h.lower(): h for h in TOKEN_HEADERS}.get(header.lower())
        if canonical is None:
            raise ConfigError(f"{TOKEN_HEADER_ENV}={header!r}: use one of {', '.join(TOKEN_HEADERS)}")
        token = (env.get(TOKEN_ENV) or "").strip()
        return cls(host, settings.chroma_port, settings.chroma_ssl, token, canonical, settings.chroma_timeout)

    @property
    def url(self) -> str:
        """``http(s)://host:port``: how results and messages name the store."""
        return server_url(self.host, self.port, self.ssl)

    def headers(self) -> dict[str, str]:
        """The auth header for every request ({} without a token)."""
        if not self.token:
            return {}
        value = f"Bearer {self.token}" if self.token_header == "Authorization" else self.token
        return {self.token_header: value}

    def connect(self) -> ClientAPI:
        """A ``chromadb.HttpClient`` for this server, telemetry off, every request bounded by
        ``timeout``; ``ServiceError`` if the server is unusable or does not answer in time."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self._expect_an_answer()
        try:
            client = chromadb.HttpClient(
                host=self.host,
                port=self.port,
                ssl=self.ssl,
                headers=self.headers(),
                settings=ChromaSettings(anonymized_telemetry=False),
            )
        except Exception as exc:  # noqa: BLE001 - every failure gets one diagnosed message
            # ``from None``: the chained exception could carry request details; ours is redacted.
            raise self.diagnose(exc) from None
        apply_timeout(client, self.timeout)
        return client

    def _expect_an_answer(self) -> None:
        """One heartbeat within ``timeout``: a hung server fails here, not inside chromadb."""
        import httpx

        try:
            httpx.get(f"{self.url}/api/v2/heartbeat", timeout=self.timeout)
        except httpx.TimeoutException:
            raise timeout_error(self.url, self.timeout) from None
        except Exception as exc:  # noqa: BLE001 - refused, DNS, TLS: nobody to talk to
            raise unreachable_error(
                self.url, self.host, self.port, self.redact(f"{type(exc).__name__}: {exc}")
            ) from None

    def diagnose(self, exc: BaseException) -> ServiceError:
        """Why talking to the server failed, with the fix; the token is never in the text."""
        import httpx

        reason = self.redact(f"{type(exc).__name__}: {exc}")
        try:
            beat = httpx.get(f"{self.url}/api/v2/heartbeat", timeout=self.timeout)
        except Exception as probe:  # noqa: BLE001 - whatever stops the probe, the server is not reachable
            return unreachable_error(self.url, self.host, self.port, self.redact(f"{type(probe).__name__}: {probe}"))
        if beat.status_code != 200:
            return ServiceError(
                f"{self.url} answered HTTP {beat.status_code} to /api/v2/heartbeat: is it a Chroma server "
                f"(chromadb >= 1.0)? Check CHROMA_HOST/CHROMA_PORT (or RAG_APP_CHROMA_HOST/_PORT). ({reason})"
            )
        try:
            who = httpx.get(f"{self.url}/api/v2/auth/identity", headers=self.headers(), timeout=self.timeout)
            status = who.status_code
        except Exception:  # noqa: BLE001 - no identity endpoint answer: not an auth refusal
            status = 0
        if status in (401, 403):
            sent = f"a token in {self.token_header}" if self.token else "no token"
            return ServiceError(
                f"the Chroma server at {self.url} refused the request (HTTP {status}; we sent {sent}): set "
                f"{TOKEN_ENV} to a valid token, and {TOKEN_HEADER_ENV} to the header the server expects "
                f"({' or '.join(TOKEN_HEADERS)}). ({reason})"
            )
        return ServiceError(f"the Chroma server at {self.url} is up but the client failed: {reason}")

    def redact(self, text: str) -> str:
        return Redactor([self.token] if self.token else [], mark="<redacted>").redact(text)

    def __repr__(self) -> str:
        token = f"<set via {TOKEN_ENV}>" if self.token else "<unset>"
        return (
            f"ChromaServer(url={self.url!r}, token={token}, token_header={self.token_header!r}, "
            f"timeout={self.timeout:g})"
        )

    __str__ = __repr__


def server_url(host: str, port: int, ssl: bool) -> str:
    bracketed = f"[{host}]" if ":" in host else host  # IPv6 literal
    return f"{'https' if ssl else 'http'}://{bracketed}:{port}"


def unreachable_error(url: str, host: str, port: int | str, reason: str) -> ServiceError:
    """The one message for "no Chroma server there": the address and both ways out."""
    return ServiceError(
        f"cannot reach the Chroma server at {url} ({reason}). Start one with "
        f"`{START_HINT.format(host=host, port=port)}`, or unset CHROMA_HOST (and RAG_APP_CHROMA_HOST) "
        "to use the embedded store"
    )


def timeout_error(url: str, seconds: float) -> ServiceError:
    """The one message for "a Chroma server is there but does not answer"."""
    return ServiceError(
        f"the Chroma server at {url} did not answer within {seconds:g} s (chroma_timeout); check that it is "
        f"not stopped or overloaded, or {TIMEOUT_HINT}"
    )


def _session(client: ClientAPI) -> Any:
    """The ``httpx.Client`` a chromadb ``HttpClient`` sends its requests with, or None."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    return session if isinstance(session, httpx.Client) else None


def apply_timeout(client: ClientAPI, seconds: float) -> None:
    """Bound every later request of ``client`` by ``seconds`` (chromadb sets none)."""
    import httpx

    session = _session(client)
    if session is None:  # chromadb changed its internals: say so rather than hang silently later
        log.warning(
            "cannot set a request timeout on this chromadb client (%s); a hung server may hang the run",
            type(client).__name__,
        )
        return
    session.timeout = httpx.Timeout(seconds)


def client_timeout(client: ClientAPI) -> float | None:
    """The read timeout ``apply_timeout`` set on ``client``, or None."""
    session = _session(client)
    read = session.timeout.read if session is not None else None
    return float(read) if read is not None else None


def _timed_out(exc: BaseException) -> bool:
    import httpx

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (httpx.TimeoutException, TimeoutError)):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def client_location(client: ClientAPI) -> str:
    """``http(s)://host:port`` for a server client, ``embedded:<dir>`` for a local one.

    Never includes headers or credentials: this string goes into manifests and results.
    """
    s = client.get_settings()
    if s.chroma_server_host and "fastapi" in str(s.chroma_api_impl).lower():
        return server_url(
            str(s.chroma_server_host), int(s.chroma_server_http_port or DEFAULT_PORT), bool(s.chroma_server_ssl_enabled)
        )
    if s.is_persistent:
        return f"embedded:{s.persist_directory}"
    return "embedded:in-memory"


def is_server(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def alive(client: ClientAPI) -> bool:
    """Whether the client's server answers a heartbeat now (local clients always do)."""
    try:
        client.heartbeat()
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        return False
    return True


def lost_server_error(client: ClientAPI, exc: BaseException) -> ServiceError | None:
    """If ``exc`` came from a server that no longer answers, the error to raise instead; else None.

    A timed-out request is such an error at once (asking for a heartbeat would only wait
    as long again).
    """
    location = client_location(client)
    if not is_server(location):
        return None
    seconds = client_timeout(client)
    if seconds is not None and _timed_out(exc):
        return timeout_error(location, seconds)
    if alive(client):
        return None
    s = client.get_settings()
    headers = s.chroma_server_headers or {}
    secrets = [
        v
        for name in TOKEN_HEADERS
        for value in [str(headers.get(name) or "")]
        for v in (value, value.removeprefix("Bearer "))
        if v
    ]
    reason = Redactor(secrets, mark="<redacted>").redact(f"{type(exc).__name__}: {exc}")
    return unreachable_error(location, str(s.chroma_server_host), str(s.chroma_server_http_port), reason)
