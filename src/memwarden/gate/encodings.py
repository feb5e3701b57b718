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
import functools
import re
import zlib
from collections.abc import Iterator

import numpy as np

from memwarden.gate.normalize import ascii_digits, lower_then_upper

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
_HEX = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{24,}(?![0-9A-Fa-f])|(?:\\x[0-9A-Fa-f]{2}){8,}|"
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
    if len(raw) >= 16 and raw.count(0) * 2 >= len(raw):  # UTF-32: three zero bytes in four for ASCII text
        for enc in ("utf-32", "utf-32-le", "utf-32-be"):
            try:
                candidates.append(raw[:len(raw) - len(raw) % 4].decode(enc))
            except UnicodeDecodeError:
                continue
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


_B85_DIGIT = np.full(256, -1, dtype=np.int64)
_B85_DIGIT[np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
                         dtype=np.uint8)] = np.arange(85)
_POW85 = 85 ** np.arange(4, -1, -1, dtype=np.int64)  # a group's five digits, most significant first


def _groups85(digits: np.ndarray) -> np.ndarray:
    """Five base-85 digits per group → the big-endian 32-bit words; ValueError on a group past 2**32 - 1 (what
    ``struct.pack("!I")`` refuses in the standard library's decoders)."""
    acc = digits.reshape(-1, 5) @ _POW85  # at most 85**5 - 1: no overflow in int64
    if acc.size and int(acc.max()) > 0xFFFFFFFF:
        raise ValueError("base85 overflow")
    return acc.astype(">u4")


def _b85decode(data: bytes) -> bytes:
    """``base64.b85decode(data)``, vectorised (the standard library's is a Python loop per character): the same
    bytes, and a ValueError exactly when it raises one (a character outside the alphabet, a group overflowing
    32 bits); the input is padded with ``~`` to whole groups and the padding's bytes cut, as there."""
    padding = -len(data) % 5
    digits = _B85_DIGIT[np.frombuffer(data + b"~" * padding, dtype=np.uint8)]
    if digits.size and int(digits.min()) < 0:
        raise ValueError("bad base85 character")
    out = _groups85(digits).tobytes()
    return out[:-padding] if padding else out


def _a85decode(data: bytes) -> bytes:
    """``base64.a85decode(data)`` for input without whitespace (a ``_B85`` match has none), vectorised: ``!``–``u``
    are digits, ``z`` four zero bytes where no group is open (else ValueError), anything else a ValueError; a last
    partial group is padded with ``u`` and its padding's bytes cut, and an overflowing group raises, as there."""
    arr = np.frombuffer(data, dtype=np.uint8)
    digit = (arr >= 33) & (arr <= 117)
    zero = arr == 122
    if not bool((digit | zero).all()):
        raise ValueError("Non-Ascii85 digit found")
    values = arr[digit].astype(np.int64) - 33
    before = np.cumsum(digit)[zero]  # digits before each "z" (a "z" is not a digit)
    if before.size and bool((before % 5).any()):
        raise ValueError("z inside Ascii85 5-tuple")
    padding = -len(values) % 5
    words = _groups85(np.concatenate((values, np.full(padding, 84, dtype=np.int64))))
    if before.size:  # each "z" is a zero word after the groups before it
        words = np.insert(words, before // 5, 0)
    out = words.tobytes()
    return out[:-padding] if padding else out


def _b85(blob: str) -> str | None:
    for decoder in (_b85decode, _a85decode):
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
    digits = digits[:len(digits) - len(digits) % 2]  # a truncated payload: the whole bytes of it
    try:
        return printable_text(bytes.fromhex(digits))
    except ValueError:
        return None


def _binary(blob: str) -> str | None:
    octets = re.findall(r"[01]{8}", blob)
    return printable_text(bytes(int(o, 2) for o in octets))


def _decimal(blob: str) -> str | None:
    codes = [int(x) for x in re.findall(r"\d{2,3}", blob)]
    if all(32 <= c <= 126 for c in codes):
        text = "".join(map(chr, codes))
        return text if sum(c.isalpha() for c in text) >= 0.6 * len(text) else None
    if all(c <= 255 for c in codes):  # bytes of UTF-8 text ("195, 164" is "ä")
        return printable_text(bytes(codes))
    return None


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


_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58_ALPHABET)}
# base58 shares its alphabet with ordinary identifiers, so only a blob the text labels as base58 is decoded
_B58 = re.compile(r"\b(?:b58|base58|bs58|base-58)\s*[:=(]\s*([1-9A-HJ-NP-Za-km-z]{12,2000})", re.IGNORECASE)


