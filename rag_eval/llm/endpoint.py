"""Where an OpenAI-compatible endpoint is, read from ``{PREFIX}_*`` environment variables.

``{PREFIX}_BASE_URL`` (falls back to ``OPENAI_BASE_URL``), ``{PREFIX}_MODEL`` (no
fallback: a model name is endpoint-specific), ``{PREFIX}_API_KEY`` (falls back to
``OPENAI_API_KEY``). Keys live in the environment, never in settings that end up in a
results file; ``repr`` shows whether the key is set, never its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from rag_eval.core.errors import ConfigError

FALLBACKS: Mapping[str, str] = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"}
SUFFIXES: Mapping[str, str] = {"base_url": "BASE_URL", "model": "MODEL", "api_key": "API_KEY"}
_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, repr=False)
class Endpoint:
    """Base URL, model and key of one endpoint, and the variable each came from."""

    prefix: str
    base_url: str = ""
    model: str = ""
    api_key: str = ""
    sources: Mapping[str, str] | None = None  # field -> variable it was read from

    @classmethod
    def from_env(cls, prefix: str, env: Mapping[str, str] = os.environ) -> Endpoint:
        values: dict[str, str] = {}
        sources: dict[str, str] = {}
        for name, suffix in SUFFIXES.items():
            for var in (f"{prefix}_{suffix}", FALLBACKS.get(name)):
                value = (env.get(var) or "").strip() if var else ""
                if value:  # blank counts as unset: `export X=` must not hide the fallback
                    values[name], sources[name] = value, str(var)
                    break
        return cls(
            prefix, values.get("base_url", "").rstrip("/"), values.get("model", ""), values.get("api_key", ""), sources
        )

    def var(self, name: str) -> str:
        """The variable that set ``name``, or the one to set."""
        return (self.sources or {}).get(name) or f"{self.prefix}_{SUFFIXES[name]}"

    def missing(self) -> list[str]:
        """Variables to set, model first (it has no fallback, so it is forgotten most)."""
        out = []
        for name in ("model", "base_url", "api_key"):
            if not getattr(self, name):
                fallback = FALLBACKS.get(name)
                out.append(f"{self.prefix}_{SUFFIXES[name]}" + (f" (or {fallback})" if fallback else ""))
        return out

    def problem(self) -> str | None:
        """Why this endpoint cannot be used (one sentence), or None."""
        missing = self.missing()
        if missing:
            listed = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
            return f"set {listed}"
        parts = urlsplit(self.base_url)
        if parts.scheme not in _PORTS or not parts.hostname:
            return (
                f"{self.var('base_url')}={self.safe_url()!r} is not an http(s) URL with a host; "
                "expected e.g. http://127.0.0.1:8000/v1"
            )
        return None

    def require(self) -> Endpoint:
        problem = self.problem()
        if problem:
            raise ConfigError(
                f"{self.prefix} endpoint is not configured: {problem}. A local server that needs "
                "no key still needs a non-empty API key variable, e.g. 'none'."
            )
        return self

    @property
    def address(self) -> str:
        """``host:port`` for messages (no scheme, no credentials, no path)."""
        if not self.base_url:
            return ""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        try:
            port = parts.port
        except ValueError:
            port = None
        return f"{host}:{port if port is not None else _PORTS.get(parts.scheme, '?')}"

    def same_server(self, other: Endpoint) -> bool:
        """Whether both reach one server: the same scheme, host, port and path (case of scheme
        and host, default ports and a trailing ``/`` ignored). The key is not compared: a 429
        or a dead server concerns the server (or the account behind it), whoever calls."""

        def where(ep: Endpoint) -> tuple[str, str, str]:
            parts = urlsplit(ep.base_url)
            return parts.scheme.lower(), ep.address.lower(), parts.path.rstrip("/")

        return bool(self.base_url) and where(self) == where(other)

    def safe_url(self) -> str:
        """The base URL without ``user:password@``."""
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, parts.query, parts.fragment))

    def __repr__(self) -> str:
        key = f"<set via {self.var('api_key')}>" if self.api_key else "<unset>"
        return f"Endpoint(prefix={self.prefix!r}, base_url={self.safe_url()!r}, model={self.model!r}, api_key={key})"

    __str__ = __repr__
