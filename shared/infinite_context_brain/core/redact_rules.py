"""The secret formats ``redact`` recognises: one table, each rule with the keywords that gate it.

Sources (ported, not imported: both tools scan files line by line and report, we rewrite text
in place, fast enough for a hook that runs on every tool call):

* gitleaks' default rule set (``config/gitleaks.toml``, MIT): the provider token formats with a
  fixed prefix (``sk_live_``, ``xoxb-``, ``glpat-``, ``npm_``, ``pypi-Ag``, ``hf_``, ``dop_v1_``,
  ``shpat_``, ``SG.``, ``SK``+32 hex, ...), the ``curl`` auth rules, the private-key block, the
  Slack / Teams / Discord webhooks, and its keyword pre-filter: a rule only runs when one of its
  keywords occurs in the text (case-insensitive), which keeps the cost of ~90 rules near that of
  a handful;
* detect-secrets (Yelp, Apache-2.0): the keyword detector's names (``password``, ``passwd``,
  ``pwd``, ``secret``, ``token``, ``api_key``, ``private_key``, ...) and its false positives
  (``none``, ``null``, ``true``, placeholders), the Azure storage key, Basic auth in URLs, the
  AWS secret-key context rule, and the base64 high-entropy string check (limit 4.5 bits a char).

Each rule: (kind, keywords or None for always, pattern, group to replace or 0 for the whole
match, optional check on the value). A value that fails its check is left as it is.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class Rule:
    kind: str
    #: None: the pattern runs over the whole text (it starts with a literal, which the regex
    #: engine finds as fast as a substring search); else it runs only over the lines holding
    #: one of these lowercase keywords (the generic rules, slow to try at every position)
    keywords: tuple[str, ...] | None
    pattern: re.Pattern[str]
    group: int = 0  # 0: replace the whole match; n: only group n (the name before it is kept)
    check: Check | None = None  # given the match; False leaves it as it is
    #: the match must not continue a word (``\b`` written as a check: a pattern that starts
    #: with ``\b`` is tried at every position, ~200x slower than one that starts with a literal)
    word_start: bool = False
    #: every match is at least ``WORD_MIN_CHARS`` characters with no whitespace: ``redact``
    #: skips the rule on a text without such a word (most notes), and otherwise looks for the
    #: rule's literal starts in those words only (checked against each pattern by a test)
    within_word: bool = False
    #: every match holds one of these texts (case as written): a line without one is skipped
    needs: tuple[str, ...] | None = None
    #: every match holds one of these characters (``name = value``: its ``=`` or ``:``), so a
    #: match begins before the text's last one: a text or line without one is skipped, and so is
    #: every place after the last one (a note full of words such as ``token`` and ``session``
    #: with one ``Error:`` at its start); checked against each pattern by a test
    assigns: tuple[str, ...] | None = None


#: the shortest match of a ``within_word`` rule (a Slack token: ``xoxb-`` and 10 characters)
WORD_MIN_CHARS = 15


# ---- value checks ------------------------------------------------------------------------------
#: values that name no secret (detect-secrets' false positives, gitleaks' generic allowlist)
_NOT_SECRET = {
    "none", "null", "nil", "true", "false", "undefined", "undef", "empty", "string", "str", "int",
    "bool", "dict", "list", "object", "any", "required", "optional", "default", "value", "secret",
    "password", "passwd", "token", "changeme", "redacted", "xxx", "xxxx", "****", "prompt",
    "env", "self", "this", "input", "getpass", "get", "os", "process", "config", "settings",
}  # fmt: skip
_REFERENCE = re.compile(
    r"""^(?:\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|%\w+%|@\w+@|\*+|x+|\.+|-+|\?+)$"""  # $VAR ${VAR} {{x}} <x> ...
    r"""|^(?:os\.|process\.env|env\.|settings\.|config\.|self\.|this\.|getenv|environ)""",
    re.I,
)
_CODE = re.compile(r"[()\[\]{}]|^\w+\.\w+\.\w+")  # a call, an index or an attribute chain


def plausible_value(value: str) -> bool:
    """A value after ``password =`` that could be a secret: not a placeholder, a variable
    reference or a piece of code (``os.environ["X"]``, ``getpass()``, ``None``)."""
    bare = value.strip("\"'`")
    if len(bare) < 3 or bare.lower() in _NOT_SECRET or bare.startswith("[REDACTED"):
        return False
    return not (_REFERENCE.search(bare) or (value == bare and _CODE.search(bare)))


_WORDISH = re.compile(r"^[a-zA-Z_.\-]+$|^\d+$")  # gitleaks' generic allowlist, plus bare numbers
#: names that always hold a secret; the others (token, key, auth...) also name counts and ids
_STRONG_NAME = re.compile(r"passw|passphrase|pwd|pass\b|_pass|secret|credential|creds|private|dsn", re.I)


def secretish(value: str) -> bool:
    """A value that looks like a key, not a word or a count (``max_tokens: 300``)."""
    bare = value.strip("\"'`")
    return len(bare) >= 8 and not _WORDISH.match(bare) and plausible_value(value)


def named_value(match: re.Match[str]) -> bool:
    """``name = value``: any plausible value under a password-like name, a key-like value under
    a token- or key-like one."""
    value = match.group(2)
    return plausible_value(value) if _STRONG_NAME.search(match.group(1)) else secretish(value)


def _value(check: Callable[[str], bool], group: int = 2) -> Check:
    return lambda match: check(match.group(group))


def _not_placeholder(value: str) -> bool:
    return not value.startswith("[REDACTED")


def _token_like(value: str) -> bool:
    """A bearer value: a word with a digit, or a long one (``Bearer authentication`` is prose)."""
    return _not_placeholder(value) and (any(c.isdigit() for c in value) or len(value) >= 24)


def _basic_credentials(value: str) -> bool:
    """``Basic <base64 of user:password>``: decodes, and holds a colon."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def shannon_entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _high_entropy(value: str) -> bool:
    """detect-secrets' base64 check (>= 4.5 bits a character), and mixed like real keys are:
    upper, lower and digits (a sentence without spaces or a hex hash is neither)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and shannon_entropy(value) >= 4.5
    )


_LINE_HEAD = re.compile(r"[ \t]*(?:(?:export|set)[ \t]+)?")


def _at_line_start(match: re.Match[str]) -> bool:
    """An .env line: the name starts its line (after ``export`` / ``set`` at most)."""
    text, start = match.string, match.start()
    line = text.rfind("\n", 0, start) + 1
    return _LINE_HEAD.fullmatch(text, line, start) is not None


LONE_KEY_LINE_BITS = 4.75


def pem_body(match: re.Match[str]) -> bool:
    """Full-width (64-char) base64 lines of a key body cut off from its BEGIN line: mixed case,
    so lines of a hex dump or a checksum list are not taken. A lone line must also look random
    (digits, both cases, and >= 4.75 bits a character: 5,000 random 64-char base64 lines measured
    4.76-5.4, a 64-char CamelCase sentence 4.5): a text cut after one key line."""
    value = match.group(0)
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    full_lines = [ln for ln in value.split() if len(ln) == 64]
    if len(full_lines) >= 2:
        return True
    line = full_lines[0] if full_lines else value.strip()
    return _high_entropy(line) and shannon_entropy(line) >= LONE_KEY_LINE_BITS


# ---- the table ---------------------------------------------------------------------------------
def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _token(kind: str, pattern: str) -> Rule:
    """A provider token with a fixed prefix: the pattern starts with it, no keyword gate."""
    return Rule(kind, None, _r(pattern + r"(?![\w-])"), word_start=True, within_word=True)


_PEM_MARK = r"-----{0}[ A-Z0-9_-]{{0,100}}PRIVATE KEY(?: BLOCK)?-----"
#: names that hold a secret in ``name = value`` / ``name: value`` / ``"name": "value"``
_SECRET_NAME = (
    r"(?:passw(?:or)?d|passphrase|\bpwd|_pwd\b|\bpass\b|_pass\b|secret|token|api[_\-]?key|apikey"
    r"|access[_\-]?key|auth[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?|\bcreds\b"
    r"|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|session[_\-]?key|\bdsn)[\w.\-]*"
)
#: .env style: an upper-case variable whose name says it holds a secret (KEY and AUTH too)
_ENV_WORDS = "TOKEN|SECRET|KEY|DSN|PASS|PASSWD|PASSWORD|PWD|AUTH|CREDENTIALS?|SIG|COOKIE"
_ENV_NAME = r"[A-Z][A-Z0-9_]*(?:" + _ENV_WORDS + r")[A-Z0-9_]*"
#: a value: quoted, or a bare word (``=`` only as base64 padding at its end: ``a=b`` is another pair)
_VALUE = (
    r"""("[^"\n]{1,500}"|'[^'\n]{1,500}'|`[^`\n]{1,500}`"""
    r"""|[^\s,;'"`}\]=]{1,500}+(?:={1,3}(?=[\s,;}\]]|$))?)"""
)
_ASSIGN = r"""["'`]?\s*(?::=|=>|[:=])\s*@?"""

