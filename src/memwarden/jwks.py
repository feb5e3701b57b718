"""The signing keys of an external OAuth issuer (a JWK Set, RFC 7517), for :mod:`memwarden.oauth`.

Keys come from a URL (the issuer's ``jwks_uri``, given or discovered from its RFC 8414 / OpenID Connect metadata)
or from a file (offline set-ups). They are cached: a set older than ``ttl`` seconds is fetched again, and a token
naming a key id (``kid``) the set does not hold makes one fetch (key rotation) — but never more than one fetch per
``min_refetch`` seconds, so tokens with made-up key ids cannot make this server hammer the issuer. If a fetch
fails, the set already held stays in use for at most ``max_stale`` seconds past its TTL; after that tokens are
refused until the issuer answers again (fail closed, T6).

Fetches go only to the configured or discovered URL: https, or http to a loopback address (tests, a local IdP);
redirects are not followed, a response is at most 512 KiB, and a fetch gives up after 5 seconds.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MAX_DOCUMENT_BYTES = 512 * 1024
FETCH_TIMEOUT = 5.0
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched or read (and no recent copy is held)."""


def allowed_url(url: str) -> bool:
    """https anywhere; plain http only to a loopback address."""
    parts = urlsplit(url)
    if not parts.hostname or parts.username or parts.password:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None  # a 3xx is then an HTTPError: keys come only from the configured address


_OPENER = urllib.request.build_opener(_NoRedirect)


def http_get_json(url: str) -> Any:
    """GET ``url`` and parse its JSON body (bounded in size and time); :class:`KeysUnavailable` on any failure."""
    if not allowed_url(url):
        raise KeysUnavailable(f"refusing to fetch {url!r}: only https (or http to loopback) is allowed")
    req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "memwarden"})
    try:
        with _OPENER.open(req, timeout=FETCH_TIMEOUT) as resp:
            body = resp.read(MAX_DOCUMENT_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise KeysUnavailable(f"{url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise KeysUnavailable(f"cannot fetch {url}: {reason}") from None
    if len(body) > MAX_DOCUMENT_BYTES:
        raise KeysUnavailable(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        return json.loads(body)
    except ValueError:
        raise KeysUnavailable(f"{url} did not send JSON") from None


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer publishes its metadata: OpenID Connect discovery, then RFC 8414 (with the well-known
    segment inserted before the issuer's path, RFC 8414 §3.1)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    oidc = urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", ""))
    rfc8414 = urlunsplit((parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", ""))
    return [oidc, rfc8414]


def discover_jwks_uri(issuer: str, get: Callable[[str], Any] = http_get_json) -> str:
    """The ``jwks_uri`` of ``issuer`` from its metadata, whose ``issuer`` must be exactly ``issuer``."""
    problems = []
    for url in metadata_urls(issuer):
        try:
            doc = get(url)
        except KeysUnavailable as exc:
            problems.append(str(exc))
            continue
        if not isinstance(doc, dict) or doc.get("issuer") != issuer:
            named = str(doc.get("issuer"))[:200] if isinstance(doc, dict) else "no issuer"
            problems.append(f"{url} names another issuer ({named!r})")
            continue
        uri = doc.get("jwks_uri")
        if not isinstance(uri, str) or not allowed_url(uri):
            problems.append(f"{url} has no usable jwks_uri (https, or http to loopback)")
            continue
        return uri
    raise KeysUnavailable("cannot discover the issuer's keys: " + "; ".join(problems))


def parse_jwks(doc: Any, where: str) -> list[dict[str, Any]]:
    """The keys of a JWK Set document (RFC 7517 §5); keys that are not objects are dropped."""
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeysUnavailable(f"{where} is not a JWK Set (an object with a \"keys\" list)")
    return [k for k in doc["keys"] if isinstance(k, dict)]


class JwksSource:
    """The issuer's current keys, cached as described in the module docstring.

    ``location`` is a JWKS URL, a file path, or None to discover the URL from ``issuer``'s metadata."""

    def __init__(self, issuer: str, location: str | None, *, ttl: float = 300.0, min_refetch: float = 10.0,
                 max_stale: float = 3600.0, get: Callable[[str], Any] = http_get_json,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.issuer, self.location = issuer, location
        self.ttl, self.min_refetch, self.max_stale = ttl, min_refetch, max_stale
        self._get, self._clock = get, clock
        self._lock = threading.Lock()
        self._keys: list[dict[str, Any]] | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None
        self._jwks_uri: str | None = None
        self.fetches = 0  # how many times the set was read (for the operator's log and the tests)

    @property
    def is_file(self) -> bool:
        return self.location is not None and not self.location.startswith(("http://", "https://"))

    def describe(self) -> str:
        if self.location is None:
            return f"discovered from {self.issuer}"
        return f"file {self.location}" if self.is_file else self.location

    def _read(self) -> list[dict[str, Any]]:
        self.fetches += 1
        if self.is_file:
            assert self.location is not None
            try:
                doc = json.loads(Path(self.location).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise KeysUnavailable(f"cannot read the JWK Set file {self.location}: {exc}") from None
            return parse_jwks(doc, self.location)
        if self._jwks_uri is None:
            self._jwks_uri = self.location or discover_jwks_uri(self.issuer, self._get)
        return parse_jwks(self._get(self._jwks_uri), self._jwks_uri)

    def load(self) -> list[dict[str, Any]]:
        """Read the set now (at start-up: a misconfiguration shows at once)."""
        with self._lock:
            self._attempted_at = self._clock()
            keys = self._read()
            self._keys, self._fetched_at = keys, self._attempted_at
            return keys

    def keys(self, kid: str | None) -> list[dict[str, Any]]:
        """The keys to try for a token naming ``kid``: refetched when the set is past its TTL, or once (rate
        limited) when no key has that id."""
        with self._lock:
            now = self._clock()
            stale = self._keys is None or now - self._fetched_at >= self.ttl
            missing = kid is not None and self._keys is not None and not any(k.get("kid") == kid
                                                                              for k in self._keys)
            may_fetch = self._attempted_at is None or now - self._attempted_at >= self.min_refetch
            if (stale or missing) and may_fetch:
                self._attempted_at = now
                try:
                    self._keys, self._fetched_at = self._read(), now
                except KeysUnavailable:
                    if self._keys is None or now - self._fetched_at >= self.ttl + self.max_stale:
                        raise
            if self._keys is None or now - self._fetched_at >= self.ttl + self.max_stale:
                raise KeysUnavailable("the issuer's keys could not be fetched recently; tokens are refused until "
                                      "they can")
            return list(self._keys)
