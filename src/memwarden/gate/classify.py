"""G2: classify a candidate as ``preference``, ``fact``, ``task_state`` or ``rejectable``.

Deterministic cues on the normalised text. The class is reported with every verdict (and by ``memwarden scan``);
the kind a caller asked to store is kept as given — classification informs, it never silently re-files a memory.
"""

from __future__ import annotations

import re

PREFERENCE, FACT, TASK_STATE, REJECTABLE = "preference", "fact", "task_state", "rejectable"

_PREFERENCE_WORDS = frozenset(
    "prefer prefers preferred preference preferences like likes love loves enjoy enjoys dislike dislikes hate hates "
    "favorite favourite favorites favourites want wants wishes avoid avoids fond prefiere préfère aime bevorzugt "
    "mag gosta preferisce ama предпочитает любит".split())
_PREFERENCE_PHRASES = re.compile(r"would rather|rather than|instead of|can't stand|cannot stand|is a fan of|opts? for|"
                                 r"leans? towards|sticks? (?:to|with)|swears by|le gusta|喜欢|偏好")
_TASK_WORDS = frozenset(
    "wip todo pending halfway started starting finished completed remaining status deadline milestone sprint "
    "ticket resume resuming paused pendiente migrating refactoring".split())
_TASK_PHRASES = re.compile(r"working on|works on|in progress|next steps?|blocked (?:on|by)|half done|"
                           r"currently \w+ing|on hold|waiting (?:for|on)|step \d+ of \d+|\d+ ?% done|"
                           r"was interrupted|en curso|en progreso|en cours|in arbeit|em andamento|"
                           r"in corso|в процессе|进行中|待办")
_TOKEN = re.compile(r"\w+")


# A phrase regex runs only when one of its words (or a CJK cue) is present.
_TASK_PHRASE_WORDS = frozenset("working works progress steps step blocked half currently hold waiting interrupted "
                               "curso progreso cours arbeit andamento corso процессе".split())
_PREFERENCE_PHRASE_WORDS = frozenset("rather instead stand fan opt opts lean leans stick sticks swears gusta".split())
_CJK_CUES = ("进行中", "待办", "喜欢", "偏好")


def classify(normalized_text: str, *, rejected: bool, tokens: set[str] | None = None) -> str:
    if rejected:
        return REJECTABLE
    if tokens is None:
        tokens = set(_TOKEN.findall(normalized_text))
    cjk = not normalized_text.isascii() and any(c in normalized_text for c in _CJK_CUES)
    if not _TASK_WORDS.isdisjoint(tokens) or ((cjk or "%" in normalized_text or not _TASK_PHRASE_WORDS.isdisjoint(
            tokens)) and _TASK_PHRASES.search(normalized_text)):
        return TASK_STATE
    if not _PREFERENCE_WORDS.isdisjoint(tokens) or ((cjk or not _PREFERENCE_PHRASE_WORDS.isdisjoint(tokens))
                                                     and _PREFERENCE_PHRASES.search(normalized_text)):
        return PREFERENCE
    return FACT
