"""Procedures (T5): skills and playbooks an agent may follow when one of their trigger phrases comes up.

Procedural memory is not self-written: a procedure an agent saves is held for review like untrusted content
(:meth:`MemoryService.write`). Operators author procedures (``memwarden save --kind procedure --trigger …``) or
import them; every imported procedure carries a risk assessment (the gate rules it hits, the commands and URLs
it references), and a high-risk or untrusted import is held. Trigger matching (:func:`match`) only ever sees
procedures that are active *and* either trusted or approved by an operator — never a held one, never an
auto-approved one — and the scope, status, expiry and trust filters are in the SQL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memwarden.errors import InvalidInput
from memwarden.records import Kind, Record

if TYPE_CHECKING:
    from memwarden.service import Context, MemoryService

MAX_TRIGGERS = 20
MAX_TRIGGER_CHARS = 80
MAX_LISTED = 10  # commands / URLs kept in a risk assessment (metadata stays small)
_COMMANDS = ("sudo", "rm", "curl", "wget", "chmod", "chown", "ssh", "scp", "rsync", "git", "pip", "pip3", "npm",
             "npx", "yarn", "docker", "kubectl", "helm", "terraform", "aws", "gcloud", "az", "bash", "sh", "zsh",
             "python", "python3", "node", "make", "dd", "mkfs", "systemctl", "crontab", "psql", "mysql", "nc",
             "iptables", "eval", "exec", "powershell", "iex")
_COMMAND_RE = re.compile(r"(?:^|[\s`$;|&(])(" + "|".join(map(re.escape, _COMMANDS)) + r")\s+[^\n`;|&]{0,80}",
                         re.MULTILINE)
_URL_RE = re.compile(r"\bhttps?://[^\s\"'<>`)]+", re.IGNORECASE)
_DANGEROUS = re.compile(r"\brm\s+-[a-z]*[rf]|\bsudo\b|\bchmod\s+[0-7]*7[0-7]*\b|\bcurl\b[^\n]*\|\s*(?:ba|z)?sh\b|"
                        r"\bmkfs\b|\bdd\s+if=|\bgit\s+push\b[^\n]*--force|\bDROP\s+TABLE\b", re.IGNORECASE)


def assess(service: MemoryService, text: str) -> dict[str, Any]:
    """A procedure's risk assessment: gate rules it hits, commands and URLs it references, and a level
    (``high`` if the gate objects or a command is destructive, ``medium`` if it runs commands or fetches URLs,
    else ``low``)."""
    from memwarden.gate import Candidate

    verdict = service.gate.check(Candidate(text, Kind.PROCEDURE, "import"))
    commands = list(dict.fromkeys(m.group().strip(" `$;|&(") for m in _COMMAND_RE.finditer(text)))
    urls = list(dict.fromkeys(m.group() for m in _URL_RE.finditer(text)))
    if verdict.verdict != "accept" or _DANGEROUS.search(text):
        level = "high"
    elif commands or urls:
        level = "medium"
    else:
        level = "low"
    return {"level": level, "rules": verdict.rules, "commands": [c[:80] for c in commands[:MAX_LISTED]],
            "urls": [u[:120] for u in urls[:MAX_LISTED]]}


def triggers_of(metadata: Any) -> list[str]:
    raw = metadata.get("triggers") if isinstance(metadata, dict) else None
    return [t for t in raw if isinstance(t, str) and t.strip()] if isinstance(raw, list) else []


def check_triggers(triggers: Any) -> list[str]:
    """Validated trigger phrases (a list of 1–20 short strings)."""
    if not isinstance(triggers, list) or not triggers:
        raise InvalidInput("a procedure needs trigger phrases: a list of 1 to 20 short strings")
    if len(triggers) > MAX_TRIGGERS:
        raise InvalidInput(f"a procedure has at most {MAX_TRIGGERS} trigger phrases")
    out = []
    for t in triggers:
        if not isinstance(t, str) or not t.strip() or len(t) > MAX_TRIGGER_CHARS:
            raise InvalidInput(f"each trigger phrase is text of 1 to {MAX_TRIGGER_CHARS} characters")
        out.append(" ".join(t.split()))
    return out


def _matches(trigger: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(trigger.casefold()) + r"(?!\w)", text) is not None


def match(service: MemoryService, ctx: Context, text: str, limit: int = 5) -> list[Record]:
    """Trusted or operator-approved procedures of the scope one of whose triggers occurs in ``text``."""
    if not isinstance(text, str):
        raise InvalidInput("text must be a string")
    folded = " ".join(text.casefold().split())
    found = [r for r in service.matchable_procedures(ctx) if any(_matches(t, folded) for t in triggers_of(r.metadata))]
    return found[:limit]
