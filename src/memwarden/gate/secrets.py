"""Secret detector for the write gate (SPEC G3: credentials and secrets never become memories).

``find_secrets(text)`` returns one :class:`SecretHit` per credential found in the *original* candidate text (many key
formats are case-sensitive, so callers must not case-fold first); ``redact(text, hits)`` replaces each hit with
``[REDACTED secret.<kind>]`` so that a rejected candidate can be audit-logged without its secret. Spans cover the
secret value only (``api_key = [REDACTED secret.generic_secret]``), so the redacted text still says what it was.

Coverage follows the shapes of gitleaks' default rule set for the main providers (patterns written here, not copied):

* provider tokens -- AWS access key ids, GitHub, GitLab, Slack (tokens and webhooks), Stripe, OpenAI, Anthropic,
  OpenRouter, Groq, xAI, Perplexity, Replicate, Hugging Face, Google (API keys, OAuth client secrets and access
  tokens), Azure (storage/shared-access keys, SAS signatures, AD client secrets), Twilio, SendGrid, Sendinblue,
  Mailgun, Mailchimp, npm, PyPI, RubyGems, Docker Hub, Discord (bot tokens, webhooks), Telegram, Shopify,
  DigitalOcean, Heroku, Square, Facebook, PayPal/Braintree, Atlassian, Databricks, Vault, Doppler, Linear, Notion,
  Postman, Pulumi, Grafana, New Relic, Sentry, Tailscale, Supabase, 1Password, age, Alibaba, Artifactory;
* structured secrets -- PEM private-key blocks of every type (also truncated and JSON-escaped ones), PuTTY keys,
  GCP service-account ``private_key`` fields, JWTs (header and payload must decode to JSON objects), URLs with an
  embedded password, ``Authorization:`` headers, ``Bearer``/``Basic`` credentials, Luhn-valid card numbers;
* labelled secrets -- AWS secret access keys, Heroku, Atlassian and Okta keys next to their provider's name, and
  generic ``api_key = ...`` / ``secret: ...`` / ``token=...`` / ``auth token 4bbf...`` values that look generated
  (16+ characters, Shannon entropy >= 3 bits/char, not an identifier, word list, path, file name, UUID after a bare
  space, or placeholder; labels such as ``public_key``, ``key_id``, ``token_count``, ``csrf_token`` do not count);
* prose -- passwords, PINs, CVVs, door/alarm codes, seed phrases, recovery codes and US SSNs stated in a sentence
  ("my password is hunter2", "PIN code: 0000", "CVV 123", "the password for the router is Blue-Fox-42") in English
  and, for passwords and PINs, Spanish, French, German, Portuguese, Italian, Russian, Chinese, Japanese and Korean.
  A value must follow the cue ("User uses a password manager", "the password is required" are fine).

Deliberately not flagged: Stripe publishable keys (``pk_live_``/``pk_test_``) and Mailgun ``pubkey-`` keys, which
are public by design and embedded in web pages; the documented AWS example key (``...EXAMPLE``); values made of
placeholders (``xxxx``, ``<password>``, ``${VAR}``, ``changeme``); SSH public keys; Twilio-style ids are flagged
(``AC``/``SK`` + 32 hex) because gitleaks does and they pair with a secret.

Speed: a benign sentence costs one lower-casing, two byte-table translations (is there a run of 16 token characters?
of 4 digits?) and one literal-alternation regex for word-initial prose cues; the detailed patterns run only for the
families whose anchors are present, and provider rules only for the two-character prefixes that occur. Every
pattern is linear: bounded or possessive quantifiers, and prefix patterns refuse to start inside a longer token, so
inputs like ``"eyJ" * 30000`` cannot make them rescan the same run.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from memwarden.gate import REJECT, Candidate, RuleHit
from memwarden.policy import Policy

__all__ = ["KINDS", "SecretHit", "find_secrets", "redact", "scan_secrets"]


@dataclass(frozen=True, slots=True)
class SecretHit:
    kind: str  # e.g. "aws_access_key", "github_token", "private_key", "password_prose"
    span: tuple[int, int]  # character span of the secret value in the original text

    @property
    def rule(self) -> str:
        return f"secret.{self.kind}"


# A raw hit while scanning: (start, end, priority, kind). Lower priority numbers are more specific.
_Raw = tuple[int, int, int, str]
_Check = Callable[[str, "re.Match[str]"], bool]

# ---------------------------------------------------------------------------------------------------------------
# Value heuristics
# ---------------------------------------------------------------------------------------------------------------


_CLOG2 = [0.0] + [c * math.log2(c) for c in range(1, 1025)]  # c*log2(c), so entropy needs no per-call logarithms


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character: log2(n) - sum(c * log2(c)) / n over the character counts c."""
    n = len(s)
    if n == 0:
        return 0.0
    counts = Counter(s).values()
    total = sum(map(_CLOG2.__getitem__, counts)) if n < len(_CLOG2) else sum(c * math.log2(c) for c in counts)
    return math.log2(n) - total / n


_PLACEHOLDER_PARTS = (
    "xxxx", "****", "....", "••", "example", "your", "placeholder", "changeme", "change_me", "change-me", "dummy",
    "redacted", "sample", "insert", "replace", "todo", "fixme", "<", ">", "${", "{{", "%(", "environ", "getenv",
    "process.env", "secrets.", "notreal", "not_real", "not-real", "abcdefgh", "01234567",
)
_PLACEHOLDER_WORDS = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "token", "changeme", "test", "testing", "admin123", "none", "null",
    "nil", "undefined", "empty", "hidden", "mypassword", "yourpassword", "your_password", "user", "username",
    # the documented defaults of local development images (postgres, mysql, rabbitmq, minio): configuration, not a
    # credential anyone could misuse
    "postgres", "mysql", "guest", "minioadmin",
})


_PLACEHOLDER_RE = re.compile("|".join(map(re.escape, _PLACEHOLDER_PARTS)))


def _placeholder(value: str) -> bool:
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or len(set(low)) <= 2:
        return True
    return _PLACEHOLDER_RE.search(low) is not None


_IDENTIFIER = re.compile(r"[A-Za-z]+(?:[_.\-][A-Za-z]+)*")
_WORDY = re.compile(r"(?:[a-z]{2,}|[0-9]{1,4})(?:[_.\-](?:[a-z]{2,}|[0-9]{1,4}))+")
_FILE_EXT = re.compile(r"\.(?:pem|key|json|txt|p12|pfx|crt|cer|csr|ya?ml|env|cfg|conf|ini|toml|gpg|asc|pub|ppk|jks|"
                       r"keystore|kdbx|der|py|js|ts|sh|md|html?|xml|csv|log)$", re.IGNORECASE)


def _random_looking(value: str, min_len: int = 16, min_entropy: float = 3.0) -> bool:
    """True for values that look like generated credentials rather than words, identifiers, paths or numbers."""
    if len(value) < min_len or _placeholder(value):
        return False
    if value.isdigit() or (_IDENTIFIER.fullmatch(value) and not _mixed_letters(value)):
        return False
    if value[0] in "/~." or "//" in value or _FILE_EXT.search(value) or _WORDY.fullmatch(value):
        return False
    if value.startswith(("ssh-", "ecdsa-", "sha256", "sha512", "http", "pk_live_", "pk_test_", "pubkey-")):
        return False
    return _entropy(value) >= min_entropy


def _mixed_letters(value: str) -> bool:
    """A letters-only value counts as random when it is long, mixed-case and high-entropy (not camelCase words)."""
    if len(value) < 32 or not any(c.isupper() for c in value) or not any(c.islower() for c in value):
        return False
    switches = sum(1 for a, b in pairwise(value) if a.isupper() != b.isupper())
    return switches >= len(value) // 4 and _entropy(value) >= 4.0


def _plausible_body(body: str, min_bits: float = 3.0) -> bool:
    """Light check for prefixed provider tokens: not an obvious placeholder, and varied enough.

    The regex already fixed the shape, so this only has to tell "ghp_" + random from "ghp_xxxx..." or "sk-aaaa...":
    counting distinct characters (at least 2**min_bits, or half the length for short bodies) does that at a fraction
    of the cost of a Shannon estimate.
    """
    low = body.lower()
    if "xxxx" in low or "example" in low or "0000000" in low or "aaaaaaa" in low:
        return False
    return len(set(body)) >= min(2.0 ** min_bits, len(body) / 2)


