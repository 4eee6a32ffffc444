"""Errors of adapter configuration: raised before any case runs, shown as usage errors."""

from __future__ import annotations

from rag_eval.core.errors import ConfigError


class AdapterConfigError(ConfigError):
    """The pipeline configuration cannot be used; the message names the file, key and fix."""
