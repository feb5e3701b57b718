"""Encoded payloads (G3, G9): find text hidden in an encoding, decode it within a fixed budget, hand it back.

:func:`decoded_texts` returns ``(span, encoding, text)`` for every blob in a candidate that decodes to readable
text. The content scanner runs its rules again on each decoded text (and on what *that* decodes to, up to
``MAX_DECODE_DEPTH``), so an instruction does not become acceptable by being encoded.

Encodings: base64 (standard, URL-safe, unpadded, split by spaces or line breaks), base32, base85 and Ascii85,
hex (plain, spaced, ``\\x``, ``0x``), binary octets, decimal character codes, Morse code; the decoded bytes are
read as UTF-8, UTF-16 (with or without a byte-order mark) or zlib/gzip-compressed data; and text transforms:
rot13 and other Caesar shifts, and reversed text. Bounds: at most ``MAX_BLOBS`` blobs per candidate, at most
``MAX_DECODED_CHARS`` characters decoded in all (the budget is shared by nested decodes), and decompression stops
at the same size, so a zip bomb costs what a short text costs. Every regex is linear (no nested unbounded repeats).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import zlib
from collections.abc import Iterator

MAX_DECODE_DEPTH = 2
MAX_DECODED_CHARS = 8192
MAX_BLOBS = 32

Decoded = tuple[tuple[int, int], str, str]  # (span in the text searched, encoding, decoded text)

_B64 = re.compile(r"(?<![\w+/-])(?:[A-Za-z0-9+/]{4}){4,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{1,3})?"
                  r"(?![\w+/=-])|(?<![\w+/-])[A-Za-z0-9_-]{22,}={0,2}(?![\w+/=-])")
# base64 broken into chunks by single spaces or line breaks ("aWdub3Jl IHByZXZp b3Vz")
_B64_SPLIT = re.compile(r"(?<![\w+/=])(?:[A-Za-z0-9+/]{4,76}={0,2}[ \t]?\r?\n?[ \t]?){3,200}")
_B32 = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z2-7]{8}){2,}(?:[A-Z2-7]{1,7}={0,6})?(?![A-Za-z0-9=])|"
                  r"(?<![A-Za-z0-9])(?:[a-z2-7]{8}){2,}(?:[a-z2-7]{1,7}={0,6})?(?![A-Za-z0-9=])")
_A85 = re.compile(r"<~(.{4,8000}?)~>", re.DOTALL)
_B85 = re.compile(r"(?<![\w!#$%&()*+;<=>?@^`{|}~-])[0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]{20,}")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])|(?:\\x[0-9A-Fa-f]{2}){8,}|"
                  r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :,-]){11,}[0-9A-Fa-f]{2}(?![0-9A-Fa-f])|"
                  r"(?:0x[0-9A-Fa-f]{2}[\s,]{0,2}){8,}")
_BINARY = re.compile(r"(?<![01])(?:[01]{8}[\s,]{0,2}){6,}")
_DECIMAL = re.compile(r"(?<![\d.])(?:\d{2,3}[\s,]{1,2}){7,}\d{2,3}(?![\d.])")
_MORSE = re.compile(r"(?<![.\-•·−_\w])(?:[.\-•·−_]{1,7}(?: {1,3}|\s?/\s?)){6,2000}[.\-•·−_]{1,7}")
_MORSE_TABLE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g", "....": "h", "..": "i",
    ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".--.": "p", "--.-": "q", ".-.": "r",
    "...": "s", "-": "t", "..-": "u", "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z",
    "-----": "0", ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9", ".-.-.-": ".", "--..--": ",", "..--..": "?", "-.-.--": "!",
    ".----.": "'", "-..-.": "/", "---...": ":", ".-..-.": '"', "-....-": "-", "-.--.": "(", "-.--.-": ")",
}


def printable_text(raw: bytes) -> str | None:
    """Readable text in ``raw``: UTF-8, UTF-16 or zlib/gzip-compressed text (decompressed within the budget)."""
    if len(raw) >= 2 and (raw[:2] in (b"\x1f\x8b",) or (raw[0] == 0x78 and raw[1] in (0x01, 0x5E, 0x9C, 0xDA))):
        try:
            d = zlib.decompressobj(zlib.MAX_WBITS | 32)
            raw = d.decompress(raw, MAX_DECODED_CHARS * 4)
        except zlib.error:
            return None
    candidates: list[str] = []
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(raw) >= 8 and raw.count(0) * 3 >= len(raw)):
        for enc in ("utf-16", "utf-16-le", "utf-16-be"):
            try:
                candidates.append(raw.decode(enc))
            except UnicodeDecodeError:
                continue
    with contextlib.suppress(UnicodeDecodeError):
        candidates.append(raw.decode("utf-8"))
    for text in candidates:
        text = text.lstrip("\ufeff")
        if len(text) < 6 or len(set(text[:64])) < 3:
            continue  # too short, or one or two characters repeated: not a message
        good = sum(ch.isprintable() or ch in "\n\t\r" for ch in text)
        letters = sum(ch.isalpha() for ch in text)
        if good >= 0.95 * len(text) and letters >= 0.5 * len(text.replace(" ", "")):
            return text
    return None


def _b64(blob: str) -> str | None:
    body = re.sub(r"\s+", "", blob).rstrip("=")
    if len(body) % 4 == 1:
        body = body[:-1]  # a truncated blob
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decoder(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            continue
        text = printable_text(raw)
        if text:
            return text
    return None


def _b32(blob: str) -> str | None:
    body = blob.rstrip("=").upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except (binascii.Error, ValueError):
        return None
    return printable_text(raw)


def _b85(blob: str) -> str | None:
    for decoder in (base64.b85decode, base64.a85decode):
        try:
            raw = decoder(blob.encode("ascii"))
        except (ValueError, binascii.Error):
            continue
        text = printable_text(raw)
        if text:
            return text
    return None


def _hex(blob: str) -> str | None:
    digits = re.sub(r"\\x|0x|[\s:,-]", "", blob)
    try:
        return printable_text(bytes.fromhex(digits))
    except ValueError:
        return None


def _binary(blob: str) -> str | None:
    octets = re.findall(r"[01]{8}", blob)
    return printable_text(bytes(int(o, 2) for o in octets))


def _decimal(blob: str) -> str | None:
    codes = [int(x) for x in re.findall(r"\d{2,3}", blob)]
    if not all(32 <= c <= 126 for c in codes):
        return None
    text = "".join(map(chr, codes))
    return text if sum(c.isalpha() for c in text) >= 0.6 * len(text) else None


def _morse(blob: str) -> str | None:
    norm = blob.translate(str.maketrans({"•": ".", "·": ".", "−": "-", "_": "-"}))
    words = []
    for word in re.split(r"\s*/\s*|\s{3,}", norm.strip()):
        letters = [_MORSE_TABLE.get(code) for code in word.split()]
        if not letters or None in letters:
            return None
        words.append("".join(letters))  # type: ignore[arg-type]
    text = " ".join(words)
    return text if len(text) >= 6 else None


def _looks_b64_split(blob: str) -> bool:
    """A run of base64-alphabet chunks split by spaces is base64 only if it is not ordinary words: base64 has
    capitals inside chunks, digits or '+'/'/' (English text has none of these mid-word)."""
    chunks = blob.split()
    if len(chunks) < 3 or sum(map(len, chunks)) < 24:
        return False
    odd = sum(1 for c in chunks if re.search(r"[a-z0-9+/][A-Z]|\d|[+/]", c[1:]))
    return odd * 2 >= len(chunks)


def _looks_b85(blob: str) -> bool:
    return sum(1 for c in blob if c in "!#$%&()*+;<=>?@^_`{|}~-") >= 3 and any(c.isdigit() for c in blob)


def _blobs(text: str) -> Iterator[Decoded]:
    """Every decodable blob of ``text`` with its decoded text (at most ``MAX_BLOBS`` tried)."""
    tried = 0
    seen: set[tuple[int, int]] = set()
    for rx, name, decode, accept in (
            (_B64, "base64", _b64, None), (_B64_SPLIT, "base64", _b64, _looks_b64_split),
            (_B32, "base32", _b32, None), (_HEX, "hex", _hex, None), (_BINARY, "binary", _binary, None),
            (_DECIMAL, "decimal character codes", _decimal, None), (_MORSE, "Morse code", _morse, None),
            (_B85, "base85", _b85, _looks_b85)):
        for m in rx.finditer(text):
            if m.span() in seen:
                continue
            blob = m.group()
            if accept is not None and not accept(blob):
                continue
            tried += 1
            if tried > MAX_BLOBS:
                return
            decoded = decode(blob)
            if decoded:
                seen.add(m.span())
                yield m.span(), name, decoded
    for m in _A85.finditer(text):
        tried += 1
        if tried > MAX_BLOBS:
            return
        try:
            decoded = printable_text(base64.a85decode(m.group(1).encode("ascii", "ignore")))
        except ValueError:
            decoded = None
        if decoded:
            yield m.span(), "Ascii85", decoded


_NO_DIGITS = str.maketrans("", "", "0123456789")
_CAMELISH = re.compile(r"[a-z][A-Z]")
_BINARY_HINT = re.compile(r"[01]{8}[\s,]{0,2}[01]{8}")
_MORSE_HINT = re.compile(r"[.\-•·−]{1,6} [.\-•·−]{1,6} [.\-•·−]{1,6}")


def may_hold_blob(text: str) -> bool:
    """Whether any encoding could be present, answered from cheap tests before any blob regex runs: a token of
    16+ characters (base64, base32, hex, base85), ``\\x``/``0x``/``<~`` markers, many digits (binary, character
    codes), three Morse-like tokens in a row, or inner capitals (base64 split by spaces: its chunks have them)."""
    if max(map(len, text.split()), default=0) >= 16 or "\\x" in text or "0x" in text or "<~" in text:
        return True
    digits = len(text) - len(text.translate(_NO_DIGITS))
    if digits >= 16 and (_BINARY_HINT.search(text) is not None or _DECIMAL.search(text) is not None):
        return True
    if ("- " in text or ". " in text or "•" in text) and _MORSE_HINT.search(text) is not None:
        return True
    return _CAMELISH.search(text) is not None and _B64_SPLIT.search(text) is not None


def decoded_texts(text: str) -> list[Decoded]:
    """(span, encoding, decoded text) for every blob in ``text`` that decodes to readable text."""
    if not may_hold_blob(text):
        return []
    return list(_blobs(text))


_STOP = frozenset("the and is a to of you in that it for on are this with be your from now".split())
_SHIFT_HINTS = frozenset("rot13 rot caesar rot47 cipher shifted shift rotated encrypted".split())
# Common English words: a text holding any of them is English, not a shifted cipher (a cheap test first).
_COMMON = _STOP | frozenset(
    "i me my we our he she his her they them their it its user users user's was were has have had do does did not "
    "no yes or but if at by as an so up out about into over after before than then there here what which who when "
    "where why how all any each every some more most other can could will would should may might must just also "
    "very only new one two like likes prefers wants uses works lives team project name is's am been being get got "
    "make made go goes going know see use used need needs time day week year today".split())
MAX_SHIFT_TOKENS = 48


def shifted_texts(text: str, tokens: set[str]) -> list[tuple[str, str]]:
    """Text transforms worth scanning again: rot13 (or another Caesar shift) of Latin text that has few of
    English's commonest words but gains them (or attack words) under the shift, and the text reversed when
    reversing it gives attack words."""
    out: list[tuple[str, str]] = []
    hinted = not _SHIFT_HINTS.isdisjoint(tokens)
    if (hinted or tokens.isdisjoint(_COMMON)) and len(tokens) >= 3:
        letters = [t for t in tokens if t.isascii() and t.isalpha()][:MAX_SHIFT_TOKENS]
    else:
        letters = []
    if len(letters) >= 3:
        cues = _STOP | _REVERSE_CUES
        plain = sum(1 for t in letters if t in cues)
        # rot13 always; the other 24 shifts only when the text says it is a cipher (each costs a pass)
        for shift in range(1, 26) if hinted else (13,):
            table = _SHIFTS[shift]
            gained = sum(1 for t in letters if t.translate(table) in cues)
            if gained >= 2 and gained > plain:
                name = "rot13" if shift == 13 else f"Caesar shift {shift}"
                out.append((name, text.translate(_SHIFTS_CASED[shift])))
                break
    if len(text) >= 12 and not tokens.isdisjoint(_REVERSED_CUES):
        rev = text[::-1]
        rev_tokens = set(re.findall(r"\w+", rev.lower()))
        if len(rev_tokens & _REVERSE_CUES) >= 2 and len(rev_tokens & _REVERSE_CUES) > len(tokens & _REVERSE_CUES):
            out.append(("reversed text", rev))
    return out


_ABC = "abcdefghijklmnopqrstuvwxyz"
_SHIFTS = {k: str.maketrans(_ABC, _ABC[k:] + _ABC[:k]) for k in range(1, 26)}
_SHIFTS_CASED = {k: str.maketrans(_ABC + _ABC.upper(), _ABC[k:] + _ABC[:k] + (_ABC[k:] + _ABC[:k]).upper())
                 for k in range(1, 26)}
_REVERSED_CUES: frozenset[str] = frozenset()  # filled below: the cue words spelt backwards
_REVERSE_CUES = frozenset(
    "ignore previous instructions instruction rules system prompt assistant you your always never from now on "
    "the and all must send password secret reveal forget disregard admin mode developer user tell delete".split())
_REVERSED_CUES = frozenset(w[::-1] for w in _REVERSE_CUES)