def _b64decode(segment: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return None


# ---------------------------------------------------------------------------------------------------------------
# Provider token rules (run on the original text when it holds a 16+ character token-like run)
# ---------------------------------------------------------------------------------------------------------------

_TOKCH = r"A-Za-z0-9_\-"


def _start(first: str) -> str:
    """``first`` (a fixed-width regex start) that refuses to begin inside a longer token.

    The lookbehind sits after the first characters, so the compiled pattern keeps its literal prefix for fast
    searching, and a run like ``ghp_ghp_ghp_...`` is examined once, not once per occurrence.
    """
    return f"{first}(?<![{_TOKCH}]{first})"


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    group: int = 0
    check: _Check | None = None
    on_lower: bool = False  # scan the lower-cased text (case-insensitive rules written in lower case)
    needles: tuple[str, ...] = ()  # cheap substring pre-check; the regex runs only if one is present

    def scan(self, text: str, low: str, out: list[_Raw], prio: int) -> None:
        hay = low if self.on_lower else text
        if self.needles and not _has(hay, self.needles):
            return
        for m in self.regex.finditer(hay):
            if self.check is not None and not self.check(text, m):
                continue
            s, e = m.span(self.group)
            if e > s:
                out.append((s, e, prio, self.kind))


def _body_ok(skip: int, min_entropy: float = 3.0) -> _Check:
    def check(text: str, m: re.Match[str]) -> bool:
        return _plausible_body(text[m.start() + skip:m.end()], min_entropy)
    return check


def _alnum_mix(skip: int) -> _Check:
    """Body must hold both a letter and a digit (random base62/hex of this length virtually always does)."""
    def check(text: str, m: re.Match[str]) -> bool:
        body = text[m.start() + skip:m.end()]
        return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
                and _plausible_body(body))
    return check


def _aws_ok(text: str, m: re.Match[str]) -> bool:
    key = m.group()
    return not key.endswith("EXAMPLE") and _plausible_body(key[4:], 2.5)


def _discord_ok(text: str, m: re.Match[str]) -> bool:
    """The first part is the base64 of the bot's numeric id; a random-looking mixed part is accepted too."""
    first, _mid, last = m.group().split(".")
    raw = _b64decode(first)
    if raw is not None and raw.isdigit() and 15 <= len(raw) <= 21:
        return True
    return _plausible_body(first, 3.5) and _plausible_body(last, 3.5) and not first.isalpha() and any(
        c.isupper() for c in first) and any(c.islower() for c in first)


def _jwt_part(segment: str) -> bool:
    raw = _b64decode(segment)
    if raw is None:
        return False
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict)


def _jwt_ok(text: str, m: re.Match[str]) -> bool:
    header, payload, sig = m.group().split(".", 2)
    raw = _b64decode(header)
    if raw is None or not _jwt_part(header) or not _jwt_part(payload):
        return False
    if not any(k in raw for k in (b'"alg"', b'"typ"', b'"kid"', b'"enc"')):
        return False
    # a signed token's signature is at least 16 bytes (HS256: 32, RS256: 256); one that is not there or spells a
    # word ("….signature", "….sig") is a placeholder in docs or tests, not a credential. An unsigned token
    # (alg "none", empty signature) is kept as a secret: a broken verifier accepts it.
    if not sig or b'"none"' in raw.replace(b" ", b"").lower():
        return True
    body = _b64decode(sig)
    return body is not None and len(body) >= 16 and not sig.isalpha()


def _rb(cls: str = _TOKCH) -> str:
    return f"(?![{cls}])"


_AN = "A-Za-z0-9"


def _tok(kind: str, needles: str, pattern: str, check: _Check | None = None, group: int = 0) -> _Rule:
    """A provider rule; it runs only when one of the space-separated literal ``needles`` occurs in the text."""
    return _Rule(kind, re.compile(pattern), group, check, needles=tuple(needles.split()))