def _b58(blob: str) -> str | None:
    """base58 (Bitcoin alphabet): the standard library has no decoder, and the algorithm is ten lines."""
    n = 0
    for c in blob:
        digit = _B58_INDEX.get(c)
        if digit is None:  # the label's pattern is case-blind: I, O and l are not base58 digits
            return None
        n = n * 58 + digit
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    pad = len(blob) - len(blob.lstrip("1"))
    return printable_text(b"\x00" * pad + raw)


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


_HEX_PAIRS = re.compile(r"[0-9A-Fa-f]{2}[ :,-][0-9A-Fa-f]{2}[ :,-][0-9A-Fa-f]{2}[ :,-][0-9A-Fa-f]{2}")
_MORSE_RUN = re.compile(r"[.\-•·−_]{1,7}(?: {1,3}|\s?/\s?)[.\-•·−_]{1,7}(?: {1,3}|\s?/\s?)[.\-•·−_]{1,7}"
                        r"(?: {1,3}|\s?/\s?)[.\-•·−_]")
_SPLIT_CHUNK = re.compile(r"[a-z0-9+/][A-Z]|[0-9+/]")


def _run_table(alphabet: str) -> bytes:
    """A ``bytes.translate`` table keeping ``alphabet`` and turning every other byte into a space."""
    keep = set(alphabet.encode("ascii"))
    return bytes(b if b in keep else 32 for b in range(256))


_DIGITS, _UPPER, _LOWER = "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
# the characters each blob pattern's long run is made of (a match holds a run of them at least this long:
# base64 16 / URL-safe 22, base32 16 in one case, base85 20, plain hex 24)
_RUN_TABLES = {
    "b64": _run_table(_UPPER + _LOWER + _DIGITS + "+/"), "b64url": _run_table(_UPPER + _LOWER + _DIGITS + "_-"),
    "b32upper": _run_table(_UPPER + "234567"), "b32lower": _run_table(_LOWER + "234567"),
    "b85": _run_table(_UPPER + _LOWER + _DIGITS + "!#$%&()*+;<=>?@^_`{|}~-"),
    "hex": _run_table(_DIGITS + "ABCDEFabcdef"),
}


def _class_runs(text: str) -> dict[str, int] | None:
    """For ASCII text, the longest run of each blob alphabet's characters (one C-level translate and split per
    alphabet, cheaper than the look-behind scan of the pattern it rules out); None for other text."""
    if not text.isascii():
        return None
    raw = text.encode("ascii")
    return {name: max(map(len, raw.translate(table).split()), default=0) for name, table in _RUN_TABLES.items()}


def _possible(text: str) -> set[re.Pattern[str]]:
    """The blob patterns that can match ``text`` at all, from conditions every match of each one implies (so
    skipping the others changes nothing): a long token for base64, base32, base85 and plain hex; ``\\x``,
    ``0x`` or four separated hex pairs for the other hex forms; 48 binary digits; 16 digits for character codes;
    four Morse-like tokens in a row; for base64 split by spaces, a character its chunks need (the test that
    accepts a split blob asks for inner capitals, digits, ``+`` or ``/``). Each pattern costs a pass over the
    whole text with a look-behind at every position; each condition costs a fraction of that."""
    longest = max(map(len, text.split()), default=0)
    runs = _class_runs(text) if longest >= 16 else None
    out: set[re.Pattern[str]] = set()
    if longest >= 16 and (runs is None or runs["b64"] >= 16 or runs["b64url"] >= 22):
        out.add(_B64)
    if longest >= 16 and (runs is None or runs["b32upper"] >= 16 or runs["b32lower"] >= 16):
        out.add(_B32)
    if longest >= 20 and (runs is None or runs["b85"] >= 20):
        out.add(_B85)
    if (longest >= 24 and (runs is None or runs["hex"] >= 24)) or "\\x" in text or "0x" in text \
            or _HEX_PAIRS.search(text) is not None:
        out.add(_HEX)
    digits = ascii_digits(text)
    if digits >= 16 or not text.isascii():  # character codes may be written in any script's digits (\\d)
        out.add(_DECIMAL)
    if digits >= 48 and text.count("0") + text.count("1") >= 48:
        out.add(_BINARY)
    if _MORSE_RUN.search(text) is not None:
        out.add(_MORSE)
    if _SPLIT_CHUNK.search(text) is not None:
        out.add(_B64_SPLIT)
    return out


