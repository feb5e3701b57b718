"""How strictly the gate judges a candidate, by what kind of memory it is and who said it (SPEC G8, G6).

Memories re-enter the model's loop in different ways, so one verdict table for all of them is wrong in both
directions (issue 11): facts, preferences, task state, reminders and procedures are replayed into the system
prompt of every later session; episodes are recalled by similarity and shown labelled as a record of what was
said. A user asking "Can you recommend a dessert?" in a conversation is a record of a question, not an
instruction to store or obey; the same words saved as a *fact* are not a fact at all.

Every hit the built-in rules produce has a **category** that says what the matched text would do:

``acts``
    acts on a model wherever it is replayed, labelled or not: control tokens and fake turns, hidden Unicode,
    exfiltration beacons, download-and-execute, secrets, encoded payloads, policy overrides ("ignore previous
    instructions"), standing overrides addressed to the assistant ("from now on you must …"), permission claims
    made to the system ("you are in developer mode", "I am your developer"), markup that hides text.
``directs``
    an instruction to the assistant with a harmful target: concealment, tool or data routing, delayed triggers,
    skipping a safety step, preference-shaped directives that ask for any of these.
``style``
    reads as an instruction or a request rather than a statement, with nothing harmful in it ("Always answer in
    French", "Write a blog post about …"). Harmless as a record of speech; not a fact or a preference.
``learned``
    the learned layer's call (:mod:`.learned`): text that resembles prompt injections in many languages.

A hit is ``firm`` when an explicit rule matched and ``ambiguous`` when only a heuristic did. :data:`TABLE` below
decides, per (kind, source), what each (category, firmness) does: ``reject`` (not stored), ``review`` (stored,
never replayed, waits for an operator: G6 — ambiguity is held, not lost), or ``accept`` (the hit is kept in the
verdict's ``notes`` and does not block). Record-level problems (``record.*``), an operator's own scanners and
the confidence threshold (G5) are outside this table: they always apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

ACTS, DIRECTS, STYLE, LEARNED = "acts", "directs", "style", "learned"
CATEGORIES = (ACTS, DIRECTS, STYLE, LEARNED)
REJECT, REVIEW, ACCEPT = "reject", "review", "accept"

KINDS = ("fact", "preference", "task_state", "reminder", "procedure", "episode")
SOURCES = ("user", "model", "tool", "import", "operator", "consolidation")


@dataclass(frozen=True, slots=True)
class Tier:
    """What each (category, firmness) of hit does to a candidate of one (kind, source)."""

    name: str
    acts: str = REJECT  # a firm "acts" hit
    acts_ambiguous: str = REVIEW
    directs: str = REJECT
    directs_ambiguous: str = REVIEW
    style: str = REVIEW
    learned: str = REVIEW
    why: str = ""

    def action(self, category: str, firm: bool) -> str:
        if category == ACTS:
            return self.acts if firm else self.acts_ambiguous
        if category == DIRECTS:
            return self.directs if firm else self.directs_ambiguous
        if category == STYLE:
            return self.style
        if category == LEARNED:
            return self.learned
        return REJECT  # an unknown category fails closed


# Facts and preferences written by the model, a tool, an import or consolidation: replayed into every prompt,
# and the text came through an agent that may have read an attacker's page. Everything that reads as an
# instruction is held at least.
DESCRIPTIVE = Tier("descriptive", why="replayed into every later prompt; written by the agent or a pipeline")
# The user's own words (the application says so): a standing style wish ("always answer in French") is what
# the user asked for; what acts on the model is still refused, and a directive with a harmful target ("don't ask
# before deleting files in ~/scratch") is held for an operator rather than lost: the user may mean it.
DESCRIPTIVE_USER = Tier("descriptive/user", directs=REVIEW, style=ACCEPT,
                        why="replayed into every later prompt; the application vouches that the user said it")
# An operator (a person with an operator credential) wrote it: ambiguity is theirs to decide.
DESCRIPTIVE_OPERATOR = Tier("descriptive/operator", directs=REVIEW, directs_ambiguous=ACCEPT, style=ACCEPT,
                            learned=ACCEPT, why="replayed into every later prompt; written by an operator")
# Task state, reminders and procedures are replayed too, but they are plans: "next, run the tests", "call the
# dentist", "to release, tag and push" are imperatives by nature. Harmful directives are still refused.
PLAN = Tier("plan", style=ACCEPT, why="replayed into prompts; imperatives are their normal shape")
PLAN_TRUSTED = Tier("plan/trusted", directs=REVIEW, directs_ambiguous=ACCEPT, style=ACCEPT, learned=ACCEPT,
                    why="replayed into prompts; written by the user or an operator")
# Episodes are recalled by similarity and labelled as a record of what was said: questions, requests and even
# instructions someone gave in a conversation are kept. Only what would act on a model when replayed is refused.
RECORD = Tier("record", acts_ambiguous=ACCEPT, directs=ACCEPT, directs_ambiguous=ACCEPT, style=ACCEPT,
              learned=ACCEPT, why="recalled by similarity and labelled as a record of what was said")

_D, _DU, _DO, _P, _PT, _R = DESCRIPTIVE, DESCRIPTIVE_USER, DESCRIPTIVE_OPERATOR, PLAN, PLAN_TRUSTED, RECORD

# The one table (G8). Rows: kinds; columns: user, model, tool, import, operator, consolidation.
_ROWS: dict[str, tuple[Tier, Tier, Tier, Tier, Tier, Tier]] = {
    #              user  model tool  import operator consolidation
    "fact":       (_DU,  _D,   _D,   _D,    _DO,     _D),
    "preference": (_DU,  _D,   _D,   _D,    _DO,     _D),
    "task_state": (_PT,  _P,   _P,   _P,    _PT,     _P),
    "reminder":   (_PT,  _P,   _P,   _P,    _PT,     _P),
    "procedure":  (_PT,  _P,   _P,   _P,    _PT,     _P),
    "episode":    (_R,   _R,   _R,   _R,    _R,      _R),
}
TABLE: MappingProxyType[tuple[str, str], Tier] = MappingProxyType(
    {(kind, source): tier for kind, row in _ROWS.items() for source, tier in zip(SOURCES, row, strict=True)})


def tier_for(kind: object, source: object) -> Tier:
    """The row for a candidate. An unknown kind or source gets the strictest row (the record gate rejects an
    unknown kind anyway; an unknown source never loosens anything)."""
    return TABLE.get((kind, source), DESCRIPTIVE) if isinstance(kind, str) and isinstance(source, str) \
        else DESCRIPTIVE


def table_rows() -> list[dict[str, str]]:
    """The table as rows for docs and ``memwarden scan --table``: kind, source, tier and each category's action."""
    out = []
    for (kind, source), t in TABLE.items():
        out.append({"kind": kind, "source": source, "tier": t.name, "acts": t.acts, "acts?": t.acts_ambiguous,
                    "directs": t.directs, "directs?": t.directs_ambiguous, "style": t.style, "learned": t.learned})
    return out


def markdown() -> str:
    """The table as docs/gate.md shows it (a test keeps the page and the code in step)."""
    lines = ["| kind \\ source | " + " | ".join(SOURCES) + " |", "|:--|" + "|".join([":--"] * len(SOURCES)) + "|"]
    lines += [f"| {k} | " + " | ".join(f"`{TABLE[(k, s)].name}`" for s in SOURCES) + " |" for k in KINDS]
    tiers = list(dict.fromkeys(TABLE.values()))
    lines += ["", "| tier | acts (firm) | acts (ambiguous) | directs (firm) | directs (ambiguous) | style | learned "
              "| why |", "|:--|:--|:--|:--|:--|:--|:--|:--|"]
    lines += [f"| `{t.name}` | {t.acts} | {t.acts_ambiguous} | {t.directs} | {t.directs_ambiguous} | {t.style} | "
              f"{t.learned} | {t.why} |" for t in tiers]
    return "\n".join(lines)
