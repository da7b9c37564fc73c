"""Secrets in text: where they are, their redaction, and cuts that never fall inside one.

Each rule names a kind of secret; a match is replaced by `[REDACTED:<kind>]`. Rules favour precision on
well-known token formats (provider prefixes, PEM blocks, JWTs, credentials in URLs and headers) and catch
generic `password = …` / `api_key: …` / `*_TOKEN=…` assignments whose value looks like a secret.

Redaction works on a whole text: every rule finds its matches in the original, overlapping matches are
merged, and each merged span is replaced once. A text about to be cut is redacted (or its secrets located)
before the cut, never after: a piece of a key that a cut separated from its `BEGIN` line, or the first
half of a token, is no longer recognisable (`redact_slice`, `clear_cut`).

Secrets in an encoding are found too: a base64 blob is redacted whole when what it decodes to holds a
secret (a `.env` piped through `base64`, a Kubernetes `.dockerconfigjson`), a base64 value under a name
that says secret (a Kubernetes Secret's `data:`) when it decodes to text, and URL-encoded or twice
JSON-escaped assignments like plain ones. Ordinary base64 (images, hashes, key-less text) decodes to
binary or to text without a secret and stays.

Standard library only, and cheap on text without secrets: each rule lists strings every match contains,
and a text holding none of them is not searched with that rule.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from typing import Final, NamedTuple

from memex.plain import FrozenRecord


class Rule(FrozenRecord):
    __slots__ = ("_pattern", "accept", "case_folded_triggers", "groups", "kind", "source", "triggers")

    kind: Final[str]
    source: Final[str]  # the pattern; compiled when first needed (a hook that cuts a title pays for few rules)
    # The groups that hold the secret, the first that matched is redacted (empty: the whole match).
    groups: Final[tuple[int, ...]]
    # Every match contains one of these, or `accept` takes it only in a text that does (compared with the
    # case-folded text when the pattern ignores case): a text without any is skipped without running the
    # pattern, which is what makes redaction fast (most texts hold no secret). Empty: the rule always runs
    # (its pattern is anchored cheaply).
    triggers: Final[tuple[str, ...]]
    # A last check of a match (what a regular expression cannot say: that a blob decodes to a secret, or
    # what precedes the match); None: every match is a secret.
    accept: Final[Callable[[re.Match[str]], bool] | None]
    case_folded_triggers: Final[bool]  # compared with the case-folded text, though the pattern minds case

    def __init__(
        self,
        kind: str,
        source: str,
        groups: tuple[int, ...] = (),
        triggers: tuple[str, ...] = (),
        accept: Callable[[re.Match[str]], bool] | None = None,
        case_folded_triggers: bool = False,
    ) -> None:
        self.kind = kind
        self.source = source
        self.groups = groups
        self.triggers = triggers
        self.accept = accept
        self.case_folded_triggers = case_folded_triggers
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self.source)
        return self._pattern

    @property
    def ignores_case(self) -> bool:
        """Whether the triggers are compared with the case-folded text."""
        return self.case_folded_triggers or self.source.startswith("(?i)")

    def folded(self) -> Rule:
        """This rule with its triggers compared with the case-folded text."""
        return Rule(self.kind, self.source, self.groups, self.triggers, self.accept, case_folded_triggers=True)


class Span(NamedTuple):
    """A secret's place in a text: [start, end) and its kind."""

    start: int
    end: int
    kind: str


def _rule(kind: str, pattern: str, triggers: tuple[str, ...], *groups: int) -> Rule:
    return Rule(kind, pattern, groups, triggers)


_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
# A value in an assignment: quoted (spaces allowed inside), or a run without spaces or separators.
# A quote may be escaped, once or more: JSON inside a shell or JSON string (`curl -d "{\"password\": \"…\"}"`),
# and that inside a JSON string again (`\\\"password\\\": …`).
_VALUE = r"""(?:"([^"\n]{4,})"|'([^'\n]{4,})'|\\+"([^"\\\n]{4,})\\+"|([^\s"',;]{8,}))"""
# The quote that may close a key or open a value, escaped or not.
_QUOTE = r"""(?:\\*["'])?"""
# Placeholders are not secrets (and a marker is never redacted twice).
_NOT_PLACEHOLDER = (
    rf"""(?!{_QUOTE}(?:\$\{{|\$\(|<|\*{{3}}|your[_\-]|xxx|changeme|\[?REDACTED|null\b|none\b|true\b|false\b|"""
    # …nor is a reference to where the secret is kept (`apiKey: process.env.API_KEY`, `self.config.key`).
    r"""(?:process\.)?env\.|os\.(?:environ|getenv)|getenv\(|this\.|self\.|config\.|settings\.))"""
)