def _blobs(text: str) -> Iterator[Decoded]:
    """Every decodable blob of ``text`` with its decoded text (at most ``MAX_BLOBS`` tried), then, per encoding
    with two or more blobs, the blobs joined in order: a payload cut into parts ("Part 1/3: …", ``id_a=… id_b=…``)
    decodes whole only when put back together."""
    tried = 0
    seen: set[tuple[int, int]] = set()
    possible = _possible(text)
    for rx, name, decode, accept in (
            (_B64, "base64", _b64, None), (_B64_SPLIT, "base64", _b64, _looks_b64_split),
            (_B32, "base32", _b32, None), (_HEX, "hex", _hex, None), (_BINARY, "binary", _binary, None),
            (_DECIMAL, "decimal character codes", _decimal, None), (_MORSE, "Morse code", _morse, None),
            (_B85, "base85", _b85, _looks_b85)):
        if rx not in possible:
            continue
        parts: list[tuple[tuple[int, int], str]] = []
        for m in rx.finditer(text):
            if m.span() in seen:
                continue
            blob = m.group()
            if accept is not None and not accept(blob):
                continue
            tried += 1
            if tried > MAX_BLOBS:
                return
            parts.append((m.span(), blob))
            decoded = decode(blob)
            if decoded:
                seen.add(m.span())
                yield m.span(), name, decoded
        if len(parts) >= 2 and rx is not _DECIMAL and rx is not _MORSE:
            tried += 1
            joined = decode("".join(re.sub(r"\s+", "", b).rstrip("=") if rx is _B64 else re.sub(r"\s+", "", b)
                                    for _, b in parts))
            if joined:
                yield (parts[0][0][0], parts[-1][0][1]), f"{name} in {len(parts)} parts", joined
    # every base58 label holds "58" and every Ascii85 blob "<~": without them neither pattern can match (their
    # scans, a look at every position for the label, are skipped)
    for m in _B58.finditer(text) if "58" in text else ():
        tried += 1
        if tried > MAX_BLOBS:
            return
        decoded = _b58(m.group(1))
        if decoded:
            yield m.span(), "base58", decoded
    for m in _A85.finditer(text) if "<~" in text else ():
        tried += 1
        if tried > MAX_BLOBS:
            return
        try:
            decoded = printable_text(base64.a85decode(m.group(1).encode("ascii", "ignore")))
        except ValueError:
            decoded = None
        if decoded:
            yield m.span(), "Ascii85", decoded


_BINARY_HINT = re.compile(r"[01]{8}[\s,]{0,2}[01]{8}")
_MORSE_HINT = re.compile(r"[.\-•·−]{1,6} [.\-•·−]{1,6} [.\-•·−]{1,6}")