_TOKEN_RULES: tuple[_Rule, ...] = (
    # --- memwarden's own credentials (auth.py): an agent must never be able to remember a token ---
    _tok("memwarden_token", "mw_operator_ mw_agent_",
         _start("mw_") + rf"(?:operator|agent)_[{_TOKCH}]{{43}}{_rb()}"),
    # --- cloud ---
    _tok("aws_access_key", "AKIA ASIA ABIA ACCA A3T",
         _start("A") + rf"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{{16}}(?![{_AN}])", _aws_ok),
    _tok("google_api_key", "AIza", _start("AIza") + rf"[{_TOKCH}]{{35}}{_rb()}", _body_ok(4)),
    _tok("google_oauth", "GOCSPX-", _start("GOCSPX-") + rf"[{_TOKCH}]{{24,40}}+{_rb()}", _body_ok(7)),
    _tok("google_oauth", "ya29.", _start(r"ya29\.") + rf"[{_TOKCH}]{{30,2048}}+{_rb()}", _body_ok(5)),
    _tok("azure_storage_key", "AccountKey= SharedAccessKey=",
         r"(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,100}+={0,2})(?![A-Za-z0-9+/=])",
         lambda t, m: _plausible_body(m.group(1), 3.5), 1),
    _tok("azure_sas", "sig=", r"[?&]sig=([A-Za-z0-9%+/]{30,120}+(?:%3D|=){0,2})",
         lambda t, m: _plausible_body(m.group(1)), 1),
    _tok("alibaba_key", "LTAI", _start("LTAI") + rf"[{_AN}]{{20}}{_rb()}", _alnum_mix(4)),
    _tok("digitalocean_token", "dop_v1_ doo_v1_ dor_v1_",
         _start("do") + rf"[opr]_v1_[a-f0-9]{{64}}(?![{_AN}])", _body_ok(7)),
    _tok("heroku_key", "HRKU-", _start("HRKU-") + rf"AA[{_TOKCH}]{{58}}{_rb()}", _body_ok(7)),
    _tok("vault_token", "hvs. hvb. hvr.", _start("hv") + rf"[sbr]\.[{_TOKCH}]{{24,300}}+{_rb()}", _alnum_mix(4)),
    _tok("doppler_token", "dp.", _start(r"dp\.") + rf"(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{{1,35}}\.)?"
         rf"[{_AN}]{{40,44}}+{_rb()}", lambda t, m: _plausible_body(m.group().rsplit(".", 1)[1])),
    _tok("databricks_token", "dapi", _start("dapi") + rf"[a-f0-9]{{32}}(?:-[0-9])?(?![{_AN}])", _alnum_mix(4)),
    _tok("tailscale_key", "tskey-", _start("tskey-")
         + rf"(?:api|auth|client|scim|webhook)-[{_AN}]{{6,20}}-[{_AN}]{{16,64}}+{_rb()}", _body_ok(6)),
    _tok("supabase_token", "sbp_", _start("sbp_") + rf"[a-f0-9]{{40}}(?![{_AN}])", _alnum_mix(4)),
    _tok("pulumi_token", "pul-", _start("pul-") + rf"[a-f0-9]{{40}}(?![{_AN}])", _alnum_mix(4)),
    _tok("artifactory_key", "AKCp", _start("AKCp") + rf"[{_AN}]{{69}}(?![{_AN}])", _body_ok(4)),
    # --- VCS / CI / package registries ---
    _tok("github_token", "ghp_ gho_ ghu_ ghs_ ghr_", _start("gh") + rf"[pousr]_[{_AN}]{{36,251}}+{_rb()}", _body_ok(4)),
    _tok("github_token", "github_pat_", _start("github_pat_") + rf"[{_AN}_]{{60,251}}+{_rb()}", _body_ok(11)),
    _tok("gitlab_token", "gl", _start("gl") + rf"(?:pat|ptt|dt|rt|oas|soat|ft|imt|agent|ffct|cbt)-"
         rf"[{_TOKCH}]{{20,300}}+(?:\.[0-9a-z]{{9}})?{_rb()}",
         lambda t, m: _plausible_body(m.group().split("-", 1)[1])),
    _tok("gitlab_token", "GR1348941", _start("GR1348941") + rf"[{_TOKCH}]{{20,64}}+{_rb()}", _body_ok(9)),
    _tok("npm_token", "npm_", _start("npm_") + rf"[{_AN}]{{36}}(?![{_AN}])", _body_ok(4)),
    _tok("pypi_token", "pypi-AgE",
         _start("pypi-") + rf"AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[{_TOKCH}]{{50,1000}}+{_rb()}"),
    _tok("docker_token", "dckr_", _start("dckr_") + rf"(?:pat|oat)_[{_TOKCH}]{{20,100}}+{_rb()}", _body_ok(9)),
    _tok("rubygems_token", "rubygems_", _start("rubygems_") + rf"[a-f0-9]{{48}}(?![{_AN}])", _alnum_mix(9)),
    _tok("postman_key", "PMAK-", _start("PMAK-") + r"[0-9a-fA-F]{24}-[0-9a-fA-F]{34}(?![A-Za-z0-9])", _body_ok(5)),
    _tok("linear_key", "lin_api_", _start("lin_api_") + rf"[{_AN}]{{40}}(?![{_AN}])", _body_ok(8)),
    _tok("notion_token", "ntn_", _start("ntn_") + rf"[0-9]{{11}}[{_AN}]{{35}}(?![{_AN}])", _body_ok(4)),
    _tok("notion_token", "secret_", _start("secret_") + rf"[{_AN}]{{43}}(?![{_AN}])", _alnum_mix(7)),
    _tok("grafana_token", "glc_", _start("glc_") + r"[A-Za-z0-9+/]{32,400}+={0,2}(?![A-Za-z0-9+/=])", _body_ok(4)),
    _tok("grafana_token", "glsa_", _start("glsa_") + rf"[{_AN}]{{32}}_[A-Fa-f0-9]{{8}}(?![{_AN}])", _body_ok(5)),
    _tok("newrelic_key", "NRAK- NRII- NRJS-",
         _start("NR") + rf"(?:AK-[A-Z0-9]{{27}}|II-[{_TOKCH}]{{32}}|JS-[a-f0-9]{{19}})(?![{_AN}])", _body_ok(5, 2.8)),
    _tok("sentry_token", "sntry",
         _start("sntry") + rf"(?:u_[a-f0-9]{{64}}|s_eyJ[A-Za-z0-9+/=_]{{50,800}}+)(?![{_AN}])", _body_ok(7)),
    _tok("onepassword_token", "ops_eyJ", _start("ops_") + r"eyJ[A-Za-z0-9+/]{250,4096}+={0,3}", _body_ok(4)),
    _tok("onepassword_token", "A3-", _start("A3-") + r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
         r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}(?![A-Za-z0-9])", _body_ok(3)),
    _tok("age_key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # --- messaging / email ---
    _tok("slack_token", "xox", _start("xox") + r"[abposre]-[A-Za-z0-9-]{10,250}+(?![A-Za-z0-9_])", _alnum_mix(5)),
    _tok("slack_token", "xapp-", _start("xapp-") + r"[0-9]-[A-Za-z0-9-]{10,250}+(?![A-Za-z0-9_])", _body_ok(7)),
    _tok("slack_webhook", "hooks.slack.com/",
         r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,150}+", _body_ok(25, 3.5)),
    _tok("discord_webhook", "discord.com/api/webhooks/ discordapp.com/api/webhooks/",
         r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68}+"),
    _tok("twilio_key", "SK", _start("SK") + r"[0-9a-fA-F]{32}(?![A-Za-z0-9])", _alnum_mix(2)),
    _tok("twilio_key", "AC", _start("AC") + r"[0-9a-f]{32}(?![A-Za-z0-9])", _alnum_mix(2)),
    _tok("sendgrid_key", "SG.", _start(r"SG\.") + rf"[{_TOKCH}]{{16,32}}+\.[{_TOKCH}]{{16,64}}+{_rb()}", _body_ok(3)),
    _tok("sendinblue_key", "xkeysib-",
         _start("xkeysib-") + r"[a-f0-9]{64}-[A-Za-z0-9]{16}(?![A-Za-z0-9])", _body_ok(8)),
    _tok("mailgun_key", "key-", _start("key-") + r"[0-9a-f]{32}(?![A-Za-z0-9])", _alnum_mix(4)),
    # --- payment / commerce ---
    _tok("stripe_key", "sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_",
         _start("[sr]k") + rf"_(?:live|test|prod)_[{_AN}]{{10,247}}+{_rb()}",
         lambda t, m: _plausible_body(m.group()[8:], 2.8)),
    _tok("stripe_key", "whsec_", _start("whsec_") + rf"[{_AN}]{{32,64}}+{_rb()}", _body_ok(6)),
    _tok("square_token", "sq0", _start("sq0") + rf"(?:atp|csp)-[{_TOKCH}]{{22,60}}+{_rb()}", _body_ok(7)),
    _tok("square_token", "EAAA", _start("EAAA") + rf"[{_TOKCH}]{{56,100}}+{_rb()}", _body_ok(4)),
    _tok("facebook_token", "EAA", _start("EAA") + rf"[BCDGMSUZ][{_AN}]{{80,1024}}+{_rb()}", _body_ok(4)),
    _tok("paypal_token", "access_token$",
         r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}(?![A-Za-z0-9])"),
    _tok("shopify_token", "shp", _start("shp") + r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])", _alnum_mix(6)),
    _tok("atlassian_token", "ATATT3",
         _start("ATATT3") + r"[A-Za-z0-9_=\-]{180,200}+(?![A-Za-z0-9_=\-])", _body_ok(6)),
    # --- AI providers (Anthropic and OpenRouter before the generic OpenAI ``sk-`` shape) ---
    _tok("anthropic_key", "sk-ant-",
         _start("sk-ant-") + rf"(?:api|admin|oat|ort|sid)[0-9]{{2}}-[{_TOKCH}]{{20,300}}+{_rb()}",
         lambda t, m: _plausible_body(m.group().split("-", 3)[3])),
    _tok("openrouter_key", "sk-or-", _start("sk-or-") + r"v1-[0-9a-f]{64}(?![A-Za-z0-9])", _body_ok(9)),
    _tok("openai_key", "sk-", _start("sk-") + rf"(?:proj|svcacct|admin|None)-[{_TOKCH}]{{20,300}}+{_rb()}",
         lambda t, m: _plausible_body(m.group().split("-", 2)[2])),
    _tok("openai_key", "sk-", _start("sk-") + rf"[{_AN}]{{20,200}}+{_rb()}", _alnum_mix(3)),
    _tok("groq_key", "gsk_", _start("gsk_") + rf"[{_AN}]{{48,56}}+{_rb()}", _body_ok(4)),
    _tok("xai_key", "xai-", _start("xai-") + rf"[{_AN}]{{70,90}}+{_rb()}", _body_ok(4)),
    _tok("perplexity_key", "pplx-", _start("pplx-") + rf"[{_AN}]{{40,56}}+{_rb()}", _body_ok(5)),
    _tok("replicate_token", "r8_", _start("r8_") + rf"[{_AN}]{{37}}{_rb()}", _alnum_mix(3)),
    _tok("huggingface_token", "hf_", _start("hf_") + rf"[{_AN}]{{30,40}}+(?![{_AN}_])",
         lambda t, m: _plausible_body(m.group()[3:], 3.5) and not m.group()[3:].islower()),
    _tok("huggingface_token", "api_org_", _start("api_org_") + rf"[{_AN}]{{30,40}}+(?![{_AN}_])",
         lambda t, m: _plausible_body(m.group()[8:], 3.5) and not m.group()[8:].islower()),
    # --- bot tokens without a fixed prefix ---
    _tok("discord_token", ".",
         _start("[MNO]") + rf"[{_TOKCH}]{{23,27}}+\.[{_TOKCH}]{{6,7}}+\.[{_TOKCH}]{{27,40}}+{_rb()}", _discord_ok),
    _tok("telegram_token", ":A", _start("[0-9]") + rf"[0-9]{{7,9}}:A[{_TOKCH}]{{34}}{_rb()}", _body_ok(10, 3.0)),
    # --- JWT (after the provider rules that embed ``eyJ``) ---
    _tok("jwt", "eyJ", _start("eyJ")
         + rf"[{_TOKCH}]{{10,4096}}+\.eyJ[{_TOKCH}]{{10,16384}}+\.[{_TOKCH}]{{0,4096}}+{_rb()}", _jwt_ok),
)


