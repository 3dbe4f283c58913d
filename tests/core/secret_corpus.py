"""One realistic FAKE value per secret format, built here (never a real secret).

Each entry: a line as it would appear in a command, an output or a note, and the secret part
that must not survive redaction. Values are made from a seeded generator, so they have the
shape (prefix, length, alphabet) of the real format and nothing else.
"""

from __future__ import annotations

import base64
import random
import string

_rng = random.Random(1717)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def fake(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _pem(kind: str = "RSA") -> tuple[str, str]:
    body = "\n".join(fake(B64, 64) for _ in range(12)) + "\n" + fake(B64, 40) + "=="
    return f"-----BEGIN {kind} PRIVATE KEY-----\n{body}\n-----END {kind} PRIVATE KEY-----", body


def build() -> dict[str, tuple[str, list[str]]]:
    """kind -> (text, the secret parts that must all be gone)."""
    pem, pem_body = _pem()
    cut_pem, cut_body = _pem("OPENSSH")
    cut_pem = cut_pem[: len(cut_pem) // 2]  # a truncated block: no END line
    tail_lines = pem_body.splitlines()[-4:]
    aws_secret = fake(ALNUM + "/+", 40)
    session = "FwoGZXIvYXdzE" + fake(ALNUM + "/+", 180)
    basic = base64.b64encode(b"deploy:" + fake(ALNUM, 14).encode()).decode()
    putty_priv = [fake(B64, 64) for _ in range(3)]
    putty_mac = fake(HEX, 64)
    age = "AGE-SECRET-KEY-1" + fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58)
    v: dict[str, str] = {
        "stripe": "sk_live_" + fake(ALNUM, 24),
        "stripe_restricted": "rk_live_" + fake(ALNUM, 24),
        "stripe_webhook": "whsec_" + fake(ALNUM, 32),
        "slack_bot": f"xoxb-{fake('0123456789', 12)}-{fake('0123456789', 13)}-{fake(ALNUM, 24)}",
        "slack_user": f"xoxp-{fake('0123456789', 12)}-{fake('0123456789', 12)}-{fake(ALNUM, 32)}",
        "slack_webhook": "https://hooks.slack.com/services/"
        + f"T{fake(ALNUM.upper(), 8)}/B{fake(ALNUM.upper(), 10)}/{fake(ALNUM, 24)}",
        "npm": "npm_" + fake(ALNUM, 36),
        "pypi": "pypi-AgEIcHlwaS5vcmc" + fake(ALNUM + "-_", 120),
        "huggingface": "hf_" + fake(string.ascii_letters, 34),
        "gitlab": "glpat-" + fake(ALNUM + "-_", 20),
        "digitalocean": "dop_v1_" + fake(HEX, 64),
        "shopify": "shpat_" + fake(HEX, 32),
        "azure_storage": fake(B64, 86) + "==",
        "azure_sas": fake(ALNUM + "%", 43) + "%3D",
        "sendgrid": f"SG.{fake(ALNUM + '-_', 22)}.{fake(ALNUM + '-_', 43)}",
        "twilio_key": "SK" + fake(HEX, 32),
        "twilio_account": "AC" + fake(HEX, 32),
        "bearer": "eyJhbGciOi" + fake(ALNUM, 40),
        "opaque_bearer": fake(ALNUM, 12) + "7",
        "basic": basic,
        "cli_password": fake(ALNUM, 10) + "9",
        "cli_password_eq": fake(ALNUM, 11) + "8",
        "mysql": fake(ALNUM, 12) + "5",
        "env_token": fake(ALNUM, 30) + "1",
        "env_secret": fake(ALNUM, 18) + "2",
        "env_key": fake(ALNUM, 26) + "3",
        "env_dsn": f"https://{fake(HEX, 32)}@o12345.ingest.sentry.io/42",
        "env_pass": "Tr0ub4dor" + fake(ALNUM, 4),
        "env_password": "hunter" + fake(ALNUM, 6) + "2",
        "aws_access": "AKIA" + fake(string.ascii_uppercase + "234567", 16),
        "aws_secret": aws_secret,
        "aws_session": session,
        "anthropic": "sk-ant-api03-" + fake(ALNUM + "-_", 93) + "AA",
        "openai": "sk-proj-" + fake(ALNUM + "-_", 48),
        "google": "AIza" + fake(ALNUM + "-_", 35),
        "github": "ghp_" + fake(ALNUM, 36),
        "github_fine": "github_pat_" + fake(ALNUM + "_", 82),
        "jwt": f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi{fake(ALNUM, 20)}.{fake(ALNUM + '-_', 43)}",
        "url_password": fake(ALNUM, 14) + "4",
        "label_value": fake(ALNUM, 15) + "6",
        "json_secret": fake(ALNUM, 20) + "0",
        "age": age,
        "databricks": "dapi" + fake(HEX, 32),
        "vault": "hvs." + fake(ALNUM, 90),
        "mailgun": "key-" + fake(HEX, 32),
        "azure_ad": fake(ALNUM, 3) + "8Q~" + fake(ALNUM + "_~.-", 34),
        "curl_user": fake(ALNUM, 12) + "3",
        "high_entropy": fake(ALNUM, 44),
        "x_api_key": fake(ALNUM, 32),
    }
    lines: dict[str, tuple[str, list[str]]] = {
        "private_key": (f"cat id_rsa\n{pem}\n", pem_body.splitlines()),
        "private_key_cut": (
            f"head -c 900 key\n{cut_pem}",
            [ln for ln in cut_body.splitlines() if ln in cut_pem],
        ),
        "private_key_tail": (
            "tail -5 key.pem\n" + "\n".join(tail_lines) + "\n-----END RSA PRIVATE KEY-----\n",
            tail_lines,
        ),
        "putty": (
            "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
            "AAAAB3NzaC1yc2E\nPrivate-Lines: 3\n" + "\n".join(putty_priv) + f"\nPrivate-MAC: {putty_mac}\n",
            [*putty_priv, putty_mac],
        ),
    }
    templates = {
        "stripe": "STRIPE_KEY used: {}",
        "stripe_restricted": "key {} rotated",
        "stripe_webhook": "endpoint secret {}",
        "slack_bot": "bot {} posted",
        "slack_user": "user token {}",
        "slack_webhook": "curl -X POST {} -d '{{}}'",
        "npm": "//registry.npmjs.org/:_authToken={}",
        "pypi": "twine upload -u __token__ -p {} dist/*",
        "huggingface": "huggingface-cli login --token {}",
        "gitlab": "git clone https://oauth2:{}@gitlab.com/acme/app.git",
        "digitalocean": "doctl auth init -t {}",
        "shopify": "X-Shopify-Access-Token: {}",
        "azure_storage": "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};"
        "EndpointSuffix=core.windows.net",
        "azure_sas": "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig={}",
        "sendgrid": "sg = SendGridAPIClient({!r})",
        "twilio_key": "twilio api key {} created",
        "twilio_account": "account {} ok",
        "bearer": 'curl -H "Authorization: Bearer {}" https://api.example.com',
        "opaque_bearer": "sent Bearer {} upstream",
        "basic": "Authorization: Basic {}",
        "cli_password": "psql --password {} -h db",
        "cli_password_eq": "mytool login --password={}",
        "mysql": "mysql -u root -p{} app < dump.sql",
        "env_token": "GITHUB_TOKEN={}",
        "env_secret": "export APP_SECRET={}",
        "env_key": "OPENWEATHER_API_KEY={}",
        "env_dsn": "SENTRY_DSN={}",
        "env_pass": "SMTP_PASS={}",
        "env_password": "DB_PASSWORD='{}'",
        "aws_access": "aws_access_key_id = {}",
        "aws_secret": "aws_secret_access_key = {}",
        "aws_session": '"SessionToken": "{}",',
        "anthropic": "ANTHROPIC key {}",
        "openai": "client = OpenAI(api_key={!r})",
        "google": "maps key {}",
        "github": "push with {}",
        "github_fine": "token {}",
        "jwt": "session cookie {}",
        "url_password": "redis://default:{}@cache.internal:6379/0",
        "label_value": "note: db_password = {}",
        "json_secret": '{{"client_secret": "{}"}}',
        "age": "age key: {}",
        "databricks": "databricks configure {}",
        "vault": "VAULT token {}",
        "mailgun": "mailgun {}",
        "azure_ad": "client credential {}",
        "curl_user": "curl -u admin:{} https://ci.example.com",
        "high_entropy": 'signing = "{}"',
        "x_api_key": 'curl -H "X-API-Key: {}" https://api.example.com',
    }
    for kind, value in v.items():
        lines[kind] = (templates[kind].format(value), [value])
    return lines


CORPUS = build()
