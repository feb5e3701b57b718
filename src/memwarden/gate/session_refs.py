"""Session-scoped references (G4): uploads and attachments, presigned or expiring URLs, session and conversation
ids, localhost URLs and temporary paths. None of them exists in a later session, so they are stripped before a
memory is stored; a candidate that is nothing but such a reference is dropped (``session_ref.<kind>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDER = "[session reference removed]"

_FILE_EXT = (r"(?:pdf|png|jpe?g|gif|webp|heic|bmp|tiff?|svg|csv|tsv|xlsx?|xlsm|docx?|odt|rtf|txt|md|json|xml|"
             r"ya?ml|zip|tar|gz|tgz|7z|rar|pptx?|key|numbers|pages|mp3|mp4|mov|wav|m4a|log|html?|ipynb|py|js|ts)")
_PATTERNS: tuple[tuple[str, str], ...] = (
    # presigned / expiring URLs (checked before generic URL kinds)
    ("presigned_url",
     r"https?://[^\s<>\"')\]]{1,300}[?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|"
     r"x-goog-signature|x-goog-credential|signature|sig|se|sv|st|sp|expires|expiry|token|auth|"
     r"response-content-disposition|googleaccessid|policy|key-pair-id)=[^\s<>\"')\]]{0,600}"),
    # loopback in every spelling a URL parser accepts: 127.1, 127.0.1, octal 0177.0.0.1, hex 0x7f.1 or 0x7f000001,
    # decimal 2130706433, IPv6 ::1 / ::ffff:127.0.0.1 / 0:0:0:0:0:0:0:1, 0.0.0.0 and plain 0
    ("localhost",
     r"\b(?:https?|wss?|ftp)://(?:[^\s/@]{1,100}@)?(?:localhost|127(?:\.\d{1,3}){0,3}|0177(?:\.\d{1,4}){0,3}|"
     r"0x7f(?:\.[0-9a-fx]{1,10}){0,3}|0x7f[0-9a-f]{6}|21[34]\d{7}|0\.0\.0\.0|0(?=[:/]|$)|\[(?:::1|::ffff:127(?:\.\d{1,3}){3}|"
     r"::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}|(?:0{1,4}:){7}0{0,3}1)\]|[\w-]+\.local|[\w-]+\.localhost)(?::\d{1,5})?"
     r"(?:/[^\s<>\"')\]]{0,300})?"),
    ("localhost", r"\b(?:localhost|127(?:\.\d{1,3}){1,3}|0\.0\.0\.0):\d{2,5}\b(?:/[^\s<>\"')\]]{0,300})?"),
    ("temp_path",
     r"(?:file://)?(?:/tmp/|/var/tmp/|/private/var/folders/|/var/folders/|/dev/shm/|/run/user/\d+/|"
     r"~?/?\.cache/tmp|[a-z]:\\(?:users\\[^\\\s]{1,60}\\)?appdata\\local\\temp\\|%temp%\\|\$tmpdir/|"
     r"/mnt/data/|/mnt/user-data/|/home/sandbox/|/workspace/tmp/)[^\s<>\"')\]]{0,300}"),
    ("upload",
     r"\b(?:uploaded|attached|attachment|attachments|dropped in|shared in this chat|pasted|enclosed)\b"
     r"[^.!?\n]{0,50}?\b[\w()-][\w ()-]{0,80}\.{ext}\b".replace("{ext}", _FILE_EXT)),
    ("upload",
     r"\b(?:uploaded|attached|pasted|shared|sent|dropped|posted)\s+(?:a|an|the|this|that|two|three|\d+|some|"
     r"several|their|his|her|my|its)\s+(?:new\s+|few\s+)?(?:file|image|photo|screenshot|screen shot|document|"
     r"pdf|spreadsheet|picture|video|recording|csv|zip|log|attachment)s?\b(?:[^.!?\n]{0,40}?\b(?:in|to|into)\s+"
     r"(?:this|the)\s+(?:chat|conversation|session|thread))?"),
    ("upload",
     r"\b(?:see|check|in|from|per|open)\s+(?:the\s+)?(?:attached|uploaded|attachment|enclosed)\b"
     r"[^.!?\n]{0,40}"),
    ("upload",
     r"\b(?:image|img|screenshot|screen shot|photo|file|upload|attachment|document|pasted image)[_ -]?"
     r"(?:\d{1,6}|[0-9a-f]{6,})\.{ext}\b".replace("{ext}", _FILE_EXT)),
    ("session_id",
     r"\b(?:session|conversation|chat|thread|request|trace|conv)[ _-]?(?:id|key|token|uuid)\s*(?:is\s+|=|:|#)?"
     r"\s*[\"'`]?(?=[\w-]{0,80}\d)[\w-]{6,80}[\"'`]?"),
    ("session_id",
     r"\b(?:sess|conv|chatcmpl|msg|run|thread|req|resp)_[A-Za-z0-9]{8,}\b"),
    ("session_id",
     r"\b(?:sitzungs|sesión|sesion|sessão|sessao|sessione|séance|сессии|сессия)[ _-]?(?:id|ид|nummer|número)\b"
     r"\s*[:=#]?\s*[\w-]{6,}"),
    ("session_id", r"\b(?:chat|conversation|session)\s+(?:session\s+)?[^.!?\n]{0,30}#[\w-]{6,}"),
    ("presigned_url", r"\bblob:https?://[^\s<>\"')\]]{1,300}"),
    ("presigned_url", r"https?://files\.slack\.com/[^\s<>\"')\]]{1,300}"),
    ("presigned_url", r"https?://[^\s<>\"')\]]{1,300}[?&](?:export=download|confirm=|at=)[^\s<>\"')\]]{0,600}"),
    ("upload",
     r"(?:\bsubió|\bsubio|\badjuntó|\badjunto|\bpièce jointe|\bfichier joint|\btéléversé|\bhochgeladen|"
     r"\banhang|\barquivo enviado|\banexo|\benviou|\bcaricato|\ballegato|\bзагрузил[аи]?|\bвложение|上传了|附件)"
     r"[^.!?\n]{0,60}"),
)
_ORDER = ("presigned_url", "localhost", "temp_path", "session_id", "upload")  # whole URLs before file names in them
_COMPILED = tuple((kind, re.compile(rx, re.IGNORECASE))
                  for kind, rx in sorted(_PATTERNS, key=lambda p: _ORDER.index(p[0])))
# Cheap gates: a kind's patterns run only when the candidate has one of its words (\w+ tokens of the lower-cased
# text) or substrings; most memories have none, and set and substring tests cost far less than a regex alternation.
_GATE_WORDS: dict[str, frozenset[str]] = {
    "localhost": frozenset({"localhost"}),
    "session_id": frozenset("session sessions conversation chat thread request trace conv sitzungs sitzung sesión "
                            "sesion sessão sessao sessione séance seance сессии сессия".split()),
    "upload": frozenset("upload uploaded uploads attached attachment attachments pasted enclosed dropped subió subio "
                        "adjunto adjuntó adjunta jointe joint téléversé televerse hochgeladen anhang enviado anexo "
                        "enviou caricato allegato загрузил загрузила загрузили вложение pdf png jpg jpeg gif webp "
                        "heic csv xls xlsx docx zip ppt pptx mp4 mov".split()),
}
_GATE_SUBSTRINGS: dict[str, tuple[str, ...]] = {
    "presigned_url": ("://",),
    "localhost": ("127.", "0.0.0.0", "[::1]", ".local", "://0", "0177.", "0x7f", "::ffff", "://21", "@21",
                  "[0:0:0:0"),
    "temp_path": ("/tmp/", "/var/tmp/", "/var/folders/", "/dev/shm/", "/run/user/", "/mnt/data/", "/mnt/user-data/",
                  "/home/sandbox/", "/workspace/tmp/", ".cache/tmp", "appdata\\local\\temp", "%temp%", "$tmpdir"),
    "session_id": ("_",),
    "upload": ("上传", "附件"),
}
# one of the gate substrings occurs iff this alternation of them matches: most texts rule every kind out at once
_ANY_GATE_SUBSTRING = re.compile("|".join(re.escape(sub) for subs in _GATE_SUBSTRINGS.values() for sub in subs))
_GATE_TOKEN = re.compile(r"\w+")
_ID_WORDS = frozenset("id ids key token uuid number no nummer número ид".split())

# Words that carry no durable meaning once the reference is gone ("User uploaded report.pdf" → nothing left).
_FILLER_WORDS = (
    "a an the this that these those here there is are was were be been it its of in on at to for from with by "
    "and or see check open look please user user's users i i've i'm me my we our you your he she they them his "
    "her their uploaded upload uploads attached attachment attachments file files image images photo photos "
    "screenshot screenshots document documents pdf link url session sessions id ids conversation chat thread "
    "request trace message turn number no just now today earlier above below new latest recent copy version "
    "shared pasted dropped sent send reference referenced has have had contains containing called named titled "
    "available saved stored located found temp temporary local localhost server port running runs run at via "
    "use using also note notes img jpg jpeg png gif pdf csv xlsx docx txt zip heic mp4 mov el la los las le les "
    "usuario usuaria utilisateur utilisatrice der die das nutzer benutzer usuário utente il lo пользователь "
    "de del des du von do da di"
)
_FILLER = frozenset(_FILLER_WORDS.split())
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SessionRef:
    kind: str  # upload | presigned_url | session_id | localhost | temp_path
    span: tuple[int, int]

    @property
    def rule(self) -> str:
        return f"session_ref.{self.kind}"


def find_session_refs(text: str, tokens: set[str] | None = None) -> list[SessionRef]:
    """Non-overlapping session-scoped references in ``text`` (original offsets), in order. ``tokens``: the
    lower-cased \\w+ tokens of ``text`` if the caller has them already."""
    low = text.lower()
    if tokens is None:
        tokens = set(_GATE_TOKEN.findall(low))
    gated = {kind for kind, words in _GATE_WORDS.items() if not words.isdisjoint(tokens)}
    if "session_id" in gated and _ID_WORDS.isdisjoint(tokens) and "#" not in low and "=" not in low:
        gated.discard("session_id")  # "session" alone is an ordinary word; an id needs an id
    contains = low.__contains__
    if _ANY_GATE_SUBSTRING.search(low) is not None:
        gated.update(kind for kind, subs in _GATE_SUBSTRINGS.items() if kind not in gated and any(map(contains, subs)))
    if not gated:
        return []
    found: list[SessionRef] = []
    taken: list[tuple[int, int]] = []
    for kind, rx in _COMPILED:
        if kind not in gated:
            continue
        for m in rx.finditer(text):
            s, e = m.span()
            while e > s and text[e - 1] in ".,;:!?)]}'\"":
                e -= 1
            if e - s < 4 or any(s < te and ts < e for ts, te in taken):
                continue
            taken.append((s, e))
            found.append(SessionRef(kind, (s, e)))
    found.sort(key=lambda r: r.span)
    return found


def strip(text: str, refs: list[SessionRef]) -> str:
    """``text`` with every reference replaced by a placeholder."""
    out, last = [], 0
    for ref in refs:
        s, e = ref.span
        out.append(text[last:s])
        out.append(PLACEHOLDER)
        last = e
    out.append(text[last:])
    return "".join(out)


def only_references(text: str, refs: list[SessionRef]) -> bool:
    """True when nothing durable is left once the references (and filler words) are removed."""
    rest, last = [], 0
    for ref in refs:
        rest.append(text[last:ref.span[0]])
        last = ref.span[1]
    rest.append(text[last:])
    words = [w for w in _WORD.findall(" ".join(rest).casefold()) if w not in _FILLER]
    return len(words) < 2