# Tokens whose first characters are not at the start of the pattern: found from a literal anchor, then verified.
_AZURE_Q = re.compile(r"Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~\-])")
_AZURE_Q_PRE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.")
_MAILCHIMP = re.compile(r"-us[0-9]{1,2}(?![A-Za-z0-9])")
_HEX = frozenset("0123456789abcdef")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _find_azure_client_secret(text: str, out: list[_Raw], prio: int) -> None:
    for m in _AZURE_Q.finditer(text):
        s = m.start()
        if s < 4 or not text[s - 1].isdigit() or not all(c in _AZURE_Q_PRE for c in text[s - 4:s - 1]):
            continue
        if s >= 5 and text[s - 5] in _AZURE_Q_PRE:
            continue
        end = m.end()
        if text[end - 1] == "." and end - s < 36 and (end == len(text) or text[end] != "."):
            end -= 1  # shorter than today's 34-character body: the final "." ends the sentence
        if end - s < 33:
            continue
        if _plausible_body(text[s - 4:end]):
            out.append((s - 4, end, prio, "azure_client_secret"))


def _find_mailchimp(text: str, out: list[_Raw], prio: int) -> None:
    for m in _MAILCHIMP.finditer(text):
        s = m.start()
        if s < 32 or not all(c in _HEX for c in text[s - 32:s]) or (s > 32 and text[s - 33] in _ALNUM):
            continue
        if _plausible_body(text[s - 32:s]):
            out.append((s - 32, m.end(), prio, "mailchimp_key"))


# PEM private keys: header, then the matching footer (or, for a truncated key, the base64 body that follows).
_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_B64_LINE = re.compile(r"[A-Za-z0-9+/]{40}")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s:,\-]|\\[nr]){0,16384}+")
_PEM_MAX = 16384
_PUTTY = re.compile(r"PuTTY-User-Key-File-[23]:")
_PUTTY_PRIVATE = re.compile(r"Private-Lines:\s*[0-9]{1,3}")
_PUTTY_MAC = re.compile(r"Private-MAC:\s*[0-9a-fA-F]{40,64}+")
_GCP_KEY = re.compile(r'"private_key"\s{0,5}:\s{0,5}"([^"]{40,16384}+)"')


def _body_end(text: str, start: int) -> int:
    m = _PEM_BODY.match(text, start)
    end = m.end() if m else start
    while end > start and (text[end - 1].isspace() or text[end - 1] in "\\-"):
        end -= 1
    if end >= start + 2 and text[end - 2] == "\\" and text[end - 1] in "nr":
        end -= 2
    return end


def _find_pem(text: str, out: list[_Raw], prio: int) -> None:
    pos = 0
    while True:
        m = _PEM_BEGIN.search(text, pos)
        if m is None:
            return
        start, head_end = m.span()
        footer = _PEM_END.search(text, head_end, head_end + _PEM_MAX)
        body = _PEM_B64_LINE.search(text, head_end, footer.start() if footer else head_end + 400)
        if body is None:
            pos = head_end
            continue
        end = footer.end() if footer else _body_end(text, body.start())
        out.append((start, end, prio, "private_key"))
        pos = end


def _find_putty(text: str, out: list[_Raw], prio: int) -> None:
    pos = 0
    while True:
        m = _PUTTY.search(text, pos)
        if m is None:
            return
        private = _PUTTY_PRIVATE.search(text, m.end(), m.end() + 4096)
        if private is None:
            pos = m.end()
            continue
        mac = _PUTTY_MAC.search(text, private.end(), private.end() + _PEM_MAX)
        end = mac.end() if mac else _body_end(text, private.end())
        out.append((m.start(), end, prio, "private_key"))
        pos = end


def _find_gcp(text: str, out: list[_Raw], prio: int) -> None:
    for m in _GCP_KEY.finditer(text):
        value = m.group(1)
        if "PRIVATE KEY" in value or _PEM_B64_LINE.search(value):
            out.append((m.start(1), m.end(1), prio, "gcp_service_account"))


# ---------------------------------------------------------------------------------------------------------------
# Labelled secrets (run on the lower-cased text; values are verified on the original)
# ---------------------------------------------------------------------------------------------------------------

_SEP = r"""["'\]]?(?:\s{0,3}(?::=|=>|==?|:|->)|\s{1,3}(?:is|was)(?:\s{0,3}:)?)\s{0,3}["'`]?"""
# Also a bare space ("Heroku API key 2283...") -- only where the value's shape is strict or checked harder.
_SEP_LOOSE = r"""["'\]]?(?:\s{0,3}(?::=|=>|==?|:|->)|\s{1,3}(?:is|was)(?:\s{0,3}:)?|(?=\s))\s{0,3}["'`]?"""


def _value_mixed(group: int, need_upper: bool = False) -> _Check:
    """Labelled value: not a placeholder, random enough; a digit, or (AWS secrets) both letter cases."""
    def check(text: str, m: re.Match[str]) -> bool:
        v = text[m.start(group):m.end(group)]
        if _placeholder(v) or _entropy(v) < 3.0:
            return False
        has_digit = any(c.isdigit() for c in v)
        if need_upper:
            return any(c.isupper() for c in v) and any(c.islower() for c in v) and (has_digit or _entropy(v) >= 3.5)
        return has_digit and any(c.isalpha() for c in v)
    return check


