"""Redaction of what leaves this computer: the rules live in `memex.redact` (text is redacted before it
is cut, which ingest and search need too); this module keeps the name the sync code imports."""

from __future__ import annotations

from memex.redact import RULES, Rule, Span, clear_cut, redact, redact_slice, secret_spans

__all__ = ["RULES", "Rule", "Span", "clear_cut", "redact", "redact_slice", "secret_spans"]
