"""The secret formats ``redact`` recognises: one table, each rule with the keywords it runs on.

Sources (ported, not imported: these tools scan files and report, we rewrite text in place, fast
enough for a hook that runs on every tool call):

* gitleaks' default rule set (``config/gitleaks.toml``, MIT): the provider token formats with a
  fixed prefix, the ``curl`` auth rules, private-key blocks, webhooks, and its keyword
  pre-filter: a rule runs only when one of its keywords occurs in the lower-cased text;
* trufflehog's detectors (AGPL, formats only): Docker Hub ``dckr_pat_``, Supabase ``sbp_``,
  Discord bot tokens, Tailscale, Buildkite, Replicate, LangSmith and similar prefixes;
* detect-secrets (Yelp, Apache-2.0): the keyword detector's names (``password``, ``passwd``,
  ``pwd``, ``secret``, ``token``, ``api_key``, ...) and its false positives (``none``,
  ``null``, placeholders), Basic auth in URLs, the Azure storage key, Telegram and Discord bot
  tokens, and the base64 high-entropy string check (4.5 bits a character).

A rule's ``keywords`` are lower-case literal texts. Where ``anchored`` (most rules), every match
begins with one of them: the pattern is tried only where a keyword occurs, so a clean text costs
one scan for all keywords and the passes of the few rules without any. Where not anchored, a
keyword somewhere in the text lets the pattern scan the whole text (a match that begins before
its literal part, as a Mailchimp key's ``-us6`` suffix); a rule without keywords scans every text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class Rule:
    kind: str
    #: lower-case literals: the rule runs only on a text where one occurs; () runs on every text
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0  # 0: replace the whole match; n: only group n (the name before it is kept)
    check: Check | None = None  # given the match; False leaves it as it is
    #: every match begins with one of ``keywords`` (in any case): tried only where one occurs
    anchored: bool = True

    def __post_init__(self) -> None:
        if self.anchored and not self.keywords:
            raise ValueError(f"rule {self.kind!r}: an anchored rule needs keywords")
        if any(k != k.lower() for k in self.keywords):
            raise ValueError(f"rule {self.kind!r}: keywords are matched lower-cased")


# ---- value checks ------------------------------------------------------------------------------
#: values that name no secret (detect-secrets' false positives, gitleaks' generic allowlist)
_NOT_SECRET = {
    "none", "null", "nil", "true", "false", "undefined", "undef", "empty", "string", "str", "int",
    "bool", "dict", "list", "object", "any", "required", "optional", "default", "value", "secret",
    "password", "passwd", "token", "changeme", "redacted", "xxx", "xxxx", "****", "prompt",
    "env", "self", "this", "input", "getpass", "get", "os", "process", "config", "settings",
    "await", "new", "async", "function", "lambda", "yield", "return", "inherit", "unset",
}  # fmt: skip
_REFERENCE = re.compile(
    r"""^(?:\$\{?\w+\}?|\$\{\{.*\}\}|\{\{.*\}\}|<[^>]*>|%\w+%|@\w+@|\*+|x+|\.+|-+|\?+)$"""  # $VAR {{x}} <x>
    r"""|^(?:os\.|process\.env|env\.|settings\.|config\.|self\.|this\.|getenv|environ|\$\()"""
    r"""|^(?:~|\.{1,2})?(?:/[\w.\-]+){2,}/?$"""  # a path
    r"""|xxx|^your[-_]|placeholder|changeme|dummy""",  # a value an example file asks to replace
    re.I,
)
#: a call, an index or a block; an attribute chain (``req.body?.token``); a generic type
_CODE = re.compile(r"[()\[\]{}]|^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+$|^[A-Za-z_$][\w$.]*<.*>$")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def plausible_value(value: str) -> bool:
    """A value after ``password =`` that could be a secret: not a placeholder, a variable
    reference or a piece of code (``os.environ["X"]``, ``getpass()``, ``None``)."""
    bare = value.strip("\\\"'`")
    if len(bare) < 3 or bare.rstrip(".,:").lower() in _NOT_SECRET or bare.startswith("[REDACTED"):
        return False
    return not (_REFERENCE.search(bare) or (value == bare and _CODE.search(bare)) or "${" in bare)


_WORDISH = re.compile(r"^[a-zA-Z_.\-]+$|^[\d_.,]+$")  # gitleaks' generic allowlist, plus numbers
#: names that always hold a secret; the others (token, key, auth...) also name counts and ids
_STRONG_NAME = re.compile(r"passw|passphrase|pwd|_pass\b|secret|credential|creds|private|dsn", re.I)


def secretish(value: str) -> bool:
    """A value that looks like a key, not a word or a count (``max_tokens: 300``)."""
    bare = value.strip("\\\"'`")
    return len(bare) >= 8 and " " not in bare and not _WORDISH.match(bare) and plausible_value(value)


_NAME_HEAD = re.compile(r"[\w.\-]*\Z")
_NAME_END = re.compile(r"[^\w.\-]")


def named_value(match: re.Match[str]) -> bool:
    """``name = value``: any plausible value under a password-like name, a key-like value under
    a token- or key-like one (the name read from its start: a match begins at its keyword)."""
    value, text, start = match.group(2), match.string, match.start()
    if _IDENTIFIER.fullmatch(value) and text[match.end(2) : match.end(2) + 1] in (";", ")"):
        return False  # code: a variable or a type (``this.key = key;``, ``privateKey: Uint8Array;``)
    head = _NAME_HEAD.search(text, max(0, start - 40), start)
    name = (head.group() if head else "") + match.group(1)
    if value.lower() == _NAME_END.split(name, maxsplit=1)[0].rsplit(".", 1)[-1].lower():
        return False  # code: ``self.client_secret = client_secret``
    return plausible_value(value) if _STRONG_NAME.search(name) else secretish(value)


def _value(check: Callable[[str], bool], group: int = 2) -> Check:
    return lambda match: check(match.group(group))


def _token_like(value: str) -> bool:
    """A bearer value: a word with a digit, or a long one (``Bearer authentication`` is prose)."""
    return plausible_value(value) and (any(c.isdigit() for c in value) or len(value) >= 24)


def _basic_credentials(value: str) -> bool:
    """``Basic <base64 of user:password>``: decodes, and holds a colon."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


_PORT = re.compile(r"\d{1,5}(?:/|$)")


def _url_password(value: str) -> bool:
    """``scheme://user:password@``, not ``host:8080/path/@scope`` (a port, a path, then an ``@``)."""
    return plausible_value(value) and not _PORT.match(value)


def shannon_entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


#: base64 that begins as an image or document does (PNG, JPEG, GIF, WebP, PDF, zip), and a
#: package lock's integrity hash: data, not a key
_FILE_DATA = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0", "UEsDB", "sha1-", "sha256-", "sha512-")
#: the ids model APIs give messages, tool calls and requests (transcripts are full of them)
_API_IDS = ("toolu_", "srvtoolu_", "msg_", "req_", "agent_msg_", "call_", "chatcmpl-", "run_", "thread_")


def _high_entropy(value: str) -> bool:
    """detect-secrets' base64 check (>= 4.5 bits a character), and mixed like real keys are:
    upper, lower and digits (a sentence without spaces or a hex hash is neither)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not value.startswith(_FILE_DATA + _API_IDS)
        and shannon_entropy(value) >= 4.5
    )


_LINE_HEAD = re.compile(r"[ \t]*(?:(?:export|set)[ \t]+)?[A-Z0-9_]*")


def _env_line(match: re.Match[str]) -> bool:
    """An .env line: an upper-case name that starts its line (after ``export`` / ``set``)."""
    text, start = match.string, match.start()
    line = text.rfind("\n", 0, start) + 1
    return _LINE_HEAD.fullmatch(text, line, start) is not None and named_value(match)


_FLAG_HEAD = re.compile(r"(?<![\w-])--?(?:[A-Za-z0-9]+[-_])*\Z")


def _flag(match: re.Match[str]) -> bool:
    """``--db-password S``: the name is a command-line flag (``one-token change`` is prose)."""
    start = match.start()
    head = _FLAG_HEAD.search(match.string, max(0, start - 40), start)
    return head is not None and plausible_value(match.group(2))


_PARAM_HEAD = re.compile(r"[?&][\w.\-]*\Z")


def _query_param(match: re.Match[str]) -> bool:
    """``?access_token=S&``: the name is a URL query parameter."""
    start = match.start()
    head = _PARAM_HEAD.search(match.string, max(0, start - 60), start)
    return head is not None and named_value(match)


_TAG_HEAD = re.compile(r"<[\w.\-:]*\Z")


def _xml_element(match: re.Match[str]) -> bool:
    start = match.start()
    return _TAG_HEAD.search(match.string, max(0, start - 60), start) is not None and plausible_value(
        match.group(2)
    )


def _word_start(match: re.Match[str]) -> bool:
    """The match does not continue a word (a pattern that begins with a class is scanned fast)."""
    before = match.string[match.start() - 1 : match.start()]
    return not before or not (before.isalnum() or before in "_-")


def _telegram(match: re.Match[str]) -> bool:
    """A bot token alone (not the end of a longer number) or in a ``/bot<token>/`` URL."""
    before = match.string[max(0, match.start() - 3) : match.start()]
    return before == "bot" or not (before[-1:].isalnum() or before[-1:] in "_-")


LONE_KEY_LINE_BITS = 4.75


def pem_body(match: re.Match[str]) -> bool:
    """Full-width (64-char) base64 lines of a key body cut off from its BEGIN line: mixed case,
    so lines of a hex dump or a checksum list are not taken. A lone line must also look random
    (digits, both cases, and >= 4.75 bits a character: random 64-char base64 lines measure
    4.76-5.4, a 64-char CamelCase sentence 4.5): a text cut after one key line."""
    value = match.group(1)
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if value.startswith(_FILE_DATA):
        return False
    full_lines = [ln for ln in value.split() if len(ln) == 64]
    if len(full_lines) >= 2:
        return True
    line = full_lines[0] if full_lines else value.strip()
    return _high_entropy(line) and shannon_entropy(line) >= LONE_KEY_LINE_BITS


# ---- how rules are written ---------------------------------------------------------------------
def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _token(kind: str, prefixes: Iterable[str], body: str, *, fold: bool = True) -> Rule:
    """A provider token: one of ``prefixes`` and its ``body`` (in any case unless ``fold`` is
    False: an upper-cased ``GHP_...`` is still the key), not inside a longer word."""
    prefixes = tuple(prefixes)
    alternation = "|".join(map(re.escape, sorted(prefixes, key=len, reverse=True)))
    pattern = rf"(?<![\w-])(?:{alternation}){body}(?![\w-])"
    return Rule(kind, tuple(p.lower() for p in prefixes), _r(pattern, re.I if fold else 0))


def spellings(*names: str) -> tuple[str, ...]:
    """``"api key"`` as written in names: ``api_key``, ``api-key``, ``api.key``, ``apikey``."""
    return tuple(dict.fromkeys(n.replace(" ", sep) for n in names for sep in ("_", "-", ".", "")))


def _name(*names: str) -> str:
    """The regex for ``spellings(*names)`` (any case): ``api[_\\-.]?key``."""
    return "|".join(re.escape(n).replace(r"\ ", r"[_\-.]?") for n in names)


#: words that make a name hold a secret (``DB_PASSWORD``, ``client_secret``, ``apiKey``)
_KEY_OWNERS = (
    "api", "access", "auth", "private", "client", "signing", "encryption", "master", "session",
    "secret", "account", "app", "db", "service", "license", "consumer", "storage", "subscription",
    "admin", "root", "shared", "webhook", "deploy", "ssh", "gpg", "encrypt",
)  # fmt: skip
_OWNED_KEYS = tuple(f"{owner} key" for owner in _KEY_OWNERS)
_SECRET_WORDS = ("passw", "pass", "pwd", "secret", "token", "credential", "creds", "dsn")
#: the keywords of the ``name = value`` rules, and the name pattern that starts at one of them
SECRET_KEYWORDS = (*_SECRET_WORDS, "passphrase", *spellings(*_OWNED_KEYS))
_SECRET_NAME = (
    r"(?:passw(?:or)?d|passphrase|(?<![a-z0-9])(?<!--- )pass(?![a-z0-9])|(?<![a-z0-9])pwd"
    r"|secret|token|credentials?|(?<![a-z0-9])creds(?![a-z0-9])|(?<![a-z0-9])dsn(?![a-z0-9])|"
    + _name(*_OWNED_KEYS)
    + r")[\w.\-]*"
)
#: .env style: an upper-case variable whose name says it holds a secret (KEY and AUTH too)
_ENV_WORDS = "TOKEN|SECRET|KEY|DSN|PASS|PASSWD|PASSWORD|PWD|AUTH|CREDENTIALS?|SIG|COOKIE"
_ENV_KEYWORDS = ("token", "secret", "key", "dsn", "pass", "pwd", "auth", "credential", "sig", "cookie")
#: a value: quoted (also as escaped JSON inside a string: ``\\"...\\"``), or a bare word (``=``
#: only as base64 padding at its end: ``a=b`` is another pair)
_VALUE = (
    r"""(\\+"[^"\n]{1,500}?\\+"|"[^"\n]{1,500}"|'[^'\n]{1,500}'|`[^`\n]{1,500}`"""
    r"""|[^\s,;'"`}\]=\\]{1,500}+(?:={1,3}(?=[\s,;}\]\\]|$))?)"""
)
_ASSIGN = r"""\\*["'`]?\]?\s*(?::=|=>|[:=])\s*@?"""
#: the value of a query parameter or a form field, also URL-encoded (``%2F``, not ``%26``)
_PARAM_VALUE = r"((?:[^&\s#\"'<>%\\]|%(?!26|3[dD])[0-9A-Fa-f]{2}){4,})"
_PEM_MARK = r"-----{0}[ A-Z0-9_-]{{0,100}}PRIVATE KEY(?: BLOCK)?-----"
_PEM_LINE = r"[ \t]*(?:(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+:[^\n]*)[ \t]*)?"
#: full-width (64-character) base64 lines, the first one also after other text on its line when a
#: full-width line follows (``error: failed with <key line>``: looked for only there, so cheaply)
_PEM_BODY = (
    r"(?:(?=[^\n]*\n[A-Za-z0-9+/]{64}(?:\r?\n|\Z))[^\n]*?(?<![A-Za-z0-9+/=]))?"
    r"((?:[A-Za-z0-9+/]{64}\r?\n)*[A-Za-z0-9+/]{64}(?:\r?\n[A-Za-z0-9+/=]{1,64})?)(?=\r?\n|\Z)"
)
_AUTH_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|sso-key"