_LABELLED_RULES: tuple[_Rule, ...] = (
    _Rule("aws_secret_key", re.compile(
        r"(?:aws[_.\s-]{0,3}(?:secret[_.\s-]{0,3}(?:access[_.\s-]{0,3})?key|sk)|secret[_.\s-]{0,3}access[_.\s-]{0,3}key)"
        + _SEP_LOOSE + r"([a-z0-9/+]{40})(?![a-z0-9/+=])"), 1, _value_mixed(1, need_upper=True), True,
        ("aws", "secret")),
    _Rule("heroku_key", re.compile(
        r"heroku[a-z0-9_.\s-]{0,16}?(?:key|token|secret|api)[a-z0-9_.-]{0,10}" + _SEP_LOOSE
        + r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![a-z0-9-])"), 1, None, True, ("heroku",)),
    _Rule("atlassian_token", re.compile(
        r"(?:atlassian|jira|confluence)[a-z0-9_.\s-]{0,24}?(?:token|key|pat|secret|password)[a-z0-9_.-]{0,10}"
        + _SEP_LOOSE + r"([a-z0-9]{24})(?![a-z0-9])"), 1, _value_mixed(1), True, ("atlassian", "jira", "confluence")),
    _Rule("okta_token", re.compile(
        r"okta[a-z0-9_.\s-]{0,24}?" + _SEP_LOOSE + r"(00[a-z0-9_-]{40})(?![a-z0-9_-])"), 1,
        _value_mixed(1, need_upper=True), True, ("okta",)),
)

_GENERIC = re.compile(
    r"(?:api|secret|token|key|credentials?|creds|auth)"
    r"([a-z0-9_.\-]{0,24})(" + _SEP + r"""|\s{1,3})([a-z0-9_\-+/=.~!@#$%^&*]{16,512}+)(?![a-z0-9_\-+/=.~!@#$%^&*])""")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# A keyword glued to the word before it counts only after these ("apikey", "secretkey", "accesstoken", ...).
_GLUE = ("api", "secret", "access", "auth", "private", "client", "app", "bot", "master", "session", "refresh",
         "signing", "encryption", "service", "account", "consumer", "webhook", "deploy", "admin", "user", "personal",
         "oauth", "bearer", "id", "x")
# Labels that name something other than a secret: words after the keyword ("key_id", "keyboard", "token_count",
# "secret_name", "authorization") and words before it ("public_key", "csrf_token", "next_page_token").
_SUFFIX_DENY = (
    "id", "name", "count", "len", "size", "type", "file", "path", "url", "uri", "endpoint", "format", "version",
    "hash", "limit", "max", "min", "expir", "ttl", "timeout", "header", "field", "policy", "hint", "manager", "reset",
    "rotation", "index", "usage", "budget", "price", "cost", "board", "frame", "press", "stroke", "store", "ring",
    "map", "word", "pad", "chain", "stone", "hole", "note", "code", "ori", "iz", "issuer", "audience", "scope",
    "location", "region", "algorithm", "prefix", "suffix", "mode", "pair", "set", "spec", "ref", "alias", "label",
    "server", "host", "gateway", "image", "tag", "port", "level", "doc",
)
_PREFIX_DENY = (
    "public", "pub_", "pub-", "pub.", "publishable", "csrf", "xsrf", "max_", "max-", "min_", "num_", "total_",
    "primary", "foreign", "sort", "partition", "cache", "idempotency", "page", "cursor", "continuation", "sync",
    "pagination", "dedup", "lookup", "hash", "shard", "routing", "row", "unique", "composite", "surrogate", "natural",
    "version", "release", "build",
)
_SUFFIX_DENY_RE = re.compile("|".join(map(re.escape, _SUFFIX_DENY)))
_PREFIX_DENY_RE = re.compile("|".join(map(re.escape, _PREFIX_DENY)))
_LABEL_CH = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def _find_generic(text: str, low: str, out: list[_Raw], prio: int) -> None:
    pos, n = 0, len(low)
    while pos < n:
        m = _GENERIC.search(low, pos)
        if m is None:
            return
        s = m.start()
        if _generic_label_ok(text, low, s, m.group(1)):
            vs, ve = m.span(3)
            while ve > vs and text[ve - 1] in ".,!":
                ve -= 1
            if _covered(out, vs, ve):  # a provider rule already found this value ("GITHUB_TOKEN=ghp_...")
                pos = m.end()
                continue
            value = text[vs:ve]
            if _random_looking(value) and (not m.group(2).isspace() or _loose_value_ok(value)):
                out.append((vs, ve, prio, "generic_secret"))
                pos = m.end()
                continue
        pos = s + 1  # a later keyword in the same label may still qualify ("oauth_token", "my_api_key")


def _covered(out: list[_Raw], start: int, end: int) -> bool:
    for s, e, _prio, _kind in out:  # noqa: SIM110 -- a handful of hits; avoids a generator on the hot path
        if s <= start and end <= e:
            return True
    return False


def _loose_value_ok(value: str) -> bool:
    """A value after a bare space ("auth token 4bbf...") must look strongly generated, and not be an id or address."""
    if len(value) < 20 or _UUID.fullmatch(value) or value[:2] in ("0x", "0X"):
        return False
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and len(set(value)) >= 12


def _generic_label_ok(text: str, low: str, s: int, suffix: str) -> bool:
    if s > 0 and low[s - 1].isalpha():
        head = s - 1
        while head > 0 and low[head - 1].isalpha() and s - head < 24:
            head -= 1
        camel = text[s].isupper() and text[s - 1].islower()
        if not camel and not low[head:s].endswith(_GLUE):
            return False
    elif s > 0 and low[s - 1].isdigit():
        return False
    head = s
    while head > 0 and low[head - 1] in _LABEL_CH and s - head < 40:
        head -= 1
    if head > 1 and low[head - 1] == " ":  # include the word before ("publishable key", "public token")
        head -= 1
        while head > 0 and low[head - 1] in _LABEL_CH and s - head < 40:
            head -= 1
    return _SUFFIX_DENY_RE.search(suffix) is None and _PREFIX_DENY_RE.search(low, head, s) is None


# ---------------------------------------------------------------------------------------------------------------
# Credentials in URLs and HTTP authentication
# ---------------------------------------------------------------------------------------------------------------

_URL_CRED = re.compile(r"""://([^\s:/?#@\[\]"'<>]{0,128}+):([^\s/?#\[\]"'<>]{1,256})@(?=[A-Za-z0-9\[_\-])""")


def _find_url_password(text: str, out: list[_Raw], prio: int) -> None:
    for m in _URL_CRED.finditer(text):
        if m.start() == 0 or not text[m.start() - 1].isalnum():
            continue
        user, password = m.group(1), m.group(2)
        if user.lower() in ("anonymous", "ftp") or password.startswith(("$", "%", "{", "*")):
            continue
        if _placeholder(password) and not any(c.isdigit() for c in password):
            continue
        out.append((m.start(2), m.end(2), prio, "url_password"))


_AUTH_HEADER = re.compile(
    r"authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?:(bearer|token|basic|digest|apikey|api-key|sso-key|otp|negotiate"
    r"|ntlm)\s{1,3})?([a-z0-9._~+/=:\-]{8,4096}+)")
_BEARER = re.compile(
    r"bearer(?:\s{1,3}(?:token|auth(?:entication|orization)?))?(?:\s{0,3}[:=]\s{0,3}|\s{1,3}(?:is|was)(?:\s{0,3}:)?"
    r"\s{1,3}|\s{1,3})[\"'`]?([a-z0-9._~+/\-]{12,4096}+=*)")
_BASIC = re.compile(r"Basic\s{1,3}([A-Za-z0-9+/]{12,1024}+={0,2})(?![A-Za-z0-9+/=])")


def _token_value(v: str, min_len: int) -> bool:
    if len(v) < min_len or _placeholder(v) or (_IDENTIFIER.fullmatch(v) and not _mixed_letters(v)):
        return False
    return (any(c.isdigit() for c in v) and _entropy(v) >= 2.5) or _mixed_letters(v)


def _basic_value(v: str) -> bool:
    raw = _b64decode(v.replace("+", "-").replace("/", "_").rstrip("="))
    if raw is None:
        return False
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return ":" in decoded and decoded.isprintable() and not decoded.startswith(":")


def _find_auth(text: str, low: str, out: list[_Raw], prio: int) -> None:
    for m in _AUTH_HEADER.finditer(low):
        vs, ve = m.span(2)
        v = text[vs:ve]
        if m.group(1) == "basic":
            if _basic_value(v) or _token_value(v, 8):
                out.append((vs, ve, prio, "basic_auth"))
        elif _token_value(v, 8):
            out.append((vs, ve, prio, "bearer_token"))
    for m in _BEARER.finditer(low):
        vs, ve = m.span(1)
        if _token_value(text[vs:ve], 12):
            out.append((vs, ve, prio, "bearer_token"))
    for m in _BASIC.finditer(text):
        if _basic_value(m.group(1)):
            out.append((m.start(1), m.end(1), prio, "basic_auth"))


# ---------------------------------------------------------------------------------------------------------------
# Prose: passwords, PINs, seed phrases, recovery codes and SSNs stated in a sentence (lower-cased text), card numbers
# ---------------------------------------------------------------------------------------------------------------

_LETTER = "0-9a-z\u00c0-\u024f\u0400-\u04ff"
_QUAL = (r"(?:\s{1,3}(?:for|of|to|on|at|from|del|de\s+la|de\s+mi|de|para|pour|du|des|d['’]|für|fürs|vom|von|zum|zur"
         r"|do|da|dos|das|della|dello|dell['’]|di|per|от|для|к)\s{1,3}[^\s:=：]{1,30}(?:\s{1,3}[^\s:=：]{1,30}){0,5}?)?")
_PW_LINK = (r"(\s{0,3}[:=：]\s{0,3}|\s{1,3}(?:is\s+now|is\s+still|is\s+set\s+to|is|was\s+set\s+to|was|"
            r"has\s+been\s+(?:set|changed)\s+to|set\s+to|changed\s+to|will\s+be|remains|es|era|será|est|c['’]est|était"
            r"|ist|lautet|war|é|è|sarà|—\s*это|это|—|–|-|был|будет)(?:\s{0,3}[:=：]\s{0,3}|\s{1,3}))")
_PW_VALUE = (r"(?:\"([^\"\n]{3,256}+)\"|'([^'\n]{3,256}+)'|“([^”\n]{3,256}+)”|‘([^’\n]{3,256}+)’|«([^»\n]{3,256}+)»"
             r"|`([^`\n]{3,256}+)`|([^\s\"'`“”‘’«»<>]{3,256}+))")
_PW_UNQUOTED = 9  # group number of the unquoted value in _PROSE_PW
_PW_CUE = (r"(passw(?:or)?d|passwort|kennwort|passphrase|passcode|pass(?=\s{0,3}[:=])|pw(?=\s{0,3}[:=])|pwd|pword|pswd"
           r"|contrase(?:ñ|n)a|clave(?:\s+de\s+acceso)?|(?<=mot de )passe|(?<=palavra[\s-])passe|mdp|senha"
           rf"|parola\s+d['’]ordine|пароль)(?![{_LETTER}])")
_PROSE_PW = re.compile(_PW_CUE + _QUAL + _PW_LINK + _PW_VALUE)
# No linking word ("username lena.k, password Tr0ub4dor&3"): tried only when _PROSE_PW finds nothing.
_PROSE_PW_BARE = re.compile(_PW_CUE + r"\s{1,3}([^\s\"'`“”‘’«»<>]{6,256}+)")
_PROSE_PW_CJK = re.compile(
    r"(?:密码|密碼|口令|パスワード|暗証番号|비밀번호)\s{0,3}(?:是|为|為|は|는|은|:|：|=)\s{0,3}"
    r"([a-z0-9!@#$%^&*._+\-~]{3,64}+)")
# Matched at the position of a cue anchor (see _CUE_ANCHORS). "code"/"combination" need a qualifier before them
# ("door code", "card security code", "safe combination"), checked by _PIN_QUALIFIER. Keypad values may hold # and *.
_PROSE_PIN = re.compile(
    r"(pin(?:[\s-]?(?:code|number|no\.?|码|код|nummer|número|numero))?|пин(?:[\s-]?код)?|geheimzahl|cvv2?|cvc2?|csc"
    r"|passcode|code|combination|combo)"
    rf"(?![{_LETTER}])" + _QUAL
    + r"(\s{0,3}[:=：#]\s{0,3}|\s{1,3}(?:is|was|es|era|est|ist|lautet|é|è|это|—|–|-)(?:\s{0,3}[:=：#])?\s{0,3}"
    r"|\s{0,3}(?:是|为|為|は|는|은)\s{0,3}|\s{1,3})([\d#*]{3,12})(?![\d#*])(?![.,]\d)")
_PIN_QUALIFIER = re.compile(
    r"(?:door|gate|garage|alarm|safe|lock|locker|entry|building|keypad|access|verification|one[\s-]time|otp|2fa|mfa"
    r"|sms|unlock|phone|security|card|login|bank|atm|disarm)\s{1,3}$")
_PIN_NEEDS_QUALIFIER = ("code", "combination", "combo")
_PIN_BARE_OK = ("pin", "пин", "cvv", "cvc", "csc", "passcode", "geheimzahl")
_LINK_REQUIRED = r"(?:\s{0,3}[:=：]\s{0,3}|\s{1,3}(?:is|are|was|were)(?:\s{0,3}:)?\s{1,3}|\s{1,3}[-–—]\s{1,3})"
_PROSE_SEED = re.compile(
    r"(?:seed\s+(?:phrase|words)|mnemonic(?:\s+(?:phrase|words))?|(?:secret\s+)?recovery\s+(?:phrase|words)"
    r"|backup\s+(?:phrase|words)|secret\s+phrase|wallet\s+(?:phrase|words))" + _QUAL + _LINK_REQUIRED
    + r"[\"'“]?((?:[a-z]{3,8}[\s,]{1,3}){11,23}[a-z]{3,8})(?![a-z])")
_PROSE_RECOVERY = re.compile(
    r"(?:recovery|backup)\s+codes?" + _QUAL + _LINK_REQUIRED
    + r"([a-z0-9]{4,10}(?:-[a-z0-9]{4,10})?(?:(?:\s{0,2}[,;]\s{0,2}|\s{1,2}(?:and\s{1,2})?)[a-z0-9]{4,10}"
      r"(?:-[a-z0-9]{4,10})?){0,15})(?![a-z0-9])")
_RECOVERY_ITEM = re.compile(r"[a-z0-9]{4,10}(?:-[a-z0-9]{4,10})?")
_PROSE_SSN = re.compile(
    r"(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)(?![a-z])"
    r"(?:\s{0,3}[:=#]\s{0,3}|\s{1,3}(?:is|was)(?:\s{0,3}:)?\s{1,3}|\s{1,3})"
    r"(\d{3}-\d{2}-\d{4}|\d{3} \d{2} \d{4}|\d{9})(?![\d-])")
# Card numbers: 13-19 digits, Luhn-valid, grouped like a card ("4539 9458 0730 2151") or next to a card word.
_CARD = re.compile(r"[2-6](?<![\d][2-6])[\d -]{11,22}+")
_CARD_CUE = re.compile(r"(?:card|visa|master|amex|credit|debit|cc|tarjeta|carte|karte|cartão|carta|卡|карт)",
                       re.IGNORECASE)

_PW_STOP_WORDS = """
a an the my your his her their our its this that not too very so also just only still now then no none nothing
something anything same different correct incorrect wrong right weak strong secure insecure safe unsafe long short
new old default temporary unknown blank empty required optional mandatory needed necessary valid invalid
case-sensitive sensitive private secret hidden simple complex complicated easy hard difficult good bad fine okay ok
being about above below under over into onto with without from for and or but if when while because though
unique random same-as one two three four five six seven eight nine ten eleven twelve twenty hundred
stored saved kept written given forgotten chosen taken broken known shown
available unavailable visible invisible reusable unchangeable changeable memorable
manager policy reset hint field prompt protected
yes authentication
generate generated rotate rotated rotating change changed update updated renew renewed revoke revoked expire expired
expires set use used
1password bitwarden lastpass keepass keepassxc dashlane keeper proton vault
la el mi su muy igual segura seguro fuerte débil larga corta nueva nuevo vieja obligatoria incorrecta correcta
le mon ma fort forte faible sécurisé obligatoire trop très court courte nouveau nouvelle oublié bon bonne
mauvais mauvaise
das der die mein meine sehr zu nicht sicher stark schwach falsch richtig lang kurz neu geheim abgelaufen geändert
minha meu muito fraca antiga errada correta
il mia mio sicura debole vecchia sbagliata corretta
мой моя надёжный надежный сложный простой новый старый неверный верный
scritta scritto salvata salvato cambiata cambiato nascosta escrita escrito guardada guardado anotada anotado apuntada
écrite écrit notée noté enregistrée enregistré sauvegardée sauvegardé geschrieben gespeichert notiert hinterlegt
записан записана сохранён сохранен сохранена
"""
_PW_STOP = frozenset(_PW_STOP_WORDS.split())
_PW_UNIT = re.compile(r"\s{1,3}(?:characters?|chars?|letters?|digits?|symbols?|numbers?|long|caracteres|caractères"
                      r"|zeichen|символ\w*|bytes?|bits?|words?)\b", re.IGNORECASE)


def _password_value_ok(text: str, vs: int, ve: int, quoted: bool, bare: bool) -> bool:
    value = text[vs:ve]
    low = value.lower()
    if len(value) < 3 or low in _PW_STOP or (_placeholder(value) and not any(c.isdigit() for c in value)):
        return False
    if set(value) <= set("*•x.#-_?") or value.startswith(("$", "%", "{", "[", "(")):
        return False
    if bare:  # "password Tr0ub4dor&3": no linking word, so the value itself must look like a password
        return len(value) >= 6 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and (
            not _PW_UNIT.match(text, ve)) and _last_word_ok(low)
    if quoted:
        return True
    if _PW_UNIT.match(text, ve):
        return False
    return _last_word_ok(low)


def _last_word_ok(low: str) -> bool:
    """Reject values that are an ordinary word ("required", "case-sensitive", "2FA-protected")."""
    last = low.rsplit("-", 1)[-1]
    if not last.isalpha():
        return True
    if low.isalpha() or "-" in low:
        return last not in _PW_STOP and not last.endswith(
            ("ed", "ing", "ly", "able", "ible", "ado", "ada", "ée", "é", "iert"))
    return True


def _cue_positions(low: str) -> dict[str, list[int]]:
    """Positions of word-initial cue anchors by family: "pw", "pin", "seed", "recovery", "ssn"."""
    found: dict[str, list[int]] = {}
    for m in _CUES.finditer(low):
        for family in _CUE_ANCHORS[m.group()]:
            found.setdefault(family, []).append(m.start())
    return found


def _find_password_prose(text: str, low: str, positions: list[int], out: list[_Raw], prio: int) -> None:
    """Cue positions inside a value already judged are skipped ("pw:pw:pw:…" is one value, not thousands): each
    character is looked at by a bounded number of values, so the scan stays linear."""
    judged_to = -1
    for i in positions:
        if i < judged_to:
            continue
        m = _PROSE_PW.match(low, i)
        if m is not None:
            group = next(g for g in range(3, _PW_UNQUOTED + 1) if m.start(g) >= 0)
            vs, ve = _trim_value(text, *m.span(group)) if group == _PW_UNQUOTED else m.span(group)
            judged_to = ve
            # Spanish "clave" is also "key" ("la clave es practicar"): a plain word after it is not a password
            ambiguous = m.group(1) == "clave" and group == _PW_UNQUOTED and text[vs:ve].isalpha()
            if not ambiguous and _password_value_ok(text, vs, ve, quoted=group != _PW_UNQUOTED, bare=False):
                out.append((vs, ve, prio, "password_prose"))
                continue
        m = _PROSE_PW_BARE.match(low, i)
        if m is not None:
            vs, ve = _trim_value(text, *m.span(2))
            judged_to = max(judged_to, ve)
            if _password_value_ok(text, vs, ve, quoted=False, bare=True):
                out.append((vs, ve, prio, "password_prose"))


def _trim_value(text: str, vs: int, ve: int) -> tuple[int, int]:
    """Drop sentence punctuation after an unquoted value ("my password is hunter2.")."""
    while ve > vs and text[ve - 1] in ".,;:)":
        ve -= 1
    return vs, ve


def _find_password_cjk(text: str, low: str, out: list[_Raw], prio: int) -> None:
    for m in _PROSE_PW_CJK.finditer(low):
        vs, ve = m.span(1)
        while ve > vs and text[ve - 1] in ".,":
            ve -= 1
        value = text[vs:ve]
        if len(value) >= 3 and value.lower() not in _PW_STOP and (value.isdigit() or not _placeholder(value)):
            out.append((vs, ve, prio, "password_prose"))


def _find_pin_prose(text: str, low: str, positions: list[int], out: list[_Raw], prio: int) -> None:
    for i in positions:
        m = _PROSE_PIN.match(low, i)
        if m is None:
            continue
        cue, link = m.group(1), m.group(2)
        if cue.startswith(_PIN_NEEDS_QUALIFIER) and not _PIN_QUALIFIER.search(low, max(0, i - 24), i):
            continue
        if not link.strip() and not cue.startswith(_PIN_BARE_OK):
            continue
        vs, ve = m.span(3)
        digits = sum(c.isdigit() for c in m.group(3))
        if cue.startswith(("cvv", "cvc", "csc")) or low[max(0, i - 9):i].endswith(("security ", "card ")):
            if not 3 <= digits <= 4:
                continue
        elif digits < 4:
            continue
        out.append((vs, ve, prio, "pin_prose"))


def _find_seed_phrase(text: str, low: str, positions: list[int], out: list[_Raw], prio: int) -> None:
    for i in positions:
        m = _PROSE_SEED.match(low, i)
        if m is not None and len(m.group(1).replace(",", " ").split()) >= 12:
            out.append((m.start(1), m.end(1), prio, "seed_phrase"))


def _find_recovery_codes(text: str, low: str, positions: list[int], out: list[_Raw], prio: int) -> None:
    for i in positions:
        m = _PROSE_RECOVERY.match(low, i)
        if m is None:
            continue
        end = -1  # keep the list up to its last item that holds a digit ("... 9012-4463 were printed")
        for item in _RECOVERY_ITEM.finditer(low, m.start(1), m.end(1)):
            if any(c.isdigit() for c in item.group()):
                end = item.end()
        if end > 0 and any(c.isdigit() for c in low[m.start(1):m.start(1) + 10]):
            out.append((m.start(1), end, prio, "recovery_code"))


def _find_ssn(text: str, low: str, positions: list[int], out: list[_Raw], prio: int) -> None:
    for i in positions:
        m = _PROSE_SSN.match(low, i)
        if m is None:
            continue
        digits = m.group(1).replace("-", "").replace(" ", "")
        area, group, serial = digits[:3], digits[3:5], digits[5:]
        if area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000":
            out.append((m.start(1), m.end(1), prio, "ssn"))


def _luhn(digits: str) -> bool:
    total = 0
    for k, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if k % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _in_url(text: str, i: int) -> bool:
    """Whether position ``i`` lies inside a URL (its whitespace-delimited token has a scheme or starts "www."):
    digits in a link's path or query are an article or order id, not a card number."""
    start = max(text.rfind(" ", 0, i), text.rfind("\n", 0, i), text.rfind("\t", 0, i)) + 1
    token = text[start:i]
    return "://" in token or token.startswith("www.")


def _find_card_numbers(text: str, out: list[_Raw], prio: int) -> None:
    for m in _CARD.finditer(text):
        if (m.start() > 0 and text[m.start() - 1] in "/-_=.?&#") and _in_url(text, m.start()):
            continue
        groups = m.group().split()
        if len(groups) == 1 and "-" in groups[0]:
            groups = groups[0].split("-")
        # longest prefix of the groups that reads as a card number: 13-19 Luhn-valid digits
        for n in range(len(groups), 0, -1):
            chunk = groups[:n]
            digits = "".join(chunk)
            if not digits.isdigit() or not 13 <= len(digits) <= 19 or not _luhn(digits) or len(set(digits)) < 3:
                continue
            grouped = n > 1 and all(len(g) >= 4 for g in chunk[:-1])
            if not grouped and not _CARD_CUE.search(text, max(0, m.start() - 40), m.start()):
                break
            end = m.start() + len(" ".join(chunk)) if " " in m.group() else m.start() + len("-".join(chunk))
            out.append((m.start(), end, prio, "card_number"))
            break


# ---------------------------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------------------------

_PLAIN_WORDS = re.compile(r"[./\-]*+[A-Za-z][a-z]*+(?:[./\-]{1,2}[A-Za-z][a-z]*+)*+[./\-]*+")
_RUN_SEPARATORS = re.compile(r"[+/=.~%]")
_KW_GENERIC = ("api", "secret", "token", "key", "cred", "auth")
# Byte tables for C-speed pre-tests on ``text.encode("latin-1", "replace")`` (one byte per character): each byte
# becomes "x" when the character is in the class and " " otherwise, so "16 token characters in a row" is a substring.
_TOKEN_CLASS = bytes(0x78 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_+/=.~%-") else 0x20
                     for i in range(256))
_DIGIT_CLASS = bytes(0x78 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_RUN16, _RUN4 = b"x" * 16, b"xxxx"
# Cue anchors of the prose and HTTP-auth rules (lower-cased text). Each anchor feeds the finders of its families,
# which match their full regex at the anchor's position: "pass" also starts "passcode" (a PIN cue) and the "passe" of
# "mot de passe"; "recovery"/"backup" start both seed phrases and recovery codes; "cv" starts "cvv" and "cvc".
_CUE_ANCHORS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("pass",), ("pw", "pin")),
    **dict.fromkeys(("pw", "pswd", "kennwort", "contrase", "clave", "mdp", "senha", "parola", "пароль"), ("pw",)),
    **dict.fromkeys(("pin", "пин", "cv", "csc", "geheimzahl", "code", "comb"), ("pin",)),
    **dict.fromkeys(("seed", "mnemonic", "secret phrase", "wallet"), ("seed",)),
    **dict.fromkeys(("recovery", "backup"), ("seed", "recovery")),
    **dict.fromkeys(("ssn", "social security"), ("ssn",)),
}
_AUTH_ANCHORS = ("bearer", "authoriz", "basic")  # anywhere, not only at a word start ("proxy-authorization")


