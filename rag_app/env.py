"""Where a remote OpenAI-compatible endpoint is, read from environment variables.

Every remote component (embedder, generator, judge, reranker) is configured the same
way, by a variable prefix::

    {PREFIX}_BASE_URL   falls back to OPENAI_BASE_URL
    {PREFIX}_MODEL      no environment fallback (a model name is endpoint-specific);
                        the caller may pass a default, e.g. from Settings
    {PREFIX}_API_KEY    falls back to OPENAI_API_KEY

Why the environment and not Settings: keys are secrets and Settings are dumped into
result files (see ``rag_app.settings``). Why one helper: the messages for a missing or
malformed variable, and the rule that the key never shows up in a ``repr``, a log line
or an error, should be written once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from rag_app.errors import ConfigError

FALLBACK_BASE_URL = "OPENAI_BASE_URL"
FALLBACK_API_KEY = "OPENAI_API_KEY"
FIELDS: tuple[str, ...] = ("base_url", "model", "api_key")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, repr=False)
class EndpointConfig:
    """One endpoint: base URL, model and key, plus which variable each came from.

    The ``*_var`` fields name the source of each value (e.g. ``"OPENAI_API_KEY"`` when
    the prefixed variable was unset) so that messages point at the variable to fix.
    ``repr``/``str`` go through :meth:`redacted` and never show the key.
    """

    base_url: str
    model: str
    api_key: str = ""
    prefix: str = ""
    base_url_var: str = ""
    model_var: str = ""
    api_key_var: str = ""
    fallback: bool = True

    @classmethod
    def from_env(
        cls, prefix: str, env: Mapping[str, str] = os.environ, model_default: str = "", *, fallback: bool = True
    ) -> EndpointConfig:
        """Read ``{prefix}_BASE_URL``, ``{prefix}_MODEL``, ``{prefix}_API_KEY`` (see module doc).

        Empty or whitespace-only variables count as unset, so ``export X=`` in a CI
        file does not shadow the fallback with an empty value.
        """
        # fallback=False for endpoints that are not OpenAI's (a reranker): sending
        # OPENAI_API_KEY to some other host would leak it.
        extra_url = (FALLBACK_BASE_URL,) if fallback else ()
        extra_key = (FALLBACK_API_KEY,) if fallback else ()
        base_url, base_url_var = _first(env, f"{prefix}_BASE_URL", *extra_url)
        model, model_var = _first(env, f"{prefix}_MODEL")
        if not model and model_default:
            model, model_var = model_default, "default"
        api_key, api_key_var = _first(env, f"{prefix}_API_KEY", *extra_key)
        return cls(base_url.rstrip("/"), model, api_key, prefix, base_url_var, model_var, api_key_var, fallback)

    # --- validation -----------------------------------------------------------------
    def missing(self, *fields: str) -> list[str]:
        """The environment variables to set for the given fields (all three if none)."""
        wanted = fields or FIELDS
        unknown = [f for f in wanted if f not in FIELDS]
        if unknown:
            raise ValueError(f"unknown EndpointConfig field(s) {unknown}; valid: {', '.join(FIELDS)}")
        or_url = f" (or {FALLBACK_BASE_URL})" if self.fallback else ""
        or_key = f" (or {FALLBACK_API_KEY})" if self.fallback else ""
        hints = {
            "base_url": f"{self.prefix}_BASE_URL{or_url}",
            "model": f"{self.prefix}_MODEL",
            "api_key": f"{self.prefix}_API_KEY{or_key}",
        }
        return [hints[f] for f in wanted if not getattr(self, f)]

    def require(self, *fields: str) -> EndpointConfig:
        """Return self, or raise ``ConfigError`` naming every missing variable at once.

        Also checks that the base URL is an http(s) URL with a host, because the SDK's
        error for a typo there ("unsupported protocol") does not say which variable.
        """
        missing = self.missing(*fields)
        if missing:
            raise ConfigError(
                f"{self.prefix or 'endpoint'} is not configured: set {'; '.join(missing)}. "
                "A local server that needs no key still needs a non-empty API key variable, "
                "e.g. 'none'."
            )
        if self.base_url and (not fields or "base_url" in fields):
            parts = urlsplit(self.base_url)
            if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
                raise ConfigError(
                    f"{self.base_url_var or self.prefix + '_BASE_URL'}={self._safe_url()!r} is not an "
                    "http(s) URL with a host; expected e.g. http://127.0.0.1:8000/v1"
                )
        return self

    # --- display (never the key) ------------------------------------------------------
    @property
    def address(self) -> str:
        """``host:port`` of the base URL (default port by scheme), for messages; "" if unset."""
        if not self.base_url:
            return ""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:  # e.g. "http://h:notaport"
            port = None
        return f"{host}:{port if port is not None else _DEFAULT_PORTS.get(parts.scheme, '?')}"

    def redacted(self) -> str:
        """A one-line description that is safe to log: the key shown as set/unset only."""
        key = f"<set via {self.api_key_var}>" if self.api_key else "<unset>"
        return (
            f"EndpointConfig(prefix={self.prefix!r}, base_url={self._safe_url()!r}, "
            f"model={self.model!r}, api_key={key})"
        )

    def __repr__(self) -> str:
        return self.redacted()

    __str__ = __repr__

    def _safe_url(self) -> str:
        """The base URL without ``user:password@`` (a key can hide there too)."""
        parts = urlsplit(self.base_url)
        if parts.username is None and parts.password is None:
            return self.base_url
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _first(env: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The first non-blank variable among ``names`` and its name, else ("", "")."""
    for name in names:
        value = (env.get(name) or "").strip()
        if value:
            return value, name
    return "", ""