RULES: list[Rule] = [
    # -- private keys: a whole block (or one cut off at the end of the text), the tail of one
    #    without its BEGIN line, bare full-width body lines, PuTTY and age keys
    Rule(
        "private-key",
        ("-----begin",),
        # the body between the marker lines, which stay (a line break written as ``\\n`` too)
        _r(
            r"(" + _PEM_MARK.format("BEGIN") + r"(?:\\n|\r?\n)?)(.*?)"
            r"(?=(?:\\n|\r?\n)?" + _PEM_MARK.format("END") + r"|\Z)",
            re.S,
        ),
        2,
    ),
    Rule(
        "private-key",
        ("private key-----", "private key block-----"),
        # the key lines above an END line (``tail key.pem``): base64, or a header of an
        # encrypted PEM (Proc-Type, DEK-Info)
        _r(r"(?m)^((?:" + _PEM_LINE + r"\r?\n)*" + _PEM_LINE + r")(?=\r?\n" + _PEM_MARK.format("END") + ")"),
        1,
        anchored=False,
    ),
    Rule(
        "putty-key",
        ("private-lines:",),
        _r(r"(Private-Lines:\s*\d+[ \t]*\r?\n)((?:[ \t]*[A-Za-z0-9+/=]+[ \t]*\r?\n)*[ \t]*[A-Za-z0-9+/=]+)"),
        2,
    ),
    Rule("putty-key", ("private-mac:", "private-hash:"), _r(r"(Private-(?:MAC|Hash):\s*)(\S+)"), 2),
    # full-width base64 lines of a key body, cut off from both marker lines: two or more, or a
    # single one (a summary cut after one key line; ``pem_body`` asks more of a lone one), at the
    # start of a line (two rules: a pattern that begins with a literal is scanned fast)
    Rule("private-key", (), _r(r"\A" + _PEM_BODY), 1, pem_body, anchored=False),
    Rule("private-key", (), _r(r"\n" + _PEM_BODY), 1, pem_body, anchored=False),
    _token("age-key", ["AGE-SECRET-KEY-1"], r"[0-9A-Z]{20,}"),
    Rule(
        "kubeconfig-key",
        ("client-key-data",),
        _r(r"(?i)(client-key-data\\*[\"']?\s*:\s*\\*[\"']?)([A-Za-z0-9+/=]{20,})"),
        2,
    ),
    # -- AI providers
    _token("anthropic-key", ["sk-ant-"], r"[\w-]{20,}"),
    _token("openai-key", ["sk-"], r"(?:proj-|svcacct-|admin-|None-|or-v1-)?[A-Za-z0-9_\-]{20,}"),
    _token("huggingface-token", ["hf_", "api_org_"], r"[A-Za-z0-9]{30,}"),
    _token("groq-key", ["gsk_"], r"[A-Za-z0-9]{40,}"),
    _token("xai-key", ["xai-"], r"[A-Za-z0-9]{60,}"),
    _token("perplexity-key", ["pplx-"], r"[A-Za-z0-9]{40,}"),
    _token("replicate-token", ["r8_"], r"[A-Za-z0-9\-_]{37}"),
    _token("langsmith-key", ["lsv2_pt_", "lsv2_sk_"], r"[a-f0-9]{32}_[a-f0-9]{10}"),
    _token("pinecone-key", ["pcsk_"], r"[A-Za-z0-9_]{50,}"),
    # -- clouds and hosting
    _token(
        "aws-access-key",
        ["A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"],
        r"[A-Z0-9]{16}",
        fold=False,
    ),
    Rule(
        "aws-secret",
        spellings("secret access key", "session token", "security token"),
        _r(
            r"(?i)((?:" + _name("secret access key", "session token", "security token") + r")"
            r"""\\*["']?\s*(?:[:=]|=>)\s*\\*["']?)([A-Za-z0-9/+=]{16,})"""
        ),
        2,
    ),
    _token("aws-session-token", ["FwoGZXIvYXdz", "IQoJb3JpZ2lu"], r"[A-Za-z0-9/+=]{40,}", fold=False),
    _token("aws-mws-key", ["amzn.mws."], r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    _token("google-key", ["AIza"], r"[\w-]{35}", fold=False),
    _token("google-oauth", ["ya29."], r"[0-9A-Za-z_\-]{20,}"),
    _token("google-oauth", ["GOCSPX-"], r"[A-Za-z0-9_\-]{20,}"),
    Rule("azure-storage-key", ("accountkey",), _r(r"(?i)(AccountKey\s*=\s*)([A-Za-z0-9+/=]{20,})"), 2),
    Rule(
        "azure-shared-key",
        ("sharedaccesskey", "sharedaccesssignature"),
        _r(r"(?i)(SharedAccess(?:Key|Signature)\s*=\s*)([^;\s\"']+)"),
        2,
    ),
    Rule("azure-sas", ("?sig=", "&sig=", ";sig="), _r(r"(?i)([?&;]sig=)([A-Za-z0-9%+/=]{10,})"), 2),
    Rule(
        "azure-client-secret",
        ("q~",),
        _r(r"(?<![\w~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~.\-])"),
        anchored=False,
    ),
    _token("alibaba-key", ["LTAI"], r"[A-Za-z0-9]{20}", fold=False),
    _token("digitalocean-token", ["dop_v1_", "doo_v1_", "dor_v1_"], r"[a-f0-9]{64}"),
    _token("heroku-key", ["HRKU-AA"], r"[0-9A-Za-z_\-]{58}"),
    _token("flyio-token", ["fo1_"], r"[\w-]{43}"),
    _token("flyio-token", ["fm1a_", "fm1r_", "fm2_"], r"[A-Za-z0-9+/]{100,}={0,3}"),
    _token("databricks-token", ["dapi"], r"[a-f0-9]{32}(?:-\d)?"),
    _token("vault-token", ["hvs.", "hvb.", "hvr."], r"[\w-]{24,}"),
    Rule(
        "terraform-token",
        ("atlasv1",),
        _r(r"(?<![\w-])[A-Za-z0-9]{14}\.atlasv1\.[\w=\-]{60,70}(?![\w-])"),
        anchored=False,
    ),
    _token("pulumi-token", ["pul-"], r"[a-f0-9]{40}"),
    _token(
        "doppler-token", ["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."], r"[\w\-]{40,}"
    ),
    _token("openshift-token", ["sha256~"], r"[\w-]{43}"),
    _token("planetscale-token", ["pscale_tkn_", "pscale_oauth_", "pscale_pw_"], r"[\w=.\-]{32,64}"),
    _token("supabase-token", ["sbp_"], r"[a-f0-9]{40}"),
    _token("supabase-token", ["sb_secret_"], r"[\w-]{20,}"),
    _token("cloudflare-ca-key", ["v1.0-"], r"[a-f0-9]{24}-[a-f0-9]{146}"),
    _token("render-key", ["rnd_"], r"[A-Za-z0-9]{32}"),
    _token("netlify-token", ["nfp_"], r"[A-Za-z0-9_]{36}"),
    _token("tailscale-key", ["tskey-"], r"[a-z]+-[0-9A-Za-z_]+-[0-9A-Za-z_]+"),
    _token("dockerhub-token", ["dckr_pat_", "dckr_oat_"], r"[\w-]{27,32}"),
    Rule(
        "docker-auth",
        ('"auth"', '\\"auth\\"'),
        _r(r'(\\*"auth\\*"\s*:\s*\\*")([A-Za-z0-9+/]{8,}={0,2})'),
        2,
        _value(_basic_credentials),
    ),
    # -- code hosting, CI and package registries
    _token("github-token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"[A-Za-z0-9]{30,}"),
    _token("github-token", ["github_pat_"], r"\w{22,}"),
    _token(
        "gitlab-token",
        "glpat- gldt- glptt- glrt- glcbt- glffct- glft- glimt- glagent- gloas- glsoat-".split(),
        r"[0-9A-Za-z_\-.]{20,}",
    ),
    _token("gitlab-token", ["GR1348941"], r"[\w-]{20,}"),
    Rule("gitlab-token", ("_gitlab_session=",), _r(r"(_gitlab_session=)([0-9a-z]{32})"), 2),
    _token("bitbucket-token", ["ATBB", "ATCTT3"], r"[A-Za-z0-9_=\-]{24,}", fold=False),
    _token("atlassian-token", ["ATATT3"], r"[A-Za-z0-9_\-=]{100,}", fold=False),
    _token("npm-token", ["npm_"], r"[A-Za-z0-9]{36}"),
    Rule("npmrc-auth", ("_auth",), _r(r"(?i)(_auth(?:Token)?\s*=\s*)(\S+)"), 2, _value(plausible_value)),
    _token("pypi-token", ["pypi-Ag"], r"[\w-]{50,}"),
    _token("rubygems-token", ["rubygems_"], r"[a-f0-9]{48}"),
    _token("clojars-token", ["CLOJARS_"], r"[a-zA-Z0-9]{60}"),
    _token("artifactory-key", ["AKCp"], r"[A-Za-z0-9]{69}", fold=False),
    _token("artifactory-key", ["cmVmd"], r"[A-Za-z0-9]{59}", fold=False),
    _token("postman-key", ["PMAK-"], r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    _token("sourcegraph-token", ["sgp_"], r"(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    _token("sonar-token", ["squ_", "sqp_", "sqa_"], r"[a-f0-9]{40}"),
    _token("circleci-token", ["CCIPAT_"], r"[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    _token("buildkite-token", ["bkua_"], r"[a-f0-9]{40}"),
    _token("octopus-key", ["API-"], r"[A-Z0-9]{26}", fold=False),
    # -- payments, mail, messaging, SaaS
    _token(
        "stripe-key",
        ["sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_"],
        r"[A-Za-z0-9]{10,}",
    ),
    _token("stripe-key", ["whsec_"], r"[A-Za-z0-9+/=]{20,}"),
    _token("square-token", ["EAAA"], r"[\w-]{22,60}", fold=False),
    _token("square-token", ["sq0atp-", "sq0csp-"], r"[\w-]{22,60}"),
    _token("shopify-token", ["shpat_", "shpca_", "shppa_", "shpss_"], r"[a-fA-F0-9]{32}"),
    _token("shippo-token", ["shippo_live_", "shippo_test_"], r"[a-fA-F0-9]{40}"),
    _token("flutterwave-key", ["FLWSECK-", "FLWSECK_TEST-"], r"[a-hA-H0-9]{12,32}(?:-X)?"),
    _token(
        "braintree-token",
        ["access_token$production$", "access_token$sandbox$"],
        r"[0-9a-z]{16}\$[0-9a-f]{32}",
    ),
    _token(
        "plaid-token",
        ["access-sandbox-", "access-development-", "access-production-"],
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    _token("duffel-token", ["duffel_test_", "duffel_live_"], r"[a-zA-Z0-9_\-=]{43}"),
    _token("sendgrid-key", ["SG."], r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}", fold=False),
    _token("sendinblue-key", ["xkeysib-", "xsmtpsib-"], r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _token("mailgun-key", ["key-", "pubkey-"], r"[0-9a-f]{32}"),
    Rule(
        "mailchimp-key",
        tuple(f"-us{d}" for d in range(1, 10)),
        _r(r"(?<![\w-])[0-9a-f]{32}-us\d{1,2}(?![\w-])"),
        anchored=False,
    ),
    _token("mailersend-token", ["mlsn."], r"[a-f0-9]{64}"),
    _token("resend-key", ["re_"], r"[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    _token("twilio-key", ["SK", "AC"], r"[0-9a-fA-F]{32}", fold=False),
    _token(
        "slack-token",
        ["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe.xoxb-", "xoxe.xoxp-", "xapp-"],
        r"[A-Za-z0-9\-]{10,}",
    ),
    Rule(
        "webhook-url",
        ("hooks.slack.com/",),
        _r(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{16,}"),
    ),
    Rule(
        "webhook-url",
        ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
        _r(r"discord(?:app)?\.com/api/webhooks/\d+/[\w\-]+"),
    ),
    Rule("webhook-url", (".webhook.office.com/",), _r(r"\.webhook\.office\.com/webhookb?2?/[\w@\-/]+")),
    Rule(
        "discord-bot-token",
        (),
        # base64 of the bot's id, a timestamp, an HMAC (no literal part: scanned on every text)
        _r(r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}(?![\w-])"),
        check=_word_start,
        anchored=False,
    ),
    Rule(
        "telegram-token", (":aa", "/bot"), _r(r"\d{8,10}:[\w-]{35}(?![\w-])"), check=_telegram, anchored=False
    ),
    _token("notion-token", ["ntn_"], r"[0-9]{11}[A-Za-z0-9]{35}"),
    _token("notion-token", ["secret_"], r"[A-Za-z0-9]{43}"),
    _token("linear-key", ["lin_api_", "lin_oauth_"], r"[A-Za-z0-9]{40}"),
    _token("sentry-token", ["sntrys_", "sntryu_"], r"[A-Za-z0-9+/=_]{40,}"),
    _token("grafana-token", ["glc_"], r"[A-Za-z0-9+/]{32,}={0,3}"),
    _token("grafana-token", ["glsa_"], r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _token("grafana-token", ["eyJrIjoi"], r"[A-Za-z0-9]{70,}={0,3}", fold=False),
    _token("newrelic-key", ["NRAK-", "NRII-", "NRJS-"], r"[A-Za-z0-9\-]{19,32}"),
    _token("dynatrace-token", ["dt0c01."], r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _token("easypost-key", ["EZAK", "EZTK"], r"[A-Za-z0-9]{54}", fold=False),
    _token("facebook-token", ["EAAM", "EAAC"], r"[A-Za-z0-9]{100,}", fold=False),
    _token("onepassword-token", ["ops_eyJ"], r"[A-Za-z0-9+/]{100,}={0,3}"),
    _token(
        "onepassword-token",
        ["A3-"],
        r"[A-Z0-9]{6}-[A-Z0-9\-]{11,}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        fold=False,
    ),
    _token("infracost-token", ["ico-"], r"[A-Za-z0-9]{32}"),
    _token("prefect-token", ["pnu_"], r"[A-Za-z0-9]{36}"),
    _token("readme-token", ["rdme_"], r"[a-z0-9]{70}"),
    _token("scalingo-token", ["tk-us-"], r"[\w-]{48}"),
    _token("typeform-token", ["tfp_"], r"[\w.=\-]{59}"),
    _token("frameio-token", ["fio-u-"], r"[\w=\-]{64}"),
    _token("adobe-secret", ["p8e-"], r"[A-Za-z0-9]{32}"),
    _token("contentful-token", ["CFPAT-"], r"[\w-]{43}"),
    _token("airtable-token", ["pat"], r"[A-Za-z0-9]{14}\.[a-f0-9]{64}", fold=False),
    _token("harness-token", ["pat.", "sat."], r"[\w-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    _token("mapbox-token", ["sk.eyJ"], r"[\w-]{20,}\.[\w-]{20,}", fold=False),
    _token("jwt", ["eyJ"], r"[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}", fold=False),
    # -- credentials in headers, commands and URLs
    Rule(
        "auth-header",
        ("authorization",),
        _r(
            r"(?i)(authorization\\*[\"'`]?\s*[:=]\s*\\*[\"'`]?(?:(?:" + _AUTH_SCHEMES + r")\s+)?)"
            r"([^\s\"'`\\,;]{4,})"
        ),
        2,
        _value(_token_like),
    ),
    Rule(
        "bearer-token",
        ("bearer",),
        _r(r"(?i)(bearer\s+)([A-Za-z0-9_\-.~+/]{8,}={0,3})"),
        2,
        _value(_token_like),
    ),
    Rule(
        "basic-auth",
        ("basic",),
        _r(r"(?i)(basic\s+)([A-Za-z0-9+/]{8,}={0,3})"),
        2,
        _value(_basic_credentials),
    ),
    Rule(
        "api-key-header",
        ("x-",),
        _r(
            r"(?i)(?<![\w-])(x-[\w-]*(?:key|token|secret|auth|signature)[\w-]*\\*[\"']?\s*:\s*\\*[\"']?)"
            r"([^\s\"',;\\]{4,})"
        ),
        2,
        _value(plausible_value),
    ),
    Rule(
        "cookie",
        ("cookie",),
        # a request's cookies: from the first value to the end of the header
        _r(r"(?i)(?<![a-z0-9_-])(cookie\\*[\"']?\s*[:=]\s*\\*[\"']?[^=;\s\"'\\]*=?)([^\r\n\"'\\]+)"),
        2,
        _value(plausible_value),
    ),
    Rule(
        "cookie",
        ("set-cookie",),
        # a response's cookie: its value, not its attributes (``Path=/; HttpOnly``)
        _r(r"(?i)(set-cookie\\*[\"']?\s*:\s*\\*[\"']?[^=;\s\"'\\]+=)([^;\r\n\"'\\]+)"),
        2,
        _value(plausible_value),
    ),
    Rule(
        "password-flag",
        (*SECRET_KEYWORDS, "auth"),
        _r(
            r"(?i)((?:passw(?:or)?d|passphrase|pass|pwd|token|secret|api-?key|apikey|access-key"
            r"|private-key|client-secret|credentials?|auth)(?:=|[ \t]+))"
            r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'-][^\s\"']*)"
        ),
        2,
        _flag,
    ),
    Rule(
        "mysql-password",
        ("mysql", "mariadb"),
        _r(
            r"(?<!\w)((?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p[ \t]?)"
            r"([^\s\"'<>|-][^\s\"']*|\"[^\"\n]*\"|'[^'\n]*')"
        ),
        2,
        _value(plausible_value),
    ),
    Rule(
        "cli-password",
        ("sshpass", "redis-cli", "login", "-passin", "-passout"),
        _r(
            r"(?i)((?:sshpass\s+-p|redis-cli\b[^\n|;&]*?\s-a|login\b[^\n|;&]*?\s-p"
            r"|-pass(?:in|out)\s+pass:)[ \t]*)([^\s\"'-][^\s\"']*)"
        ),
        2,
        _value(plausible_value),
    ),
    Rule(
        "netrc-password",
        ("login",),
        _r(r"(?i)(login\s+\S+\s+password\s+)(\S+)"),
        2,
        _value(plausible_value),
    ),
    Rule(
        "curl-user",
        ("curl",),
        _r(r"(curl\b[^\n|;&]*?\s(?:-u|--user)[ =]?[\"']?[^\s:\"']*:)([^\s\"']+)"),
        2,
        _value(plausible_value),
    ),
    Rule(
        "cookie",
        ("curl",),
        _r(r"(curl\b[^\n|;&]*?\s(?:-b|--cookie)[ =]?[\"']?[^\s\"'=;]+=)([^\s\"';]+)"),
        2,
        _value(plausible_value),
    ),
    Rule(
        "password",
        ("://",),
        # scheme://user:password@host -> keep user and host, drop the password (which may hold
        # a ``/``, unlike a port followed by a path)
        _r(r"(?<=[A-Za-z0-9])(://[^\s:/@\[\]\"'<>]*:)([^\s@\"'<>?#]+)@"),
        2,
        _value(_url_password),
    ),
    Rule("url-token-user", ("://",), _r(r"(?<=[A-Za-z0-9])(://)([A-Za-z0-9_\-]{20,})@"), 2),
    Rule(
        "url-secret-param",
        (*SECRET_KEYWORDS, "auth", "signature"),
        _r(
            r"(?i)((?:passw(?:or)?d|pass|pwd|secret|token|credentials?|creds|dsn|passphrase|auth|signature|"
            + _name(*_OWNED_KEYS)
            + r")[\w\-]*=)"
            + _PARAM_VALUE
        ),
        2,
        _query_param,
    ),
    Rule(
        "url-secret-param",
        ("?key=", "&key=", "?sig=", "&sig="),
        _r(r"(?i)([?&](?:key|sig)=)" + _PARAM_VALUE),
        2,
    ),
    Rule(
        "url-encoded-secret",
        SECRET_KEYWORDS,
        # a form or JSON body written URL-encoded: ``password%3DS%26`` / ``%22password%22%3A%22S``
        _r(r"(?i)(" + _SECRET_NAME + r"(?:%22)?%3[DA](?:%22)?)" + _PARAM_VALUE),
        2,
        _value(plausible_value),
    ),
    # -- name = value: .env lines, YAML, JSON (also escaped inside a string), code, XML, env lists
    Rule(
        "secret",
        _ENV_KEYWORDS,
        _r(r"((?:" + _ENV_WORDS + r")[A-Z0-9_]*[ \t]*=[ \t]*)" + _VALUE),
        2,
        _env_line,
    ),
    Rule(
        "secret",
        SECRET_KEYWORDS,
        # A value followed by its own ``=`` is the name of the next assignment (``label: name =
        # value``): the possessive value cannot shrink to dodge that, so the next one is matched.
        _r(r"(?i)(" + _SECRET_NAME + _ASSIGN + r")(?!\[REDACTED)" + _VALUE + r"(?!\s*(?::=|=>|[:=]))"),
        2,
        named_value,
    ),
    Rule(
        "secret",
        ("name",),
        # an environment list: ``- name: DB_PASSWORD`` then ``value: S`` (Kubernetes), or
        # ``{"name": "API_TOKEN", "value": "S"}`` (ECS, Compose)
        _r(
            r"(?i)(name\\*[\"']?\s*:\s*\\*[\"']?[\w.\-]*(?:passw|pwd|pass\b|secret|token|key|credential|auth|dsn)"
            r"[\w.\-]*\\*[\"']?\s*,?\s*\\*[\"']?value\\*[\"']?\s*:\s*)" + _VALUE
        ),
        2,
        _value(plausible_value),
    ),
    Rule(
        "secret",
        SECRET_KEYWORDS,
        _r(r"(?i)(" + _SECRET_NAME + r">)([^<\s][^<\n]{0,500})(?=</)"),
        2,
        _xml_element,
    ),
    Rule(
        "secret",
        ("<add",),
        _r(r"(?i)(<add\s+key=\"[^\"]*(?:passw|secret|token|apikey|api_key)[^\"]*\"\s+value=\")([^\"]+)"),
        2,
        _value(plausible_value),
    ),
    # -- detect-secrets' high-entropy base64 check, on quoted strings (not a file's data)
    Rule(
        "high-entropy",
        (),
        _r(r"""(["'`])([A-Za-z0-9+/_\-]{32,256}+={0,2})\\?\1"""),
        2,
        _value(_high_entropy),
        anchored=False,
    ),
]
