"""What counts as a save *repeating* an untrusted memory (T7: recalled content is ingested content).

An untrusted memory that is served anyway — auto-approved (``approval=auto``) or promoted by an operator
(``approval=operator:<id>``, trust stays ``untrusted``) — can reach a session through the prompt block,
``memory_search`` or ``memory_view``. Re-saving its text must not produce a *trusted* copy with no approver. Two
checks decide whether a new text repeats one:

* **in the store** (``MemoryService``, every write, any session): the new text has the same near-duplicate key
  (``TermHasher.dup_key``: the set of stemmed content words, stop words and word order ignored) as an untrusted
  or held record of the same scope (and of the shared scope when the session reads it). It costs one index probe
  on ``memory_dupkeys`` when nothing matches. A match whose :func:`words` are equal is an *exact* repeat: it
  inherits the memory's trust and approval. Any other match (a reworded near-duplicate) is untrusted and held.
* **in the session** (``taint.Ledger.repeats``, only texts this session was served): the new text shares a run
  of ``RUN`` (6) consecutive words with a served untrusted text — or all of the shorter one's words, when it has
  from ``MIN_WORDS`` (4) to 5 — or equals it; caught even after the memory was deleted or expired. Such a write is
  untrusted; it is held unless it is an exact repeat the store still holds (an operator approved that text,
  not this one).

Not caught (documented in docs/security.md): rewordings that change a content word (store) and share no run of
``RUN`` consecutive words with a served text (session), translations, summaries, fragments of fewer than
``MIN_WORDS`` words, and repeats of an untrusted memory of another scope. Texts are compared by :func:`words`: NFKC,
case folded, accents stripped, identifiers split — so punctuation, spacing, case and Unicode compatibility forms
do not hide a repeat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memwarden.retrieval.tokenize import words as _words

MIN_WORDS = 4  # a text shorter than this overlaps another only by being equal to it
RUN = 6  # consecutive words two texts must share (fewer when one of them is shorter than this)


@dataclass(frozen=True, slots=True)
class Text:
    """A text as a sequence of normalised words (see the module docstring), with its runs of ``RUN`` words."""

    words: tuple[str, ...]
    joined: str = field(init=False)
    runs: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "joined", " ".join(self.words))
        w = self.words
        object.__setattr__(self, "runs", frozenset(hash(w[i:i + RUN]) for i in range(len(w) - RUN + 1)))


def text(content: str) -> Text:
    return Text(tuple(_words(content)))


def words(content: str) -> str:
    """``content`` as its normalised words, one space between them: equal for texts that differ only in case,
    punctuation, spacing, accents or Unicode compatibility forms."""
    return " ".join(_words(content))


def overlaps(new: Text, served: Text) -> bool:
    """Whether ``new`` repeats ``served``: equal words, or a shared run of ``RUN`` consecutive words — of all
    the words of the shorter text when it has fewer (so a text containing a short served text, or a fragment of
    at least ``MIN_WORDS`` words of one, overlaps it)."""
    if not new.words or not served.words:
        return False
    if new.joined == served.joined:
        return True
    shorter, longer = (new, served) if len(new.words) < len(served.words) else (served, new)
    if len(shorter.words) < MIN_WORDS:
        return False
    if len(shorter.words) < RUN:
        return f" {shorter.joined} " in f" {longer.joined} "
    return not new.runs.isdisjoint(served.runs)
