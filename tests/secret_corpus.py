"""A corpus of secrets in the formats providers issue and people paste: fake values (built at run time
from a seeded generator, never real), each in the context it is usually seen in, with the part that must
never leave the computer (`core`). Used by the redaction tests and by the tests of every outbound path.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

rng = random.Random(2026)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
# A window of this many characters of a secret's core found anywhere counts as a leak.
WINDOW = 12


def token(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    name: str  # the format
    text: str  # how it appears in a transcript
    core: str  # what must never leave (random: found elsewhere only by leaking)
    kind: str | None = None  # the marker it is replaced by, when one is expected

    def leaked_in(self, blob: str) -> str | None:
        """A piece of the core that is in `blob` (None when none is)."""
        for start in range(0, max(1, len(self.core) - WINDOW + 1)):
            piece = self.core[start : start + WINDOW]
            if piece in blob:
                return piece
        return None


def pem(label: str, lines: int = 12, width: int = 64) -> tuple[str, str]:
    body = "\n".join(token(B64, width) for _ in range(lines - 1)) + "\n" + token(B64, 40) + "=="
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


def _corpus() -> list[Secret]:
    found: list[Secret] = []

    def add(name: str, text: str, core: str, kind: str | None = None) -> None:
        found.append(Secret(name, text, core, kind))

    v = token(URLSAFE, 93) + "AA"
    add("anthropic api key", f"ANTHROPIC_API_KEY=sk-ant-api03-{v}", v, "anthropic-key")
    v = token(URLSAFE, 95)
    add("anthropic oauth access token", f'"accessToken": "sk-ant-oat01-{v}"', v, "anthropic-key")
    v = token(URLSAFE, 95)
    add("anthropic oauth refresh token", f'"refreshToken": "sk-ant-ort01-{v}"', v, "anthropic-key")
    v = token(URLSAFE, 80)
    add("anthropic admin key", f"admin key sk-ant-admin01-{v} for the org", v, "anthropic-key")
    v = token(URLSAFE, 74) + "T3BlbkFJ" + token(URLSAFE, 74)
    add("openai project key", f"export OPENAI_API_KEY=sk-proj-{v}", v, "openai-key")
    v = token(ALNUM, 48)
    add("openai legacy key", f"openai.api_key = 'sk-{v}'", v)
    v = token(HEX, 64)
    add("openrouter key", f"OPENROUTER_API_KEY=sk-or-v1-{v}", v)
    v = token(HEX, 32)
    add("deepseek key", f"the key sk-{v} works", v)
    v = token(ALNUM, 36)
    add("github classic token", f"git remote set-url origin https://x:ghp_{v}@github.com/o/r", v)
    v = token(ALNUM, 36)
    add("github oauth token", f"gh auth token -> gho_{v}", v, "github-token")
    v = token(ALNUM, 22) + "_" + token(ALNUM, 59)
    add("github fine-grained token", f"GH_TOKEN=github_pat_{v}", v)
    v = token(URLSAFE, 20)
    add("gitlab token", f"PRIVATE-TOKEN: glpat-{v}", v)
    v = token(UPPER, 16)
    add("aws access key id", f"aws_access_key_id = AKIA{v}", v, "aws-access-key")
    v = token(ALNUM + "/+", 40)
    add("aws secret access key", f"aws_secret_access_key = {v}", v)
    v = token(URLSAFE, 35)
    add("google api key", f"https://maps.googleapis.com/maps/api/geocode/json?key=AIza{v}", v)
    v = token(URLSAFE, 120)
    add("google oauth access token", f"access token ya29.{v}", v)
    v = token(URLSAFE, 28)
    add("google oauth client secret", f'"client_secret":"GOCSPX-{v}"', v)
    v = token("0123456789", 12) + "-" + token(ALNUM, 24)
    add("slack bot token", f"SLACK_BOT_TOKEN=xoxb-{token('0123456789', 11)}-{v}", v, "slack-token")
    v = token(ALNUM, 24)
    hook = f"https://hooks.slack.com/services/T0{token(UPPER, 8)}/B0{token(UPPER, 8)}/{v}"
    add("slack webhook", f"curl -X POST {hook}", v)
    v = token(ALNUM, 24)
    add("stripe secret key", f"stripe.api_key = 'sk_live_{v}'", v, "stripe-key")
    v = token(ALNUM, 32)
    add("stripe webhook secret", f"STRIPE_WEBHOOK_SECRET=whsec_{v}", v)
    v = token(URLSAFE, 22) + "." + token(URLSAFE, 43)
    add("sendgrid key", f"SENDGRID_API_KEY=SG.{v}", v)
    v = token(ALNUM, 34)
    add("hugging face token", f"huggingface-cli login --token hf_{v}", v)
    v = token(ALNUM, 36)
    add("npm token", f"//registry.npmjs.org/:_authToken=npm_{v}", v)
    v = token(URLSAFE, 70)
    add("pypi token", f"password = pypi-AgEIcHlwaS5vcmc{v}", v)
    v = token(HEX, 32)
    add("twilio api key", f"TWILIO_API_KEY=SK{v}", v)
    v = token(HEX, 64)
    add("digitalocean token", f"doctl auth init -t dop_v1_{v}", v)
    v = token(URLSAFE, 27)
    add("docker hub token", f"docker login -u me -p dckr_pat_{v}", v)
    v = token(URLSAFE, 90)
    add("vault token", f"VAULT_TOKEN=hvs.{v}", v)
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"dev"}').decode().rstrip("=")
    v = token(URLSAFE, 43)
    add("jwt", f"Cookie: session={head}.{claims}.{v}", v)
    v = token(URLSAFE + ".~", 40)
    add("bearer header", f'curl -H "Authorization: Bearer {v}" https://api.example.com/v2/items', v)
    v = base64.b64encode(f"deploy:{token(ALNUM, 20)}".encode()).decode()
    add("basic auth header", f"Authorization: Basic {v}", v)
    v = token(ALNUM, 40)
    add("api key header", f'curl -H "x-api-key: {v}" https://api.anthropic.com/v1/messages', v)
    text, body = pem("RSA PRIVATE KEY")
    add("pem rsa private key", text, body, "private-key")
    text, body = pem("OPENSSH PRIVATE KEY", lines=8, width=70)
    add("openssh private key", text, body, "private-key")
    text, body = pem("PRIVATE KEY", lines=10)
    escaped = text.replace("\n", "\\n")
    add("service account json", f'{{"type": "service_account", "private_key": "{escaped}\\n"}}', body.split("\n")[3])
    text, body = pem("EC PRIVATE KEY", lines=4)
    add("ec private key", text, body, "private-key")
    v = token(ALNUM, 16)
    add("url password", f"DATABASE_URL=postgres://app:{v}@db.internal:5432/shop", v, "url-password")
    a, b = token(ALNUM, 8), token(ALNUM, 10)
    add("url password with @", f"psql postgres://root:{a}@{b}@db.internal/shop", f"{a}@{b}", "url-password")
    a, b, c = token(ALNUM, 8), token(ALNUM, 8), token(ALNUM, 8)
    add("url password with / and #", f"mongodb+srv://svc:{a}/{b}#{c}@cluster0.ab1cd.mongodb.net/db", f"{a}/{b}#{c}")
    v = token(ALNUM, 18)
    add("url password, no user", f"REDIS_URL=redis://:{v}@cache.internal:6379/0", v, "url-password")
    v = token(ALNUM + "!#%^&*", 16)
    add(".env password", f"DB_PASSWORD={v}", v)
    v = token(ALNUM, 20)
    add("yaml password", f"database:\n  user: app\n  password: {v}\n  host: db", v)
    v = token(ALNUM, 32)
    add("json client secret", f'{{"client_id": "abc", "client_secret": "{v}"}}', v)
    v = token(string.ascii_lowercase, 14)
    add("quoted password with spaces", f'password = "correct horse {v} battery"', v)
    v = token(HEX, 40)
    add("generic token variable", f"CIRCLE_TOKEN={v}", v)
    v = token(ALNUM, 14)
    add("password flag", f"mysql --user=root --password {v} shop", v)
    v = token(ALNUM, 16)
    add("netrc", f"machine api.heroku.com login me@example.com password {v}", v)
    v = token(B64, 86) + "=="
    add("azure storage key", f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=core", v)
    v = token(URLSAFE, 33)
    add("telegram bot token", f"TELEGRAM_BOT_TOKEN={rng.randint(10**8, 10**9)}:AA{v}", v)
    v = token(ALNUM, 16)
    add("curl -u", f"curl -u admin:{v} https://api.example.com/v1/items", v, "password-flag")
    v = token(ALNUM, 16)
    add("curl --user", f"curl -sS --user=deploy:{v} -X POST https://ci.example.com/job", v, "password-flag")
    v = token(ALNUM, 16)
    add("docker login -p", f"docker login -u me -p {v} registry.example.com", v, "password-flag")
    v = token(ALNUM, 16)
    add("sshpass -p", f"sshpass -p {v} ssh deploy@10.0.0.4", v, "password-flag")
    v = token(ALNUM, 16)
    add("mysql -p", f"mysql -h db -u root -p{v} shop < dump.sql", v, "password-flag")
    v = token(ALNUM + "/+", 40)
    add("aws configure set", f"aws configure set aws_secret_access_key {v}", v, "aws-secret-key")
    v = token(ALNUM, 18)
    add("escaped json password", f'curl -d "{{\\"user\\": \\"me\\", \\"password\\": \\"{v}\\"}}" https://x', v)
    v = token(ALNUM, 12) + token("0123456789", 6)
    add("escaped json token", f'{{"body": "{{\\"token\\": \\"{v}\\"}}"}}', v)
    v = token(ALNUM, 14)
    add("name ending in PASS", f"SMTP_PASS={v}", v, "secret-assignment")
    v = token(ALNUM, 24)
    hook = f"https:\\/\\/hooks.slack.com\\/services\\/T0{token(UPPER, 8)}\\/B0{token(UPPER, 8)}\\/{v}"
    add("slack webhook, escaped slashes", f'{{"webhook":"{hook}"}}', v, "slack-webhook")
    text, _ = pem("RSA PRIVATE KEY", lines=6)
    v = base64.b64encode(text.encode()).decode()
    add("kubeconfig client-key-data", f"    client-key-data: {v}\n    token: abc", v[40:], "private-key")
    v = "IQoJb3JpZ2luX2Vj" + token(B64, 200)
    add("aws session token, camelCase json", f'"SessionToken": "{v}",', v, "token-assignment")
    v = "1//0g" + token(URLSAFE, 90)
    add("google refresh token, camelCase", f'{{"refreshToken": "{v}"}}', v, "token-assignment")
    v = base64.b64encode(f"deploy:{token(ALNUM, 20)}".encode()).decode()
    add("docker config auth", f'{{"auths": {{"ghcr.io": {{"auth": "{v}"}}}}}}', v, "basic-auth")
    v = base64.b64encode(f"ci:{token(ALNUM, 20)}".encode()).decode()
    add("npmrc _auth", f"registry=https://npm.example.com/\n_auth={v}\nalways-auth=true", v, "basic-auth")
    v = token(ALNUM, 40)
    add("linear api key", f"the linear key lin_api_{v} works", v, "linear-key")
    v = token(HEX, 40)
    add("supabase token", f"paste sbp_{v} in the dashboard", v)
    v = token(URLSAFE, 58)
    add("heroku api key", f"heroku gave me HRKU-AA{v} today", v)
    v = token("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
    add("age secret key", f"# created: 2026-01-01\nAGE-SECRET-KEY-1{v}", v, "age-secret-key")
    v = token(HEX, 24) + "-" + token(HEX, 34)
    add("postman api key", f"postman login --with-api-key PMAK-{v}", v)
    v = token(UPPER, 27)
    add("new relic key", f"use NRAK-{v} for the API", v, "newrelic-key")
    v = token(ALNUM, 32) + "_" + token(HEX, 8)
    add("grafana service account token", f"grafana made glsa_{v} for the bot", v)
    v = token(HEX, 64)
    add("sentry user token", f"the sentry one is sntryu_{v}, rotate it", v)
    v = token("0123456789", 11) + token(ALNUM, 35)
    add("notion token", f"NOTION_KEY=ntn_{v}", v)
    v = token(ALNUM, 43)
    add("doppler token", f"doppler configure set token dp.st.{v}", v)
    v = token(URLSAFE, 120)
    add("1password service account token", f"1password printed ops_eyJ{v} once", v)
    for name, line in (
        ("az login -p", "az login --service-principal -u 0f1e2d3c -p {v} --tenant contoso"),
        ("redis-cli -a", "redis-cli -h cache.internal -p 6380 -a {v} PING"),
        ("REDISCLI_AUTH", "REDISCLI_AUTH={v} redis-cli --scan"),
        ("mongosh -p", "mongosh -u admin -p {v} --authenticationDatabase admin"),
        ("keytool -storepass", "keytool -genkey -keystore release.jks -alias app -storepass {v}"),
        ("openssl enc -k", "openssl enc -aes-256-cbc -salt -k {v} -in db.sql -out db.enc"),
        ("sqlcmd -P", "sqlcmd -S db.internal -U sa -P {v} -Q 'SELECT 1'"),
        ("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=example,dc=org -w {v} -b dc=example,dc=org"),
        ("ssh-keygen -N", "ssh-keygen -t ed25519 -N '{v}' -f ~/.ssh/deploy"),
        ("smbclient -U user%password", "smbclient //nas/share -U admin%{v}"),
        ("htpasswd -b", "htpasswd -bc /etc/nginx/.htpasswd admin {v}"),
        ("gpg --passphrase", "gpg --batch --pinentry-mode loopback --passphrase {v} -d backup.gpg"),
        ("vault login", "vault login {v}"),
        ("gh secret set --body", "gh secret set DEPLOY_KEY --body {v} --repo o/r"),
        ("npm config set _authToken", "npm config set //npm.example.com/:_authToken {v}"),
        ("echo | sudo -S", "echo '{v}' | sudo -S systemctl restart nginx"),
        ("echo | docker login --password-stdin", "echo {v} | docker login ghcr.io -u me --password-stdin"),
        ("rails master key", "RAILS_MASTER_KEY={v}"),
    ):
        v = token(ALNUM, 18)
        add(name, line.format(v=v), v)
    v = token(URLSAFE, 32)
    add("cookie header", f"curl -H 'Cookie: theme=dark; sessionid={v}' https://app.example.com/admin", v, "cookie")
    v = token(ALNUM, 40)
    add("set-cookie header", f"< Set-Cookie: _app_session={v}; path=/; secure; HttpOnly", v, "cookie")
    v = token(HEX, 32)
    add("azure subscription key", f'-H "Ocp-Apim-Subscription-Key: {v}"', v)
    return found


CORPUS = _corpus()