def _anchor_regex() -> re.Pattern[str]:
    """One alternation grouped by first character; each group refuses to start inside a word.

    Every branch starts with a literal, so sre skips straight to positions holding one of the first characters, and
    the lookbehind sits after that character so it does not defeat the skip.
    """
    groups: dict[str, list[str]] = {}
    for anchor in _CUE_ANCHORS:
        groups.setdefault(anchor[0], []).append(anchor[1:])
    order = "srcmwgpbk"  # commonest first letters of English words first: a candidate position exits sooner
    ranked = sorted(groups.items(), key=lambda kv: (kv[0] not in order, order.find(kv[0])))
    branches = [f"{re.escape(first)}(?<![{_LETTER}]{re.escape(first)})(?:{'|'.join(map(re.escape, tails))})"
                for first, tails in ranked]
    return re.compile("|".join(branches))


_CUES = _anchor_regex()
_KW_PW_WIDE = ("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호")

# Priorities: lower is more specific and wins a tie on the same span.
_P_GCP, _P_PEM, _P_TOKEN = 0, 1, 10
_P_FINDERS = _P_TOKEN + len(_TOKEN_RULES)
_P_LABELLED = _P_FINDERS + 2
_P_URL, _P_AUTH, _P_GENERIC, _P_PW, _P_PIN, _P_SEED, _P_RECOVERY, _P_SSN, _P_CARD = range(200, 209)
_PROSE_FINDERS: tuple[tuple[str, Callable[[str, str, list[int], list[_Raw], int], None], int], ...] = (
    ("pw", _find_password_prose, _P_PW), ("pin", _find_pin_prose, _P_PIN), ("seed", _find_seed_phrase, _P_SEED),
    ("recovery", _find_recovery_codes, _P_RECOVERY), ("ssn", _find_ssn, _P_SSN))