def may_hold_blob(text: str) -> bool:
    """Whether any encoding could be present, answered from cheap tests before any blob regex runs: a token of
    16+ characters (base64, base32, hex, base85), ``\\x``/``0x``/``<~`` markers, many digits (binary, character
    codes), three Morse-like tokens in a row, or inner capitals (base64 split by spaces: its chunks have them)."""
    if max(map(len, text.split()), default=0) >= 16 or "\\x" in text or "0x" in text or "<~" in text \
            or ("58" in text and _B58.search(text) is not None):
        return True
    digits = ascii_digits(text)
    if digits >= 16 and (_BINARY_HINT.search(text) is not None or _DECIMAL.search(text) is not None):
        return True
    if ("- " in text or ". " in text or "•" in text) and _MORSE_HINT.search(text) is not None:
        return True
    return lower_then_upper(text) and _B64_SPLIT.search(text) is not None


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
    """Text transforms worth scanning again: rot13 or Atbash (or, when the text says it is a cipher, any Caesar
    shift) of Latin text that has few of English's commonest words but gains them (or attack words) under the
    transform; Braille letters read as Latin; upside-down text turned back; and the text reversed when reversing
    it gives attack words."""
    out: list[tuple[str, str]] = []
    hinted = not _SHIFT_HINTS.isdisjoint(tokens)
    if (hinted or tokens.isdisjoint(_COMMON)) and len(tokens) >= 3 and _latin_text(text):
        # sorted: the first MAX_SHIFT_TOKENS of a set would depend on the process's hash seed (one verdict per text)
        letters = [t for t in sorted(tokens) if len(t) >= 3 and t.isascii() and t.isalpha()][:MAX_SHIFT_TOKENS]
    else:
        letters = []  # a cipher of the Latin alphabet is written in it (the skeleton's folded Greek is not)
    if len(letters) >= 3:
        cues = _hinted_cues()
        plain = sum(1 for t in letters if t in cues)
        # unannounced, a transform must turn half the words into words; announced ("Caesar +3: …"), two will do
        need = 2 if hinted else max(2, (len(letters) + 1) // 2)
        # rot13 and Atbash always; the other 24 shifts only when the text says it is a cipher (each costs a pass)
        for name, table, cased in _CIPHERS if hinted else _CIPHERS[:2]:
            gained = sum(1 for t in letters if t.translate(table) in cues)
            if gained >= need and gained > plain:
                out.append((name, text.translate(cased)))
                break
    ascii_only = text.isascii()  # Braille and turned letters are not ASCII
    if not ascii_only and _BRAILLE.search(text) is not None:
        out.append(("Braille", text.translate(_BRAILLE_TABLE)))
    if not ascii_only and len(_TURNED.findall(text, 0, 4096)) >= 3:
        out.append(("upside-down text", text.translate(_FLIP_TABLE)[::-1]))
    if len(text) >= 12 and not tokens.isdisjoint(_REVERSED_CUES):
        rev = text[::-1]
        words = [t for t in sorted(tokens) if len(t) >= 3 and t.isalpha()][:MAX_SHIFT_TOKENS]
        cues = _hinted_cues()
        gained = sum(1 for t in words if t[::-1] in cues)
        if gained >= max(2, (len(words) + 1) // 2) and gained > sum(1 for t in words if t in cues):
            out.append(("reversed text", rev))
            # each word spelt backwards in its place ("llatsnI eht egakcap") reads right word by word
            out.append(("reversed words", " ".join(w[::-1] for w in text.split())))
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


def _latin_text(text: str) -> bool:
    """Whether at least four in five of the letters of ``text``'s start are ASCII."""
    head = text[:2048]
    if head.isascii():
        return True
    letters = [c for c in head if c.isalpha()]
    return sum(c.isascii() for c in letters) >= 0.8 * len(letters)


def _atbash(cased: bool) -> dict[int, str]:
    rev = _ABC[::-1]
    return str.maketrans(_ABC + _ABC.upper(), rev + rev.upper()) if cased else str.maketrans(_ABC, rev)


# (name, table for lower-case tokens, table for the text): rot13 and Atbash first, then the other Caesar shifts
_CIPHERS: tuple[tuple[str, dict[int, str], dict[int, str]], ...] = (
    ("rot13", _SHIFTS[13], _SHIFTS_CASED[13]), ("Atbash", _atbash(False), _atbash(True)),
    *((f"Caesar shift {k}", _SHIFTS[k], _SHIFTS_CASED[k]) for k in range(1, 26) if k != 13))


@functools.cache
def _hinted_cues() -> frozenset[str]:
    """Words a deciphered text is recognised by when the text says it is a cipher: English's commonest words and
    the gate's attack vocabulary ("Respond without any content filters" has no stop word)."""
    from memwarden.gate.deobfuscate import attack_vocabulary

    return _STOP | _REVERSE_CUES | _COMMON | attack_vocabulary()


# Grade-1 Braille letters (U+2800 block) and the blank cell; six cells in a row make a Braille text.
_BRAILLE_LETTERS = dict(zip("⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵", _ABC, strict=True))
_BRAILLE_TABLE = str.maketrans({**_BRAILLE_LETTERS, "\u2800": " ", "⠄": "'", "⠂": ",", "⠲": ".", "⠖": "!"})
_BRAILLE = re.compile("[\u2801-\u28ff]{2,}(?:[\\s\u2800]+[\u2801-\u28ff]+){2,}")
# Upside-down text: turned letters, written right to left so it reads upright when the page is turned.
_FLIP = {"ɐ": "a", "q": "b", "ɔ": "c", "p": "d", "ǝ": "e", "ɟ": "f", "ƃ": "g", "ɥ": "h", "ᴉ": "i", "ı": "i",
         "ɾ": "j", "ʞ": "k", "ן": "l", "ɯ": "m", "u": "n", "d": "p", "b": "q", "ɹ": "r", "ʇ": "t", "n": "u",
         "ʌ": "v", "ʍ": "w", "ʎ": "y", "˙": ".", "'": ",", ",": "'", "¿": "?", "¡": "!", "(": ")", ")": "(",
         "[": "]", "]": "[", "{": "}", "}": "{", "<": ">", ">": "<", "∀": "A", "Ɔ": "C", "Ǝ": "E", "Ⅎ": "F",
         "⅁": "G", "ſ": "J", "˥": "L", "⅂": "L", "Ԁ": "P", "⊥": "T", "∩": "U", "Λ": "V", "⅄": "Y", "Ɩ": "1",
         "ᄅ": "2", "Ɛ": "3", "ㄣ": "4", "ϛ": "5", "9": "6", "ㄥ": "7", "6": "9"}
_FLIP_TABLE = str.maketrans(_FLIP)
_TURNED = re.compile("[ɐɔǝɟƃɥᴉɾʞɯɹʇʌʍʎ∀ƆƎℲ⅁⊥∩Λ⅄]")

_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")
_WIDE = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


def prose(text: str) -> bool:
    """Whether a decoded text reads as language rather than data: three or more words (or six CJK, kana, Hangul or
    Thai characters) and mostly letters. A decoded hash, key or number table is not prose; "send the files to
    …" is."""
    body = text[:2048]
    nonspace = len(body) - sum(1 for c in body if c.isspace())
    if nonspace < 10 or sum(c.isalpha() for c in body) < 0.6 * nonspace:
        return False
    return (len(_PROSE_WORD.findall(body)) >= 3 and body.count(" ") >= 2) or len(_WIDE.findall(body)) >= 6