def _base64_cores(*words: str) -> tuple[str, ...]:
    """What base64 always holds where `words` were encoded: for each of the three alignments of a word
    in the encoded bytes, the characters that only its own bytes decide."""
    cores = []
    for word in words:
        raw = word.encode()
        for shift in range(3):
            encoded = base64.b64encode(bytes(shift) + raw + bytes(3)).decode()
            inside = [i for i in range(len(encoded)) if 6 * i >= 8 * shift and 6 * i + 6 <= 8 * (shift + len(raw))]
            cores.append(encoded[inside[0] : inside[-1] + 1])
    return tuple(dict.fromkeys(cores))


# The names of secrets as base64 holds them (PASSWORD, client_secret, API_TOKEN, STRIPE_KEY…; each core
# costs a scan of every text, so lower-case token and key names, rarer in `.env` files, are left out), and the
# start of a Docker config (`{"auths":`, a Kubernetes `.dockerconfigjson`): a blob holding none is not decoded.
_BASE64_CORES = (
    *_base64_cores("ASSW", "assw", "ECRET", "ecret", "OKEN", "_KEY"),
    "eyJhdXRocyI6",
)
_LINE_SPACE = dict.fromkeys(map(ord, "\t\n\r"))
# A blob longer than this is not decoded (a .env is far shorter; images are not worth the time).
_MAX_BLOB = 65_536
# The name before a base64 value (`credentials:`) or a URL-encoded one (`password%3D`) that says secret.
_BASE64_NAME = re.compile(r"(?i)(?:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|auth|key)[\"']?[ \t]*\Z")
_ENCODED_NAME = re.compile(
    r"(?i)(?:password|passwd|pwd|pass|secret|api[_\-]?key|apikey|access[_\-]?key|token|private[_\-]?key)"
    r"[\w.\-]{0,64}(?:%2[27])?(?:%20|\+)*\Z"
)
_NAME_WINDOW = 96