RULES: list[Rule] = [
    # -- private keys: a whole block, or one cut off at the end of the text (its tail without the
    #    BEGIN line is handled in ``redact``), bare full-width body lines, PuTTY and age keys
    Rule(
        "private-key",
        None,
        _r(_PEM_MARK.format("BEGIN") + r".*?(?:" + _PEM_MARK.format("END") + r"|\Z)", re.S),
    ),
    Rule(
        "putty-key",
        None,
        _r(
            r"Private-Lines:\s*\d+\s*\n(?:[ \t]*[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\Z))*"
            r"|Private-(?:MAC|Hash):\s*\S+"
        ),
    ),
    _token("age-key", r"AGE-SECRET-KEY-1[0-9A-Z]{20,}"),
    # -- AI providers
    _token("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    _token("openai-key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
    _token("huggingface-token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}"),
    _token("groq-key", r"gsk_[A-Za-z0-9]{40,}"),
    _token("xai-key", r"xai-[A-Za-z0-9]{60,}"),
    _token("perplexity-key", r"pplx-[A-Za-z0-9]{40,}"),
    # -- clouds
    _token(
        "aws-access-key",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
    ),
    Rule(
        "aws-secret",
        ("secret", "session", "security"),
        _r(
            r"(?i)((?:aws[_\-.]?)?(?:secret[_\-.]?access[_\-.]?key|session[_\-.]?token|security[_\-.]?token)"
            r"""["']?\s*(?:[:=]|=>)\s*["']?)([A-Za-z0-9/+=]{16,})"""
        ),
        2,
        assigns=(":", "="),
    ),
    _token("aws-session-token", r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9/+=]{40,}"),
    _token("google-key", r"AIza[0-9A-Za-z_\-]{35}"),
    _token("google-oauth", r"(?:ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[A-Za-z0-9_\-]{20,})"),
    Rule("azure-storage-key", ("accountkey",), _r(r"(?i)(AccountKey\s*=\s*)([A-Za-z0-9+/=]{20,})"), 2),
    Rule(
        "azure-shared-key",
        ("sharedaccess",),
        _r(r"(?i)(SharedAccess(?:Key|Signature)\s*=\s*)([^;\s\"']+)"),
        2,
    ),
    Rule("azure-sas", ("sig=",), _r(r"(?i)([?&;]sig=)([A-Za-z0-9%+/=]{10,})"), 2),
    Rule(
        "azure-client-secret",
        ("q~",),
        _r(r"(?<![\w~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~.\-])"),
    ),
    _token("alibaba-key", r"LTAI[A-Za-z0-9]{20}"),
    _token("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    _token("heroku-key", r"HRKU-AA[0-9A-Za-z_\-]{58}"),
    _token("flyio-token", r"(?:fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})"),
    _token("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    _token("vault-token", r"hv[sb]\.[\w-]{24,}"),
    Rule("terraform-token", ("atlasv1",), _r(r"[A-Za-z0-9]{14}\.atlasv1\.[\w=\-]{60,70}")),
    _token("pulumi-token", r"pul-[a-f0-9]{40}"),
    _token("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_\-]{40,}"),
    _token("openshift-token", r"sha256~[\w-]{43}"),
    _token("planetscale-token", r"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}"),
    # -- code hosting and package registries
    _token("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{22,})"),
    _token("gitlab-token", r"gl(?:pat|dt|ptt|rt|cbt|ffct|ft|imt|agent|oas|soat)-[0-9A-Za-z_\-.]{20,}"),
    _token("gitlab-token", r"(?:GR1348941[\w-]{20,}|_gitlab_session=[0-9a-z]{32})"),
    _token("bitbucket-token", r"(?:ATBB|ATCTT3)[A-Za-z0-9_=\-]{24,}"),
    _token("atlassian-token", r"ATATT3[A-Za-z0-9_\-=]{100,}"),
    _token("npm-token", r"npm_[A-Za-z0-9]{36}"),
    Rule("npmrc-auth", ("_auth",), _r(r"(?i)(_auth(?:Token)?\s*=\s*)(\S+)"), 2),
    _token("pypi-token", r"pypi-Ag[\w-]{50,}"),
    _token("rubygems-token", r"rubygems_[a-f0-9]{48}"),
    _token("clojars-token", r"CLOJARS_[a-zA-Z0-9]{60}"),
    _token("artifactory-key", r"(?:AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})"),
    _token("postman-key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    _token("sourcegraph-token", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    # -- payments, mail, messaging, SaaS
    _token("stripe-key", r"sk_(?:test|live|prod)_[A-Za-z0-9]{10,}"),
    _token("stripe-key", r"rk_(?:test|live|prod)_[A-Za-z0-9]{10,}"),
    _token("stripe-key", r"whsec_[A-Za-z0-9+/=]{20,}"),
    _token("square-token", r"(?:EAAA|sq0atp-|sq0csp-)[\w-]{22,60}"),
    _token("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _token("shippo-token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    _token("flutterwave-key", r"FLW(?:SEC|PUB)K(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?"),
    _token("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    _token("sendinblue-key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _token("mailgun-key", r"key-[0-9a-f]{32}"),
    _token("mailgun-key", r"pubkey-[0-9a-f]{32}"),
    Rule("mailchimp-key", ("-us",), _r(r"(?<![\w-])[0-9a-f]{32}-us\d{1,2}(?![\w-])")),
    _token("twilio-key", r"(?:SK|AC)[0-9a-fA-F]{32}"),
    _token("slack-token", r"(?:xox[abposre]|xoxe\.xox[bp]|xapp)-[A-Za-z0-9\-]{10,}"),
    _token("webhook-url", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{16,}"),
    Rule(
        "webhook-url",
        ("discord", "webhook.office"),
        _r(
            r"https?://(?:(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]+"
            r"|[a-z0-9\-]+\.webhook\.office\.com/webhookb?2?/[\w@\-/]+)"
        ),
    ),
    Rule("telegram-token", (":aa",), _r(r"(?<![\w-])\d{8,10}:AA[A-Za-z0-9_\-]{33}(?![\w-])")),
    _token("notion-token", r"(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})"),
    _token("linear-key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    _token("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    _token(
        "grafana-token",
        r"(?:glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}={0,3})",
    ),
    _token("newrelic-key", r"NR(?:AK|II|JS)-[A-Za-z0-9\-]{19,32}"),
    _token("dynatrace-token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _token("easypost-key", r"EZ[AT]K[A-Za-z0-9]{54}"),
    _token("facebook-token", r"EAA[MC][A-Za-z0-9]{100,}"),
    _token(
        "onepassword-token",
        r"(?:ops_eyJ[A-Za-z0-9+/]{100,}={0,3}|A3-[A-Z0-9]{6}-[A-Z0-9\-]{11,}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})",
    ),
    _token("infracost-token", r"ico-[A-Za-z0-9]{32}"),
    _token("prefect-token", r"pnu_[A-Za-z0-9]{36}"),
    _token("readme-token", r"rdme_[a-z0-9]{70}"),
    _token("scalingo-token", r"tk-us-[\w-]{48}"),
    _token("typeform-token", r"tfp_[\w.=\-]{59}"),
    _token("frameio-token", r"fio-u-[\w=\-]{64}"),
    _token("adobe-secret", r"p8e-[A-Za-z0-9]{32}"),
    _token("jwt", r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    # -- credentials in commands, headers and URLs
    Rule(
        "auth-header",
        ("authorization",),
        _r(
            r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|sso-key)\s+)?)([^\s\"'\\,;]{4,})"
        ),
        2,
    ),
    Rule(
        "bearer-token",
        ("bearer",),
        _r(r"(?i)(\bbearer\s+)([A-Za-z0-9_\-.~+/]{8,}={0,3})"),
        2,
        _value(_token_like),
    ),
    Rule(
        "basic-auth",
        ("basic",),
        _r(r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{8,}={0,3})"),
        2,
        _value(_basic_credentials),
    ),
    Rule(
        "api-key-header",
        ("x-",),
        _r(r"(?i)(\bx-[\w-]*(?:key|token|secret|auth|signature)[\w-]*[\"']?\s*:\s*[\"']?)([^\s\"',;]{4,})"),
        2,
    ),
    Rule(
        "password-flag",
        ("pass", "pwd", "token", "secret", "key", "credential", "auth"),
        _r(
            r"(-(?i:-?[\w-]*(?:passw(?:or)?d|passphrase|pass|pwd|token|secret|api-?key|apikey"
            r"|access-key|private-key|client-secret|credentials?|auth))(?<!-stdin)(?<!-file)(?<!-env)"
            r"(?:=|[ \t]+))(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'-][^\s\"']*)"
        ),
        2,
        _value(plausible_value),
        word_start=True,
    ),
    Rule(
        "mysql-password",
        ("mysql", "mariadb"),
        _r(
            r"(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p)([^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')"
        ),
        2,
    ),
    Rule(
        "cli-password",
        ("sshpass", "redis-cli"),
        _r(r"(\b(?:sshpass\s+-p|redis-cli\b[^\n|;&]*?\s-a)\s*)(\S+)"),
        2,
    ),
    Rule(
        "curl-user", ("curl",), _r(r"(\bcurl\b[^\n|;&]*?\s(?:-u|--user)[ =]?[\"']?[^\s:\"']*:)([^\s\"']+)"), 2
    ),
    Rule(
        "password",
        ("://",),
        # scheme://user:password@host -> keep user and host, drop the password.
        _r(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\[\]]*):([^\s@/]+)@"),
        2,
        _value(_not_placeholder),
    ),
    Rule("url-token-user", ("://",), _r(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://)([A-Za-z0-9_\-]{20,})@"), 2),
    Rule(
        "url-secret-param",
        ("token", "key", "secret", "sig", "password", "auth"),
        _r(
            r"(?i)([?&](?:[\w\-]*(?:token|api[_\-]?key|apikey|secret|signature|password|passwd|auth)[\w\-]*"
            r"|key|sig)=)([^&\s#\"'<>]{4,})"
        ),
        2,
        _value(_not_placeholder),
        assigns=("=",),
    ),
    # -- name = value: .env lines, YAML, JSON, code, ``label: name = value``
    Rule(
        "secret",
        ("token", "secret", "key", "dsn", "pass", "pwd", "auth", "credential", "sig", "cookie"),
        _r(r"(" + _ENV_NAME + r"[ \t]*=[ \t]*)" + _VALUE),
        2,
        lambda m: _at_line_start(m) and named_value(m),
        needs=tuple(word.removesuffix("S?") for word in _ENV_WORDS.split("|")),
        assigns=("=",),
    ),
    Rule(
        "secret",
        ("pass", "pwd", "secret", "token", "key", "credential", "creds", "dsn"),
        # A value followed by its own ``=`` is the name of the next assignment (``label: name =
        # value``): the possessive value cannot shrink to dodge that, so the next one is matched.
        _r(r"(?i)(" + _SECRET_NAME + _ASSIGN + r")(?!\[REDACTED)" + _VALUE + r"(?!\s*(?::=|=>|[:=]))"),
        2,
        named_value,
        assigns=(":", "="),
    ),
    # -- detect-secrets' high-entropy base64 check, on quoted strings
    Rule(
        "high-entropy",
        None,
        _r(r"""(["'`])([A-Za-z0-9+/_\-]{32,}={0,2})\1"""),
        2,
        _value(_high_entropy),
        within_word=True,
    ),
]