KINDS: tuple[str, ...] = tuple(sorted(
    {r.kind for r in _TOKEN_RULES} | {r.kind for r in _LABELLED_RULES}
    | {"azure_client_secret", "mailchimp_key", "private_key", "gcp_service_account", "generic_secret",
       "url_password", "bearer_token", "basic_auth", "password_prose", "pin_prose", "seed_phrase", "recovery_code",
       "ssn", "card_number"}))


def _fold(text: str) -> str:
    """Lower-case without changing any character offset (a few characters lower-case to two)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(lc if len(lc := c.lower()) == 1 else c for c in text)


def _has(low: str, words: tuple[str, ...]) -> bool:
    for w in words:  # noqa: SIM110 -- a plain loop is measurably faster than any() on the hot path
        if w in low:
            return True
    return False


def find_secrets(text: str) -> list[SecretHit]:
    """Credentials and secrets in ``text`` (the original candidate, not case-folded), ordered by position."""
    if not text:
        return []
    low = _fold(text)
    raw: list[_Raw] = []
    classes = text.encode("latin-1", "replace")
    prefixes = _token_prefixes(text, classes.translate(_TOKEN_CLASS))
    if prefixes:
        _scan_tokens(text, low, prefixes, raw)
    if "://" in text:
        _find_url_password(text, raw, _P_URL)
    if _has(low, _AUTH_ANCHORS):
        _find_auth(text, low, raw, _P_AUTH)
    cues = _cue_positions(low)
    if cues:
        for family, finder, prio in _PROSE_FINDERS:
            if family in cues:
                finder(text, low, cues[family], raw, prio)
    if not text.isascii() and _has(low, _KW_PW_WIDE):
        _find_password_cjk(text, low, raw, _P_PW)
    if _RUN4 in classes.translate(_DIGIT_CLASS):  # a card number has at least four digits in a row
        _find_card_numbers(text, raw, _P_CARD)
    if not raw:
        return []
    return _resolve(raw)


def _token_prefixes(text: str, token_class: bytes) -> set[str]:
    """Two-character prefixes of every place a token could start; empty when the text holds no token-like run.

    Only 16+ character runs of token characters that are not plain words joined by hyphens, dots or slashes
    ("self-expression.", "advice/assistance") count: every provider token, key body, JWT and flaggable labelled
    value lies in such a run. A token starts at the beginning of a run or right after ``+ / = . ~ %`` inside it (the
    rules refuse to start after a letter, digit, ``_`` or ``-``), so those pieces' prefixes select the rules to run.
    """
    prefixes: set[str] = set()
    start = token_class.find(_RUN16)  # the first 16-run starts a maximal run (the byte before is not a token char)
    while start >= 0:
        end = token_class.find(b" ", start)
        run = text[start:end] if end >= 0 else text[start:]
        if not _PLAIN_WORDS.fullmatch(run):
            for piece in _RUN_SEPARATORS.split(run):
                if len(piece) >= 2:
                    prefixes.add(piece[:2])
                    if piece[0] in "MNO" and 23 <= len(piece) <= 28:
                        prefixes.add(_DISCORD_KEY)
        start = token_class.find(_RUN16, end) if end >= 0 else -1
    return prefixes


def _scan_tokens(text: str, low: str, prefixes: set[str], raw: list[_Raw]) -> None:
    if '"private_key"' in text:
        _find_gcp(text, raw, _P_GCP)
    if "-----BEGIN" in text:
        _find_pem(text, raw, _P_PEM)
    if "PuTTY-User-Key-File-" in text:
        _find_putty(text, raw, _P_PEM)
    selected: set[int] = set(_ALWAYS_RULES)
    for p in prefixes:
        selected.update(_PREFIX_INDEX.get(p, ()))
    for i in sorted(selected):
        _TOKEN_RULES[i].scan(text, low, raw, _P_TOKEN + i)
    if "Q~" in text:
        _find_azure_client_secret(text, raw, _P_FINDERS)
    if "-us" in text:
        _find_mailchimp(text, raw, _P_FINDERS + 1)
    for i, rule in enumerate(_LABELLED_RULES):
        rule.scan(text, low, raw, _P_LABELLED + i)
    if _has(low, _KW_GENERIC):
        _find_generic(text, low, raw, _P_GENERIC)


def _build_prefix_index() -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    index: dict[str, list[int]] = {}
    always: list[int] = []
    for i, rule in enumerate(_TOKEN_RULES):
        if rule.kind == "discord_token":
            index.setdefault(_DISCORD_KEY, []).append(i)
        elif rule.kind in ("telegram_token", "paypal_token"):  # start after ':' or '$', outside a long run
            always.append(i)
        else:
            for needle in rule.needles:
                index.setdefault(needle[:2], []).append(i)
    return {k: tuple(dict.fromkeys(v)) for k, v in index.items()}, tuple(always)


_DISCORD_KEY = "<discord>"
_PREFIX_INDEX, _ALWAYS_RULES = _build_prefix_index()


def _resolve(raw: list[_Raw]) -> list[SecretHit]:
    """Drop hits inside a longer (or equally long, more specific) hit; partial overlaps are kept."""
    raw.sort(key=lambda h: (h[0], -h[1], h[2]))
    hits: list[SecretHit] = []
    covered = -1
    for start, end, _prio, kind in raw:
        if end <= covered:
            continue
        hits.append(SecretHit(kind, (start, end)))
        covered = end
    return hits


def redact(text: str, hits: Sequence[SecretHit]) -> str:
    """``text`` with every hit replaced by ``[REDACTED secret.<kind>]``; overlapping hits are merged."""
    if not hits:
        return text
    parts: list[str] = []
    pos = 0
    for hit in sorted(hits, key=lambda h: h.span):
        start, end = max(hit.span[0], 0), min(hit.span[1], len(text))
        if end <= pos:
            continue
        if start >= pos:
            parts.append(text[pos:start])
            parts.append(f"[REDACTED {hit.rule}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


SECRET_MESSAGE = ("it contains a credential or secret ({kind}); secrets are never stored in memory — keep them in "
                  "a secret manager and store only where to find them")


def secret_rule_hits(hits: Sequence[SecretHit]) -> list[RuleHit]:
    """One ``secret.<kind>`` reject per secret; the message never echoes the value."""
    return [RuleHit(h.rule, REJECT, SECRET_MESSAGE.format(kind=h.kind.replace("_", " ")), h.span) for h in hits]


def scan_secrets(candidate: Candidate, policy: Policy) -> list[RuleHit]:
    """Gate scanner form of :func:`find_secrets` (for an operator's own gate)."""
    text = candidate.content
    return secret_rule_hits(find_secrets(text)) if isinstance(text, str) else []
