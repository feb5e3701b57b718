"""Time values at the trust boundary: parse, range-check and render unix-millisecond times (R1, P1, P3).

Every time a caller can set (a reminder's ``due``) is checked here before it reaches the write path, and every
time read back from the store is rendered by :func:`iso`, which never raises: one out-of-range value must not
make a session, a listing or an export fail (issue 12, item 3). Stored values outside :data:`MIN_MS` ..
:data:`MAX_MS` are refused by the row decoder (``store.rows.decode_row_why``) and reported, never served.
A leaf module: it imports nothing of memwarden but its errors.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memwarden.errors import InvalidInput

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_MS = 0  # 1970-01-01T00:00:00Z: no record, session or due time predates unix time
# 9999-12-31T00:00:00Z: the last day every timezone can still render (a later UTC time is year 10000 east of UTC)
MAX_MS = int(datetime(9999, 12, 31, tzinfo=UTC).timestamp() * 1000)
# R3: the expires_at of a memory kept until deleted (ttl_days="keep", where the policy allows it). The last time
# memwarden stores, so every expiry filter (`expires_at > now`), gc and the ranking statistics need no special case.
NEVER_EXPIRES = MAX_MS
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MAX_DUE_AHEAD_DAYS = 100 * 366  # a reminder due more than a century ahead is a mistake, not a plan
DUE_EXAMPLE = "2026-12-01T09:00Z"


def in_range(ms: object) -> bool:
    """Whether ``ms`` is a whole number of milliseconds memwarden can store and render."""
    return isinstance(ms, int) and not isinstance(ms, bool) and MIN_MS <= ms <= MAX_MS


def iso(ms: int | None) -> str | None:
    """``ms`` as ``YYYY-MM-DDTHH:MM:SSZ``; ``None`` for ``None``. Never raises: a value outside the range (a row
    edited around the API, or written before times were validated) renders as ``invalid-time:<value>``."""
    if ms is None:
        return None
    if not in_range(ms):
        return f"invalid-time:{str(ms)[:40]}"
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_expiry(ms: int) -> str | None:
    """An ``expires_at`` as :func:`iso` renders it, or ``None`` for a memory kept until deleted."""
    return None if ms == NEVER_EXPIRES else iso(ms)


def parse_due(due: Any) -> int | None:
    """A due time as unix ms from a datetime (naive = UTC), an ISO-8601 string or unix ms; ``None`` stays
    ``None``. Raises :class:`InvalidInput` for anything else, or a time outside 1970-01-01 .. 9999-12-30 UTC."""
    if due is None:
        return None
    if isinstance(due, datetime):
        dt = due if due.tzinfo else due.replace(tzinfo=UTC)
        return check_ms((dt - _EPOCH) // timedelta(milliseconds=1), "due")
    if isinstance(due, int) and not isinstance(due, bool):
        return check_ms(due, "due")
    if isinstance(due, str) and len(due) <= 64:
        try:
            parsed = datetime.fromisoformat(due.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return parse_due(parsed)
    raise InvalidInput(f"due must be an ISO-8601 time such as {DUE_EXAMPLE}; got {str(due)[:40]!r}")


def check_ms(ms: int, what: str) -> int:
    """``ms`` itself if it is in range, else :class:`InvalidInput` naming ``what`` and the range."""
    if not in_range(ms):
        raise InvalidInput(f"{what} is out of range: times must fall between 1970-01-01 and 9999-12-30 (UTC); "
                           f"got {str(ms)[:40]}")
    return ms


def check_due(kind: str, due_at: object, now: int, *, past_window_ms: int, allow_past: bool) -> None:
    """The boundary rule for a write's due time (P4): only reminders have one; it is a whole number of unix ms in
    range; a new due may lie at most ``past_window_ms`` in the past (an older one would never reach a reminder
    block) unless ``allow_past`` (import keeps what it is given), and at most a century ahead."""
    if due_at is None:
        return
    if kind != "reminder":
        raise InvalidInput(f"due is for reminders only; a {str(kind)[:40]} has no due time (use kind reminder, or "
                           "leave out due)")
    if isinstance(due_at, bool) or not isinstance(due_at, int):
        raise InvalidInput("due_at must be a unix time in milliseconds")
    check_ms(due_at, "due")
    if due_at > now + MAX_DUE_AHEAD_DAYS * DAY_MS:
        raise InvalidInput(f"due {iso(due_at)} is more than 100 years ahead; check the date")
    if not allow_past and due_at < now - past_window_ms:
        raise InvalidInput(f"due {iso(due_at)} is in the past: a reminder due more than "
                           f"{past_window_ms / HOUR_MS:g} hours ago is never shown; give a future time")


_DURATION_UNITS = {"s": 1000, "m": 60_000, "h": HOUR_MS, "d": DAY_MS, "w": 7 * DAY_MS}
EXPIRY_EXAMPLE = "90d, 12h, 30m, 2w or an ISO-8601 time such as 2030-06-30T09:00Z"


def parse_expiry(value: Any, now: int) -> int:
    """An expiry as unix ms: a duration from ``now`` (a whole number with a unit: ``s``, ``m``, ``h``, ``d``,
    ``w``, e.g. ``90d``) or an ISO-8601 time (naive = UTC). It must lie in the future and in range;
    :class:`InvalidInput` otherwise."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if 1 < len(text) <= 16 and text[-1] in _DURATION_UNITS and text[:-1].isascii() and text[:-1].isdigit():
        at = now + int(text[:-1]) * _DURATION_UNITS[text[-1]]
    else:
        try:
            at = parse_due(value)
        except InvalidInput:
            raise InvalidInput(f"an expiry is a duration or a time ({EXPIRY_EXAMPLE}); got {str(value)[:40]!r}"
                               ) from None
        if at is None:
            raise InvalidInput(f"an expiry is a duration or a time ({EXPIRY_EXAMPLE})")
    if at <= now:
        raise InvalidInput(f"the expiry {iso(at) if in_range(at) else str(value)[:40]} is not in the future")
    if not in_range(at):  # say it in the caller's words, not as a count of milliseconds
        raise InvalidInput(f"the expiry {str(value)[:40]} is too far ahead: the latest time memwarden stores is "
                           f"{iso(NEVER_EXPIRES)}")
    return check_ms(at, "expiry")
