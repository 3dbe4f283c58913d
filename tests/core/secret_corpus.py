"""One realistic FAKE value per secret format, and the wrappings a secret arrives in, built here
(never a real secret).

Each entry: a line as it would appear in a command, an output, a file or a note, and the secret
parts that must not survive redaction. Values are made from a seeded generator, so they have the
shape (prefix, length, alphabet) of the real format and nothing else.

* ``FORMATS``: one line per secret format (provider tokens, keys, credentials in configs);
* ``WRAPPINGS``: one password or token in the ways it is written around (escaped JSON inside a
  string, ``curl -d``, ``mysql -p``, a ``Cookie`` header, a Kubernetes env list, URL-encoded,
  upper-cased, with zero-width characters inside, cut by a line break, ...);
* ``CORPUS``: both.
"""

from __future__ import annotations

import base64
import random
import string

_rng = random.Random(1717)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def fake(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def uuid() -> str:
    return "-".join(fake(HEX, n) for n in (8, 4, 4, 4, 12))


def _pem(kind: str = "RSA") -> tuple[str, str]:
    body = "\n".join(fake(B64, 64) for _ in range(12)) + "\n" + fake(B64, 40) + "=="
    return f"-----BEGIN {kind} PRIVATE KEY-----\n{body}\n-----END {kind} PRIVATE KEY-----", body


def _formats() -> dict[str, tuple[str, list[str]]]:
    pem, pem_body = _pem()
    cut_pem, _ = _pem("OPENSSH")
    cut_pem = cut_pem[: len(cut_pem) // 2]  # a truncated block: no END line
    pgp, pgp_body = _pem("PGP")
    pgp = pgp.replace("PGP PRIVATE KEY-----", "PGP PRIVATE KEY BLOCK-----")
    tail_lines = pem_body.splitlines()[-4:]
    putty_priv = [fake(B64, 64) for _ in range(3)]
    putty_mac = fake(HEX, 64)
    docker_auth = base64.b64encode(b"deploy:" + fake(ALNUM, 16).encode()).decode()
    kube_key = base64.b64encode(fake(ALNUM, 120).encode()).decode()
    v: dict[str, tuple[str, str]] = {
        # -- AI providers
        "anthropic": ("ANTHROPIC key {}", "sk-ant-api03-" + fake(URLSAFE, 93) + "AA"),
        "anthropic_admin": ("export ANTHROPIC_ADMIN={}", "sk-ant-admin01-" + fake(URLSAFE, 93) + "AA"),
        "openai": ("client = OpenAI(api_key={!r})", "sk-proj-" + fake(URLSAFE, 48)),
        "openrouter": ("OPENROUTER: {}", "sk-or-v1-" + fake(HEX, 64)),
        "huggingface": ("huggingface-cli login --token {}", "hf_" + fake(string.ascii_letters, 34)),
        "huggingface_org": ("org token {} in use", "api_org_" + fake(string.ascii_letters, 34)),
        "groq": ("groq client with {}", "gsk_" + fake(ALNUM, 52)),
        "xai": ("grok key {}", "xai-" + fake(ALNUM, 80)),
        "perplexity": ("pplx {} set", "pplx-" + fake(ALNUM, 48)),
        "replicate": ("REPLICATE={} python run.py", "r8_" + fake(ALNUM, 37)),
        "langsmith": ("tracing with {}", "lsv2_pt_" + fake(HEX, 32) + "_" + fake(HEX, 10)),
        "pinecone": ("Pinecone(api_key={!r})", "pcsk_" + fake(ALNUM, 6) + "_" + fake(ALNUM + "_", 62)),
        # -- clouds and hosting
        "aws_access": ("aws_access_key_id = {}", "AKIA" + fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        "aws_secret": ("aws_secret_access_key = {}", fake(ALNUM + "/+", 40)),
        "aws_session": ('"SessionToken": "{}",', "FwoGZXIvYXdzE" + fake(ALNUM + "/+", 180)),
        "aws_session_iq": ("AWS_SESSION={}", "IQoJb3JpZ2luX2VjE" + fake(ALNUM + "/+", 300)),
        "aws_mws": ("mws token {}", "amzn.mws." + uuid()),
        "google": ("maps key {}", "AIza" + fake(URLSAFE, 35)),
        "google_oauth": ("Authorization header had {} then", "ya29." + fake(URLSAFE, 120)),
        "google_client_secret": ('"client_id_secret_pair": "{}"', "GOCSPX-" + fake(URLSAFE, 28)),
        "azure_storage": (
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net",
            fake(B64, 86) + "==",
        ),
        "azure_sas": (
            "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig={}",
            fake(ALNUM + "%", 43) + "%3D",
        ),
        "azure_service_bus": (
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={}",
            fake(B64, 43) + "=",
        ),
        "azure_ad": ("client credential {}", fake(ALNUM, 3) + "8Q~" + fake(ALNUM + "_~.-", 34)),
        "alibaba": ("aliyun configure --access-key-id {}", "LTAI" + fake(ALNUM, 20)),
        "digitalocean": ("doctl auth init -t {}", "dop_v1_" + fake(HEX, 64)),
        "heroku": ("HEROKU_API_KEY used: {}", "HRKU-AA" + fake(URLSAFE, 58)),
        "flyio": ("fly deploy with {}", "fo1_" + fake(URLSAFE, 43)),
        "flyio_macaroon": ("FLY_API_TOKEN={}", "fm2_" + fake(B64, 160) + "=="),
        "databricks": ("databricks configure {}", "dapi" + fake(HEX, 32)),
        "vault": ("VAULT token {}", "hvs." + fake(ALNUM, 90)),
        "vault_batch": ("batch {}", "hvb." + fake(URLSAFE, 150)),
        "terraform": (
            "credentials app.terraform.io token {}",
            fake(ALNUM, 14) + ".atlasv1." + fake(ALNUM, 67),
        ),
        "pulumi": ("pulumi login with {}", "pul-" + fake(HEX, 40)),
        "doppler": ("doppler setup --token {}", "dp.pt." + fake(ALNUM, 43)),
        "openshift": ("oc login --token={}", "sha256~" + fake(URLSAFE, 43)),
        "planetscale": ("pscale auth with {}", "pscale_tkn_" + fake(ALNUM, 43)),
        "supabase": ("supabase login --token {}", "sbp_" + fake(HEX, 40)),
        "supabase_secret": ("SUPABASE secret is {}", "sb_secret_" + fake(ALNUM, 32)),
        "cloudflare_ca": ("origin ca {}", "v1.0-" + fake(HEX, 24) + "-" + fake(HEX, 146)),
        "render": ("render api {}", "rnd_" + fake(ALNUM, 32)),
        "netlify": ("netlify deploy --auth {}", "nfp_" + fake(ALNUM, 36)),
        "tailscale": ("tailscale up --authkey={}", f"tskey-auth-k{fake(ALNUM, 10)}CNTRL-{fake(ALNUM, 30)}"),
        "dockerhub": ("echo {} | docker login -u deploy --password-stdin", "dckr_pat_" + fake(URLSAFE, 27)),
        "docker_auth": ('{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{}"}}}}}}', docker_auth),
        "kubeconfig": ("    client-key-data: {}", kube_key),
        # -- code hosting, CI and package registries
        "github": ("push with {}", "ghp_" + fake(ALNUM, 36)),
        "github_oauth": ("gh auth status: {}", "gho_" + fake(ALNUM, 36)),
        "github_app": ("installation token {}", "ghs_" + fake(ALNUM, 36)),
        "github_fine": ("token {}", "github_pat_" + fake(ALNUM + "_", 82)),
        "gitlab": ("git clone https://oauth2:{}@gitlab.com/acme/app.git", "glpat-" + fake(URLSAFE, 20)),
        "gitlab_deploy": ("deploy token {}", "gldt-" + fake(URLSAFE, 20)),
        "gitlab_runner": ("gitlab-runner register --token {}", "glrt-" + fake(URLSAFE, 20)),
        "gitlab_runner_reg": ("registration {}", "GR1348941" + fake(URLSAFE, 20)),
        "gitlab_session": ("Cookie set: {}", "_gitlab_session=" + fake(LOWER, 32)),
        "bitbucket": ("app password {}", "ATBB" + fake(ALNUM, 32)),
        "atlassian": ("JIRA_API {}", "ATATT3xFfGF0" + fake(URLSAFE, 180)),
        "npm": ("//registry.npmjs.org/:_authToken={}", "npm_" + fake(ALNUM, 36)),
        "npmrc_auth": ("_auth={}", base64.b64encode(b"ci:" + fake(ALNUM, 14).encode()).decode()),
        "pypi": ("twine upload -u __token__ -p {} dist/*", "pypi-AgEIcHlwaS5vcmc" + fake(URLSAFE, 120)),
        "rubygems": ("GEM_HOST_API_KEY: {}", "rubygems_" + fake(HEX, 48)),
        "clojars": ("deploy with {}", "CLOJARS_" + fake(ALNUM, 60)),
        "artifactory": ("jfrog key {}", "AKCp" + fake(ALNUM, 69)),
        "artifactory_reference": ("jfrog rt ping --access-token {}", "cmVmd" + fake(ALNUM, 59)),
        "postman": ("postman {}", "PMAK-" + fake(HEX, 24) + "-" + fake(HEX, 34)),
        "sourcegraph": ("src login {}", "sgp_" + fake(HEX, 40)),
        "sonar": ("sonar-scanner -Dsonar.login={}", "squ_" + fake(HEX, 40)),
        "circleci": ("circleci setup {}", "CCIPAT_" + fake(ALNUM, 22) + "_" + fake(HEX, 40)),
        "buildkite": ("bk configure {}", "bkua_" + fake(HEX, 40)),
        "octopus": ("octo push --apiKey={}", "API-" + fake(UPPER, 26)),
        # -- payments, mail, messaging, SaaS
        "stripe": ("STRIPE_KEY used: {}", "sk_live_" + fake(ALNUM, 24)),
        "stripe_restricted": ("key {} rotated", "rk_live_" + fake(ALNUM, 24)),
        "stripe_webhook": ("endpoint secret {}", "whsec_" + fake(ALNUM, 32)),
        "square": ("square token {}", "EAAA" + fake(URLSAFE, 60)),
        "square_oauth": ("oauth {}", "sq0csp-" + fake(URLSAFE, 43)),
        "shopify": ("X-Shopify-Access-Token: {}", "shpat_" + fake(HEX, 32)),
        "shippo": ("shippo {}", "shippo_live_" + fake(HEX, 40)),
        "flutterwave": ("FLW {}", "FLWSECK_TEST-" + fake(HEX, 32) + "-X"),
        "braintree": ("gateway {}", "access_token$production$" + fake(LOWER, 16) + "$" + fake(HEX, 32)),
        "plaid": ("plaid access {}", "access-sandbox-" + uuid()),
        "duffel": ("duffel {}", "duffel_test_" + fake(URLSAFE, 43)),
        "sendgrid": ("sg = SendGridAPIClient({!r})", f"SG.{fake(URLSAFE, 22)}.{fake(URLSAFE, 43)}"),
        "sendinblue": ("brevo {}", "xkeysib-" + fake(HEX, 64) + "-" + fake(ALNUM, 16)),
        "mailgun": ("mailgun {}", "key-" + fake(HEX, 32)),
        "mailchimp": ("mailchimp {} ok", fake(HEX, 32) + "-us6"),
        "mailersend": ("mailersend {}", "mlsn." + fake(HEX, 64)),
        "resend": ("resend.api_key = {!r}", "re_" + fake(ALNUM, 8) + "_" + fake(ALNUM, 24)),
        "twilio_key": ("twilio api key {} created", "SK" + fake(HEX, 32)),
        "twilio_account": ("account {} ok", "AC" + fake(HEX, 32)),
        "slack_bot": (
            "bot {} posted",
            f"xoxb-{fake(string.digits, 12)}-{fake(string.digits, 13)}-{fake(ALNUM, 24)}",
        ),
        "slack_user": (
            "user token {}",
            f"xoxp-{fake(string.digits, 12)}-{fake(string.digits, 12)}-{fake(ALNUM, 32)}",
        ),
        "slack_app": (
            "socket mode {}",
            f"xapp-1-A{fake(UPPER, 10)}-{fake(string.digits, 13)}-{fake(HEX, 64)}",
        ),
        "slack_webhook": (
            "curl -X POST https://{} -d '{{}}'",
            f"hooks.slack.com/services/T{fake(UPPER, 8)}/B{fake(UPPER, 10)}/{fake(ALNUM, 24)}",
        ),
        "discord_webhook": (
            "POST https://{}",
            f"discord.com/api/webhooks/{fake(string.digits, 18)}/{fake(URLSAFE, 68)}",
        ),
        "teams_webhook": (
            "webhook https://acme{}",
            f".webhook.office.com/webhookb2/{uuid()}@{uuid()}/IncomingWebhook/{fake(HEX, 32)}/{uuid()}",
        ),
        "discord_bot": (
            "client.run({!r})",
            "MT" + fake(ALNUM, 22) + "." + fake(URLSAFE, 6) + "." + fake(URLSAFE, 27),
        ),
        "telegram": ("TELEGRAM bot {} started", fake(string.digits, 10) + ":AA" + fake(URLSAFE, 33)),
        "telegram_url": (
            "curl https://api.telegram.org/bot{}/sendMessage -d chat_id=1",
            fake(string.digits, 9) + ":" + fake(URLSAFE, 35),
        ),
        "notion": ("notion {}", "ntn_" + fake(string.digits, 11) + fake(ALNUM, 35)),
        "notion_legacy": ("notion integration {}", "secret_" + fake(ALNUM, 43)),
        "linear": ("linear {}", "lin_api_" + fake(ALNUM, 40)),
        "sentry": ("sentry-cli with {}", "sntryu_" + fake(HEX, 64)),
        "grafana_cloud": ("grafana {}", "glc_" + fake(ALNUM, 40)),
        "grafana_api": ("grafana api key {}", "eyJrIjoi" + fake(ALNUM, 72)),
        "grafana_sa": ("grafana sa {}", "glsa_" + fake(ALNUM, 32) + "_" + fake(HEX, 8)),
        "newrelic": ("newrelic {}", "NRAK-" + fake(UPPER, 27)),
        "dynatrace": ("dynatrace {}", "dt0c01." + fake(UPPER, 24) + "." + fake(ALNUM, 64)),
        "easypost": ("easypost {}", "EZAK" + fake(ALNUM, 54)),
        "facebook": ("graph api {}", "EAAC" + fake(ALNUM, 150)),
        "onepassword_sa": ("OP_SERVICE_ACCOUNT {}", "ops_eyJ" + fake(B64, 250)),
        "onepassword_key": (
            "secret key {}",
            f"A3-{fake(UPPER, 6)}-{fake(UPPER, 11)}-{fake(UPPER, 5)}-{fake(UPPER, 5)}-{fake(UPPER, 5)}",
        ),
        "infracost": ("infracost {}", "ico-" + fake(ALNUM, 32)),
        "prefect": ("prefect cloud login -k {}", "pnu_" + fake(ALNUM, 36)),
        "readme": ("readme {}", "rdme_" + fake(LOWER, 70)),
        "scalingo": ("scalingo {}", "tk-us-" + fake(URLSAFE, 48)),
        "typeform": ("typeform {}", "tfp_" + fake(URLSAFE, 59)),
        "frameio": ("frameio {}", "fio-u-" + fake(URLSAFE, 64)),
        "adobe": ("adobe {}", "p8e-" + fake(ALNUM, 32)),
        "contentful": ("contentful {}", "CFPAT-" + fake(URLSAFE, 43)),
        "airtable": ("airtable {}", "pat" + fake(ALNUM, 14) + "." + fake(HEX, 64)),
        "harness": ("harness {}", f"pat.{fake(URLSAFE, 22)}.{fake(ALNUM, 24)}.{fake(ALNUM, 20)}"),
        "mapbox": ("mapbox {}", f"sk.eyJ1Ijoi{fake(ALNUM, 20)}.{fake(URLSAFE, 22)}"),
        "age": ("age key: {}", "AGE-SECRET-KEY-1" + fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58)),
        "jwt": ("session cookie {}", f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi{fake(ALNUM, 20)}.{fake(URLSAFE, 43)}"),
        # -- credentials in headers, commands, URLs and config files
        "bearer": (
            'curl -H "Authorization: Bearer {}" https://api.example.com',
            "eyJhbGciOi" + fake(ALNUM, 40),
        ),
        "opaque_bearer": ("sent Bearer {} upstream", fake(ALNUM, 12) + "7"),
        "basic": (
            "Authorization: Basic {}",
            base64.b64encode(b"deploy:" + fake(ALNUM, 14).encode()).decode(),
        ),
        "x_api_key": ('curl -H "X-API-Key: {}" https://api.example.com', fake(ALNUM, 32)),
        "cli_password": ("psql --password {} -h db", fake(ALNUM, 10) + "9"),
        "cli_password_eq": ("mytool login --password={}", fake(ALNUM, 11) + "8"),
        "mysql": ("mysql -u root -p{} app < dump.sql", fake(ALNUM, 12) + "5"),
        "openssl_passin": ("openssl rsa -in key.pem -passin pass:{} -out plain.pem", fake(ALNUM, 14) + "1"),
        "curl_user": ("curl -u admin:{} https://ci.example.com", fake(ALNUM, 12) + "3"),
        "url_password": ("redis://default:{}@cache.internal:6379/0", fake(ALNUM, 14) + "4"),
        "mongodb_srv": (
            "MONGO_URL mongodb+srv://app:{}@cluster0.ab1cd.mongodb.net/prod",
            fake(ALNUM, 16) + "2",
        ),
        "jdbc": ("jdbc:mysql://db:3306/app?user=app&password={}&useSSL=true", fake(ALNUM, 13) + "7"),
        "env_token": ("GITHUB_TOKEN={}", fake(ALNUM, 30) + "1"),
        "env_secret": ("export APP_SECRET={}", fake(ALNUM, 18) + "2"),
        "env_key": ("OPENWEATHER_API_KEY={}", fake(ALNUM, 26) + "3"),
        "env_dsn": ("SENTRY_DSN={}", f"https://{fake(HEX, 32)}@o12345.ingest.sentry.io/42"),
        "env_pass": ("SMTP_PASS={}", "Tr0ub4dor" + fake(ALNUM, 4)),
        "env_password": ("DB_PASSWORD='{}'", "hunter" + fake(ALNUM, 6) + "2"),
        "label_value": ("note: db_password = {}", fake(ALNUM, 15) + "6"),
        "json_secret": ('{{"client_secret": "{}"}}', fake(ALNUM, 20) + "0"),
        "nuget": ('<add key="ClearTextPassword" value="{}" />', fake(ALNUM, 16) + "5"),
        "maven_settings": ("<server><id>repo</id><password>{}</password></server>", fake(ALNUM, 16) + "8"),
        "high_entropy": ('signing = "{}"', fake(ALNUM, 44)),
    }
    lines: dict[str, tuple[str, list[str]]] = {
        "private_key": (f"cat id_rsa\n{pem}\n", pem_body.splitlines()),
        "private_key_cut": (
            f"head -c 900 key\n{cut_pem}",
            cut_pem.splitlines()[1:],
        ),
        "private_key_tail": (
            "tail -5 key.pem\n" + "\n".join(tail_lines) + "\n-----END RSA PRIVATE KEY-----\n",
            tail_lines,
        ),
        "private_key_body": (
            "sed -n 3,6p key.pem\n" + "\n".join(pem_body.splitlines()[2:6]) + "\n(lines 3-6 of the key)",
            pem_body.splitlines()[2:6],
        ),
        "private_key_lines": (
            "\n".join(pem_body.splitlines()[6:9]) + "\n(sed -n 8,10p key.pem)",
            pem_body.splitlines()[6:9],
        ),
        "pgp_private_key": (f"gpg --export-secret-keys -a\n{pgp}\n", pgp_body.splitlines()),
        "putty": (
            "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
            "AAAAB3NzaC1yc2E\nPrivate-Lines: 3\n" + "\n".join(putty_priv) + f"\nPrivate-MAC: {putty_mac}\n",
            [*putty_priv, putty_mac],
        ),
    }
    for kind, (template, value) in v.items():
        lines[kind] = (template.format(value), [value])
    return lines


#: the password and the token every wrapping carries
PASSWORD = "Zq8x" + fake(ALNUM, 14) + "2s"
TOKEN = "ghp_" + fake(ALNUM, 36)
_B64_PASSWORD = base64.b64encode(PASSWORD.encode()).decode()
_BASIC = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()
_ZW = "\u200b"


def _wrappings() -> dict[str, tuple[str, list[str]]]:
    p, t = PASSWORD, TOKEN
    slash = p[:6] + "/" + p[6:12] + "+" + p[12:]
    w: dict[str, tuple[str, list[str]]] = {
        # the wrappings that leaked before (and the formats next to them)
        "w_json_escaped": (f'{{"body": "{{\\"password\\": \\"{p}\\"}}"}}', [p]),
        "w_json_double_escaped": (f'"{{\\\\\\"password\\\\\\": \\\\\\"{p}\\\\\\"}}"', [p]),
        "w_curl_d_json": (
            "curl -X POST https://api.example.com/login "
            f'-d "{{\\"user\\": \\"admin\\", \\"password\\": \\"{p}\\"}}"',
            [p],
        ),
        "w_curl_d_json_single": (
            f'curl -s https://api.example.com/login -d \'{{"username":"admin","password":"{p}"}}\'',
            [p],
        ),
        "w_mysql_attached": (f"mysql -u root -p{p} app < dump.sql", [p]),
        "w_mysql_space": (f"mysql -h db.internal -u root -p {p} app", [p]),
        "w_cookie": (f"Cookie: session={p}", [p]),
        "w_cookie_header_flag": (f"curl -H 'Cookie: sessionid={p}' https://app.example.com/me", [p]),
        "w_set_cookie": (f"Set-Cookie: sessionid={p}; Path=/; HttpOnly; Secure", [p]),
        "w_curl_cookie": (f"curl -b 'session={p}' https://app.example.com/me", [p]),
        "w_k8s_env": (
            f"      env:\n        - name: DB_PASSWORD\n          value: {p}\n        - name: LOG_LEVEL",
            [p],
        ),
        "w_k8s_env_quoted": (f'        - name: "API_TOKEN"\n          value: "{p}"', [p]),
        "w_ecs_env": (f'"environment": [{{"name": "DB_PASSWORD", "value": "{p}"}}]', [p]),
        "w_urlencoded": (f"body=user%3Dbob%26password%3D{p}%26remember%3D1", [p]),
        "w_urlencoded_json": (f"q=%7B%22user%22%3A%22bob%22%2C%22password%22%3A%22{p}%22%7D", [p]),
        "w_upper_token": (f"push with {t.upper()}", [t.upper(), t[4:], t.upper()[4:]]),
        "w_upper_prefix": (f"push with GHP_{t[4:]}", [t[4:]]),
        "w_zero_width": (f"token {t[:15]}{_ZW}{t[15:]}", [t[15:], t[4:15] + _ZW + t[15:]]),
        "w_zero_width_joiner": (
            f"token {t[:10]}\u200d{t[10:20]}\ufeff{t[20:]} in use",
            [t[4:10], t[10:20], t[20:]],
        ),
        "w_newline_split": (f"token {t[:20]}\n{t[20:]} used", [t[4:20], t[20:]]),
        "w_newline_split_crlf": (
            f"Authorization token:\r\n{t[:30]}\r\n{t[30:]}\r\nnext line",
            [t[4:30], t[30:]],
        ),
        "w_docker_auth": (f'{{"auths":{{"registry.example.com":{{"auth":"{_BASIC}"}}}}}}', [_BASIC]),
        "w_url_slash_password": (f"redis://default:{slash}@cache.internal:6379/0", [slash, slash[7:]]),
        "w_telegram_bot_url": (
            f"https://api.telegram.org/bot7134567890:{p}{p[:15]}/getUpdates",
            [f"7134567890:{p}{p[:15]}"],
        ),
        # the wrappings that held
        "w_env": (f"password={p}", [p]),
        "w_assign_quoted": (f'password = "{p}"', [p]),
        "w_export": (f"export DB_PASSWORD={p}", [p]),
        "w_json": (f'{{"password": "{p}"}}', [p]),
        "w_yaml": (f"database:\n  password: {p}\n  host: db", [p]),
        "w_toml": (f'[db]\npassword = "{p}"', [p]),
        "w_xml": (f"<password>{p}</password>", [p]),
        "w_flag_space": (f"app --password {p} --verbose", [p]),
        "w_flag_eq": (f"mysql --user=root --password={p} app", [p]),
        "w_docker_e": (f"docker run -e POSTGRES_PASSWORD={p} postgres:16", [p]),
        "w_docker_login": (f"docker login -u deploy -p {p} registry.example.com", [p]),
        "w_curl_u": (f"curl -u admin:{p} https://ci.example.com", [p]),
        "w_curl_form": (f"curl --data 'user=admin&password={p}' https://api.example.com/login", [p]),
        "w_query": (f"GET https://app.example.com/login?user=bob&password={p}&next=/", [p]),
        "w_git_url": (f"git clone https://deploy:{p}@github.com/acme/app.git", [p]),
        "w_pg_url": (f'psql "postgresql://app:{p}@db.internal:5432/app"', [p]),
        "w_pgpassword": (f"PGPASSWORD={p} psql -h db -U app", [p]),
        "w_basic_header": (f'"Authorization": "Basic {_BASIC}"', [_BASIC]),
        "w_python_environ": (f'os.environ["API_KEY"] = "{p}"', [p]),
        "w_js_const": (f'const apiKey = "{p}";', [p]),
        "w_go_struct": (f'cfg := Config{{Password: "{p}", Host: "db"}}', [p]),
        "w_redis_cli": (f"redis-cli -h cache -a {p} ping", [p]),
        "w_sshpass": (f"sshpass -p {p} ssh deploy@host", [p]),
        "w_netrc": (f"machine api.example.com login deploy password {p}", [p]),
        "w_x_api_key": (f"X-API-Key: {p}", [p]),
        "w_powershell": (f'$env:API_KEY = "{p}"', [p]),
        "w_windows_set": (f"set DB_PASSWORD={p}", [p]),
        "w_k8s_secret_data": (f"kind: Secret\ndata:\n  password: {_B64_PASSWORD}", [_B64_PASSWORD]),
        "w_token_in_json_log": (f'{{"level":"info","msg":"auth ok","token":"{t}"}}', [t, t[4:]]),
    }
    return w


FORMATS = _formats()
WRAPPINGS = _wrappings()
CORPUS = {**FORMATS, **WRAPPINGS}
#: the formats and wrappings an earlier redaction let through (each must stay caught)
LEAKED_BEFORE = [
    "w_json_escaped", "w_curl_d_json", "w_mysql_attached", "w_mysql_space", "w_cookie", "w_k8s_env",
    "w_urlencoded", "w_upper_token", "w_zero_width", "w_newline_split", "dockerhub", "docker_auth",
    "supabase", "discord_bot", "telegram_url", "w_url_slash_password",
]  # fmt: skip
