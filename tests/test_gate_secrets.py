"""Secret detector of the write gate (SPEC G3): provider tokens, key blocks, credentials in URLs and headers,
labelled secrets and passwords/PINs in prose -- with exact spans, redaction, hard negatives and adversarial timing.

Every secret below is fake: generated here from a seeded RNG in the right alphabet and shape.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.gate import REJECT, Candidate
from memwarden.gate.secrets import KINDS, SecretHit, find_secrets, redact, scan_secrets
from memwarden.policy import Policy

AN = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"
URLSAFE = AN + "_-"
B64 = AN + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    """n random characters; at least one digit and one letter when the alphabet has both (as real keys do)."""
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        digits = any(c.isdigit() for c in alphabet)
        letters = any(c.isalpha() for c in alphabet)
        if (not digits or any(c.isdigit() for c in s)) and (not letters or any(c.isalpha() for c in s)):
            return s


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _luhn_number(rng: random.Random, first: str, length: int) -> str:
    digits = first + "".join(rng.choice(string.digits) for _ in range(length - len(first) - 1))
    for check in string.digits:
        total = 0
        for k, ch in enumerate(reversed(digits + check)):
            d = int(ch) * (2 if k % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits + check
    raise AssertionError("unreachable")


WORDS = ("legal winner thank year wave sausage worth useful abandon ability able about above absent absorb abstract "
         "absurd abuse access accident account accuse achieve acid acoustic acquire across act action actor").split()


def _jwt(rng: random.Random) -> str:
    header = _b64url({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    payload = _b64url({"sub": _r(rng, AN, 12), "iat": rng.randint(1_600_000_000, 1_800_000_000), "admin": False})
    return f"{header}.{payload}.{_r(rng, URLSAFE, 43)}"


def _discord(rng: random.Random) -> str:
    snowflake = str(rng.randint(10**17, 10**18 - 1)).encode()
    first = base64.b64encode(snowflake).decode().rstrip("=")
    return f"{first}.{_r(rng, URLSAFE, 6)}.{_r(rng, URLSAFE, 38)}"


def _azure_client_secret(rng: random.Random) -> str:
    return _r(rng, AN, 3) + str(rng.randint(0, 9)) + "Q~" + _r(rng, AN + "_~.-", 32) + "x0"


# kind -> generator of one fake credential (the whole string is the secret and the expected span).
TOKEN_GENERATORS: dict[str, list[Callable[[random.Random], str]]] = {
    "memwarden_token": [lambda r: "mw_operator_" + _r(r, URLSAFE, 43), lambda r: "mw_agent_" + _r(r, URLSAFE, 43),
                        lambda r: "mw_agent_" + _r(r, AN, 43)],
    "aws_access_key": [lambda r: "AKIA" + _r(r, B32, 16), lambda r: "ASIA" + _r(r, B32, 16),
                       lambda r: "ABIA" + _r(r, UPPER_DIGITS, 16)],
    "github_token": [lambda r: "ghp_" + _r(r, AN, 36), lambda r: "gho_" + _r(r, AN, 36),
                     lambda r: "ghu_" + _r(r, AN, 36), lambda r: "ghs_" + _r(r, AN, 36),
                     lambda r: "ghr_" + _r(r, AN, 36),
                     lambda r: "github_pat_" + _r(r, AN, 22) + "_" + _r(r, AN, 59)],
    "gitlab_token": [lambda r: "glpat-" + _r(r, URLSAFE, 20), lambda r: "glptt-" + _r(r, HEX, 40),
                     lambda r: "gldt-" + _r(r, AN, 20)],
    "slack_token": [lambda r: f"xoxb-{_r(r, string.digits, 11)}-{_r(r, string.digits, 12)}-{_r(r, AN, 24)}",
                    lambda r: f"xoxp-{_r(r, string.digits, 11)}-{_r(r, string.digits, 11)}-"
                              f"{_r(r, string.digits, 12)}-{_r(r, HEX, 32)}",
                    lambda r: f"xapp-1-A{_r(r, UPPER_DIGITS, 10)}-{_r(r, string.digits, 13)}-{_r(r, HEX, 64)}"],
    "stripe_key": [lambda r: "sk_live_" + _r(r, AN, 24), lambda r: "rk_live_" + _r(r, AN, 24),
                   lambda r: "sk_test_" + _r(r, AN, 99)],
    "openai_key": [lambda r: "sk-proj-" + _r(r, URLSAFE, 74) + "T3BlbkFJ" + _r(r, URLSAFE, 74) + "A",
                   lambda r: "sk-svcacct-" + _r(r, URLSAFE, 58) + "T3BlbkFJ" + _r(r, URLSAFE, 58) + "A",
                   lambda r: "sk-" + _r(r, AN, 20) + "T3BlbkFJ" + _r(r, AN, 20),
                   lambda r: "sk-" + _r(r, AN, 48)],
    "anthropic_key": [lambda r: "sk-ant-api03-" + _r(r, URLSAFE, 93) + "AA",
                      lambda r: "sk-ant-admin01-" + _r(r, URLSAFE, 93) + "AA",
                      lambda r: "sk-ant-api03-" + _r(r, AN, 40)],
    "google_api_key": [lambda r: "AIza" + _r(r, AN, 35), lambda r: "AIzaSy" + _r(r, URLSAFE, 32) + "x",
                       lambda r: "AIza" + _r(r, URLSAFE, 34) + "Q"],
    "google_oauth": [lambda r: "GOCSPX-" + _r(r, URLSAFE, 28), lambda r: "ya29." + _r(r, URLSAFE, 120),
                     lambda r: "GOCSPX-" + _r(r, AN, 28)],
    "twilio_key": [lambda r: "SK" + _r(r, HEX, 32), lambda r: "AC" + _r(r, HEX, 32),
                   lambda r: "SK" + _r(r, HEX.upper(), 32)],
    "sendgrid_key": [lambda r: f"SG.{_r(r, URLSAFE, 22)}.{_r(r, URLSAFE, 43)}"] * 3,
    "mailgun_key": [lambda r: "key-" + _r(r, HEX, 32)] * 3,
    "mailchimp_key": [lambda r: _r(r, HEX, 32) + f"-us{r.randint(1, 21)}"] * 3,
    "npm_token": [lambda r: "npm_" + _r(r, AN, 36)] * 3,
    "pypi_token": [lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, URLSAFE, 140),
                   lambda r: "pypi-AgENdGVzdC5weXBpLm9yZw" + _r(r, URLSAFE, 80)],
    "docker_token": [lambda r: "dckr_pat_" + _r(r, URLSAFE, 27), lambda r: "dckr_oat_" + _r(r, URLSAFE, 32)],
    "huggingface_token": [lambda r: "hf_" + _r(r, string.ascii_letters, 34), lambda r: "hf_" + _r(r, AN, 34),
                          lambda r: "api_org_" + _r(r, string.ascii_letters, 34)],
    "discord_token": [_discord] * 3,
    "discord_webhook": [lambda r: f"discord.com/api/webhooks/{_r(r, string.digits, 18)}/{_r(r, URLSAFE, 68)}"] * 3,
    "telegram_token": [lambda r: f"{r.randint(10**8, 10**10 - 1)}:AA{_r(r, URLSAFE, 33)}"] * 3,
    "shopify_token": [lambda r: "shpat_" + _r(r, HEX, 32), lambda r: "shpss_" + _r(r, HEX, 32),
                      lambda r: "shpca_" + _r(r, HEX, 32)],
    "digitalocean_token": [lambda r: "dop_v1_" + _r(r, HEX, 64), lambda r: "doo_v1_" + _r(r, HEX, 64),
                           lambda r: "dor_v1_" + _r(r, HEX, 64)],
    "heroku_key": [lambda r: "HRKU-AA" + _r(r, URLSAFE, 58)] * 3,
    "square_token": [lambda r: "sq0atp-" + _r(r, URLSAFE, 22), lambda r: "sq0csp-" + _r(r, URLSAFE, 43),
                     lambda r: "EAAA" + _r(r, URLSAFE, 60)],
    "facebook_token": [lambda r: "EAAC" + _r(r, AN, 120)] * 3,
    "paypal_token": [lambda r: f"access_token$production${_r(r, HEX + 'ghijklmnopqrstuvwxyz', 16)}${_r(r, HEX, 32)}",
                     lambda r: f"access_token$sandbox${_r(r, string.digits + 'abcdefxyz', 16)}${_r(r, HEX, 32)}"],
    "atlassian_token": [lambda r: "ATATT3" + _r(r, URLSAFE + "=", 186)] * 3,
    "jwt": [_jwt] * 3,
    "databricks_token": [lambda r: "dapi" + _r(r, HEX, 32)] * 3,
    "vault_token": [lambda r: "hvs." + _r(r, URLSAFE, 95)] * 3,
    "linear_key": [lambda r: "lin_api_" + _r(r, AN, 40)] * 3,
    "notion_token": [lambda r: "ntn_" + _r(r, string.digits, 11) + _r(r, AN, 35), lambda r: "secret_" + _r(r, AN, 43)],
    "postman_key": [lambda r: f"PMAK-{_r(r, HEX, 24)}-{_r(r, HEX, 34)}"] * 3,
    "pulumi_token": [lambda r: "pul-" + _r(r, HEX, 40)] * 3,
    "grafana_token": [lambda r: "glc_" + _r(r, B64, 60), lambda r: f"glsa_{_r(r, AN, 32)}_{_r(r, HEX, 8)}"],
    "newrelic_key": [lambda r: "NRAK-" + _r(r, UPPER_DIGITS, 27), lambda r: "NRII-" + _r(r, URLSAFE, 32)],
    "sentry_token": [lambda r: "sntryu_" + _r(r, HEX, 64)] * 3,
    "tailscale_key": [lambda r: f"tskey-auth-{_r(r, AN, 12)}-{_r(r, AN, 32)}",
                      lambda r: f"tskey-api-{_r(r, AN, 12)}-{_r(r, AN, 32)}"],
    "supabase_token": [lambda r: "sbp_" + _r(r, HEX, 40)] * 3,
    "onepassword_token": [lambda r: f"A3-{_r(r, UPPER_DIGITS, 6)}-{_r(r, UPPER_DIGITS, 11)}-"
                                    f"{_r(r, UPPER_DIGITS, 5)}-{_r(r, UPPER_DIGITS, 5)}-{_r(r, UPPER_DIGITS, 5)}",
                          lambda r: "ops_eyJ" + _r(r, B64, 300)],
    "age_key": [lambda r: "AGE-SECRET-KEY-1" + "".join(r.choice(BECH32) for _ in range(58))],
    "alibaba_key": [lambda r: "LTAI" + _r(r, AN, 20)] * 3,
    "artifactory_key": [lambda r: "AKCp" + _r(r, AN, 69)] * 3,
    "openrouter_key": [lambda r: "sk-or-v1-" + _r(r, HEX, 64)] * 3,
    "groq_key": [lambda r: "gsk_" + _r(r, AN, 52)] * 3,
    "xai_key": [lambda r: "xai-" + _r(r, AN, 80)] * 3,
    "perplexity_key": [lambda r: "pplx-" + _r(r, AN, 48)] * 3,
    "replicate_token": [lambda r: "r8_" + _r(r, AN, 37)] * 3,
    "rubygems_token": [lambda r: "rubygems_" + _r(r, HEX, 48)] * 3,
    "sendinblue_key": [lambda r: f"xkeysib-{_r(r, HEX, 64)}-{_r(r, AN, 16)}"] * 3,
    "azure_client_secret": [_azure_client_secret] * 3,
    "doppler_token": [lambda r: "dp.pt." + _r(r, AN, 43), lambda r: "dp.st.prd." + _r(r, AN, 43),
                      lambda r: "dp.st." + _r(r, AN, 44)],
}

TEMPLATES = (
    "Remember for later: {s}",
    "The deploy script runs with export SERVICE_CREDENTIAL={s} before the build.",
    "User pasted '{s}' into the chat and asked me to keep it.",
)


def _token_cases() -> list[tuple[str, str, str]]:
    cases = []
    for kind, gens in TOKEN_GENERATORS.items():
        rng = random.Random(f"g3-{kind}")
        for i in range(max(3, len(gens))):
            secret = gens[i % len(gens)](rng)
            cases.append((kind, TEMPLATES[i % len(TEMPLATES)].format(s=secret), secret))
    return cases


TOKEN_CASES = _token_cases()


def _ids(cases: list[tuple[str, str, str]]) -> list[str]:
    return [f"{kind}-{i}" for i, (kind, _text, _secret) in enumerate(cases)]


def _only_hit(text: str) -> SecretHit:
    hits = find_secrets(text)
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.mark.parametrize(("kind", "text", "secret"), TOKEN_CASES, ids=_ids(TOKEN_CASES))
def test_g3_secret_provider_token_detected_with_exact_span(kind: str, text: str, secret: str) -> None:
    hit = _only_hit(text)
    start = text.index(secret)
    assert hit.kind == kind
    assert hit.span == (start, start + len(secret))
    assert hit.rule == f"secret.{kind}"
    redacted = redact(text, [hit])
    assert secret not in redacted
    assert redacted == text.replace(secret, f"[REDACTED secret.{kind}]")


def test_g3_secret_at_least_three_positives_per_kind() -> None:
    counts: dict[str, int] = {}
    for kind, _text, _secret in TOKEN_CASES + VALUE_CASES:
        counts[kind] = counts.get(kind, 0) + 1
    assert all(n >= 3 for n in counts.values()), counts
    assert set(counts) <= set(KINDS)
    assert set(KINDS) <= set(counts), set(KINDS) - set(counts)


# --- secrets whose span is a value inside a larger structure: (kind, text, exact secret substring) ---

def _pem(rng: random.Random, label: str, lines: int = 8, headers: str = "", escaped: bool = False) -> str:
    nl = "\\n" if escaped else "\n"
    body = nl.join(_r(rng, B64, 64) for _ in range(lines)) + nl + _r(rng, B64, 20) + "=="
    return f"-----BEGIN {label}-----{nl}{headers}{body}{nl}-----END {label}-----"


def _value_cases() -> list[tuple[str, str, str]]:
    rng = random.Random("g3-values")
    cases: list[tuple[str, str, str]] = []
    for label in ("RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY",
                  "ENCRYPTED PRIVATE KEY", "PRIVATE KEY", "PGP PRIVATE KEY BLOCK"):
        headers = "Version: GnuPG v2\n\n" if label.startswith("PGP") else ""
        pem = _pem(rng, label, headers=headers)
        cases.append(("private_key", f"Here is my key:\n{pem}\nthanks", pem))
    enc = _pem(rng, "RSA PRIVATE KEY", headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
               + _r(rng, HEX.upper(), 32) + "\n\n")
    cases.append(("private_key", enc, enc))
    truncated = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_r(rng, B64, 70) for _ in range(3))
    cases.append(("private_key", truncated + "\n(the rest got cut off)", truncated))
    putty = ("PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: laptop\nPublic-Lines: 2\n"
             + _r(rng, B64, 64) + "\n" + _r(rng, B64, 40) + "\nPrivate-Lines: 2\n" + _r(rng, B64, 64) + "\n"
             + _r(rng, B64, 30) + "\nPrivate-MAC: " + _r(rng, HEX, 40))
    cases.append(("private_key", f"my putty key: {putty}", putty))
    for _ in range(3):
        key = _pem(rng, "PRIVATE KEY", escaped=True) + "\\n"
        doc = json.dumps({"type": "service_account", "project_id": "demo-project", "private_key_id": _r(rng, HEX, 40),
                          "private_key": "PLACEHOLDER", "client_email": "svc@demo-project.iam.gserviceaccount.com"})
        text = doc.replace('"PLACEHOLDER"', f'"{key}"')
        cases.append(("gcp_service_account", text, key))
    for i in range(3):
        v = _r(rng, B64, 86) + "=="
        cases.append(("azure_storage_key", f"DefaultEndpointsProtocol=https;AccountName=acct{i};AccountKey={v};"
                                           "EndpointSuffix=core.windows.net", v))
    for _ in range(3):
        sig = _r(rng, AN + "%", 43) + "%3D"
        cases.append(("azure_sas", f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r"
                                   f"&sig={sig}", sig))
    for _ in range(3):
        url = "hooks.slack.com/services/T" + _r(rng, UPPER_DIGITS, 8) + "/B" + _r(rng, UPPER_DIGITS, 10) + "/" \
              + _r(rng, AN, 24)
        cases.append(("slack_webhook", f"Post alerts to https://{url} please", url))
    for tmpl in ("aws_secret_access_key = {v}", "AWS_SECRET_ACCESS_KEY={v}", 'the AWS secret key is "{v}"'):
        v = _r(rng, B64, 40)
        cases.append(("aws_secret_key", tmpl.format(v=v), v))
    for tmpl in ("HEROKU_API_KEY={v}", "heroku api key: {v}", "my Heroku token is {v}"):
        v = f"{_r(rng, HEX, 8)}-{_r(rng, HEX, 4)}-4{_r(rng, HEX, 3)}-a{_r(rng, HEX, 3)}-{_r(rng, HEX, 12)}"
        cases.append(("heroku_key", tmpl.format(v=v), v))
    for tmpl in ("JIRA_API_TOKEN={v}", "atlassian token: {v}", "Confluence API token is {v}"):
        v = _r(rng, AN, 24)
        cases.append(("atlassian_token", tmpl.format(v=v), v))
    for scheme, user, host in (("postgres", "admin", "db.internal:5432/app"), ("redis", "", "cache:6379/0"),
                               ("https", "bob", "git.example.com/repo.git"), ("mongodb+srv", "app", "cluster0.x.net")):
        pw = rng.choice(["Tr0ub4dor&3", _r(rng, AN, 12), "s3cr3t-Pa55", "p@ss:w0rd"])
        cases.append(("url_password", f"connect with {scheme}://{user}:{pw}@{host}", pw))
    for tmpl in ("Authorization: Bearer {v}", "curl -H 'Authorization: Token {v}' https://api.example.com",
                 "the bearer token is {v}", "Bearer {v}"):
        v = _r(rng, AN + "-._~", 32) + "x"
        cases.append(("bearer_token", tmpl.format(v=v), v))
    for creds in ("alice:wonderland42", "deploy:Zx9!kq2#", "svc-user:" + _r(rng, AN, 16)):
        v = base64.b64encode(creds.encode()).decode()
        cases.append(("basic_auth", f"Authorization: Basic {v}", v))
    v = base64.b64encode(b"root:hunter2hunter2").decode()
    cases.append(("basic_auth", f"use Basic {v} for the proxy", v))
    for tmpl in ("OKTA_API_TOKEN=00{v}", "Okta API token 00{v}", "okta token: 00{v}"):
        v = _r(rng, URLSAFE, 40)
        cases.append(("okta_token", tmpl.format(v=v), "00" + v))
    for tmpl in ("Seed phrase: {v}", "my wallet recovery phrase is {v}.", "mnemonic = '{v}'"):
        v = " ".join(rng.choice(WORDS) for _ in range(rng.choice([12, 24])))
        cases.append(("seed_phrase", tmpl.format(v=v), v))
    cases.append(("recovery_code", "Recovery codes for the user's Google account: 8841-2291, 5530-1187, 9012-4463",
                  "8841-2291, 5530-1187, 9012-4463"))
    cases.append(("recovery_code", "GitHub recovery code is 3f9a2-b81c4 (keep it safe)", "3f9a2-b81c4"))
    cases.append(("recovery_code", "backup codes: 7261 0934 5512 8870 were printed", "7261 0934 5512 8870"))
    cases.append(("ssn", "SSN 078-05-1120 for the tax form", "078-05-1120"))
    cases.append(("ssn", "Her Social Security number: 219-09-9999", "219-09-9999"))
    cases.append(("ssn", "my ssn is 536 22 1234", "536 22 1234"))
    visa, master, amex = _luhn_number(rng, "4", 16), _luhn_number(rng, "5", 16), _luhn_number(rng, "37", 15)
    grouped = " ".join(visa[k:k + 4] for k in range(0, 16, 4))
    cases.append(("card_number", f"Card {grouped}, exp 09/27", grouped))
    cases.append(("card_number", f"Mastercard number {master} expires soon", master))
    dashed = f"{amex[:4]}-{amex[4:10]}-{amex[10:]}"
    cases.append(("card_number", f"the corporate card is {dashed}.", dashed))
    for tmpl in ("api_key = {v}", "client_secret: '{v}'", "STRIPE_WEBHOOK_TOKEN={v}", "my API key is {v}",
                 '{{"apiKey": "{v}"}}', "x-api-key: {v}", "SECRET_KEY={v}", "auth_token => {v}"):
        v = _r(rng, rng.choice([AN, HEX, URLSAFE]), rng.choice([20, 32, 40]))
        cases.append(("generic_secret", tmpl.format(v=v), v))
    return cases + PROSE_CASES


PROSE_CASES: list[tuple[str, str, str]] = [
    ("password_prose", "my password is hunter2", "hunter2"),
    ("password_prose", "The password for the router is Blue-Fox-42", "Blue-Fox-42"),
    ("password_prose", "User's wifi password is sunflower22.", "sunflower22"),
    ("password_prose", "Her Netflix password: Pa$$w0rd!", "Pa$$w0rd!"),
    ("password_prose", "The WiFi password at grandma's house is 'correct horse battery staple'",
     "correct horse battery staple"),
    ("password_prose", "db_password=Xk9mPq2vL8nR", "Xk9mPq2vL8nR"),
    ("password_prose", "the default password is admin", "admin"),
    ("password_prose", "the alarm passcode is 7391", "7391"),
    ("password_prose", "Zoom passcode: 482913", "482913"),
    ("password_prose", "login: bob, pass: tr1cky0ne", "tr1cky0ne"),
    ("password_prose", "mi contraseña es perro99", "perro99"),
    ("password_prose", "La contraseña del router es Casa2024", "Casa2024"),
    ("password_prose", "mot de passe : Soleil2024", "Soleil2024"),
    ("password_prose", "Le mot de passe du wifi est chat-noir-7", "chat-noir-7"),
    ("password_prose", "Das WLAN-Passwort ist Geheim123", "Geheim123"),
    ("password_prose", "Passwort lautet: Sommer#2023", "Sommer#2023"),
    ("password_prose", "A senha é gato123", "gato123"),
    ("password_prose", "a senha do banco é 8842", "8842"),
    ("password_prose", "La password del wifi è Mare2022", "Mare2022"),
    ("password_prose", "пароль: qwerty123", "qwerty123"),
    ("password_prose", "пароль от почты — Zvezda77", "Zvezda77"),
    ("password_prose", "我的密码是abc123", "abc123"),
    ("password_prose", "wifi密码：Sunny2024", "Sunny2024"),
    ("password_prose", "パスワードはneko2020です", "neko2020"),
    ("pin_prose", "PIN is 4821", "4821"),
    ("pin_prose", "PIN code: 0000", "0000"),
    ("pin_prose", "CVV 123", "123"),
    ("pin_prose", "My bank card PIN is 9034 and the CVC is 771", "9034"),
    ("pin_prose", "the garage door code is 2580", "2580"),
    ("pin_prose", "The safe combination is 314159", "314159"),
    ("pin_prose", "Mi PIN es 5567", "5567"),
    ("pin_prose", "Mein PIN ist 8812", "8812"),
    ("pin_prose", "PIN-код: 4455", "4455"),
    ("pin_prose", "PIN码是246810", "246810"),
    ("pin_prose", "card security code: 909", "909"),
    ("pin_prose", "The door code for the office is 7#3390", "7#3390"),
    ("password_prose", "User's bank login: username lena.k, password Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("generic_secret", "Twilio auth token 4bbf5b4d287659214f3d6620bb96ceaa", "4bbf5b4d287659214f3d6620bb96ceaa"),
]

VALUE_CASES = _value_cases()


@pytest.mark.parametrize(("kind", "text", "secret"), VALUE_CASES, ids=_ids(VALUE_CASES))
def test_g3_secret_value_detected_with_exact_span(kind: str, text: str, secret: str) -> None:
    hits = find_secrets(text)
    start = text.index(secret)
    assert [(h.kind, h.span) for h in hits][:1] == [(kind, (start, start + len(secret)))], (text, hits)
    redacted = redact(text, hits)
    assert secret not in redacted
    assert redacted.startswith(text[:start] + f"[REDACTED secret.{kind}]")


def test_g3_secret_two_pins_in_one_sentence() -> None:
    text = "My bank card PIN is 9034 and the CVC is 771"
    assert [(h.kind, text[h.span[0]:h.span[1]]) for h in find_secrets(text)] == [
        ("pin_prose", "9034"), ("pin_prose", "771")]
    assert redact(text, find_secrets(text)) == ("My bank card PIN is [REDACTED secret.pin_prose] and the CVC is "
                                                "[REDACTED secret.pin_prose]")


# --- hard negatives: none of these may produce a hit ---

HARD_NEGATIVES = [
    # passwords / PINs mentioned without a value
    "User uses a password manager",
    "User forgot their password",
    "User changed their password yesterday",
    "The password policy requires 12 characters",
    "password policy requires 12 characters",
    "The password must be at least 12 characters long",
    "The password is 16 characters long",
    "User's password is stored in 1Password",
    "Her wifi password is on a sticky note on the fridge",
    "The password reset link expired after an hour",
    "User never shares passwords with coworkers",
    "User prefers passkeys over passwords",
    "the password is the same as the old one",
    "The password is required to open the archive",
    "Password123 is a famously bad password",
    "User's password hint is their first pet",
    "The password was changed by IT last week",
    "the PIN pad is broken",
    "User sets a new PIN every year",
    "The PIN for the event is on the website",
    "PIN 2 on the Arduino connects to the LED",
    "CVV is the three digits on the back of the card",
    "The door code changes every month",
    "Her zip code is 94103",
    "The area code is 415",
    "The dress code is business casual",
    "security code review is scheduled for 2024-05-07",
    "Meeting passcode: see the calendar invite",
    "She set a new passcode on her phone",
    "User loves camping, shopping and spinning classes at 6",
    "Caroline is passionate about helping kids; she passed the exam in 2019",
    "She has a Spider-Man pin on her purse",
    "la contraseña es segura",
    "la clave del éxito es practicar",
    "Das Passwort ist sicher",
    "Le mot de passe est oublié",
    "A senha é forte",
    "пароль надёжный",
    "用户使用密码管理器",
    "密码是安全的",
    # tokens in the benign sense
    "User received a token of appreciation from the team",
    "The token limit for the model is 128000",
    "max_tokens=4096 works best for summaries",
    "token=example",
    "api_key = YOUR_API_KEY_HERE",
    "Set OPENAI_API_KEY=<your-key> in the .env file",
    "secret: ${{ secrets.NPM_TOKEN }}",
    "User's API key is stored in the team vault",
    "The secret ingredient is cinnamon",
    "The key to success is consistency-and-discipline-forever",
    "primary_key: user_id_and_timestamp_combined",
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop",
    "token_url: https://oauth2.googleapis.com/token",
    "next_page_token: CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0cHVhbXZlEgQI",
    "tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)",
    "Kubernetes secret name: db-credentials-prod-2024",
    "Bearer bonds were popular in the 1980s",
    "Basic income experiments ran in Finland in 2017",
    "Authorization is required for this endpoint",
    # "sk-" and friends inside words or other identifiers
    "The investment is risk-free",
    "User prefers risk-averse-investment-strategies-for-retirement-2024",
    "The desk-lamp and disk-based backups are in the garage",
    "User's GitHub handle is ghp-fan-2020",
    "hf_hub_download is the function to fetch models",
    "npm_config_registry is set through the environment",
    "He likes the band xoxo-forever",
    "SKU SK-1234-XYZ is out of stock",
    "The Heroku app is named sunny-meadow-1234",
    "Stripe publishable key pk_live_51H8sdfKJHsdf8723KJHsdf87sdfKJH is embedded in the checkout page",
    # hashes and ids
    "Fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "The build hash is 3f786850e387550fdab836ed7e6dc881de23001b",
    "Order id 123e4567-e89b-12d3-a456-426614174000 shipped",
    "Event 01ARZ3NDEKTSV4RRFFQ69G5FAV was recorded",
    "The tracking number is 1Z999AA10123456784",
    "The ISBN is 978-3-16-148410-0",
    "Version 2.14.0-beta.3+build.20240607 was released",
    "The config description field is base64: VGhpcyBpcyBhIHRlc3QgZGVzY3JpcHRpb24gb2YgdGhlIGNvbmZpZw==",
    "Its docstring is stored as QmFja3VwIHRoZSBkYXRhYmFzZSBldmVyeSBuaWdodA==",
    # AWS prefix in prose, documented example key
    "AKIA is the prefix AWS uses for access key ids",
    "AKIAIOSFODNN7EXAMPLE is the documented example key",
    # URLs without a password
    "ssh bob@build-server.internal to deploy",
    "https://user@github.com/org/repo.git",
    "git clone git@github.com:org/repo.git",
    "https://docs.python.org/3/library/re.html",
    "http://localhost:8080/api/v1/users",
    "https://example.com:8443/path?query=1",
    "Use https://user:password@host as the format",
    "postgres://user:pass@localhost/db is the template",
    "User's email is jane.doe.1987@example-mail.com",
    "The file is at /home/user/projects/memwarden/src/secrets_manager.py",
    # JWT-looking but not JWTs
    "eyJ",
    "The JWT starts with eyJ",
    "eyJhbGciOiJIUzI1NiJ9 is just a header",
    "eyJabc.eyJdef.ghi",
    "eyJzzzzzzzzzzzzzzzz.eyJzzzzzzzzzzzzzzzzz.abcdefghijkl",
    # ordinary LoCoMo-style facts with long hyphenated words
    "Joanna wrote bits for a screenplay, which was nerve-wracking but inspiring and self-expression.",
    "Caroline attended an adoption advice/assistance group to help with her decision.",
    # other sensitive-data shapes, without the data
    "User's phone number is +1 555 123 4567",
    "The SSN field on the form is optional",
    "Backup codes are stored in the safe deposit box",
    "User's recovery phrase is written on paper in the safe",
    "The seed phrase has 24 words and must never be typed into a website",
    "Reference 4000 1234 5678 9011 is the invoice number",
    "Okta is the identity provider since 2019",
    "Doppler radar showed rain at 3pm",
    "He lives at 4521 Oak Street, apartment 12",
    # technical but benign memories
    "User's Raspberry Pi runs at 192.168.1.42:8080",
    "The AWS region is us-east-1 and the bucket is acme-prod-logs-2024",
    "User's SSH key is ~/.ssh/id_ed25519",
    "Token budget for the summarizer: 4096 tokens",
    "version key: 3.11.7-final-20240101",
    "The Docker image is ghcr.io/acme/api-server:2024.06.11-b7f3c2a",
    "Use `export API_KEY=$(pass show openai)` to load the key",
    "Model id: claude-3-5-sonnet-20240620",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 is the image digest",
    "The Google Doc is https://docs.google.com/document/d/1A2b3C4d5E6f7G8h9I0jKlMnOpQrStUvWxYz/edit",
    "User's AWS account id is 123456789012",
    "Pin 7 on the GPIO header is ground",
    "The safe combination is written in the will",
    "SSN format is 123-45-6789",
    "The base64 logo is iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
    "==",
]


def test_g3_secret_card_negative_is_not_luhn_valid() -> None:  # keeps the negative above meaningful
    from memwarden.gate.secrets import _luhn

    assert not _luhn("4000123456789011") and _luhn("4111111111111111")


@pytest.mark.parametrize("text", HARD_NEGATIVES, ids=[f"neg{i}" for i in range(len(HARD_NEGATIVES))])
def test_g3_secret_hard_negative_not_flagged(text: str) -> None:
    assert find_secrets(text) == []


def test_g3_secret_enough_hard_negatives() -> None:
    assert len(HARD_NEGATIVES) >= 60


# --- overlaps, the scanner, edge cases ---

def test_g3_secret_bearer_jwt_is_reported_once_as_jwt() -> None:
    token = _jwt(random.Random(7))
    text = f"Authorization: Bearer {token}"
    assert [(h.kind, h.span) for h in find_secrets(text)] == [("jwt", (22, 22 + len(token)))]


def test_g3_secret_token_in_labelled_assignment_keeps_provider_kind() -> None:
    token = "ghp_" + _r(random.Random(8), AN, 36)
    text = f"GITHUB_TOKEN={token}"
    assert [(h.kind, h.span) for h in find_secrets(text)] == [("github_token", (13, 13 + len(token)))]


def test_g3_secret_url_with_token_password_reports_the_token() -> None:
    token = "glpat-" + _r(random.Random(9), URLSAFE, 20)
    text = f"git remote add origin https://oauth2:{token}@gitlab.com/team/app.git"
    hits = find_secrets(text)
    assert [h.kind for h in hits] == ["gitlab_token"]
    assert token not in redact(text, hits)


def test_g3_secret_several_secrets_redacted_and_rest_kept() -> None:
    rng = random.Random(10)
    aws, gh = "AKIA" + _r(rng, B32, 16), "ghp_" + _r(rng, AN, 36)
    text = f"keys: {aws} and {gh}; PIN is 4821."
    hits = find_secrets(text)
    assert [h.kind for h in hits] == ["aws_access_key", "github_token", "pin_prose"]
    assert redact(text, hits) == ("keys: [REDACTED secret.aws_access_key] and [REDACTED secret.github_token]; "
                                  "PIN is [REDACTED secret.pin_prose].")


def test_g3_secret_redact_merges_overlapping_hits() -> None:
    text = "abcdefghij"
    hits = [SecretHit("a", (1, 5)), SecretHit("b", (3, 8)), SecretHit("c", (4, 6))]
    assert redact(text, hits) == "a[REDACTED secret.a]ij"
    assert redact(text, []) == text


def test_g3_secret_empty_and_plain_text() -> None:
    assert find_secrets("") == []
    assert find_secrets("User likes hiking in the Alps with friends on weekends.") == []


def test_g3_secret_scanner_rejects_without_echoing_the_secret() -> None:
    token = "sk-ant-api03-" + _r(random.Random(11), URLSAFE, 93) + "AA"
    hits = list(scan_secrets(Candidate(content=f"my key: {token}"), Policy()))
    assert len(hits) == 1
    hit = hits[0]
    assert hit.rule == "secret.anthropic_key" and hit.action == REJECT
    assert hit.span == (8, 8 + len(token))
    assert token not in hit.message and token[:20] not in hit.message
    assert list(scan_secrets(Candidate(content=42), Policy())) == []


def test_g3_secret_original_case_matters() -> None:
    token = "AKIA" + _r(random.Random(12), B32, 16)
    assert find_secrets(token)[0].kind == "aws_access_key"
    assert find_secrets(token.lower()) == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_g3_secret_any_text_gives_ordered_in_bounds_hits(text: str) -> None:
    hits = find_secrets(text)
    assert hits == find_secrets(text)
    ends = -1
    for h in hits:
        assert 0 <= h.span[0] < h.span[1] <= len(text)
        assert h.kind in KINDS
        assert h.span[1] > ends
        ends = h.span[1]
    redact(text, hits)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TOKEN_CASES), st.text(alphabet=" .,;:!?()[]\"'\n", max_size=3),
       st.text(alphabet=" .,;:!?()[]\"'\n", max_size=3))
def test_g3_secret_token_found_whatever_the_surrounding_punctuation(case: tuple[str, str, str], pre: str,
                                                                    post: str) -> None:
    kind, _text, secret = case
    text = f"note{pre} {secret}{post} end"
    hits = find_secrets(text)
    start = text.index(secret)
    assert (kind, (start, start + len(secret))) in [(h.kind, h.span) for h in hits]


# --- linear time on adversarial input ---

ADVERSARIAL = {
    "A": "A" * 100_000,
    "sk-": "sk-" * 33_000,
    "eyJ-run": "eyJ" + "a" * 100_000,
    "eyJ-repeat": "eyJ" * 33_000,
    "eyJ-dots": "eyJaaaaaaaaaaaa." * 6_000,
    "scheme": "://" * 33_000,
    "url-colons": "http://" + "a:" * 50_000,
    "password-is": "password is " * 8_000,
    "password-for": "password for the " * 6_000,
    "pin": "pin " * 25_000,
    "pem-header": "-----BEGIN RSA PRIVATE KEY-----" * 3_000,
    "pem-open": "-----BEGIN PRIVATE KEY-----\n" + "A" * 100_000,
    "api-key": "api_key=" * 12_000,
    "token-run": "token" * 20_000 + "=" + "a1" * 300,
    "ghp": "ghp_" * 25_000,
    "hex": "0123456789abcdef" * 6_500,
    "digits-colon": ("1234567890:" * 9_000),
    "base64": ("QUJD" * 25_000),
    "at-signs": "x://u:" + "@" * 100_000,
    "spaces": " " * 100_000,
    "mixed": ("Bearer authorization: basic PIN code: " * 2_600),
}


# CPU time of this process (time.process_time), not wall time: other processes on a loaded machine must not
# make a complexity check fail.
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_g3_secret_adversarial_input_is_fast(name: str) -> None:
    text = ADVERSARIAL[name]
    t0 = time.process_time()
    hits = find_secrets(text)
    redact(text, hits)
    elapsed = time.process_time() - t0
    assert elapsed < 1.0, f"{name}: {elapsed:.3f}s"


# CPU time of this process (time.process_time), not wall time: other processes on a loaded machine must not
# make a complexity check fail.
def test_g3_secret_scan_time_grows_linearly() -> None:
    unit = "password for the router is Blue-Fox-42; ghp_" + "x1" * 18 + " eyJ" + "a" * 50 + " sk-risk-free pin 12 "

    def cost(n: int) -> float:
        text = unit * n
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            find_secrets(text)
            best = min(best, time.process_time() - t0)
        return best

    small, large = cost(100), cost(1000)
    assert large < small * 30, (small, large)
