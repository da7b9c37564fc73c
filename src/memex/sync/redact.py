"""Redaction of secrets from text that leaves this computer (mirrors published to other computers).

Each rule names a kind of secret; a match is replaced by `[REDACTED:<kind>]`. Rules favour precision on
well-known token formats (provider prefixes, PEM blocks, JWTs, credentials in URLs) and catch generic
`password = …` / `api_key: …` assignments whose value looks like a secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # the group that holds the secret (0: the whole match)
    # Every match contains one of these (compared with the case-folded text when the pattern ignores
    # case): a text without any is skipped without running the pattern, which is what makes redaction
    # fast (most texts hold no secret, and a pattern starting with \b is tried at every position).
    triggers: tuple[str, ...] = ()


def _rule(kind: str, pattern: str, triggers: tuple[str, ...], group: int = 0) -> Rule:
    return Rule(kind, re.compile(pattern), group, triggers)


RULES: tuple[Rule, ...] = (
    _rule(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----|\Z)",
        ("PRIVATE KEY",),
    ),
    _rule("anthropic-key", r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    _rule(
        "openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}", ("T3BlbkFJ",)
    ),
    _rule("openai-key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}", ("sk-",)),
    _rule("openai-key", r"\bsk-[A-Za-z0-9]{48}\b", ("sk-",)),
    _rule("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{60,}\b", ("github_pat_",)),
    _rule("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b", ("glpat-",)),
    _rule("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", ("AKIA", "ASIA", "ABIA", "ACCA")),
    _rule(
        "aws-secret-key",
        r"(?i)\baws_?secret_?access_?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("secret",),
        group=1,
    ),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", ("AIza",)),
    _rule("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b", ("xox",)),
    _rule("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", ("hooks.slack.com",)),
    _rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}\b", ("_live_", "_test_")),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", ("SG.",)),
    _rule("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", ("hf_",)),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    _rule("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", ("pypi-AgEIcHlwaS5vcmc",)),
    _rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", ("eyJ",)),
    _rule("bearer-token", r"(?i)\b(?:authorization\s*:\s*)?bearer\s+([A-Za-z0-9_\-\.=+/]{20,})", ("bearer",), 1),
    # scheme://user:password@host — keep the user and host, hide the password.
    _rule("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]{3,})@", ("://",), 1),
    # password = "…", api_key: …, secret_token=… (a value of 8+ non-space characters, not a placeholder)
    _rule(
        "secret-assignment",
        r"(?i)\b[\w.\-]*(?:password|passwd|pwd|secret|api[_\-]?key|access[_\-]?token|auth[_\-]?token|"
        r"client[_\-]?secret|private[_\-]?key)[\w.\-]*[\"']?\s*[:=]\s*[\"']?"
        r"(?!\$\{|<|\*{3}|your[_\-]|xxx|changeme|\[?REDACTED|null\b|none\b|true\b|false\b)([^\s\"',;]{8,})",
        ("passw", "pwd", "secret", "api", "token", "private"),
        group=1,
    ),
)


def redact(text: str) -> tuple[str, int]:
    """`text` with every secret replaced by `[REDACTED:<kind>]`, and how many were replaced."""
    count = 0
    folded = text.casefold()
    for rule in RULES:
        haystack = folded if rule.pattern.flags & re.IGNORECASE else text
        if not any(trigger in haystack for trigger in rule.triggers):
            continue
        found = 0
        if rule.group == 0:
            text, found = rule.pattern.subn(f"[REDACTED:{rule.kind}]", text)
        else:

            def replace(match: re.Match[str], rule: Rule = rule) -> str:
                start, end = match.span(rule.group)
                base = match.start()
                whole = match.group(0)
                return whole[: start - base] + f"[REDACTED:{rule.kind}]" + whole[end - base :]

            text, found = rule.pattern.subn(replace, text)
        if found:
            count += found
            folded = text.casefold()
    return text, count