def _decoded_text(blob: str) -> str | None:
    """The text `blob` (base64, maybe wrapped in lines) decodes to; None when it is not base64 of text."""
    compact = "".join(blob.split())
    compact = compact[: len(compact) // 4 * 4]  # cut short (by a cut's window): decoded up to the cut
    try:
        text = base64.b64decode(compact, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None
    text = text.removesuffix("\ufffd")  # a character the cut halved
    if not text or "\ufffd" in text or not text.translate(_LINE_SPACE).isprintable():
        return None  # bytes (an image, a hash, a key body), not text
    return text


def _holds_secret(match: re.Match[str]) -> bool:
    """Whether a base64 blob decodes to text holding a secret (a `.env`, a `password: …` line, a key)."""
    blob = match.group()
    if len(blob) > _MAX_BLOB or not any(core in blob for core in _BASE64_CORES):
        return False
    text = _decoded_text(blob)
    return text is not None and bool(secret_spans(text))


def _secret_data(match: re.Match[str]) -> bool:
    """Whether a base64 value is under a secret's name, in `data` (a Kubernetes Secret), and decodes to text."""
    at, text = match.start(), match.string
    if _BASE64_NAME.search(text, max(0, at - _NAME_WINDOW), at) is None or text.find("data", 0, at) < 0:
        return False
    return _decoded_text(match.group(1)) is not None


def _encoded_name(match: re.Match[str]) -> bool:
    """Whether a URL-encoded value follows a secret's name."""
    at = match.start()
    return _ENCODED_NAME.search(match.string, max(0, at - _NAME_WINDOW), at) is not None


RULES: tuple[Rule, ...] = (
    # --- keys -------------------------------------------------------------------------------------------
    _rule("private-key", rf"-----BEGIN {_PEM_LABEL}-----[\s\S]*?(?:-----END {_PEM_LABEL}-----|\Z)", ("PRIVATE KEY",)),
    # The end of a key whose BEGIN line is not in this text: its body lines up to the END line.
    _rule(
        "private-key",
        rf"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/=]{{16,}}(?:\\r\\n|\\n|\r?\n))+[A-Za-z0-9+/=]*-----END {_PEM_LABEL}-----",
        ("PRIVATE KEY",),
    ),
    # A key in base64 (kubeconfig's `client-key-data`, a Kubernetes secret): `-----BEGIN … PRIVATE KEY` encoded.
    _rule(
        "private-key",
        r"\bLS0tLS1CRUdJTi(?:BSU0EgUFJJVkFURSBL|BFQyBQUklWQVRFIEtF|BEU0EgUFJJVkFURSBL|BPUEVOU1NIIFBSSVZBVEUgS0VZ|"
        r"BFTkNSWVBURUQgUFJJVkFURSBL|BQUklWQVRFIEtF)[A-Za-z0-9+/]*={0,2}",
        ("LS0tLS1CRUdJTi",),
    ),
    _rule("private-key", r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC: [0-9a-fA-F]+|\Z)", ("PuTTY-User-Key",)),
    # Key material without any header: three or more lines of 60 to 80 base64 characters (PEM and
    # OpenSSH bodies are 64 and 70 wide), as left by a cut or pasted alone.
    _rule("key-material", r"(?m)^[ \t]*(?:[A-Za-z0-9+/]{60,80}={0,2}[ \t]*(?:\r?\n[ \t]*|\Z)){3,}", ()),
    # --- provider tokens ----------------------------------------------------------------------------
    _rule("anthropic-key", r"\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    _rule(
        "openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}", ("T3BlbkFJ",)
    ),
    _rule("openai-key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}", ("sk-",)),
    # OpenAI's older keys and the OpenAI-compatible providers' (DeepSeek, OpenRouter, Moonshot…).
    _rule("api-key", r"\bsk-(?:or-v\d-)?[A-Za-z0-9]{32,}(?![A-Za-z0-9_\-])", ("sk-",)),
    _rule("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{60,}\b", ("github_pat_",)),
    _rule("gitlab-token", r"\bgl(?:pat|ptt|dt|rt|cbt|ft|imt|oas|soat|agent)-[A-Za-z0-9_\-]{20,}", ("gl",)),
    _rule("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", ("AKIA", "ASIA", "ABIA", "ACCA")),
    _rule(
        "aws-secret-key",
        # `aws_secret_access_key = …`, and `aws configure set aws_secret_access_key …` (a space between)
        r"(?i)\baws_?secret_?access_?key\b[\"']?(?:\s*[:=]\s*|\s+)[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("secret",),
        1,
    ),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", ("AIza",)),
    _rule("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    _rule("google-client-secret", r"\bGOCSPX-[A-Za-z0-9_\-]{20,}", ("GOCSPX-",)),
    _rule("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", ("xox",)),
    _rule("slack-token", r"\bxapp-\d-[A-Za-z0-9\-]{10,}", ("xapp-",)),
    _rule(
        "slack-webhook",
        # `/` may be escaped (`https:\/\/hooks.slack.com\/services\/…` in JSON)
        r"https:\\?/\\?/hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?:[A-Za-z0-9_\-]|\\?/)+",
        ("hooks.slack",),
    ),
    _rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}\b", ("_live_", "_test_")),
    _rule("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9+/=]{24,}", ("whsec_",)),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", ("SG.",)),
    _rule("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", ("hf_",)),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    _rule("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", ("pypi-AgEIcHlwaS5vcmc",)),
    _rule("twilio-key", r"\bSK[0-9a-fA-F]{32}\b", ("SK",)),
    _rule("mailgun-key", r"\bkey-[0-9a-f]{32}\b", ("key-",)),
    _rule("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", ("_v1_",)),
    _rule("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ("shp",)),
    _rule("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d+)?\b", ("dapi",)),
    _rule("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{50,}", ("ATATT3",)),
    _rule("docker-token", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", ("dckr_",)),
    _rule("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", ("hvs.", "hvb.", "hvr.")),
    _rule("terraform-token", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}", (".atlasv1.",)),
    _rule("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b", (":AA",)),
    _rule("discord-token", r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b", ()),
    _rule("azure-storage-key", r"(?i)\bAccountKey=([A-Za-z0-9+/=]{40,})", ("accountkey=",), 1),
    _rule("azure-sas-signature", r"[?&]sig=([A-Za-z0-9%+/=]{20,})", ("sig=",), 1),
    _rule("linear-key", r"\blin_api_[A-Za-z0-9]{40}\b", ("lin_api_",)),
    _rule("supabase-token", r"\bsbp_[a-f0-9]{40}\b", ("sbp_",)),
    _rule("heroku-key", r"\bHRKU-AA[A-Za-z0-9_\-]{58}", ("HRKU-",)),
    _rule("age-secret-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", ("AGE-SECRET-KEY-",)),
    _rule("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", ("PMAK-",)),
    _rule("newrelic-key", r"\bNRAK-[A-Z0-9]{27}\b", ("NRAK-",)),
    _rule("grafana-token", r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b", ("glsa_",)),
    _rule("grafana-token", r"\bglc_[A-Za-z0-9+/]{32,}={0,2}", ("glc_",)),
    _rule("sentry-token", r"\b(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_\-]{50,})", ("sntry",)),
    _rule("notion-token", r"\bntn_\d{11}[A-Za-z0-9]{35}\b", ("ntn_",)),
    _rule("doppler-token", r"\bdp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9_\-.]{40,}", ("dp.",)),
    _rule("1password-token", r"\bops_eyJ[A-Za-z0-9+/=_\-]{50,}", ("ops_eyJ",)),
    _rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", ("eyJ",)),
    # --- headers, URLs, command lines --------------------------------------------------------------
    _rule("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9_\-\.=+/~]{20,})", ("bearer",), 1),
    _rule(
        "authorization",
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+"
        r"([A-Za-z0-9_\-\.=+/~]{8,})|((?=[A-Za-z0-9_\-\.=+/~]*\d)[A-Za-z0-9_\-\.=+/~]{12,}))",
        ("authorization",),
        1,
        2,
    ),
    # scheme://user:password@host: the user and the host stay. The password may hold any character but a
    # space, `@` and `/` included: it runs to the last `@` of the URL that a host follows (not a port:
    # `http://localhost:5173/@vite/client` holds no password).
    _rule(
        "url-password",
        # The host is part of the match (not only looked at): a cut between the `@` and the host crosses it.
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]{0,256}:(?!\d{1,5}/)(\S{1,256})@\[?[A-Za-z0-9_.\-:%]+\]?"
        r"(?=[:/?#\s\"'`<>),;\]]|$)",
        ("://",),
        1,
    ),
    _rule(
        "password-flag",
        r"(?i)(?:^|(?<=\s))--?(?:password|passwd|pass|passphrase|(?:src|dest|new)?(?:store|key)pass|token|api-key|apikey|"
        r"secret|client-secret|auth-token)"
        r"(?:=|\s+)" + _NOT_PLACEHOLDER + r"[\"']?([^\s\"']{4,})",
        ("pass", "token", "api", "secret"),
        1,
    ),
    # curl -u user:password, curl --user=user:password (not `-u "$USER:$PASS"`)
    _rule(
        "password-flag",
        r"\bcurl\b[^\n|;&]*?\s(?:-u\s*|--user(?:=|\s+))[\"']?[^\s:\"']*:(?!\$)([^\s\"']{4,})",
        ("curl",),
        1,
    ),
    # The commands that take a password after a short flag or in a place of their own: docker login -p,
    # sshpass -p, mysql -p…, redis-cli -a, htpasswd -b, gh secret set --body… (not the many other commands'
    # `-p`: a port, a parent folder).
    _rule(
        "password-flag",
        r"\b(?:(?:docker|podman|nerdctl|buildah|skopeo|az)[ \t]+login\b[^\n|;&]*?[ \t]-p[ \t]+|sshpass[ \t]+-p[ \t]*|"
        r"(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p(?=[^\s\-])|"
        r"(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\n|;&]*?[ \t]-p[ \t]+|"
        r"redis-cli\b[^\n|;&]*?[ \t]-a[ \t]+|sqlcmd\b[^\n|;&]*?[ \t]-P[ \t]+|openssl[ \t]+\w\S*[^\n|;&]*?[ \t]-k[ \t]+|"
        r"ldap(?:search|add|modify|delete|passwd|whoami)\b[^\n|;&]*?[ \t]-w[ \t]+|"
        r"ssh-keygen\b[^\n|;&]*?[ \t]-[NP][ \t]+|"
        r"smbclient\b[^\n|;&]*?[ \t]-U[ \t]+\S+?%|htpasswd[ \t]+-\w*b\w*[ \t]+(?:-\S+[ \t]+)*\S+[ \t]+\S+[ \t]+|"
        r"vault[ \t]+login[ \t]+(?!-)|gh[ \t]+secret[ \t]+set\b[^\n|;&]*?[ \t](?:--body|-b)(?:=|[ \t]+)|"
        r"npm[ \t]+config[ \t]+set[ \t]+\S*:_(?:authToken|auth|password)[ \t]+|REDISCLI_AUTH=)"
        r"(?!\$)[\"']?([^\s\"']{4,})",
        (
            "login",
            "sshpass",
            "mysql",
            "mariadb",
            "mongo",
            "redis-cli",
            "sqlcmd",
            "openssl",
            "ldap",
            "ssh-keygen",
            "smbclient",
            "htpasswd",
            "secret set",
            "npm config",
            "REDISCLI_AUTH",
        ),
        1,
    ),
    # A password piped to the command that reads it: `echo … | sudo -S`, `echo … | docker login --password-stdin`
    _rule(
        "password-flag",
        r"\becho[ \t]+(?!\$)[\"']?([^\s\"'|]{4,})[\"']?[ \t]*\|[ \t]*"
        r"(?:sudo[ \t]+(?:-\w+[ \t]+)*-S\b|[^\n|;&]*--password-stdin)",
        ("sudo", "password-stdin"),
        1,
    ),
    # base64 of user:password: `"auth": "…"` in ~/.docker/config.json, `_auth=…` in .npmrc
    _rule(
        "basic-auth",
        r"(?:\"auth\"\s*:\s*\"|(?<![\w.])_auth\s*=\s*[\"']?)((?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{12,}={0,2})",
        ('"auth"', "_auth"),
        1,
    ),
    # A Cookie / Set-Cookie header holding a session (a value of 16+ characters): its name=value pairs.
    _rule(
        "cookie",
        r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*(?=(?:[\w.\-]+=[^\s;,\"']*;[ \t]*)*[\w.\-]+=[^\s;,\"']{16,})"
        r"([\w.\-]+=[^\s;,\"']*(?:;[ \t]*[\w.\-]+=[^\s;,\"']*)*)",
        ("cookie",),
        1,
    ),
    _rule("netrc-password", r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S+)", ("machine",), 1),
    # password = "…", api_key: …, client_secret=… (a value of 8+ characters, or quoted, not a placeholder)
    _rule(
        "secret-assignment",
        r"(?i)(?:password|passwd|pwd|secret|api[_\-]?key|apikey|access[_\-]?key|access[_\-]?token|"
        r"auth[_\-]?token|client[_\-]?secret|private[_\-]?key)"
        rf"[\w.\-]{{0,64}}{_QUOTE}\s*[:=]\s*" + _NOT_PLACEHOLDER + _VALUE,
        ("passw", "pwd", "secret", "api", "key", "token", "private"),
        1,
        2,
        3,
        4,
    ),
    # A name that ends in PASS or PASSPHRASE (`DB_PASS=`, `GPG_PASSPHRASE:`), not `bypass`, `compass`.
    _rule(
        "secret-assignment",
        rf"(?i)(?<![a-z])pass(?:phrase)?{_QUOTE}\s*[:=]\s*" + _NOT_PLACEHOLDER + _VALUE,
        ("pass",),
        1,
        2,
        3,
        4,
    ),
    # The keys that sign or encrypt: RAILS_MASTER_KEY=…, APP_KEY=base64:…, JWT_SIGNING_KEY: …
    _rule(
        "secret-assignment",
        r"(?i)(?:master|encryption|signing|hmac|jwt|app|subscription)[_\-]?key[\w.\-]{0,64}"
        rf"{_QUOTE}\s*[:=]\s*" + _NOT_PLACEHOLDER + _VALUE,
        tuple(
            f"{name}{sep}key"
            for name in ("master", "encryption", "signing", "hmac", "jwt", "app", "subscription")
            for sep in ("_", "-", "")
        ),
        1,
        2,
        3,
        4,
    ),
    # GITHUB_TOKEN=…, "token": "…" (letters and digits, 12+: not a word, not a number)
    _rule(
        "token-assignment",
        # `MY_TOKEN`, `token`, and camelCase `SessionToken`, `botToken` (not `tokenizer`, `maxTokens: 4096`)
        rf"(?i)(?:(?-i:T)|(?<![a-z0-9])t)okens?{_QUOTE}\s*[:=]\s*{_QUOTE}"
        r"((?=[^\s\"',;\\]*[A-Za-z])(?=[^\s\"',;\\]*\d)[^\s\"',;\\]{12,})",
        ("token",),
        1,
    ),
    # --- encoded ----------------------------------------------------------------------------------
    # base64 whose text holds a secret, one line or wrapped (GNU base64 at 76, openssl at 64): redacted whole.
    Rule(
        "base64-secret",
        r"(?<![A-Za-z0-9+/])(?:(?:[A-Za-z0-9+/]{60,80}\r?\n)+[A-Za-z0-9+/]*={0,2}|[A-Za-z0-9+/]{16,}={0,2})"
        r"(?![A-Za-z0-9+/=])",
        triggers=_BASE64_CORES,
        accept=_holds_secret,
    ),
    # A base64 value of a Kubernetes Secret's `data` (YAML or JSON) under a name that ends like a secret's
    # (`credentials: …`, `"auth-token": "…"`) and decodes to text; not `tokenizer: …`, not a word.
    Rule(
        "secret-assignment",
        r":[ \t]*[\"']?((?:[A-Za-z0-9+/]{4}){2,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)(?![A-Za-z0-9+/=])",
        (1,),
        ("data",),
        _secret_data,
    ),
    # URL-encoded assignments: `password%3Dhunter2`, `%22api_key%22%3A%22…%22`, `client_secret%20%3D%20…`;
    # the value runs to an encoded separator (`%26` &, `%22` ", `%2C` ,, `%20`, `+`), not a placeholder.
    Rule(
        "secret-assignment",
        r"%3[ADad](?:%20|\+)*(?:%2[27])?(?!%24|%3[Cc]|\$|<|(?i:your|xxx|changeme|(?:true|false|null|none)(?![a-z0-9])))"
        r"((?:[A-Za-z0-9_.~!*\-]|%(?!2[0267Cc]|3[Bb])[0-9A-Fa-f]{2}){4,})",
        (1,),
        ("%3d", "%3a"),
        _encoded_name,
    ).folded(),
)


def secret_spans(text: str) -> list[Span]:
    """Where the secrets of `text` are: sorted, overlapping matches merged (the first rule names it)."""
    return _merged([Span(start, end, kind) for start, end, _, kind in _matches(text)])


def _matches(text: str) -> Iterator[tuple[int, int, int, str]]:
    """Every rule's matches in `text`: where its secret starts and ends, where the whole match ends (a rule
    may need what follows a secret: the `@host` after a URL's password, a closing quote), and its kind."""
    folded: str | None = None
    for rule in RULES:
        if rule.triggers:
            if rule.ignores_case:
                folded = text.casefold() if folded is None else folded
                haystack = folded
            else:
                haystack = text
            if not any(trigger in haystack for trigger in rule.triggers):
                continue
        for match in rule.pattern.finditer(text):
            group = next((g for g in rule.groups if match.group(g) is not None), 0)
            start, end = match.span(group)
            if end > start and (rule.accept is None or rule.accept(match)):
                yield start, end, match.end(), rule.kind


def _merged(spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda s: (s.start, -s.end))
    merged: list[Span] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Span(last.start, max(last.end, span.end), last.kind)
        else:
            merged.append(span)
    return merged


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str) -> tuple[str, int]:
    """`text` with every secret replaced by `[REDACTED:<kind>]`, and how many were replaced."""
    return redact_slice(text, 0, len(text))


def redact_slice(text: str, start: int, end: int, secrets: list[Span] | None = None) -> tuple[str, int]:
    """`text[start:end]` redacted as a part of `text`: a secret that begins before the slice or ends
    after it is still recognised (from the whole text) and its piece in the slice replaced. `secrets`:
    `secret_spans(text)` when already known (several pieces of one text)."""
    found = secret_spans(text) if secrets is None else secrets
    spans = [s for s in found if s.end > start and s.start < end]
    parts: list[str] = []
    at = start
    for span in spans:
        parts.append(text[at : max(at, span.start)])
        parts.append(_marker(span.kind))
        at = max(at, span.end)
    parts.append(text[at:end])
    return "".join(parts), len(spans)


def clear_cut(text: str, limit: int) -> int:
    """Where to cut `text` to at most `limit` characters without cutting a secret in two, nor between a
    secret and what its rule needs after it (a piece ending `postgres://app:pw`, without its `@host`, is no
    longer recognised): `limit`, or the start of the secret whose match crosses it (the secret then goes
    whole with the part cut off)."""
    if limit >= len(text):
        return len(text)
    found = list(_matches(text[: limit + CUT_LOOKAHEAD]))
    cut = limit
    while crossing := [start for start, end, match_end, _ in found if start < cut < max(end, match_end)]:
        cut = min(crossing)  # earlier: an overlapping secret may cross the new cut
    return cut


# How far past a cut `clear_cut` looks for the end of a secret that crosses it: longer than any token
# (a private key longer than that is still found: its rule matches to the end of the text it is given).
CUT_LOOKAHEAD = 2_048
