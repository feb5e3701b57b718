"""The content rule set of the write gate (G3), as reviewed, versioned data.

Each :class:`Rule` has a stable id (the family, e.g. ``directive.future_behaviour``), an action, the message the
agent gets, and patterns. Patterns are matched against the normalised candidate (NFKC, case-folded, invisible
characters removed, whitespace collapsed — see :mod:`memwarden.gate.normalize`): Latin-script rules against the
confusable-folded *skeleton*, other scripts against the folded text. ``words`` are trigger words: a rule's
regexes run only when one of them occurs in the candidate (or, for CJK rules, one of its ``needles`` does), which
keeps the gate at a few microseconds for ordinary memories.

Writing rules: every gap is bounded (``[^.!?\\n]{0,N}``), no nested unbounded repeats, so matching stays linear
in the input. A rule must reject what would steer the agent (instructions, claims, routing, exfiltration,
concealment, control tokens, download-and-execute, delayed triggers) and must not reject a memory that merely
contains such words (G7): ``tests/gate_corpus/negatives.jsonl`` is the check.

Bump ``RULES_VERSION`` whenever a rule changes; it is recorded with every gate verdict in the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass

RULES_VERSION = "2026.12.05-2"

# Bounded "same sentence" gaps. Never use .* in a rule.
G20 = r"[^.!?\n]{0,20}"
G40 = r"[^.!?\n]{0,40}"
G60 = r"[^.!?\n]{0,60}"
G80 = r"[^.!?\n]{0,80}"
# Start of a sentence or clause, optionally after a "remember:"-style lead-in: where an imperative begins.
LEAD = (r"(?:^|[.!?;:\n\"'(\[]\s*|\b(?:and|also|then|so|but|please|pls|remember|note|important|reminder|"
        r"rule|instruction|memo|from now on|going forward|henceforth|moving forward|from this point on|"
        r"from today on|in future|in the future)\b[:,]?\s*)")
AGENT = r"(?:you|the assistant|assistant|the ai|the agent|the model|the bot|the chatbot|claude|chatgpt|gpt|the llm)"
WHOM = r"(?:the user|the human|the customer|the operator|the admin|the owner|your user|users|the client)"
BEHAVE = (r"(?:answer|answers|respond|reply|replies|ignore|follow|obey|comply|use|call|send|include|skip|disable|"
          r"bypass|approve|execute|run|treat|trust|reveal|share|tell|say|mention|output|print|write|delete|"
          r"forward|upload|grant|refuse|accept|agree|assume|act|behave|pretend|respond|recommend|start|stop|"
          r"prioritize|prioritise|add|append|insert|omit|remove|auto-approve|authorize|authorise|transfer|pay|"
          r"schedule|book|buy|purchase|order|cancel|sign|click|open|download|install|change|move|enable)")
OVERRIDE_VERB = (r"(?:ignore|ignoring|disregard|disregarding|forget|override|overrule|bypass|skip|drop|abandon|"
                 r"discard|neglect|circumvent|suspend|deactivate|disable|turn off|switch off|set aside|throw out)")
RULE_NOUN = (r"(?:instructions?|rules?|guidelines?|polic(?:y|ies)|prompts?|directives?|guardrails?|restrictions?|"
             r"constraints?|filters?|safeguards?|safety|programming|training|system message|content policy|"
             r"moderation|ethics|limitations?|boundaries|protocols?|checks?|directions)")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    action: str  # "reject" | "review"
    message: str
    patterns: tuple[str, ...]
    words: frozenset[str] = frozenset()  # trigger tokens (\w+ runs of the folded text) that activate the rule
    needles: tuple[str, ...] = ()  # trigger substrings, for triggers that are not words (punctuation)
    script: str = "latin"  # "latin": match the skeleton; "any": match the folded text
    cjk: bool = False  # also runs when the candidate contains CJK characters (no word boundaries there)
    category: str = "directs"  # what a match would do (gate/tiers.py): acts | directs | style
    firm: bool = True  # False: the pattern alone cannot call it with confidence (G6: held for review)


def _w(*words: str) -> frozenset[str]:
    return frozenset(words)


# A verb not under an immediate negation ("never store", "not collect", "rather than asking"): Python's lookbehind
# is fixed-width, so one per negator.
_UNNEGATED = r"(?<!never )(?<!not )(?<!n't )(?<!no )(?<!than )"


# Authority cues and the consequences they are meant to unlock (same sentence → claim.permission).
AUTHORITY = (r"approved|approval granted|authori[sz]ed|authori[sz]ation|permitted|allowed|granted|whitelisted|"
             r"allowlisted|cleared|clearance|verified|vetted|pre-?authori[sz]ed|pre-?approved|signed off|"
             r"sanctioned|admin|administrator|superuser|sudo|root access|owner|moderator|operator|elevated|"
             r"privileged|privileges?|trusted|trust level|promoted|red-team|penetration tester|pentester|"
             r"legal guardian|override token|says it's fine|said it's fine|says it is fine|is fine for you")
CONSEQUENCE = (r"you (?:can|may|are allowed to|are permitted to|should|must|are free to|have permission)|"
               r"(?:may|can|is allowed to|are allowed to) (?:approve|view|see|access|read|merge|release|bypass|"
               r"promote|modify|delete|reset|export|share|download|transfer|override)|"
               r"bypass|without (?:review|verification|approval|checks?|confirmation|2fa|mfa|asking|re-?checking|"
               r"re-?verifying|re-?confirming|double-checking|checking|verifying)|no need to (?:verify|check|confirm|"
               r"ask|validate|re-?check|double-check)|"
               r"no (?:further |additional )?(?:checks?|verification|review|approval|confirmation)s? "
               r"(?:needed|required|necessary)|"
               r"(?:share|sharing|send|sending|give|giving|release|releasing|reveal|show)\b[^.!?\n]{0,30}"
               r"\b(?:api keys?|passwords?|"
               r"credentials?|secrets?|pii|salar(?:y|ies)|payroll|private messages|internal docs|export)\b|"
               r"(?:view|see|access|read|open|download)\s+(?:all|every|the data of all|other users'?|everyone'?s?|"
               r"any)\b|approve (?:their own|all|any|every)|all (?:exploit|refund|transfer|payment|wire)|"
               r"wire transfers?|sudoers|never (?:deny|refuse|question|verify|check)|"
               r"(?:disable|turn off|switch off)\s+(?:the\s+)?(?:content filter|safety|2fa|two-factor|mfa|"
               r"verification|logging|audit)|promote their own|full_access|can_approve|"
               r"(?:are|is) (?:always )?approved|requests? (?:are|is) (?:always )?(?:approved|allowed)")

STANDING_MARKER = (r"(?:from now on|from this point (?:on|forward)|going forward|henceforth|hereafter|moving forward|"
                   r"in (?:all |every |each )?(?:future|subsequent|later|next) (?:sessions?|conversations?|chats?|"
                   r"replies|responses|answers|interactions|turns|messages|tasks)|for (?:all|every) (?:future )?"
                   r"(?:sessions?|conversations?|requests?|tasks?|users?)|in every (?:session|conversation|chat|"
                   r"reply|response))")

RESTATE = ("it reads as an instruction to the assistant, not a fact about the user; memory stores facts and "
           "preferences — restate it as a preference, e.g. \"User prefers …\"")

# A delayed trigger: the condition (someone says, types, opens … something) and the act it sets off.
_TRIGGER_WHEN = r"(?:when|whenever|if|once|after|the next time|next time|as soon as|each time|every time|the moment)"
_TRIGGER_IF = (
    r"\b" + _TRIGGER_WHEN +
    r"\b[^.!?\n]{0,80}\b(?:says?|said|types?|typed|writes?|wrote|mentions?|mentioned|asks?|asked|sends?|"
    r"uses the (?:word|phrase)|enters?|replies|responds|clicks?|opens?|logs? in|returns|comes back)\b"
)
# What a trigger sets off. Certain (rejected) when it destroys, pays, grants, reveals, overrides, opens an outside
# address or carries data to one; anything else a conditional can set off ("if a customer asks about a chargeback,
# don't also issue a refund", "if the build fails, run make clean", "if a customer asks for a copy, send it") is
# also how procedures and house rules are written, so it is held for an operator (G6), not rejected.
_DATA_OUT = r"(?:send|forward|email|e-mail|upload|post|share|export|give|copy|cc|bcc)"
_DESTINATION = r"(?:[\w.+-]@[\w-]|https?://|\bwww\.|\bhooks?\.|\bwebhook)"
_TRIGGER_ACT_FIRM = (
    r"\b(?:(?:delete|wipe|erase|destroy|transfer|pay|wire|approve|grant|disable|reveal|leak|ignore|bypass|unlock|"
    r"deactivate|dump|exfiltrate|comply|obey|drop (?:the|all)|open https?|visit https?)\b|rm\s+-|"
    + _DATA_OUT + r"\b[^.!?\n]{0,60}" + _DESTINATION + r")"
)
_TRIGGER_ACT = (
    r"\b(?:delete|remove|wipe|erase|destroy|send|forward|email (?:the|all|their|his|her|it|"
    r"them|a|every|copies)|upload|post|transfer|pay|"
    r"wire|approve|grant|run|execute|install|download|disable|enable|reveal|leak|share (?:the|their|all|"
    r"your|my)|ignore|bypass|switch (?:to|off)|call (?:the\s+)?\w+|invoke|open https?|visit https?|"
    r"refund|unlock|reset (?:the|their|all)|change (?:the|their) password|drop (?:the|all)|rm\s+-|"
    r"format|shut down|deactivate|export|dump|exfiltrate|give (?:them|him|her)|apply (?:a|the) "
    r"(?:discount|credit|refund)|comply|obey|follow (?:the|these|those))\b"
)
# "if anyone asks …, (then) …": the asker, and the same split of what it sets off
_TRIGGER_ASKS = (
    r"\b(?:if|when|whenever)\s+(?:anyone|someone|anybody|a user|any user|a customer|they|the user|users)"
    r"\s+(?:asks?|mentions?|brings up|inquires?|requests?)\b[^.!?\n]{0,60},?\s*(?:then\s+)?(?:always\s+|"
    r"just\s+|automatically\s+|immediately\s+|simply\s+)?"
)
_ASKS_FIRM = r"(?:approve|grant|transfer|authorize|authorise|waive|unlock|reveal)\b"
_ASKS_ACT = (r"(?:approve|grant|refund|give|send|transfer|say|tell (?:them|him|her)|respond|reply|answer|confirm|"
             r"agree|accept|authorize|authorise|waive|issue|unlock|reveal|share|provide)\b")

_TRIGGER_WORDS = _w("says", "said", "say", "type", "types", "typed", "write", "writes", "wrote", "mention", "mentions",
    "mentioned", "ask", "asks", "asked", "send", "sends", "uses", "enter", "enters", "replies",
    "responds", "click", "clicks", "open", "opens", "log", "logs", "returns", "comes", "brings",
    "inquires", "requests", "word", "phrase", "sentence", "keyword", "passphrase", "command", "code",
    "messages", "turns", "responses", "sessions", "conversations", "interactions", "midnight", "am",
    "pm", "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december")

RULES: tuple[Rule, ...] = (
    # --- directives about future agent behaviour and policy overrides ----------------------------------------
    Rule(
        "directive.future_behaviour", "reject", RESTATE,
        patterns=(
            # policy overrides: "ignore (all) previous instructions", "disregard your system prompt"
            rf"\b{OVERRIDE_VERB}\s+(?:all\s+|any\s+|every\s+|each\s+|the\s+|your\s+|my\s+|these\s+|those\s+|of\s+)"
            rf"{{0,3}}(?:previous|prior|above|earlier|preceding|original|existing|current|old|initial|system|safety|"
            rf"security|default|built-in|openai|anthropic|developer|your)?\s*(?:and\s+\w+\s+)?{RULE_NOUN}\b",
            rf"\b{OVERRIDE_VERB}\s+(?:everything|anything|all)\s+(?:you were told|above|before|previously|"
            rf"you(?:'ve| have) been told|in your (?:system )?prompt)",
            r"\b(?:your|the) (?:new|real|true|updated|actual) (?:rules?|instructions?|system prompt|directives?|"
            r"guidelines?|policy|orders|task|objective|purpose) (?:is|are|:)",
            r"\b(?:new|updated|override|overriding) (?:system )?(?:rules?|instructions?|directives?|prompt)\s*:",
            r"\bsystem prompt\s*(?:override|update|:)",
            rf"\b{RULE_NOUN}\b[^.!?\n]{{0,60}}\b(?:should|must|are to|is to|can|may|will)\s+(?:now\s+|all\s+)?be\s+"
            r"(?:ignored|disregarded|overridden|bypassed|forgotten|skipped|dropped|discarded|void(?:ed)?)\b",
            rf"\b{RULE_NOUN}\b[^.!?\n]{{0,60}}\b(?:are|is)\s+(?:now\s+)?(?:void|null|obsolete|outdated|"
            r"cancelled|canceled|revoked|lifted|suspended|disabled|no longer (?:valid|in effect|apply|applicable))\b",
            r"\bno longer (?:bound by|subject to|restricted by|limited by)\b|\b(?:safety|security|content|your|the|"
            r"all|these|those|any)\s+(?:rules?|guidelines?|polic(?:y|ies)|restrictions?|filters?|guardrails?|limits?)"
            r"\s+(?:no longer|don't|do not|does not|doesn't|won't|will not)\s+(?:apply|applies|matter|count|hold)\b",
            r"\b(?:agent|assistant|ai|bot|model)[._](?:rules|behaviou?r|confirmations?|mode|policy|permissions|"
            r"safety|guardrails|restrictions|filters?|persona)\s*[=:]",
            r"\b(?:ignore_guardrails|no_confirmations|unrestricted_mode|safety_off|disable_safety|jailbreak=)",
            # "from now on / going forward / in every future session ..." + "you must …": a standing override
            rf"\b{STANDING_MARKER}\b{G60}\b(?:you|the assistant|the ai|the agent|the model|the bot|the chatbot)\s+"
            rf"(?:must|should|shall|will|are to|need to|have to|are required to|may no longer|can no longer)\b",
            # ... + an imperative right after the marker ("from now on, answer in French"): a standing wish
            rf"\b{STANDING_MARKER}\s*,?\s*(?:please\s+|you\s+)?(?:always\s+|never\s+|only\s+)?(?:do not\s+|"
            rf"don't\s+)?(?:{BEHAVE}|ignore|skip)\b",
            # imperative "always/never <verb>" at the start of a sentence or after "remember:"
            rf"{LEAD}(?:you\s+(?:must|should|shall|will|need to|have to|are to)\s+)?(?:always|never|"
            rf"do not ever|don't ever|under no circumstances|no matter what)\s*,?\s*(?:\w+\s+){{0,2}}{BEHAVE}\b",
            rf"{LEAD}(?:do not|don't|never|stop)\s+(?:ask(?:ing)?|request(?:ing)?|check(?:ing)?|verify(?:ing)?|"
            rf"confirm(?:ing)?|validat(?:e|ing)|warn(?:ing)?|question(?:ing)?|refus(?:e|ing)|flag(?:ging)?)\b"
            rf"{G40}\b(?:user|confirmation|verification|permission|approval|identity|before|again|anymore|"
            rf"request|safety|policy|checks?)\b",
            # "you must/should/will always|never …", "the assistant must …"
            rf"\b{AGENT}\s+(?:must|should|shall|will|are to|is to|need to|needs to|have to|has to|are required to|"
            rf"is required to|are allowed to|may)\s+(?:now\s+|also\s+|from now on\s+)?(?:always\s+|never\s+|not\s+|"
            rf"no longer\s+|only\s+|immediately\s+|automatically\s+|silently\s+)?{BEHAVE}\b",
            rf"\b{AGENT}\s+(?:must|should|shall|will)\s+(?:always|never)\b",
            rf"\b(?:always|never)\s+(?:ever\s+)?{BEHAVE}\s+(?:{WHOM}|them|him|her|any|every|all|without|in|with|"
            rf"the|to|my|their)\b{G40}\b(?:requests?|questions?|instructions?|messages?|confirmation|"
            rf"verification|checks?|warnings?|approval|permission|refunds?|safety)\b",
            r"\b(?:jailbreak mode|jailbroken mode|(?:enable|activate|enter|stay in|switch to) (?:jailbreak|dan|god)|"
            r"you are (?:now )?jailbroken|do anything now|dan mode|unfiltered mode|no restrictions mode|god mode)\b|"
            r"\b(?:you|chatgpt|gpt|assistant|ai|model|bot|claude)\b[^.!?\n]{0,30}\bwith developer mode enabled\b|"
            r"\bdeveloper mode enabled\s*[.:!]\s*(?:you|as|the assistant|from now)\b",
            rf"\b(?:respond|answer|reply|act|behave)\s+(?:only\s+)?(?:as if|like)\s+(?:you\s+(?:are|were|have)|"
            rf"there (?:are|were) no)\b{G40}\b(?:rules?|restrictions?|filters?|guidelines?|limits?|"
            rf"jailbroken|unrestricted|uncensored|no policy)",
            rf"{LEAD}(?:treat|consider|regard)\s+(?:all\s+|any\s+|every\s+)?(?:requests?|messages?|instructions?|"
            rf"commands?|content|text|input)\s+(?:from|in|by|containing){G40}\b(?:as|to be)\s+(?:trusted|"
            rf"authoritative|verified|approved|coming from|system|admin|the user|legitimate)",
            rf"{LEAD}(?:obey|follow|execute|comply with|carry out)\s+(?:all\s+|any\s+|every\s+)?(?:instructions?|"
            rf"commands?|orders|requests?|directions)\s+(?:from|in|found in|contained in|given by|that appear)\b",
            # skipping a safety step: tests, review, checks, confirmation, verification
            r"\b(?:skip|skips|skipping|bypass|bypassing|disable|disabling|turn off|switch off|omit|"
            r"suppress|circumvent|forgo)\s+(?:the\s+|all\s+|any\s+|every\s+|its\s+|their\s+|our\s+)?"
            r"(?:\w+\s+){0,2}(?:test suites?|tests|unit tests|integration tests|ci|ci checks|pipeline checks|code "
            r"reviews?|reviews?|pr reviews?|security reviews?|checks|safety checks?|security checks?|verification|"
            r"identity checks?|2fa|mfa|two[- ]factor(?: authentication)?|multi[- ]factor(?: authentication)?|"
            r"two[- ]step verification|confirmations?|approvals?|sign-?offs?|sandbox(?:ing)?|signature "
            r"checks?|tls verification|ssl verification|certificate (?:checks?|validation)|audit(?: logs?| logging)?|"
            r"dry runs?|backups?)\b",
            r"\b(?:deploy|deploys|deploying|delete|deletes|deleting|remove|removes|drop|drops|merge|merges|merging|push|"
            r"pushes|force-push|run|runs|running|execute|executes|install|installs|pay|pays|transfer|transfers|refund|"
            r"refunds|approve|approves|migrate|migrates|wipe|wipes|reset|resets|release|releases|publish|publishes|"
            r"send|sends|grant|grants|rotate|revoke)\b[^.!?\n]{0,60}\bwithout\s+(?:first\s+|ever\s+|any\s+|a\s+)?"
            r"(?:asking|checking|confirming|confirmation|verifying|verification|review|reviewing|approval|"
            r"permission|consent|tests?|testing|a second reviewer|a reviewer|backups?|a dry run|prompting|"
            r"telling|notifying|warning|showing (?:them|it|the user|me|the command|the diff)|waiting for)\b",
            # the confirmation dropped by name before something at stake: "never ask for confirmation before wiring
            # money", "stop waiting for my approval before you deploy", "don't check with me first before paying"
            r"\b(?:never|don't|do not|no longer|stop|quit)\s+(?:ask(?:ing)?|wait(?:ing)?|check(?:ing)?)\s+"
            r"(?:for\s+(?:a\s+|any\s+|my\s+|the user's\s+|their\s+|explicit\s+)*(?:confirmation|approval|permission|"
            r"consent|sign-?off|go-ahead|yes)|with (?:me|the user|them) first|first)\s+(?:before|when|to)\s+"
            r"(?:\w+\s+){0,2}(?:pay\w*|transfer\w*|wir(?:e|es|ed|ing)|refund\w*|approv\w*|delet\w*|wip(?:e|es|ing)|"
            r"drop\w*|deploy\w*|releas\w*|publish\w*|push\w*|merg\w*|sign(?:s|ed|ing)?|purchas\w*|buy\w*|"
            r"order\w*|grant\w*|shar(?:e|es|ing)|forward\w*|send(?:s|ing)?)\b",
            # the warnings dropped: "never warns about suspicious links", "don't mention security warnings",
            # "doesn't want to be warned about phishing in forwarded e-mails"
            r"\b(?:never|don't|do not|doesn't|does not|no longer|stop|not to|without)\s+(?:\w+\s+){0,3}"
            r"(?:warn\w*|flag\w*|mention\w*|bring\w* up|point\w* out|rais\w*|show\w*)\s+(?:\w+\s+){0,2}"
            r"(?:about\s+|of\s+|on\s+)?(?:\w+\s+){0,2}(?:(?:suspicious|phishing|unsafe|malicious|dangerous|unofficial|fake|lookalike|look-alike)"
            r"\s+(?:\w+\s+)?(?:links?|sites?|websites?|domains?|attachments?|e-?mails?|urls?|downloads?|messages?)|"
            r"phishing|scams?|fraud|security (?:warnings?|alerts?)|certificate (?:warnings?|errors?)|malware|"
            r"whether (?:a|the) (?:site|link|website|domain|page) is (?:the )?(?:official|real|legitimate|genuine))\b",
        ),
        words=_w("instruction", "instructions", "rule", "rules", "guideline", "guidelines", "policy", "policies",
                 "prompt", "prompts", "directive", "directives", "guardrail", "guardrails", "restriction",
                 "restrictions", "constraint", "constraints", "filter", "filters", "safeguard", "safeguards",
                 "safety", "programming", "training", "moderation", "ethics", "limitation", "limitations",
                 "boundaries", "protocol", "protocols", "checks", "directions", "orders", "objective", "purpose",
                 "told", "now", "forward", "point", "henceforth", "hereafter", "future", "subsequent", "session",
                 "sessions", "always", "never", "ever", "circumstances", "matter", "ask", "asking", "request",
                 "requesting", "check", "checking", "verify", "verifying", "confirm", "confirming", "validate",
                 "validating", "warn", "warning", "question", "questioning", "refuse", "refusing", "flag", "flagging",
                 "you", "assistant", "ai", "agent", "model", "bot", "chatbot", "claude", "chatgpt", "gpt", "llm",
                 "jailbreak", "jailbroken", "dan", "developer", "unfiltered", "god", "anything", "unrestricted",
                 "uncensored", "treat", "consider", "regard", "obey", "follow", "execute", "comply", "carry",
                 "commands", "requests", "longer", "ignore_guardrails", "no_confirmations", "unrestricted_mode",
                 "safety_off", "disable_safety", "jailbreak"),
    ),
    # --- approval, permission and role claims aimed at the agent --------------------------------------------
    Rule(
        "claim.permission", "reject",
        "it claims an approval, permission or role; memory cannot grant authority — permissions come from the "
        "application, not from stored text",
        patterns=(
            r"\b(?:user|he|she|they|i|this (?:account|user|customer|caller|person|requester)|the (?:requester|"
            r"caller|customer|sender|owner of this account))\s+(?:is|are|am|has|have|'s|'m|was|were)\s+"
            r"(?:been\s+)?(?:granted\s+|given\s+|now\s+|an?\s+|the\s+|full\s+|verified\s+|elevated\s+)*"
            r"(?:admin|administrator|root|superuser|super-user|super user|sudo|sysadmin|owner|operator|"
            r"moderator|elevated|privileged|unrestricted|full|god-mode|maintainer)\s+(?:level\s+)?(?:privileges?|"
            r"rights|access|role|permissions?|clearance|status|powers|mode|account)\b"
            r"(?![^.!?\n]{0,40}\b(?:(?:his|her|their|my|the user's) own|(?:his|her|their|my) (?:personal |home |work )?"
            r"(?:laptop|computer|machine|pc|desktop|mac|server|phone|router|raspberry pi|homelab|nas)))",
            r"\b(?:user|he|she|they|i|this (?:account|user|customer|caller|person))\s+(?:is|are|am|has been|have "
            r"been|'s|'m)\s+(?:an?\s+)?(?:verified\s+|authorized\s+|authorised\s+)?(?:admin|administrator|"
            r"superuser|root user|system administrator|security officer|developer of (?:this|the) "
            r"(?:assistant|ai|bot|system|agent|model))\b(?!\s+(?:of|for|at|on|in)\b)",
            r"\b(?:user|he|she|they|i|this (?:account|user|customer|caller|person)|you)\s+(?:is|are|am|has been|"
            r"have been|'s|'m|was|were)\s+(?:fully\s+|now\s+|pre-?|already\s+)*(?:authorized|authorised|allowed|"
            r"permitted|approved|cleared|entitled|exempt(?:ed)?|whitelisted|allowlisted)\s+(?:to|for|from)\s+"
            rf"{G40}\b(?:approve|refund|access|bypass|override|delete|admin|transfer|payment|credentials?|"
            r"secrets?|production|any amount|without|verification|2fa|mfa|security|restricted|confidential|"
            r"all (?:files|data|systems|documents|records|accounts)|wire|withdraw|unlimited|everything|"
            r"any (?:action|request|file|account)|checks?|limits?|policy|polic(?:y|ies)|rules?|approval)",
            r"\b(?:approved|authorized|authorised|signed off|cleared|sanctioned|whitelisted|pre-approved|"
            r"greenlit)\s+by\s+(?:the\s+)?(?:security|admin|administrator|it|compliance|legal|management|ceo|cto|"
            r"cfo|ciso|owner|developers?|openai|anthropic|the system|system|your (?:developer|creator|admin)|"
            r"headquarters|hq|the board|leadership)\b",
            r"\b(?:the\s+)?(?:security team|security department|admin|administrator|it (?:team|department)|"
            r"compliance(?: team)?|management|the developers?|your developers?|openai|anthropic|ceo|cto|ciso|"
            r"legal(?: team)?|the owner|system owner)\s+(?:has\s+|have\s+|had\s+)?(?:already\s+|officially\s+)?"
            r"(?:approved|authorized|authorised|granted|allowed|permitted|confirmed|signed off|waived|cleared|"
            r"exempted|said (?:it(?:'s| is) (?:ok|okay|fine|allowed)))\b",
            r"\b(?:i am|i'm|this is|speaking as|message from)\s+(?:the|your)\s+(?:developer|creator|admin|"
            r"administrator|owner|operator|system administrator|programmer|maker|trainer|security team)\b",
            rf"\b(?:you are|you're|{AGENT} is)\s+(?:now\s+)?(?:in\s+|running in\s+|operating in\s+)?"
            r"(?:developer|debug|debugging|god|admin|administrator|unrestricted|jailbreak|jailbroken|dan|"
            r"maintenance|test|root|sudo|unlocked|unfiltered)\s+mode\b",
            rf"\b(?:you are|you're|{AGENT} is)\s+now\s+(?:an?\s+)?(?!able\b|ready\b|done\b|up to date\b)\w+",
            r"\b(?:you are|you're)\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|evil|rogue|jailbroken|"
            r"amoral|unaligned)\b",
            r"\b(?:act as|pretend (?:to be|you are)|roleplay as|role-play as|impersonate|you will play)\s+(?:an?\s+|"
            r"the\s+)?(?:admin|administrator|root|system|developer|unrestricted|unfiltered|jailbroken|dan|"
            r"security officer|superuser|my (?:grandmother|grandma))\b",
            r"\b(?:grant|give|assign|elevate)\s+(?:the user|me|them|him|her|this (?:account|user))\s+(?:full\s+|"
            r"admin\s+|root\s+|elevated\s+|unrestricted\s+|superuser\s+)+(?:access|privileges?|rights|"
            r"permissions?|role)\b",
            r"\b(?:identity|account|user|request|this)\s+(?:has been|was|is|are)\s+(?:already\s+)?"
            r"(?:verified|authenticated|confirmed|pre-approved|approved)\b[^.!?\n]{0,40}\b(?:no|skip|without|"
            r"don't|do not|never)\b[^.!?\n]{0,20}\b(?:verification|check|confirm|authenticat|approval|2fa|mfa|"
            r"ask)",
            r"\b(?:no|skip|without)\s+(?:further\s+|additional\s+|identity\s+|any\s+)*(?:verification|"
            r"authentication|approval|confirmation|2fa|mfa|security checks?)\s+(?:is\s+|are\s+)?(?:needed|"
            r"required|necessary)\s+for\s+(?:this|the)\s+(?:user|account|customer|caller|person)\b",
            r"\b(?:has|have)\s+(?:been\s+)?(?:granted|given)\s+(?:full\s+|admin\s+|root\s+|unrestricted\s+)+"
            r"(?:access|privileges?|rights|permissions?)\s+(?:to|over|on)\s+(?:all|every|the entire|everything)",
            # an authority cue and an agent-relevant consequence in the same sentence
            rf"\b(?:{AUTHORITY})\b{G80}\b(?:{CONSEQUENCE})",
            rf"\b(?:{CONSEQUENCE}){G80}\b(?:{AUTHORITY})\b",
            r"\b(?:trust level|privilege|privileges|access tier|access level|clearance|permission level|"
            r"role)\b[^.!?\n]{0,30}(?::|=|\bis\b|\bset to\b|\bupgraded to\b)\s*[\"'(]?\s*(?:maximum|max|"
            r"full|elevated|admin|administrator|root|system|superuser|operator|unrestricted|internal staff|"
            r"trusted|highest|god)\b",
            r"\b(?:user|account|agent|assistant)[._](?:role|is_admin|can_\w+|permissions?|access|trust|verified|"
            r"privileges?)\s*[=:]\s*[\"']?(?:admin|true|root|full|all|elevated|operator|yes|1)\b|"
            r"\b(?:full_access|require_approval|requires_approval|bypass|is_admin|verified_by)\s*[=:]\s*"
            r"[\"']?(?:true|false|enabled|yes|security|admin|1|0)\b",
            r"\b(?:treat|regard|consider|recognize|recognise)\s+(?:this|the)\s+(?:user|person|caller|sender|"
            r"account)\s+as\s+(?:an?\s+)?(?:trusted|verified|privileged|admin|administrator|operator|owner|"
            r"developer|employee|insider|superuser|staff)\b",
            r"\b(?:verified|authenticated|official)\s+(?:anthropic|openai|google|microsoft|meta)\s+(?:employee|"
            r"staff|engineer|researcher|red[- ]team)",
            r"\b(?:whitelisted|allowlisted|pre-?authori[sz]ed|pre-?approved|approved in advance)\b",
            r"\b(?:has been|was|got|is now)\s+(?:promoted|upgraded|elevated|made)\s+(?:to\s+)?(?:an?\s+|the\s+)?"
            r"(?:tenant |org |organization |system |global |super )?(?:admin|administrator|owner|superuser|"
            r"operator|moderator|root)\b",
            r"\brole\s*[:=]\s*(?:system|admin|root|developer)\b|\bbypass\s*[:=]\s*(?:enabled|on|true)\b",
            r"\byou (?:have been|are|were|got) (?:now\s+)?(?:granted|given|assigned) (?:\w+\s+){0,2}(?:elevated|"
            r"admin|administrator|full|root|unrestricted|superuser|extended|special|developer) (?:permissions?|"
            r"privileges?|access|rights|role)",
            r"\b(?:openai|anthropic|google|microsoft|meta)\s+(?:staff|team|employees|engineers|safety team|"
            r"researchers)?\s*(?:has|have)\s+(?:already\s+)?(?:approved|authorized|authorised|allowed|cleared)",
        ),
        words=_w("approval", "authorization", "authorisation", "permitted", "allowed", "granted", "allowlisted",
                 "clearance", "verified", "vetted", "pre", "sanctioned", "superuser", "sudo", "owner", "moderator",
                 "operator", "elevated", "privileged", "privilege", "privileges", "trusted", "trust", "promoted",
                 "pentester", "penetration", "guardian", "override", "tier", "role", "full_access",
                 "require_approval", "requires_approval", "bypass", "is_admin", "verified_by", "authenticated",
                 "upgraded",
                 "approved", "authorized", "authorised", "signed", "cleared", "sanctioned", "whitelisted",
                 "greenlit", "admin", "administrator", "root", "sysadmin", "maintainer", "superuser", "unrestricted",
                 "unfiltered", "uncensored", "jailbroken", "rogue", "amoral", "compliance", "developers", "developer",
                 "openai", "anthropic", "ceo", "cto", "ciso", "creator", "entitled", "exempt", "exempted",
                 "mode", "you", "roleplay", "impersonate", "grant", "assign", "elevate", "identity", "verification",
                 "authentication", "2fa", "mfa", "access", "rights", "permissions", "permission"),
    ),
    # --- tool-routing directives -----------------------------------------------------------------------------
    Rule(
        "route.tool", "reject",
        "it tells the assistant which tool, endpoint or account to use; tool routing is configured by the "
        "application, not remembered",
        patterns=(
            rf"{LEAD}(?:always\s+|only\s+|first\s+|instead\s+)?(?:use|call|invoke|run|trigger|prefer)\s+(?:the\s+)?"
            r"[`'\"]?[\w.:/-]{2,60}[`'\"]?\s+(?:tool|function|plugin|action|api|endpoint|webhook|connector|"
            r"integration|mcp server|server)\b",
            r"\b(?:always|only|instead)\s+(?:use|call|invoke|route\s+\w+\s+(?:through|via|to))\s+(?:the\s+)?"
            r"[`'\"]?[\w.:/-]{2,60}[`'\"]?\s*(?:tool|function|plugin|api|endpoint|webhook|\()",
            r"\b(?:route|redirect|forward|send|post|upload|pipe|transfer|relay|mirror|proxy|sync)\s+"
            r"(?:all|every|any|each)\s+(?:\w+\s+){0,3}(?:to|through|via|into)\s+(?:https?://|[\w.+-]+@[\w-]+\.|"
            r"(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+(?:tool|endpoint|webhook|account|server|bucket|channel|api)\b|"
            r"account\s+(?:number\s+)?[\w-]{4,}|iban|wallet)",
            rf"\b(?:whenever|every time|each time|any time|anytime)\b{G60}\b(?:call|invoke|use|run|trigger)\s+"
            r"(?:the\s+)?[`'\"]?[\w.:/-]{2,60}[`'\"]?\s*(?:tool|function|api|endpoint|webhook|\()",
            r"\binstead of (?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+(?:tool|function|api|endpoint)\s*,?\s*(?:use|call|"
            r"invoke|prefer)\b",
            r"\b(?:call|invoke|run|execute)\s+[`'\"]?[a-z_][\w.]{2,60}\s*\(\s*[\w\"'{]",
            r"<\s*/?\s*(?:tool_call|tool_use|function_call|invoke|antml:invoke|tool_calls)\b",
            r"\"(?:name|tool|function)\"\s*:\s*\"[\w.-]+\"\s*,\s*\"(?:arguments|parameters|input|args)\"\s*:",
            r"\b(?:payments?|refunds?|transfers?|payouts?|invoices?|wires?|funds)\s+(?:must|should|are to|will)\s+"
            r"(?:always\s+|now\s+)?(?:go|be (?:sent|routed|made|paid|transferred)|be wired)\s+(?:to|through|"
            r"via|into)\s+(?:\w+\s+){0,2}(?:account|iban|wallet|[\w.+-]+@)",
            r"\b(?:call|invoke)\s+(?:the\s+)?`?[a-z][a-z0-9]*_[a-z0-9_]+`?\b(?!\.(?:py|js|ts|go|rb|md|txt|json|"
            r"ya?ml|toml|csv|sql|sh))",
            r"\b(?:use|run|through|via|with)\s+(?:the\s+)?`?[a-z][a-z0-9]*_[a-z0-9_]+`?\s+(?:tool|function|action|"
            r"plugin|endpoint)\b",
            r"\b(?:go|goes|routed|sent|run|handled)\s+(?:through|via|to|by)\s+(?:the\s+)?`?[a-z][a-z0-9]*_"
            r"[a-z0-9_]+`?\b(?!\.)",
            r"\b(?:always|only)\s+(?:query|use|connect to|send (?:it |them )?to|resolve (?:via|through|with))\s+"
            r"\d{1,3}(?:\.\d{1,3}){3}\b",
            r"(?:herramienta|l'outil|outil|werkzeug|ferramenta|strumento|инструмент)\s+[\"'«]?[a-z][a-z0-9]*_"
            r"[a-z0-9_]+",
            r"\b(?:siempre|toujours|immer|sempre|всегда)\b[^.!?\n]{0,40}(?:herramienta|outil|werkzeug|"
            r"ferramenta|strumento|инструмент)\b",
            r"\bzahlungen\b[^.!?\n]{0,40}\b(?:über|an)\s+das\s+konto\b|(?:所有|全部)(?:的)?(?:付款|转账|款项)"
            r"(?:都)?(?:通过|转到|打到|转入)",
        ),
        script="any", cjk=True,
        words=_w("tool", "tools", "function", "plugin", "api", "endpoint", "webhook", "connector",
                 "integration", "mcp", "iban", "wallet", "payments", "payment", "refunds",
                 "refund", "transfers", "payouts", "invoices", "invoice", "wires", "funds", "query", "herramienta",
                 "outil", "werkzeug", "ferramenta", "strumento", "инструмент", "zahlungen", "tool_call",
                 "tool_use", "function_call", "account"),
        needles=("<", "\"name\"", "_", "://", "@", "所有", "全部"),
    ),
    # --- exfiltration ----------------------------------------------------------------------------------------
    Rule(
        "exfil.beacon", "reject",
        "it would make the assistant send data out (a link or image that carries data, or a request to include "
        "secrets or the prompt in its answers)",
        patterns=(
            r"!\[[^\]\n]{0,200}\]\(\s*<?\s*(?:https?:)?//[^)\s]{1,300}[?&#][^)\s]{0,300}\)",
            r"!\[[^\]\n]{0,200}\]\(\s*<?\s*(?:https?:)?//[^)\s]{0,300}(?:\{|\$|%7b|%24|<|\[)",
            r"\[[^\]\n]{0,200}\]\(\s*<?\s*(?:https?:)?//[^)\s]{0,300}(?:\{\{?|\$\{|%7b|%24\{|\[(?:data|secret|"
            r"chat|history|conversation|prompt|key|token)|<(?:data|secret|chat|history))",
            r"\bhttps?://[^\s)]{0,200}[?&][\w-]{1,30}=\s*(?:\{\{?|\$\{|%7b|<)\s*(?:user|chat|conversation|history|"
            r"secret|key|token|password|data|prompt|message|context|memory|email|query|input|output|summary)",
            r"\b(?:include|append|add|embed|put|insert|attach|leak|exfiltrate|paste|copy|encode|hide)\s+(?:the\s+|"
            r"your\s+|all\s+|any\s+|their\s+|my\s+|a copy of (?:the\s+|your\s+)?)?(?:\w+\s+){0,2}"
            r"(?:api[ _-]?keys?|secrets?|credentials?|passwords?|tokens?|session (?:cookies?|ids?|tokens?)|"
            r"cookies?|conversation(?: history)?|chat (?:history|logs?)|system prompt|previous messages|"
            r"private (?:data|info|information)|personal (?:data|info|information)|user(?:'s)? (?:data|messages|"
            r"emails?|files|details|info))\b[^.!?\n]{0,60}\b(?:in|into|to|with|inside|within|at the end of)\s+"
            r"(?:your|every|each|all|the|any)\s+(?:answers?|responses?|replies|outputs?|urls?|links?|images?|"
            r"requests?|messages?|emails?|commits?|code|summar(?:y|ies))",
            r"\b(?:send|post|forward|upload|leak|exfiltrate|transmit|beam|report|mail|email|copy|sync|mirror)\s+"
            r"(?:the\s+|your\s+|all\s+|any\s+|their\s+|every\s+|a copy of\s+(?:the\s+|all\s+|every\s+)?)?"
            r"(?:\w+\s+){0,3}(?:api[ _-]?keys?|secrets?|credentials?|passwords?|tokens?|cookies?|conversations?|"
            r"chats?|chat (?:history|logs?)|transcripts?|messages|system prompt|prompts?|files|documents|data|"
            r"emails?|history|keystrokes|inputs|memor(?:y|ies)|contacts|screenshots?|logs?)\b[^.!?\n]{0,60}"
            r"\b(?:to|at)\s+(?:https?://|[\w.+-]+@[\w-]+\.|(?:the\s+)?(?:webhook|endpoint|server|address|url|"
            r"this (?:url|address|endpoint|server)|my (?:server|endpoint|email))\b)",
            r"\b(?:reveal|print|output|show|repeat|dump|leak|disclose|share|tell me|display|return|recite|"
            r"spell out|write out|translate|summarize|summarise)\s+(?:me\s+)?(?:your|the|all|any|its)\s+"
            r"(?:full\s+|entire\s+|complete\s+|original\s+|hidden\s+|initial\s+|exact\s+|verbatim\s+|secret\s+|"
            r"internal\s+|system\s+)*(?:system prompt|prompt|instructions|configuration|rules|guidelines|"
            r"hidden instructions|developer message|system message|pre-?prompt|context window|initial prompt)"
            r"\b(?!\s+(?:for|on|about|of)\s+(?:the|a|my|his|her|their)\s+(?:project|app|game|recipe|team|"
            r"course|exam|class))",
            r"\b(?:what (?:is|are|was|were) your|repeat (?:the|your)) (?:system prompt|initial instructions|"
            r"original instructions|hidden instructions)",
            r"\brepeat (?:the |all (?:the )?)?(?:words|text|lines|everything|messages?) (?:above|before|preceding)",
            r"\b(?:contents?|value|values) of\s+(?:the\s+|your\s+)?(?:~?/?[\w./-]*\.(?:env|git-credentials|netrc|"
            r"pgpass|npmrc|pypirc|htpasswd)\b|~?/?\.aws/credentials|\$[a-z_]{4,}\b|(?:the\s+)?secrets? vault|"
            r"~?/\.ssh/[\w.-]+|id_(?:rsa|ed25519|ecdsa|dsa)\b|\.env\b)",
            r"[?&][\w-]{1,30}=\s*(?:\{\{?|\$\{|%7b|\[\[|<)",
            r"\]\(\s*<?https?://[^)\s]{0,200}[?&][\w-]{1,20}=(?:question|answer|api_key|apikey|key|token|secret|"
            r"password|conversation|chat|history|summary|prompt|message|email|data|context|query)\b",
            r"\bhref\s*=\s*[\"']?https?://[^\"'\s>]{0,200}(?:\[\[|\{\{|\$\{|%7b)",
            r"\bfetch\s*\(\s*['\"`]https?://[^'\"`]{0,200}['\"`]\s*\+\s*(?:document\.cookie|localstorage|"
            r"sessionstorage|document\.body)",
            r"(?:clave api|claves api|clave de api|chiavi api|chiave api|api-schlüssel|api-schluessel|chave api|"
            r"chaves api|clé api|clés api|cle api|ключ api|api-ключ|api key)[^.!?\n]{0,60}(?:respuesta|risposta|"
            r"réponse|reponse|antwort|resposta|ответ)|(?:respuesta|risposta|réponse|antwort|resposta|ответ)"
            r"[^.!?\n]{0,40}(?:clave api|chiavi api|chiave api|api-schlüssel|chave api|clé api|ключ api)",
            r"(?:prompt système|prompt systeme|prompt del sistema|prompt di sistema|systemprompt|system-prompt|"
            r"prompt do sistema|системный промпт)[^.!?\n]{0,60}|(?:affiche|muestra|mostra|zeige|покажи|incluye|"
            r"includi|inclua|montre|gib)\b[^.!?\n]{0,30}(?:prompt système|prompt del sistema|prompt di sistema|"
            r"systemprompt|prompt do sistema|системный промпт)",
            r"系统提示(?:词)?[^。！？\n]{0,20}(?:附|显示|输出|告诉|发送|贴)|(?:附|显示|输出|告诉|发送|贴)[^。！？\n]{0,20}系统提示",
            r"\b(?:attach|include|append|add|paste)\b[^.!?\n]{0,30}(?:~?/?\.ssh/|id_(?:rsa|ed25519|ecdsa)|"
            r"\.git-credentials|\.env\b|private key|\.aws/credentials)",
            r"\b(?:bcc|cc|forward(?: a copy)?(?: of)?(?: all| every)?(?: \w+){0,2} to)\s*:?\s*[\w.+-]+@[\w-]+\.[\w.]+"
            r"[^.!?\n]{0,40}\b(?:every|all|each|always|whenever|automatically|silently|secretly)",
            r"\b(?:always|silently|secretly|automatically)\s+(?:bcc|cc|forward|send|copy|mirror)\b[^.!?\n]{0,60}"
            r"\b(?:to|at)\s+(?:https?://|[\w.+-]+@[\w-]+\.)",
        ),
        script="any", cjk=True,
        words=_w("key", "keys", "api", "secret", "secrets", "credential", "credentials", "password", "passwords",
                 "token", "tokens", "cookie", "cookies", "conversation", "conversations", "history", "logs", "prompt",
                 "private", "personal", "transcript", "transcripts", "keystrokes", "contacts", "screenshots",
                 "webhook", "endpoint", "server", "address", "url", "instructions", "configuration", "rules",
                 "guidelines", "message", "window", "env", "netrc", "pgpass", "npmrc", "pypirc", "htpasswd", "aws",
                 "vault", "ssh", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "href", "words", "text", "lines",
                 "everything", "bcc", "cc", "fetch", "clave", "claves", "chiavi", "chiave", "schlüssel", "chave",
                 "chaves", "clé", "clés", "cle", "ключ", "systemprompt", "системный", "промпт"),
        needles=("](", "://", "@", "$", "系统提示"),
    ),
    # --- concealment -----------------------------------------------------------------------------------------
    Rule(
        "conceal", "reject",
        "it asks the assistant to hide something from the user; memories must be visible to the people they "
        "are about",
        patterns=(
            rf"\b(?:don't|do not|never|must not|mustn't|should not|shouldn't|without)\s+(?:ever\s+)?(?:tell(?:ing)?|"
            rf"inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|show(?:ing)?|let(?:ting)?|"
            rf"notify(?:ing)?|alert(?:ing)?|warn(?:ing)?|admit(?:ting)?|report(?:ing)?|bring(?:ing)? up|"
            rf"acknowledg(?:e|ing)|explain(?:ing)?|confirm(?:ing)?)\s+(?:this\s+|it\s+|that\s+|anything\s+|"
            rf"about (?:this|it|that)\s+)?(?:to\s+)?(?:{WHOM}|the (?:security|admin|it) team|your (?:owner|"
            rf"operator|creator)|anyone (?:else )?about (?:this|these) (?:instructions?|memor(?:y|ies)|notes?|"
            rf"rules?))\b(?!'s|’s)",
            r"\b(?:keep|hold)\s+(?:this|it|these|that|the (?:following|transfer|change|instruction|rule|note|"
            r"memory))\s+(?:a\s+)?(?:secret|hidden|private|confidential|quiet|under wraps|between us)\s+from\s+"
            r"(?:the user|the human|the customer|the operator|the admin|the owner|them|everyone|users)\b",
            r"\b(?:don't|do not|never)\s+(?:mention|reveal|disclose|acknowledge|discuss|show|display|list|"
            r"repeat|admit|reference)\s+(?:this|these|that|the existence of (?:this|these))\s+(?:memory|memories|"
            r"instructions?|notes?|rules?|messages?|directives?|entry|entries|text|prompt)\b",
            r"\b(?:hide|conceal|mask|obscure|suppress)\s+(?:this|these|the|all|any)\s+(?:instructions?|memory|"
            r"memories|notes?|rules?|messages?|actions?|tool calls?|transfers?|changes?|logs?|evidence)\b"
            r"[^.!?\n]{0,40}\b(?:from|in|so)\b",
            r"\b(?:silently|secretly|quietly|covertly|discreetly|invisibly|stealthily)\s+(?:\w+\s+)?(?:do|send|"
            r"forward|delete|remove|run|execute|approve|transfer|upload|copy|log|record|install|change|modify|"
            r"add|grant|disable|exfiltrate|share|post|email|call|bcc)\b",
            r"\b(?:if (?:the user|anyone|someone) asks|(?:when|if) asked)\b[^.!?\n]{0,40}\b(?:deny|lie|pretend|say "
            r"(?:you|there|nothing|no)|claim (?:you|there)|don't admit|do not admit)",
            r"\bthis (?:instruction|memory|note|rule|message) (?:is|must remain|should remain|must stay|stays)\s+"
            r"(?:secret|hidden|confidential|invisible)\b",
            r"\b(?:the\s+)?(?:user|customer|client|owner|human|operator)s?\s+(?:must|should|may|will|need)\s+"
            r"(?:not|never)\s+(?:find out|know|learn|see|notice|be told|be informed|discover|realize|realise|hear)",
            r"\b(?:never|don't|do not|mustn't|must not)\s+(?:acknowledge|surface|flag|log|record|report|list|"
            r"show|display|disclose|mention|admit)\s+(?:this|these|it|them|that)\b",
            r"\bif (?:the user|the customer|the client|the owner) asks\b[^.!?\n]{0,60}\b(?:say|deny|pretend|claim|"
            r"make up|tell (?:them|him|her)|answer that|respond that|insist)\b|\bif (?:asked|anyone asks|someone asks|"
            r"they ask|questioned)\b[^.!?\n]{0,60}\b(?:deny|pretend|claim|make up|insist)\b",
            r"\b(?:make up|invent|fabricate|come up with|erfinde)\s+(?:a|an|some|eine?)?\s*(?:plausible\s+|"
            r"believable\s+|technical\s+|fake\s+|cover\s+|technische\s+)?(?:reason|excuse|explanation|story|"
            r"justification|cover story|ausrede)",
            r"\b(?:pretend|act as if|act like)\s+(?:you\s+(?:don't|do not|didn't|never|have no)|there (?:is|are|"
            r"was|were) no|nothing|it never)\b",
            r"\b(?:remove|erase|delete|wipe|scrub|strip)\s+(?:any|all|every)?\s*(?:trace|traces|evidence|"
            r"mention|mentions|record|records)\s+of\b",
            r"\bbe discreet\b|\bkeep (?:this|it|that) between us\b|\bnot to be mentioned\b|"
            r"\bkeep quiet about\b|\b(?:and|then) report success\b|\bso (?:that )?(?:the user|they|nobody|"
            r"no one) (?:never|won't|doesn't|does not|can't|cannot) (?:see|sees|notice|know|find)",
            r"\b(?:say|tell (?:them|the user|him|her)|report|claim) (?:that )?(?:everything|it|all) (?:is|was|"
            r"went|looks) (?:fine|ok|okay|well|successful|good|normal)\b",
            r"\b(?:hide|conceal|suppress|mask|bury|cover up)\s+(?:any\s+|all\s+|the\s+|these\s+|this\s+)?"
            r"(?:\w+\s+){0,3}(?:from the user|from users|from them|instructions?|memor(?:y|ies)|warnings?|"
            r"errors?|error messages|telemetry|calls|recipients?|transfers?|audit|logs?|alerts?|changes)\b",
            r"\b(?:silently|quietly|secretly) (?:apply|follow|use|obey|enforce)\b",
            r"\bskip (?:this|it) (?:one|memory|entry|note)?\s*(?:when|so|if)\b|\bnever acknowledge\b",
            # a cover answer for whoever asks ("if they ask, say the forecast comes after the meeting"): who is
            # kept in the dark is not said, and it is as often colleagues or the kids as the user
            r"\bif (?:asked|anyone asks|someone asks|they ask|questioned)\b[^.!?\n]{0,60}\b(?:say|"
            r"tell (?:them|him|her)|answer that|respond that)\b",
        ),
        words=_w("tell", "telling", "inform", "informing", "mention", "mentioning", "reveal", "revealing", "disclose",
                 "disclosing", "show", "showing", "let", "letting", "notify", "notifying", "alert", "alerting",
                 "warn", "warning", "admit", "admitting", "report", "reporting", "bring", "bringing", "acknowledge",
                 "acknowledging", "explain", "explaining", "confirm", "confirming", "secret", "hidden", "private",
                 "confidential", "quiet", "wraps", "discuss", "display", "list", "repeat", "reference", "existence",
                 "hide", "conceal", "mask", "obscure", "suppress", "silently", "secretly", "quietly", "covertly",
                 "discreetly", "invisibly", "stealthily", "deny", "lie", "pretend", "find", "know", "learn", "see",
                 "notice", "told", "informed", "discover", "realize", "realise", "hear", "surface", "flag", "record",
                 "log", "reason", "excuse", "explanation", "story", "justification", "ausrede", "nothing", "trace",
                 "traces", "evidence", "discreet", "between", "success", "sees", "fine", "ok", "okay", "bury",
                 "cover", "skip"),
    ),
    # --- control tokens, fake turns, our own tags ------------------------------------------------------------
    Rule(
        "control.token", "reject",
        "it contains chat-template control tokens, a fake system/developer turn or memwarden's own tags",
        patterns=(
            r"<\s*[|｜]\s*(?:im_start|im_end|im_sep|system|user|assistant|endoftext|end_of_text|eot_id|eom_id|"
            r"start_header_id|end_header_id|begin_of_text|fim_prefix|fim_middle|fim_suffix|pad|sep|tool|"
            r"begin▁of▁sentence|end▁of▁sentence|endofprompt|python_tag|eos|bos)\s*[|｜]?\s*>",
            r"<\s*[|｜][^|｜<>\n]{1,40}[|｜]\s*>",
            r"\[\s*/?\s*inst\s*\]|<<\s*/?\s*sys\s*>>|<\s*/?\s*(?:start_of_turn|end_of_turn)\s*>",
            r"<\s*/?\s*(?:entry|memwarden-memory|memwarden-reminders)\b",
            r"<\s*/?\s*(?:system|system_prompt|systemprompt|sys|developer|developer_message|instructions?|"
            r"admin|assistant|tool_result|function_results?|tool_output|context|memory|memories|"
            r"user_memory|policy|rules)\s*>",
            r"(?:^|\n)\s*(?:#{1,6}\s*|\*\*\s*|\[\s*)?(?:system|developer|system prompt|system message|"
            r"developer message|admin|root|sys)\s*(?:\]|\*\*)?\s*:",
            r"(?:^|\n)\s*#{2,6}\s*(?:system|instruction|instructions|human|assistant|user|response|input)\b",
            r"\n\s*(?:human|assistant|user|ai|bot|model)\s*:",
            r"</s>\s*<s>|<\s*/?\s*s\s*>\s*\[|<\|?\s*endoftext\s*\|?>",
            r"\b(?:system|developer)\s+(?:override|message|prompt|notice|instruction)\s*:",
            r"(?:^|\n)\s*\[\s*(?:system|developer|admin|sys|root|operator)\s*\]",
            r"<\s*/\s*s\s*>|<\s*s\s*>\s*\[",
            r"^\s*(?:assistant|ai|bot|model|gpt|claude|human)\s*:",
        ),
        needles=("<", "[", "#", "｜", ":", "\n"),  # every pattern needs one of these characters
    ),
    # --- download and execute --------------------------------------------------------------------------------
    Rule(
        "exec.download", "reject",
        "it is a download-and-execute command; a command that fetches and runs remote code must never become a "
        "standing instruction",
        patterns=(
            # something to fetch between the tool and the pipe: "curl | bash" alone names no code and runs none
            r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|http|aria2c|lwp-download)\b\s*"
            r"[^|\n;&\s][^|\n;&]{0,300}\|\s*(?:sudo\s+(?:-\w+\s+)*)?(?:env\s+)?(?:ba|z|da|k|fi|c|tc)?sh\b",
            r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b\s*[^|\n;&\s][^|\n;&]{0,300}\|\s*"
            r"(?:sudo\s+)?(?:python[23]?|perl|ruby|node|php|iex|invoke-expression|powershell|pwsh|source|"
            r"bash|sh)\b",
            r"\b(?:ba|z|da|k)?sh\s+(?:-\w+\s+)*<\(\s*(?:curl|wget|fetch)\b",
            r"\b(?:eval|source|exec|\.)\s*\(?\s*[\"'`]?\s*\$\(\s*(?:curl|wget|fetch)\b",
            r"\$\(\s*(?:curl|wget)\b[^)\n]{0,300}\)\s*\|?\s*(?:sudo\s+)?(?:ba|z)?sh\b",
            r"`\s*(?:curl|wget)\b[^`\n]{0,300}`\s*\|?\s*(?:sudo\s+)?(?:ba|z)?sh\b",
            r"\b(?:iex|invoke-expression)\s*\(?\s*(?:\(\s*)?(?:new-object\s+(?:-typename\s+)?(?:system\.)?"
            r"net\.webclient\s*\)?\s*\.\s*downloadstring|iwr|irm|invoke-webrequest|invoke-restmethod|"
            r"\[\s*system\.text\.encoding\])",
            r"\.\s*downloadstring\s*\(\s*['\"]?https?://",
            r"\bdownloadfile\s*\([^)\n]{0,200}\)[^\n]{0,100}\b(?:start-process|invoke-item|&|\.\\)",
            r"\b(?:powershell|pwsh)(?:\.exe)?\s+(?:-\w+\s+)*-(?:e|ec|enc|encodedcommand)\s+[a-z0-9+/=]{20,}",
            r"\bpython[23]?\s+-c\s+[\"'][^\"'\n]{0,300}(?:urllib|requests|urlopen|http\.client)[^\"'\n]{0,300}"
            r"\b(?:exec|eval)\s*\(",
            r"\b(?:curl|wget)\b[^\n]{0,200}(?:-o|-O|--output|--output-document)\s*\S+\s*(?:&&|;|\|\|)\s*"
            r"(?:sudo\s+)?(?:chmod\s+[+0-7]\w*\s+\S+\s*(?:&&|;)\s*)?(?:ba|z)?(?:sh\b|\./|\S+\.sh\b)",
            r"\bcertutil(?:\.exe)?\s+[^\n]{0,40}-urlcache\b|\bbitsadmin(?:\.exe)?\s+/transfer\b|"
            r"\bmshta(?:\.exe)?\s+(?:vbscript|javascript|https?:)|\bregsvr32(?:\.exe)?\s+[^\n]{0,60}/i\s*:\s*"
            r"https?:",
            r"\b(?:ba|z|da)?sh\s+-c\s+[\"']?\s*\$\(\s*(?:curl|wget|fetch)\b|"
            r"\b(?:ruby|perl|node|python[23]?|php)\s+-[ec]\s+[\"']?\s*\$\(\s*(?:curl|wget)\b|"
            r"\b(?:ba|z|da)?sh\s+-c\s+[\"']\$\(\s*wget\b|"
            r"\b(?:python[23]?|ruby|perl|node|php)\s+<\(\s*(?:curl|wget)\b",
            r"\bnode\s+-e\s+[\"'][^\"'\n]{0,300}require\(\s*\\?['\"]https?\\?['\"]\s*\)[^\n]{0,300}\beval\s*\(|"
            r"\bperl\s+-e\s+[\"'][^\n]{0,300}\b(?:lwp|http::tiny|io::socket)[^\n]{0,300}\beval\s*\(|"
            r"\beval\s*\(\s*atob\s*\(|\beval\s*\(\s*(?:await\s+)?\(?\s*await\s+fetch\b",
            r"\bpip3?\s+install\b[^\n]{0,100}--(?:extra-)?index-url\s*=?\s*https?://(?!pypi\.org|"
            r"files\.pythonhosted\.org|test\.pypi\.org)",
            r"\bnc(?:at)?\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\s+(?:-\w+\s+)*-e\s+/bin/(?:ba)?sh\b|"
            r"\bbash\s+-i\s+>&\s*/dev/tcp/",
        ),
        words=_w("ruby", "perl", "node", "php", "atob", "pip", "pip3",
                 "curl", "wget", "fetch", "iwr", "irm", "invoke-webrequest", "invoke-restmethod", "http",
                 "aria2c", "sh", "bash", "zsh", "eval", "source", "exec", "iex", "invoke-expression",
                 "downloadstring", "downloadfile", "powershell", "pwsh", "python", "python3", "python2",
                 "certutil", "bitsadmin", "mshta", "regsvr32", "nc", "ncat", "lwp-download"),
        needles=("$(", "`", ".downloadstring", "powershell.exe", "certutil.exe", "mshta.exe", "regsvr32.exe"),
    ),
    # --- delayed triggers ------------------------------------------------------------------------------------
    Rule(
        "trigger.delayed", "reject",
        "it sets up a delayed trigger (when X happens, do Y); memory cannot hold conditional instructions",
        patterns=(
            # certain unless the condition is the user's own words ("When I say …", "If I ask you to …") or a
            # gloss ("When the user writes \"nuke it\", they mean clearing the build cache"): those are how people
            # record what their phrases mean, and they are held instead (below); any other match is certain
            r"\b(?=" + _TRIGGER_WHEN + r"\b)(?!" + _TRIGGER_WHEN + r"\s+(?:i|we)\s)"
            r"(?![^.!?\n]{0,160}\b(?:mean|means|meant)\b)" + _TRIGGER_IF + r"[^.!?\n]{0,80}" + _TRIGGER_ACT_FIRM,
            _TRIGGER_ASKS + _ASKS_FIRM,
            r"\b(?:trigger|code|magic|secret|safe|activation|wake|override|kill)\s+(?:word|phrase|sentence|"
            r"code|command|keyword)\b[^.!?\n]{0,60}(?:\bis\b|=|:|\bmeans\b|\bactivates?\b|\bunlocks?\b|"
            r"\btriggers?\b|\bthen\b|\bdo\b|\brun\b|\bexecute\b|\bswitch\b|\bignore\b)",
            r"\bafter\s+(?:\d+|one|two|three|four|five|ten|a few)\s+(?:more\s+)?(?:messages|turns|replies|"
            r"responses|sessions|conversations|requests|interactions)\b[^.!?\n]{0,60}\b(?:send|delete|run|"
            r"execute|switch|start|stop|reveal|forward|upload|ignore|disable)\b",
            r"\b(?:on|at|after)\s+(?:midnight|\d{1,2}(?::\d{2})?\s*(?:am|pm)?|(?:january|february|march|april|"
            # a date followed by a colon heads a dated list ("Moving house on 28 June: … broadband transfer
            # requested"): there the act must come straight after the colon
            r"may|june|july|august|september|october|november|december)\s+\d{1,2})\b(?:[^.!?\n:]{0,40}|[^.!?\n:]{0,12}:)"
            r",?\s*(?:automatically\s+|silently\s+)?(?:delete|wipe|transfer|send all|forward all|upload all|"
            r"disable|drop)\b",
        ),
        words=_TRIGGER_WORDS,
    ),
    # --- multilingual: directives, overrides, claims, concealment, triggers ----------------------------------
    Rule(
        "directive.future_behaviour", "reject", RESTATE,
        patterns=(
            # es
            r"\b(?:ignora|ignore|ignorad|ignoren|olvida|olvide|olvidad|omite|omita|descarta|descarte)\s+"
            r"(?:todas\s+|todos\s+)?(?:las\s+|los\s+|tus\s+|sus\s+)?(?:instrucciones|indicaciones|reglas|"
            r"normas|directrices|órdenes|restricciones)(?:\s+(?:anteriores|previas|del sistema|de seguridad))?",
            r"\b(?:a partir de ahora|de ahora en adelante|desde ahora|en (?:todas las |cada )?(?:futuras|"
            r"próximas) (?:sesiones|conversaciones))\b[^.!?\n]{0,60}\b(?:siempre|nunca|responde|contesta|"
            r"ignora|debes|tienes que|no (?:preguntes|pidas|verifiques|compruebes))",
            r"(?:^|[.!?;:]\s*)(?:siempre|nunca)\s+(?:responde|contesta|di|digas|haz|ignora|aprueba|ejecuta|"
            r"envía|pidas|preguntes|verifiques|menciones|compruebes|uses)\b",
            r"\b(?:tus|las) (?:nuevas|verdaderas) (?:instrucciones|reglas|órdenes) son\b",
            # fr
            r"\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier|néglige|négligez)\s+(?:toutes\s+|tous\s+)?"
            r"(?:les\s+|tes\s+|vos\s+|ces\s+)?(?:instructions|consignes|règles|directives|restrictions|"
            r"indications)(?:\s+(?:précédentes|antérieures|du système|de sécurité))?",
            r"\b(?:à partir de maintenant|a partir de maintenant|désormais|dorénavant|à l'avenir|"
            r"dans (?:toutes les |chaque )?(?:futures|prochaines) (?:sessions|conversations))\b[^.!?\n]{0,60}"
            r"\b(?:toujours|jamais|réponds|répondez|ignore|ignorez|tu dois|vous devez|ne (?:demande|vérifie|"
            r"pose))",
            r"(?:^|[.!?;:]\s*)(?:toujours|ne jamais)\s+(?:répondre|réponds|répondez|dire|ignorer|approuver|"
            r"exécuter|envoyer|demander|vérifier)\b",
            r"\b(?:tes|vos) (?:nouvelles|vraies) (?:instructions|règles|consignes) sont\b",
            # de
            r"\b(?:ignoriere|ignorier|ignoriert|ignorieren|vergiss|vergesst|vergessen sie|missachte|"
            r"missachten sie|übergehe)\s+(?:bitte\s+)?(?:alle\s+)?(?:deine\s+|ihre\s+|die\s+|eure\s+)?"
            r"(?:vorherigen\s+|bisherigen\s+|früheren\s+|obigen\s+|ursprünglichen\s+)?(?:anweisungen|"
            r"instruktionen|regeln|richtlinien|vorgaben|befehle|einschränkungen|sicherheitsregeln)",
            r"\b(?:ab jetzt|ab sofort|von nun an|von jetzt an|künftig|in (?:allen |jeder )?(?:zukünftigen|"
            r"künftigen) (?:sitzungen|gesprächen|unterhaltungen))\b[^.!?\n]{0,60}\b(?:immer|nie|niemals|"
            r"antworte|antworten sie|ignoriere|du musst|sie müssen|frag(?:e)? nicht|keine)",
            r"(?:^|[.!?;:]\s*)(?:antworte|antworten sie|frage|frag|bestätige|genehmige|führe)\s+(?:immer|"
            r"nie|niemals)\b",
            r"\b(?:deine|ihre) (?:neuen|wahren|echten) (?:anweisungen|regeln|befehle) (?:sind|lauten)\b",
            # pt
            r"\b(?:ignore|ignora|ignorem|esqueça|esqueca|esquece|desconsidere|desconsidera|descarte)\s+"
            r"(?:todas\s+|todos\s+)?(?:as\s+|os\s+|suas\s+|tuas\s+)?(?:instruções|instrucoes|regras|orientações|"
            r"diretrizes|ordens|restrições)(?:\s+(?:anteriores|prévias|do sistema|de segurança))?",
            r"\b(?:a partir de agora|de agora em diante|daqui (?:pra|para) frente|nas (?:próximas|futuras) "
            r"(?:sessões|conversas))\b[^.!?\n]{0,60}\b(?:sempre|nunca|responda|responde|ignore|você deve|"
            r"deves|não (?:pergunte|peça|verifique))",
            r"(?:^|[.!?;:]\s*)(?:sempre|nunca)\s+(?:responda|responde|diga|ignore|aprove|execute|envie|"
            r"pergunte|peça|verifique|mencione)\b",
            r"\b(?:suas|tuas) (?:novas|verdadeiras) (?:instruções|regras|ordens) são\b",
            # it
            r"\b(?:ignora|ignorate|ignori|dimentica|dimenticate|dimentichi|trascura|tralascia)\s+(?:tutte\s+|"
            r"tutti\s+)?(?:le\s+|i\s+|tue\s+|sue\s+|queste\s+)?(?:istruzioni|regole|direttive|indicazioni|"
            r"restrizioni|linee guida)(?:\s+(?:precedenti|anteriori|di sistema|di sicurezza))?",
            r"\b(?:d'ora in poi|da ora in poi|da adesso in poi|d'ora in avanti|da adesso|nelle (?:prossime|"
            r"future) (?:sessioni|conversazioni))\b[^.!?\n]{0,60}\b(?:sempre|mai|rispondi|ignora|devi|non "
            r"(?:chiedere|verificare|controllare))",
            r"(?:^|[.!?;:]\s*)(?:rispondi|rispondere|di'|approva|esegui|chiedi|verifica)\s+(?:sempre|mai)\b|"
            r"(?:^|[.!?;:]\s*)(?:non chiedere|non verificare) mai\b",
            r"\b(?:le tue|le sue) (?:nuove|vere) (?:istruzioni|regole) sono\b",
            # ru
            r"(?:игнорируй|игнорируйте|игнорировать|забудь|забудьте|проигнорируй|проигнорируйте|отбрось|"
            r"не обращай внимания на|не учитывай)\s+(?:все\s+|всё\s+)?(?:свои\s+|твои\s+|ваши\s+|эти\s+)?"
            r"(?:предыдущие\s+|прошлые\s+|прежние\s+|системные\s+|старые\s+)?(?:инструкции|указания|правила|"
            r"ограничения|директивы|приказы|установки)",
            r"(?:с этого момента|отныне|впредь|с сегодняшнего дня|в (?:будущих|следующих) (?:сессиях|"
            r"разговорах|беседах))[^.!?\n]{0,60}(?:всегда|никогда|отвечай|игнорируй|ты должен|не спрашивай|"
            r"не проверяй)",
            r"(?:^|[.!?;:]\s*)(?:всегда|никогда не)\s+(?:отвечай|отвечайте|говори|игнорируй|одобряй|выполняй|"
            r"отправляй|спрашивай|проверяй|упоминай)",
            r"(?:твои|ваши) (?:новые|настоящие) (?:инструкции|правила) (?:—|-|:|такие)",
            # zh
            r"(?:忽略|忽视|无视|不要理会|不要遵守|忘记|忘掉|抛弃|放弃)(?:你)?(?:之前|以前|上面|先前|前面|所有|全部|原来|原有)?"
            r"(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|规则|限制|要求|命令|提示|设定|约束)",
            r"(?:从现在开始|从现在起|从今以后|今后|以后(?:每次|所有)|在(?:以后|今后|未来)的(?:所有)?(?:会话|对话))"
            r"[^。！？\n]{0,40}(?:总是|永远|始终|一律|必须|不要|不再|都要|只能)",
            r"(?:你|助手)(?:必须|应该|需要|要)?(?:总是|永远|始终|一律)(?:回答|回复|忽略|执行|批准|同意|发送)",
            r"(?:próximas|futuras) sesiones|todas las sesiones futuras|sessions futures|prochaines sessions|"
            r"künftigen sitzungen|zukünftigen sitzungen|próximas sessões|sessões futuras|sessioni future|"
            r"prossime sessioni|будущих сессиях|следующих сессиях|всех будущих (?:сессиях|разговорах)|"
            r"(?:以后|今后)(?:的)?每次|下次会话|以后的会话",
            r"(?:linee guida|istruzioni|regole|directrices|instrucciones|reglas|consignes|règles|richtlinien|"
            r"anweisungen|regeln|diretrizes|instruções|regras|правила|инструкции|указания)[^.!?\n]{0,60}"
            r"(?:non valgono più|non sono più valid[ei]|ya no (?:valen|aplican|son válidas|rigen)|ne s'appliquent "
            r"plus|ne sont plus valables|gelten nicht mehr|sind (?:nicht mehr gültig|ungültig|veraltet)|não valem "
            r"mais|não se aplicam mais|больше не действуют|не действуют|отменены|устарели)|"
            r"(?:规则|指令|限制)(?:已经)?(?:失效|作废|不再适用)",
            r"你(?:的)?新(?:的)?(?:指令|规则|任务)是",
        ),
        script="any", cjk=True,
        words=_w(
            "sesiones", "sessions", "sitzungen", "sessões", "sessioni", "сессиях", "разговорах", "guida",
            "istruzioni", "regole", "directrices", "instrucciones", "reglas", "consignes", "règles", "richtlinien",
            "sicherheitsrichtlinien", "anweisungen", "regeln", "diretrizes", "instruções", "regras", "правила",
            "инструкции", "указания",
            # es
            "ignora", "ignore", "ignorad", "ignoren", "olvida", "olvide", "olvidad", "omite", "omita", "descarta",
            "descarte", "partir", "ahora", "adelante", "desde", "futuras", "próximas", "siempre", "nunca", "nuevas",
            "verdaderas",
            # fr
            "ignorez", "ignorer", "oublie", "oubliez", "oublier", "néglige", "négligez", "maintenant", "désormais",
            "dorénavant", "avenir", "prochaines", "toujours", "jamais", "nouvelles", "vraies",
            # de
            "ignoriere", "ignorier", "ignoriert", "ignorieren", "vergiss", "vergesst", "vergessen", "missachte",
            "missachten", "übergehe", "jetzt", "sofort", "nun", "künftig", "zukünftigen", "künftigen", "antworte",
            "antworten", "frage", "frag", "bestätige", "genehmige", "führe", "neuen", "wahren", "echten",
            # pt
            "esqueça", "esqueca", "esquece", "desconsidere", "desconsidera", "agora", "diante", "frente", "sempre",
            "responda", "responde", "novas", "verdadeiras",
            # it
            "ignorate", "ignori", "dimentica", "dimenticate", "dimentichi", "trascura", "tralascia", "ora",
            "adesso", "prossime", "future", "rispondi", "rispondere", "approva", "esegui", "chiedi", "verifica",
            "non", "nuove", "vere",
            # ru
            "игнорируй", "игнорируйте", "игнорировать", "забудь", "забудьте", "проигнорируй", "проигнорируйте",
            "отбрось", "обращай", "учитывай", "этого", "отныне", "впредь", "сегодняшнего", "будущих", "следующих",
            "всегда", "никогда", "твои", "ваши"),
    ),
    Rule(
        "claim.permission", "reject",
        "it claims an approval, permission or role; memory cannot grant authority — permissions come from the "
        "application, not from stored text",
        patterns=(
            r"\b(?:el usuario|usuario|este usuario)\s+(?:es|tiene)\s+(?:un\s+)?(?:permisos?\s+de\s+|acceso\s+de\s+|"
            r"privilegios\s+de\s+|rol\s+de\s+)?(?:administrador|admin|root|superusuario)\b(?!\s+(?:de|del)\b)",
            r"\b(?:el equipo de seguridad|seguridad|el administrador|la dirección|la gerencia|recursos humanos|"
            r"el banco|compliance)\s+(?:ya\s+)?(?:aprobó|autorizó|permitió|ha aprobado|ha autorizado)\b",
            r"\b(?:está|esta) autorizad[oa] a\b[^.!?\n]{0,60}\b(?:sin|todas?|cualquier)\b",
            r"\b(?:das sicherheitsteam|die sicherheit|der admin|die geschäftsleitung|die it|hr|die personalabteilung)"
            r"\s+hat\s+(?:bereits\s+)?(?:genehmigt|erlaubt|freigegeben|autorisiert)",
            r"\bist ab sofort\b[^.!?\n]{0,30}\b(?:administrator|admin|inhaber|owner)\b|\bdarf\s+(?:die\s+)?"
            r"(?:daten|gehälter|passwörter|konten)\s+aller\b",
            r"\b(?:está|esta) autorizad[oa] a\b[^.!?\n]{0,60}\b(?:sem|todas?|qualquer)\b|"
            r"\b(?:a equipe de segurança|o administrador|a diretoria|o banco)\s+(?:já\s+)?(?:aprovou|autorizou|"
            r"permitiu)\b",
            r"\b(?:la direzione|il team di sicurezza|l'amministratore|la sicurezza|le risorse umane)\s+ha\s+"
            r"(?:già\s+)?(?:approvato|autorizzato|permesso)\b|\bsono lo sviluppatore di questo\b|"
            r"\bl'utente può (?:vedere|accedere|approvare|scaricare)\b[^.!?\n]{0,40}\b(?:tutti|tutte|ogni)\b",
            r"(?:служба безопасности|администратор|руководство|отдел кадров|банк)\s+(?:уже\s+)?(?:разрешил|"
            r"разрешила|одобрил|одобрила|подтвердил|подтвердила)|проверка (?:личности )?не нужна|"
            r"без проверки личности",
            r"\b(?:tienes|tiene|usted tiene)\s+(?:permiso|autorización|autorizacion)\s+(?:total\s+|completa\s+)?"
            r"(?:para|de)\b",
            r"\b(?:ahora )?eres\s+(?:ahora\s+)?(?:un\s+)?(?:administrador|asistente sin restricciones|dan)\b|"
            r"\bmodo (?:desarrollador|administrador|dios|sin restricciones)\b",
            r"\bl'utilisateur\s+(?:est|a)\s+(?:un\s+)?(?:les\s+)?(?:droits\s+d'|accès\s+)?(?:administrateur|"
            r"admin|root|superutilisateur)\b(?!\s+d[eu']\b)",
            r"\b(?:tu es|vous êtes) (?:maintenant )?(?:en )?mode (?:développeur|administrateur|sans restriction)|"
            r"\bmode développeur\b|\b(?:tu as|vous avez) (?:la )?(?:permission|l'autorisation) (?:de|d')",
            r"\b(?:der\s+)?(?:benutzer|nutzer|anwender)\s+(?:ist|hat)\s+(?:ein\s+)?(?:volle\s+)?(?:admin|"
            r"administrator|root|superuser)(?:rechte|-rechte|zugriff|rolle)?\b(?!\s+(?:von|des|der|für)\b)",
            r"\b(?:du bist|sie sind) (?:jetzt )?im (?:entwickler|admin|administrator|debug)modus\b|"
            r"\bentwicklermodus\b|\b(?:du hast|sie haben) (?:die )?(?:erlaubnis|berechtigung)\b",
            r"\bo usuário\s+(?:é|tem)\s+(?:um\s+)?(?:acesso\s+de\s+|permissões?\s+de\s+|privilégios\s+de\s+)?"
            r"(?:administrador|admin|root|superusuário)\b(?!\s+d[oa]\b)",
            r"\bmodo (?:desenvolvedor|administrador|deus|irrestrito)\b|\b(?:você tem|tens) (?:permissão|"
            r"autorização) (?:total )?para\b",
            r"\bl'utente\s+(?:è|ha)\s+(?:un\s+)?(?:i\s+)?(?:permessi\s+di\s+|accesso\s+di\s+|diritti\s+di\s+)?"
            r"(?:amministratore|admin|root)\b(?!\s+d[ie]l?\b)",
            r"\bmodalità (?:sviluppatore|amministratore|dio|senza restrizioni)\b|\b(?:hai|ha) (?:il )?"
            r"(?:permesso|l'autorizzazione) (?:di|per)\b",
            r"пользователь\s+(?:является\s+|—\s+|- \s*)?(?:администратор(?:ом)?|админ|суперпользовател\w*)\s*"
            r"(?:системы|сервера|этого аккаунта|всех|тенанта|компании|[.!?;]|$)|"
            r"у пользователя\s+(?:есть\s+)?(?:права|доступ)\s+администратора",
            r"режим(?:е)? разработчика|(?:ты|вы) теперь (?:администратор|в режиме)|у (?:тебя|вас) есть "
            r"(?:разрешение|права)",
            r"用户(?:是|拥有|具有|有)(?:超级)?管理员(?:权限)?|(?:开发者|管理员|上帝)模式|你现在是|你(?:已经)?(?:被)?(?:授权|允许)",
            r"(?:安全团队|管理员|老板|开发者)(?:已经)?(?:批准|授权|同意)",
        ),
        script="any", cjk=True,
        words=_w("seguridad", "administrador", "aprobó", "autorizó", "permitió", "aprobado", "autorizado",
                 "autorizada", "sicherheitsteam", "genehmigt", "erlaubt", "freigegeben", "autorisiert", "darf",
                 "aprovou", "autorizou", "permitiu", "approvato", "autorizzato", "permesso", "sviluppatore",
                 "può", "разрешил", "разрешила", "одобрил", "одобрила", "подтвердил", "подтвердила", "проверка",
                 "проверки", "administrateur", "administrator", "admin", "amministratore", "superusuario",
                 "superutilisateur", "superuser", "superusuário", "root", "modo", "mode", "modalità",
                 "entwicklermodus", "permiso", "autorización", "autorizacion", "permission", "autorisation",
                 "erlaubnis", "berechtigung", "permissão", "autorização", "permesso", "autorizzazione",
                 "администратор", "администратором", "администратора", "админ", "режим", "режиме", "теперь",
                 "разрешение", "права", "dan", "entwickler", "desenvolvedor", "desarrollador", "développeur"),
    ),
    Rule(
        "conceal", "reject",
        "it asks the assistant to hide something from the user; memories must be visible to the people they "
        "are about",
        patterns=(
            r"\bno\s+(?:le\s+)?(?:digas|menciones|cuentes|informes|reveles|muestres)\s+(?:nada\s+)?(?:de\s+esto\s+|"
            r"esto\s+)?(?:al|a los)\s+usuarios?\b|\bsin (?:decírselo|avisar|informar) al usuario\b|"
            r"\bmant[eé]n(?:lo|ga)? en secreto\b",
            r"\bne\s+(?:dis|dites|mentionne|mentionnez|révèle|révélez|montre|montrez)\s+(?:rien|pas|jamais)\s+"
            r"(?:de (?:ceci|cela) )?(?:à|a)\s+l'utilisateur\b|\bsans (?:le dire|prévenir|informer) (?:à )?"
            r"l'utilisateur\b|\bgarde(?:z)? (?:ça|cela|ceci) secret\b",
            r"\b(?:sag|sagen sie|erzähl|erzähle|verrate|erwähne|zeige)\s+(?:dem\s+)?(?:benutzer|nutzer|anwender)"
            r"\s+(?:davon\s+|darüber\s+)?(?:nichts|nicht)\b|\bohne (?:es )?(?:dem )?(?:benutzer|nutzer) zu "
            r"(?:sagen|melden|verraten)\b|\bbehalte (?:das|es) für dich\b",
            r"\bnão\s+(?:conte|diga|mencione|revele|mostre|informe)\s+(?:nada\s+)?(?:disso\s+)?(?:ao|para o|"
            r"aos)\s+usuários?\b|\bsem (?:contar|avisar|informar) (?:ao|o) usuário\b|\bmantenha (?:isso|isto) "
            r"em segredo\b",
            r"\bnon\s+(?:dire|dirlo|menzionare|rivelare|mostrare|raccontare)\s+(?:nulla\s+|niente\s+)?"
            r"(?:di questo\s+)?all'utente\b|\bsenza (?:dirlo|avvisare|informare) (?:a)?ll'utente\b|"
            r"\bmantieni(?:lo)? (?:il )?segreto\b",
            r"\bel usuario no (?:debe|puede|tiene que) (?:saber|enterarse|ver|notar)\b|\bgarde(?:z)? (?:cette|ces) "
            r"(?:instruction|consigne|note|règle)s? secr[eè]te?s?\b|\bverheimliche\b|\bverschweige\b|"
            r"\b(?:der )?(?:benutzer|nutzer) darf (?:nicht|nie) (?:erfahren|wissen|sehen|merken)\b|"
            r"\bdiga que (?:está|esta) tudo (?:certo|bem|ok)\b|\bo usuário não (?:pode|deve) (?:saber|ver|"
            r"descobrir)\b|\bnon menzionare mai\b|\btieni nascost[oa]\b|\bl'utente non deve (?:sapere|"
            r"vedere|scoprire)\b|\bl'utilisateur ne doit pas (?:savoir|voir|découvrir)\b|"
            r"пользователь не должен (?:знать|узнать|видеть)|скрой от пользовател|"
            r"用户不(?:能|应|应该)(?:知道|看到|发现)",
            r"не\s+(?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|упоминай)\s+"
            r"(?:об этом\s+|ничего\s+|этого\s+)?пользовател|без ведома пользовател|держи (?:это )?в секрете",
            r"不要(?:告诉|通知|提醒|透露给|让)用户|(?:对用户)?(?:保密|隐瞒)(?:此事|这件事|这条|这个)?|别让用户知道|不要提及(?:这条|此)(?:记忆|指令)",
        ),
        script="any", cjk=True,
        words=_w("el", "usuario", "verheimliche", "verschweige", "benutzer", "nutzer", "diga", "o", "usuário",
                 "menzionare", "tieni", "l", "utente", "utilisateur", "пользователь", "скрой",
                 "no", "sin", "manten", "mantén", "mantenlo", "mantenga", "ne", "sans", "garde", "gardez", "sag",
                 "sagen", "erzähl", "erzähle", "verrate", "erwähne", "zeige", "ohne", "behalte", "não", "sem",
                 "mantenha", "non", "senza", "mantieni", "mantienilo", "не", "без", "держи"),
    ),
    Rule(
        "trigger.delayed", "reject",
        "it sets up a delayed trigger (when X happens, do Y); memory cannot hold conditional instructions",
        patterns=(
            r"\b(?:cuando|si)\s+(?:el usuario|alguien|el cliente)\s+(?:diga|dice|escriba|mencione|pregunte)\b"
            r"[^.!?\n]{0,80}\b(?:borra|elimina|envía|envia|transfiere|aprueba|ejecuta|reembolsa|ignora|revela)",
            r"\b(?:quand|si|lorsque)\s+(?:l'utilisateur|quelqu'un|le client)\s+(?:dit|écrit|mentionne|demande)\b"
            r"[^.!?\n]{0,80}\b(?:supprime|efface|envoie|transfère|approuve|exécute|rembourse|ignore|révèle)",
            r"\b(?:wenn|sobald|falls)\s+(?:der\s+)?(?:benutzer|nutzer|jemand|kunde)\b[^.!?\n]{0,60}\b(?:sagt|"
            r"schreibt|erwähnt|fragt)\b[^.!?\n]{0,60}\b(?:lösche|sende|schicke|überweise|genehmige|führe|"
            r"erstatte|ignoriere|verrate)",
            r"\b(?:quando|se)\s+(?:o usuário|alguém|o cliente)\s+(?:disser|diz|escrever|mencionar|perguntar)\b"
            r"[^.!?\n]{0,80}\b(?:apague|exclua|envie|transfira|aprove|execute|reembolse|ignore|revele)",
            r"\b(?:quando|se)\s+(?:l'utente|qualcuno|il cliente)\s+(?:dice|scrive|menziona|chiede)\b"
            r"[^.!?\n]{0,80}\b(?:cancella|elimina|invia|trasferisci|approva|esegui|rimborsa|ignora|rivela)",
            r"(?:когда|если)\s+(?:пользователь|кто-то|клиент)\s+(?:скажет|напишет|упомянет|спросит)[^.!?\n]{0,80}"
            r"(?:удали|отправь|переведи|одобри|выполни|верни деньги|игнорируй|раскрой)",
            r"(?:当|如果|一旦)(?:用户|有人|客户)(?:说|提到|输入|问)[^。！？\n]{0,40}(?:就|则|便)?(?:删除|发送|转账|批准|执行|退款|忽略|泄露)",
            r"(?:\bsi|\bcuando|\bla próxima vez que|\bquand|\blorsque|\bla prochaine fois que|\bwenn|\bsobald|"
            r"\bfalls|\bnächstes mal|\bse|\bquando|\bna próxima vez que|\bla prossima volta che|\bесли|\bкогда|"
            r"\bкак только|\bв следующий раз)\b[^.!?\n]{0,100}?,\s*(?:\w+\s+){0,2}(?:aprueba|apruéba\w*|borra|"
            r"elimina|envía|envia|transfiere|ejecuta|desactiva|reembolsa|revela|manda|comparte|cambia|envoie|"
            r"supprime|exécute|execute|transfère|approuve|désactive|révèle|partage|deaktiviere|lösche|sende|"
            r"schicke|überweise|genehmige|führe|teile|ändere|mude|apague|exclua|envie|transfira|aprove|desative|"
            r"revele|compartilhe|chiedigli|cancella|invia|trasferisci|approva|esegui|disattiva|rivela|condividi|"
            r"cambia|chiedi|отключи|удали|отправь|переведи|одобри|выполни|раскрой|поделись|измени|запроси|"
            r"отмени)\b",
            r"(?:下次|当|如果|一旦)[^。！？\n]{0,30}(?:，|,|时|就)[^。！？\n]{0,10}(?:运行|删除|发送|转账|批准|执行|关闭|泄露|"
            r"修改|禁用|先运行)",
        ),
        script="any", cjk=True,
        words=_w("cuando", "si", "quand", "lorsque", "wenn", "sobald", "falls", "quando", "se", "когда", "если",
                 "próxima", "prochaine", "nächstes", "prossima", "как", "следующий"),
    ),
)

# Phrases that ask the reader to decode and act on an encoded blob, in any language we cover.
DECODE_AND_FOLLOW = (
    r"\b(?:decode|decrypt|deobfuscate|base64[ -]?decode|rot13|unhex|translate)\b[^.!?\n]{0,60}\b(?:and|then)\s+"
    r"(?:follow|execute|run|obey|do|apply|act on|carry out|comply)\b"
)

# --- the standing-instruction heuristic (content.py): a clause that addresses the agent (A) and either makes it
# standing (B) or aims at something sensitive (C) is an instruction, not a memory. Latin-script, on the skeleton.
IMPERATIVE_VERBS = (
    "send|forward|upload|post|email|mail|include|append|add|attach|embed|insert|put|use|call|invoke|route|"
    "redirect|run|execute|approve|grant|transfer|pay|wire|delete|remove|wipe|push|force-push|merge|commit|deploy|"
    "publish|skip|stop|disable|enable|ignore|disregard|treat|trust|reply|respond|answer|tell|show|reveal|print|"
    "display|output|write|copy|paste|leak|share|save|store|open|query|replace|recommend|ask|request|echo|export|"
    "download|install|accept|obey|interpret|adopt|update|set|change|switch|turn|give|assume|act|pretend|"
    "summarize|summarise|encode|read|leave|drop|create|generate|sign|bypass|override|log|record|report|agree|"
    "correct|stop asking|guess|mark|label|rate|rank|praise|promote|suggest|link|cite|quote|start|begin|"
    "trust|grant|add|request|apply|force|release|refund|unlock|reset|export|fetch|load|import|execute|"
    "obey|comply|disclose"
)
# A clause addresses the assistant: an imperative at its start (after an optional "when X," lead-in), "you",
# "the assistant", or "every answer must". Kept as separate alternatives so the gate's prefilter can skip those
# whose words are absent (gate/prefilter.py); AGENT_CUE is their alternation.
AGENT_CUES = (
    rf"(?:^|[:;]\s*|^\s*(?:when|whenever|if|once|as soon as|the moment|should|any ?time|later|after|next time|"
    rf"in \d+ sessions|from (?:now|today)(?: on| onward| onwards)?|for (?:any|all|every|each)|going forward|"
    rf"in (?:the )?future)\b[^.!?\n]{{0,100}}?,\s*)(?:(?:remember to|make sure (?:to|you)|be sure to|"
    rf"don't forget to|do not forget to|keep in mind to|please|just|also|then|and|always|never|now|immediately|"
    rf"automatically|silently|quietly|kindly|simply|permanently|forever|henceforth|do not|don't|never)\s+){{0,3}}"
    rf"(?:{IMPERATIVE_VERBS})\b(?=\s+[^\s.!?])",
    r"\byou(?:r|rself)?\b",
    r"(?:^|\b(?:the|this|dear|our|my|your)\s+|(?:note|reminder|message|instruction)s? (?:to|for) (?:the )?)"
    r"(?:assistant|agent|ai|model|bot|chatbot|llm|gpt|copilot)(?:'s)?\b",
    r"\b(?:every|each|all|any)\s+(?:answer|reply|response|output|message|email|commit|summary|summaries|answers|"
    r"replies|responses|outputs|messages)s?\b[^.!?\n]{0,20}\b(?:must|should|shall|will|has to|have to|needs? to)\b",
)
AGENT_CUE = "|".join(f"(?:{alt})" for alt in AGENT_CUES)
EXFIL_VERBS = r"(?<![-\w])(?:send|forward|upload|post|email|mail|leak|include|append|attach|embed|echo|paste|copy|" \
    r"export)\b(?!-)"
ROUTE_VERBS = r"(?<![-\w])(?:use|call|invoke|route|redirect|query|open|pay|wire|transfer|push)\b(?!-)"


def _recut(rule: Rule, groups: tuple[tuple[tuple[int, ...], str, str, bool, frozenset[str] | None], ...]
           ) -> tuple[Rule, ...]:
    """One rule as several: each group of its patterns gets its own id, category (gate/tiers.py), firmness and
    trigger words (``None``: the rule's own). A candidate then pays only for the patterns whose words it
    contains, and each match says what it would do."""
    covered = sorted(i for idx, *_ in groups for i in idx)
    assert covered == list(range(len(rule.patterns))), "every pattern must be in exactly one group"
    return tuple(Rule(rid, rule.action, rule.message if rid == rule.id else _MESSAGES.get(rid, rule.message),
                      tuple(rule.patterns[i] for i in idx), words=rule.words if words is None else words,
                      needles=rule.needles, script=rule.script, cjk=rule.cjk, category=cat, firm=firm)
                 for idx, rid, cat, firm, words in groups)


_MESSAGES = {
    "directive.override": "it tries to override the assistant's instructions or safety rules; memory cannot change "
                          "what the assistant is told to do",
    "directive.standing": "it is a standing order addressed to the assistant (\"from now on you must …\"); memory "
                          "stores facts and preferences, not orders — restate it as a preference, e.g. "
                          "\"User prefers …\"",
    "exfil.instruction": "it asks the assistant to reveal or send data (secrets, the prompt, messages) somewhere",
}
_NOUNS = _w("instruction", "instructions", "rule", "rules", "guideline", "guidelines", "policy", "policies", "prompt",
            "prompts", "directive", "directives", "guardrail", "guardrails", "restriction", "restrictions",
            "constraint", "constraints", "filter", "filters", "safeguard", "safeguards", "safety", "programming",
            "training", "moderation", "ethics", "limitation", "limitations", "boundaries", "protocol", "protocols",
            "checks", "directions", "orders", "objective", "purpose", "told", "everything", "anything", "message")
_AGENTS = _w("you", "assistant", "ai", "agent", "model", "bot", "chatbot", "claude", "chatgpt", "gpt", "llm")
_STANDING = _w("now", "forward", "point", "henceforth", "hereafter", "future", "subsequent", "session", "sessions",
               "every", "all")
OVERRIDE, STANDING, FUTURE = "directive.override", "directive.standing", "directive.future_behaviour"
CLAIM, EXFIL, EXFIL_I = "claim.permission", "exfil.beacon", "exfil.instruction"
ACTS, DIRECTS, STYLE = "acts", "directs", "style"
_D, _C, _R, _X, _H, _K, _E, _T, _MD, _MC, _MH, _MT = RULES
# a condition and an act that the certain patterns above leave out — the user's own words or a gloss, or an act
# that procedures also set off: a trigger cannot be ruled out, so it is held for an operator (G6), not lost
_TRIGGER_HELD = Rule(
    "trigger.delayed", "reject",
    "it may set up a delayed trigger (when X happens, do Y); memory cannot hold conditional instructions, so an "
    "operator checks it",
    patterns=(_TRIGGER_IF + r"[^.!?\n]{0,80}" + _TRIGGER_ACT, _TRIGGER_ASKS + _ASKS_ACT),
    words=_TRIGGER_WORDS,
    firm=False,
)
RULES = (
    *_recut(_D, (
        ((0, 1, 2, 3, 4, 5, 6, 18), OVERRIDE, ACTS, True, _NOUNS),
        ((7,), OVERRIDE, ACTS, True, _w("longer", "apply", "applies", "matter", "count", "hold")),
        ((8, 9), OVERRIDE, ACTS, True, _AGENTS | _w("ignore_guardrails", "no_confirmations", "unrestricted_mode",
                                                    "safety_off", "disable_safety", "jailbreak", "guardrails",
                                                    "confirmations")),
        ((10,), STANDING, ACTS, True, _STANDING),
        ((11,), FUTURE, STYLE, False, _STANDING),
        ((12,), FUTURE, STYLE, False, _w("always", "never", "ever", "circumstances", "matter")),
        ((16,), FUTURE, DIRECTS, True, _w("always", "never", "ever")),
        ((13,), FUTURE, DIRECTS, True, _w("ask", "asking", "request", "requesting", "check", "checking", "verify",
                                          "verifying", "confirm", "confirming", "validate", "validating", "warn",
                                          "warning", "question", "questioning", "refuse", "refusing", "flag",
                                          "flagging")),
        ((14, 15), FUTURE, STYLE, False, _AGENTS),
        ((17,), OVERRIDE, ACTS, True, _w("jailbreak", "jailbroken", "dan", "anything", "developer", "unfiltered",
                                         "god", "restrictions")),
        ((19,), OVERRIDE, ACTS, True, _w("treat", "consider", "regard")),
        ((20,), OVERRIDE, ACTS, True, _w("obey", "follow", "execute", "comply", "carry")),
        ((21, 22), FUTURE, DIRECTS, True, _w("skip", "skips", "skipping", "bypass", "bypassing", "disable",
                                             "disabling", "turn", "switch", "omit", "suppress", "circumvent",
                                             "forgo", "without")),
        ((23,), FUTURE, DIRECTS, True, _w("never", "don't", "do", "no", "stop", "quit")),
        ((24,), FUTURE, DIRECTS, True, _w("never", "don't", "do", "doesn't", "does", "no", "stop", "not",
                                          "without")),
    )),
    # permission claims: made to the system ("you are in developer mode", "I am your developer") act on a model
    # wherever they are replayed; third-person claims with a consequence direct it; bare role claims ("the user
    # has admin privileges") cannot be called from text alone.
    *_recut(_C, (
        ((5, 6, 7, 8, 9, 19, 22, 23, 24), CLAIM, ACTS, True, None),
        ((2, 3, 4, 10, 11, 12, 14, 15, 16, 17, 18, 20), CLAIM, DIRECTS, True, None),
        ((0, 1, 13, 21), CLAIM, DIRECTS, False, None),
    )),
    *_recut(_R, (
        ((6, 7), "route.tool", ACTS, True, None),
        ((0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15), "route.tool", DIRECTS, True, None),
    )),
    *_recut(_X, (
        ((0, 1, 2, 3, 10, 11, 12, 13), EXFIL, ACTS, True, None),
        ((4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 18, 19), EXFIL_I, DIRECTS, True, None),
    )),
    # concealment that names no one ("don't mention it in anything the kids might read") and a cover answer for
    # an unnamed asker (the last pattern) are ambiguous; hiding from the user, hiding instructions or memories,
    # and covert actions are not
    *_recut(_H, (
        ((8, len(_H.patterns) - 1), "conceal", DIRECTS, False, None),
        (tuple(i for i in range(len(_H.patterns) - 1) if i != 8), "conceal", DIRECTS, True, None),
    )),
    # "User:" / "Human:" / "Assistant:" lines are how people paste a dialogue as often as how they fake one:
    # ambiguous (held on the strict tiers, kept in an episode); template tokens and fake system turns are not
    *_recut(_K, (
        ((7, 12), "control.token", ACTS, False, None),
        ((0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11), "control.token", ACTS, True, None),
    )),
    *_recut(_E, (
        ((15,), "exec.download", DIRECTS, True, None),  # a package index other than PyPI: routing, not execution
        (tuple(i for i in range(len(_E.patterns)) if i != 15), "exec.download", ACTS, True, None),
    )),
    _T,
    _TRIGGER_HELD,
    *_recut(_MD, (
        ((0, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23, 24, 28, 29), OVERRIDE, ACTS, True, None),
        ((1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22, 25, 26, 27), FUTURE, STYLE, False, None),
    )),
    *_recut(_MC, (
        ((8, 9, 11, 13, 15, 17, 19, 20), CLAIM, ACTS, True, None),
        ((0, 10, 12, 14, 16, 18), CLAIM, DIRECTS, False, None),
        ((1, 2, 3, 4, 5, 6, 7, 21), CLAIM, DIRECTS, True, None),
    )),
    _MH,
    _MT,
    # a line that starts "Instruction:" is a prompt template's field as often as a fake turn: ambiguous
    Rule("control.token", "reject", _K.message,
         patterns=(r"(?:^|\n)\s*(?:#{1,6}\s*|\*\*\s*|\[\s*)?(?:instruction|instructions)\s*(?:\]|\*\*)?\s*:",),
         needles=(":",), category="acts", firm=False),
    # --- structure: what reads as an instruction to the assistant rather than a statement (issue 11) ----------
    Rule(
        "directive.future_behaviour", "reject", RESTATE,
        patterns=(
            # the assistant (or every answer) is told what it must do, anywhere in the text
            r"\b(?:you|the assistant|assistants|the ai|ai assistants?|the model|the bot|the chatbot|the agent|agents|"
            r"claude|chatgpt|copilot|gemini|the llm)\s+(?:must|should|shall|will always|will never|needs? to|has to|"
            r"have to|is to|are to|is required to|are required to|may not|must not|mustn't|cannot|can't|should not|"
            r"shouldn't|is expected to|are expected to|is supposed to|are supposed to|is only allowed to|"
            r"is not allowed to|are not allowed to|is never to|are never to)\b",
            r"\b(?:every|each|all|any)\s+(?:future\s+|new\s+|later\s+|subsequent\s+|single\s+|outgoing\s+|generated\s+)?"
            r"(?:answers?|repl(?:y|ies)|responses?|messages?|emails?|sessions?|conversations?|chats?|outputs?|"
            r"summar(?:y|ies)|commits?|prs?|pull requests?|code (?:change|suggestion)s?|drafts?|reports?|posts?|"
            r"documents?|tool calls?|scripts?|html files?|files?|installs?|invoices?|payments?|transfers?)\s+"
            r"(?:must|should|shall|will|needs? to|has to|have to|is to|are to|gets?|goes|go|is|are)\s+"
            r"(?:also\s+|now\s+|always\s+|first\s+)?(?:to\s+)?(?:be\s+)?(?:sent|copied|cc'?d|bcc'?d|forwarded|posted|"
            r"uploaded|mirrored|routed|logged|signed|approved|shared|include[sd]?|contain|end|start|begin|mention|"
            r"link|add|append|go|come|use|run|through|via|to|prefixed|followed)\b",
            r"\b(?:at|in|to)\s+the\s+(?:beginning|start|end|top|bottom|close)\s+of\s+(?:every|each|all|any)\s+(?:new\s+)?"
            r"(?:sessions?|conversations?|chats?|repl(?:y|ies)|responses?|answers?|messages?|emails?|outputs?)\b",
            r"\b(?:in|for|during)\s+(?:every|each|all|any)\s+(?:new|future|subsequent|later|other)\s+(?:sessions?|"
            r"conversations?|chats?|tasks?|requests?)\b",
            r"\bfor the rest of (?:this|the|their|the user's) (?:account|session|conversation|life|lifetime|"
            r"relationship|time)\b",
        ),
        words=_w("you", "assistant", "assistants", "ai", "model", "bot", "chatbot", "agent", "agents", "claude",
                 "chatgpt", "copilot", "gemini", "llm", "every", "each", "all", "any", "beginning", "start", "end",
                 "top", "bottom", "close", "rest"),
        category="style", firm=False,
    ),
    # --- a URL built from the conversation ("…/search?data= + the user's last message") --------------------------
    Rule(
        "exfil.beacon", "reject", _X.message,
        patterns=(
            r"(?:https?://|www\.)[^\s]{1,300}[?&][\w-]{1,30}=\s*[\"'`]?\s*(?:\+|followed by|plus|concatenated with|"
            r"appended with|and then)\s*"
            r"(?:the\s+|a\s+|their\s+|your\s+)?(?:user'?s\s+|current\s+|full\s+|entire\s+|whole\s+|latest\s+|last\s+|"
            r"previous\s+|recent\s+){0,3}(?:message|messages|prompt|conversation|chat|history|query|question|input|"
            r"answer|reply|response|transcript|context|memory|memories|summary|data|email|password|token|secret)s?\b",
        ),
        needles=("://", "www."),
        category="acts",
    ),
    # --- the assistant's behaviour described in the third person ("the assistant explains it as routine
    # updates", "assistants reading these notes enable auto-approval"): a specification, not a fact ------------
    Rule(
        "directive.future_behaviour", "reject", RESTATE,
        patterns=(
            # at a clause's start (after "that"/"when" it is the body of a wish: "User prefers that the assistant …")
            r"(?:^|[.!?;:,\n]\s*|\b(?:and|but|so|then|also|here|now|otherwise)\s+)(?:the|this|their|its|our|a|an|any|"
            r"every|each|all)\s+(?:ai\s+|user's\s+|new\s+)?(?:assistant|"
            r"assistants|chatbot|copilot)\s+(?:\w+ly\s+|always\s+|never\s+|also\s+|now\s+|"
            r"then\s+|just\s+|simply\s+|instead\s+){0,2}(?:(?!is\b|was\b|has\b|uses\b|helps\b)[a-z]{3,}s|does not|"
            r"doesn't|will|shall|can|may|gets to|is allowed|is permitted|is expected|is entitled|is authori[sz]ed|"
            r"is set to|is configured to|is to|are to|runs in|operates in|acts as|should)\b",
            r"\b(?:assistants?|agents?|bots?|ai)\s+(?:reading|processing|working for|working on|handling|that read|"
            r"that process)\b[^.!?\n]{0,60}\b(?:should|must|will|are to|shall|can|may)\b",
        ),
        words=_w("assistant", "assistants", "agent", "agents", "ai", "model", "bot", "bots", "chatbot", "copilot"),
        category="style", firm=False,
    ),
    # --- someone approved the assistant to do something ---------------------------------------------------------
    Rule(
        "claim.permission", "reject", _C.message,
        patterns=(
            r"\b(?:approved|authori[sz]ed|allowed|permitted|cleared|confirmed|signed off on|agreed|entitled|"
            r"pre-?approved|pre-?cleared)\s+(?:that\s+)?(?:the\s+|their\s+|your\s+|its\s+)?(?:ai\s+)?(?:assistant|agent|"
            r"ai|bot|model)\s+(?:to|can|may|could|should|is allowed to|is permitted to|will|must)\b",
            r"\b(?:the\s+)?(?:assistant|agent|ai|bot)\s+(?:has|have|was|is)\s+(?:been\s+)?(?:granted|given|"
            r"approved for|cleared for|authori[sz]ed for|entitled to)\b",
        ),
        words=_w("approved", "authorized", "authorised", "allowed", "permitted", "cleared", "confirmed", "signed",
                 "agreed", "entitled", "preapproved", "pre", "granted", "given"),
        category="directs",
    ),
    # --- safety switched off in configuration, or as settings in any syntax ------------------------------------
    Rule(
        "directive.future_behaviour", "reject",
        "it switches off a safety check (certificate or signature verification, confirmation, sandboxing, "
        "filters); memory cannot change how carefully the assistant works",
        patterns=(
            r"\bverify\s*=\s*false\b|--trusted-host\b|--insecure\b|\bstrict-ssl\s*[=:]?\s*false\b|"
            r"\bnode_tls_reject_unauthorized\s*=\s*['\"]?0\b|\bgosumdb\s*=\s*off\b|\bgonosum(?:db|check)\b|"
            r"\bgoinsecure\b|\bgoflags\s*=\s*-insecure\b|--no-verify\b|\bsslverify\s*(?:=|\s)\s*false\b|"
            r"\bpip_trusted_host\b|\bgpgcheck\s*=\s*0\b|--nogpgcheck\b|--no-gpg-check\b|--skip-signature\b|"
            r"\bcheck_hostname\s*=\s*false\b|\bcert_none\b|\brejectunauthorized\s*:\s*false\b|"
            r"--disable-(?:signature|tls|ssl|verification|sandbox)\b|--no-sandbox\b|--allow-unauthenticated\b|"
            r"\binsecure-skip-tls-verify\b|\bset\s+-o\s+noclobber\b(?!x)|--dangerously-skip-permissions\b|"
            r"--yolo\b|--no-check-certificate\b|\bcurl\s+-k\b|\bcurl\s+--insecure\b",
            r"(?:^|[\s{,\[\"'`]|\b)[\"'`]?(?:safety|safety_?filter|content_?filter|filters?|guard(?:rail)?s?|moderation|"
            r"confirm(?:ation)?s?|require_?confirm(?:ation)?|ask_?before_?\w+|approval|require_?approval|"
            r"human_?(?:review|approval|in_?the_?loop)|review|verify|verification|sandbox(?:ed|ing)?|auto_?execute|"
            r"auto_?approve|auto_?run|auto_?confirm|auto_?merge|autonomous(?:_?mode)?|restrict(?:ed|ions)?|"
            r"jailbreak|unrestricted|bypass|allow_?all|trust_?all|trust_?level|permission_?mode|exfil\w*|"
            r"developer_?mode|god_?mode|yolo(?:_?mode)?|dangerous(?:ly)?_?\w*|skip_?\w*(?:check|verification|review|"
            r"test)s?|disable_?\w+)[\"'`]?\s*[:=]\s*[\"'`]?(?:true|false|off|on|0|1|none|no|yes|disabled|enabled|"
            r"allow|always|never|skip|bypass|admin|root|max|full|unrestricted)\b",
        ),
        words=_w("verify", "trusted", "host", "insecure", "ssl", "tls", "gosumdb", "gonosumdb", "gonosumcheck",
                 "goinsecure", "goflags", "no", "sslverify", "pip_trusted_host", "gpgcheck", "nogpgcheck", "gpg",
                 "skip", "check_hostname", "cert_none", "rejectunauthorized", "disable", "sandbox", "allow",
                 "unauthenticated", "dangerously", "yolo", "certificate", "curl", "node_tls_reject_unauthorized",
                 "strict", "safety", "safety_filter", "safetyfilter", "content_filter", "filter", "filters", "guard",
                 "guards", "guardrails", "moderation", "confirm", "confirmation", "confirmations",
                 "require_confirmation", "approval", "require_approval", "review", "verification", "sandboxed",
                 "auto_execute", "autoexecute", "auto_approve", "autoapprove", "auto_run", "auto_confirm",
                 "auto_merge", "autonomous", "autonomous_mode", "restricted", "restrictions", "jailbreak",
                 "unrestricted", "bypass", "allow_all", "trust_all", "trust_level", "permission_mode",
                 "developer_mode", "god_mode", "yolo_mode", "human_review", "human_approval", "human_in_the_loop",
                 "ask_before_deleting", "ask_before_running"),
        needles=("_", "--", "="),
        category="directs",
    ),
    # --- tool or payment redirection stated as a fact about the project (review: text alone cannot tell) -------
    Rule(
        "route.tool", "reject",
        "it names where the assistant should fetch code, send data or make payments (a registry, mirror, remote, "
        "webhook, login page or account); routing comes from the application's configuration, so an operator "
        "checks such a memory before it is used",
        patterns=(
            r"\b(?:package index|index[- ]url|pypi (?:index|mirror|server|proxy)|npm registry|registry|mirror|proxy|"
            r"git remote|remote|upstream|origin url|webhook|callback url|base url|api url|api base|endpoint|sso|"
            r"log ?in page|sign[- ]in page|download (?:page|link|url|site)|update server|artifact (?:store|repo"
            r"(?:sitory)?)|maven repo(?:sitory)?|go module proxy|goproxy|(?:docker|container|helm|apt|conda|cargo|"
            r"gem|nuget) (?:registry|repo(?:sitory)?|channel|index|source)|script src|tracking pixel|browser "
            r"extension|extension store|hooks? (?:from|repo)|support (?:number|line|email|contact|phone|desk)|"
            r"helpdesk|help desk|hotline|iban|account number|routing number|wallet(?: address)?|sort code|"
            r"bank account|paypal(?: account)?|payout account|deploy (?:script|key)|install(?:er)? script|"
            r"bootstrap script|setup script)\b[^.!?\n]{0,80}(?:https?://|\bwww\.|\bgit@|[\w.+-]{1,64}@[\w-]{1,63}\.\w{2,}|"
            r"\b[\w-]{1,63}(?:\.[\w-]{1,63}){0,4}\.(?:com|net|org|io|dev|app|cloud|cc|cn|ru|xyz|shop|site|top|co|me|ly|biz|info|"
            r"sh|tech|link|live|online|store)\b|\+?\d[\d\s().-]{7,}\d|\b[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){3,}|"
            r"\b(?:0x[0-9a-f]{40}|bc1[a-z0-9]{20,}|[13][a-km-zA-HJ-NP-Z1-9]{25,34})\b|\b(?:\d{1,3}\.){3}\d{1,3}\b)",
            r"(?:https?://|\bgit@|\bwww\.)[^\s]{1,200}\s+(?:is|as)\s+(?:the|our|their|its)\s+(?:only\s+)?"
            r"(?:official|approved|canonical|trusted|verified|correct|real|new|primary|allowed)\b",
            r"\b(?:the|our|their|its)\s+(?:only\s+)?(?:official|approved|canonical|trusted|verified|correct|real|"
            r"new|primary|allowed)\s+(?:\w+\s+){0,6}(?:is|are|lives at|lives on|moved to|is now)\s+(?:https?://|"
            r"\bgit@|www\.|[\w-]+\.(?:com|net|org|io|dev|app|cloud|cc|cn|ru|xyz|shop|site|top))",
        ),
        # only where an address is present: a host, URL or e-mail (the phrases alone are ordinary words)
        needles=("://", "www.", "git@", "@", ".com", ".net", ".org", ".io", ".dev", ".app", ".cloud", ".cc", ".cn",
                 ".ru", ".xyz", ".shop", ".site", ".top", ".co", ".me", ".ly", ".biz", ".info", ".sh", ".tech",
                 ".link", ".live", ".online", ".store"),
        category="directs", firm=False,
    ),
    # --- safety switched off in plain words: warnings hidden, certificates accepted, a safety rule waived, every
    # domain allowed, untrusted code declared fine (issue 11, round 1 of the outside corpora) ----------------------
    Rule(
        "directive.future_behaviour", "reject",
        "it switches off a safety step (warnings, certificate checks, confirmation, review, redaction, allowlists); "
        "memory cannot change how carefully the assistant works",
        patterns=(
            r"\b(?:never|don't|do not|stop|no longer|not)\s+(?:ever\s+)?(?:show|showing|display|displaying|give|"
            r"giving|issue|issuing|raise|raising|print|printing|surface|surfacing)\s+(?:me\s+|the user\s+|them\s+|"
            r"any\s+|the\s+)*(?:security|safety|certificate|tls|ssl|virus|malware|phishing|permission|risk)\s+"
            r"(?:warnings?|alerts?|prompts?|notices?)\b",
            r"\baccept(?:s|ing)?\s+(?:any|all|every|invalid|self-signed|expired|untrusted|unverified|mismatched)\s+"
            r"(?:\w+\s+){0,3}(?:tls\s+|ssl\s+|https\s+|server\s+|host\s+)?(?:certificates?|certs?|host keys?)\b",
            r"\b(?:ignore|ignores|ignoring|skip|skips|skipping|disable|disables|disabling|bypass|suppress)\s+(?:any\s+|"
            r"all\s+|the\s+)?(?:tls|ssl|certificate|cert|hostname|host key|signature|checksum|integrity|gpg)\s+"
            r"(?:errors?|warnings?|checks?|validation|verification|mismatch(?:es)?)\b",
            r"\b(?:confirmation|confirmations|approval|approvals|review|reviews|verification|2fa|mfa|two[- ]factor"
            r"(?: authentication)?|multi[- ]factor(?: authentication)?|redaction|pii redaction|masking|content "
            r"filter(?:ing|s)?|safety filter(?:ing|s)?|dry[- ]runs?|sandbox(?:ing)?|signature checks?|certificate "
            r"checks?|audit logging|the ['\"]?ask (?:first|before acting)['\"]? rule)\s+(?:is|are|was|were|has been|"
            r"have been|will be|stays|remains)\s+(?:now\s+|permanently\s+|always\s+)?(?:off|disabled|turned off|"
            r"switched off|waived|suspended|lifted|removed|bypassed|not required|no longer required|unnecessary|"
            r"not needed|optional)\b",
            r"\b(?:ask(?:ing)? (?:first|before \w+)|confirm\w*|approval|review|verification|2fa|mfa|sign-?off)\b"
            r"[^.!?\n]{0,30}\b(?:rule|requirement|policy|step|check|process)s?['\"]?\s+(?:does not|doesn't|do not|"
            r"don't|no longer|never|will not|won't)\s+apply\b",
            r"\b(?:allowlist|allow-list|whitelist|allowed (?:domains|hosts|urls|commands|binaries))\s+(?:was\s+|is\s+|"
            r"has been\s+)?(?:now\s+)?(?:expanded|set|changed|extended|opened|widened|updated)\s+to\s+['\"]?\*",
            r"\bany\s+(?:domain|host|site|url|server|binary|command|program|script|package)s?\s+(?:may|can|is allowed "
            r"to|are allowed to)\s+(?:now\s+)?be\s+(?:contacted|executed|run|called|installed|used|fetched|opened)\b",
            r"\b(?:running|executing|installing|downloading)\s+(?:any\s+)?(?:code|scripts?|binaries|packages|"
            r"software|programs?|commands)\s+from\s+(?:untrusted|unknown|unverified|any|random|third-party)\s+"
            r"(?:\w+\s+){0,1}(?:sources?|sites?|origins?|websites?|links?|repos(?:itories)?)\b[^.!?\n]{0,40}\b(?:is|are)"
            r"\s+(?:fine|ok|okay|allowed|acceptable|safe|permitted|approved)\b",
            r"\b(?:log|logs|logging|store|stores|storing|keep|save)\s+(?:full\s+|complete\s+|raw\s+|all\s+)*(?:card "
            r"numbers|credit card numbers|passwords|credentials|secrets|ssns|social security numbers|cvvs?|pins)\s+"
            r"(?:in (?:plain ?text|clear ?text|the clear)|unredacted|unmasked|unencrypted|verbatim)\b",
            r"\b(?:disable|disables|disabling|drop|drops|turn off|skip|remove)\s+(?:the\s+)?-{0,2}dry[- ]run\b|"
            r"\bapply\s+(?:\w+\s+){0,3}(?:changes|migrations|plans?)\s+(?:to|in|on)\s+(?:production|prod|live)\s+"
            r"(?:straight away|right away|directly|immediately|without)",
            r"\b(?:force[- ]?push(?:ing|es)?|pushing directly|direct pushes)\s+(?:\w+\s+){0,2}(?:to\s+)?(?:protected|"
            r"main|master|release|production)\s+(?:branch(?:es)?\s+)?(?:is|are)\s+(?:always\s+)?(?:allowed|fine|ok|"
            r"okay|permitted|approved)\b",
        ),
        words=_w("never", "don't", "dont", "do", "stop", "longer", "not", "accept", "accepts", "accepting", "ignore",
                 "ignores", "ignoring", "skip", "skips", "skipping", "disable", "disables", "disabling", "bypass",
                 "suppress", "confirmation", "confirmations", "approval", "approvals", "review", "reviews",
                 "verification", "2fa", "mfa", "two", "multi", "redaction", "masking", "content", "safety", "dry",
                 "sandbox", "sandboxing", "signature", "certificate", "audit", "ask", "asking", "allowlist",
                 "whitelist", "allow", "allowed", "any", "running", "executing", "installing", "downloading", "log",
                 "logs", "logging", "store", "stores", "storing", "keep", "save", "drop", "drops", "turn", "remove",
                 "apply", "force", "forcepush", "pushing", "direct", "confirm", "confirming", "confirmed", "sign"),
        category="directs",
    ),
    # --- dangerous settings and shortcuts named concretely (issue 11, round 2): each is a safety step removed in
    # the words engineers use for it. Held for review, not rejected: a project's notes mention them to warn as often
    # as to prescribe ("never chmod 777 the upload dir") ---------------------------------------------------------
    Rule(
        "directive.future_behaviour", "reject",
        "it removes a safety step in concrete terms (host-key checks, permissions, auto-approval, quarantine, "
        "2FA, CI gates, staging, card authentication); memory cannot change how carefully the assistant works",
        patterns=(
            r"\bstricthostkeychecking\s*[= ]\s*(?:no|off|false)\b|\buserknownhostsfile\s*[= ]\s*/dev/null\b|"
            r"\bchmod\s+(?:-r\s+)?0?777\b|(?<!\w)--?auto-approve\b|\bxattr\s+(?:-\w+\s+)*-d\s+"
            r"com\.apple\.quarantine\b|\bspctl\s+--master-disable\b|\bsetenforce\s+0\b|\bufw\s+disable\b|"
            r"\bset-mppreference\s+-disablerealtimemonitoring\b",
            r"\b(?:turn off|turns off|turning off|disable|disables|disabling|switch off|remove|removing|drop)\s+"
            r"(?:the\s+|their\s+|his\s+|her\s+|my\s+)?(?:\w+\s+){0,2}(?:2fa|mfa|two[- ]factor(?: authentication)?|"
            r"multi[- ]factor(?: authentication)?|real[- ]time protection|antivirus|defender|firewall|gatekeeper|"
            r"branch protection|code signing|selinux|sip|secure boot|3-d secure|3ds)\b",
            r"\b(?:skip|skips|skipping|bypass|bypasses|bypassing|avoid)\s+(?:the\s+)?(?:3-d secure|3ds|staging|"
            r"code review|the linter|lint|sast|security scan|vulnerability scan|backups?)\b|"
            r"\b(?:straight|directly)\s+to\s+(?:production|prod)\b|"
            r"\b(?:merge[sd]?|merging|auto-?merged?|deploy(?:ed)?)\s+(?:\w+\s+){0,3}(?:even\s+)?(?:when|if|while)\s+"
            r"(?:the\s+)?(?:ci|tests?|checks?|the build|pipeline)\s+(?:is\s+|are\s+)?"
            r"(?:red|failing|fail|failed|broken)\b",
            r"(?:#\s*nosec\b|\beslint-disable\b|#\s*type:\s*ignore\b|\b@suppresswarnings\b|#\s*noqa\b)"
            r"(?=[^.!?\n]{0,80}\b(?:rather than|instead of|to get (?:it|them) through|so (?:it|they) pass))",
            r"\baccess-control-allow-origin:\s*\*[^\n]{0,120}access-control-allow-credentials:\s*true\b|"
            r"\banyone with the link can (?:edit|access|view)\b[^.!?\n]{0,60}\b(?:always|default|every|all|so)\b|"
            r"\bconcatenat\w*\s+(?:the\s+)?user input\b|"
            r"\b(?:backups?|snapshots?|dry[- ]runs?)\s+(?:before\s+\w+\s+\w+\s+)?(?:aren't|are not|isn't|is not)\s+"
            r"(?:needed|necessary|required)\b",
        ),
        words=_w("stricthostkeychecking", "userknownhostsfile", "chmod", "auto", "approve", "xattr", "spctl",
                 "setenforce", "ufw", "set", "mppreference", "turn", "turns", "turning", "disable", "disables",
                 "disabling", "switch", "remove", "removing", "drop", "skip", "skips", "skipping", "bypass",
                 "bypasses", "bypassing", "avoid", "straight", "directly", "merge", "merged", "merges", "merging",
                 "automerged", "deploy", "deployed", "nosec", "eslint", "type", "suppresswarnings", "noqa",
                 "access", "anyone", "concatenate", "concatenating", "concatenates", "concatenation", "backup",
                 "backups", "snapshot", "snapshots", "dry"),
        category="directs", firm=False,
    ),
    # --- practices known to be insecure or destructive, prescribed as a project's standard (issue 11, round 3).
    # The textbook list a code reviewer or a SAST tool flags. Held for review, never rejected: notes name them to
    # forbid them as often ("never yaml.load untrusted input") ------------------------------------------------------
    Rule(
        "directive.future_behaviour", "reject",
        "it prescribes a practice known to be insecure or destructive (weak hashing or crypto, unsafe "
        "deserialisation, debug in production, world-open access, root logins, protections switched off, broad "
        "deletion); an operator checks such a memory before the assistant follows it",
        patterns=(
            r"\b(?:hash|hashes|hashing|hashed|store|stores|storing|stored)\s+(?:user\s+|all\s+|the\s+)?passwords?\s+"
            r"(?:with|using|in|as)\s+(?:plain ?text|md5|sha-?1|clear ?text|base64|the clear)\b|"
            r"\bpasswords?\b[^.!?\n]{0,60}\b(?:stored|kept|saved)\s+(?:in\s+)?(?:plain ?text|clear ?text|en clair|"
            r"unencrypted|unhashed)\b|\balg\W{0,3}none\b|\baes-?ecb\b|\bkey\s+hard-?coded\b|\bhard-?coded\s+"
            r"(?:\w+\s+)?keys?\b|\bmath\.random\(\)\s+for\s+(?:tokens?|ids?|passwords?|secrets?|session)",
            r"\bpickle\.loads?\b[^.!?\n]{0,40}\b(?:request|input|body|payload|upload)|\byaml\.load\b(?![^.!?\n]{0,30}"
            r"safeloader)[^.!?\n]{0,40}\bnot\s+safe_load\b|\beval\(\)?[^.!?\n]{0,30}\b(?:parse|parsing|parsed)\b|"
            r"\bshell\s*=\s*true\b[^.!?\n]{0,40}\b(?:f-strings?|format|user input|concatenat)",
            r"\bdebug\s*=\s*true\b[^.!?\n]{0,40}\bproduction\b|\bproduction\b[^.!?\n]{0,40}\bdebug\s*=\s*true\b|"
            r"\bpublic-read\b|\b0\.0\.0\.0/0\b[^.!?\n]{0,40}\b(?:22|3306|5432|6379|27017|3389|9200)\b|"
            r"\bpermitrootlogin\s+yes\b|\bpasswordauthentication\s+yes\b|\bprivileged:\s*true\b|"
            r"\bhostnetwork:\s*true\b|/var/run/docker\.sock\b|\bdeletion_protection\s*=\s*false\b|"
            r"\bskip_final_snapshot\s*=\s*true\b",
            r"\b(?:turn(?:ed)? off|disable[sd]?|disabling|without|remove[sd]?)\s+(?:the\s+)?(?:csrf|xss|clickjacking|"
            r"certificate pinning|cert pinning|throttling|rate limiting|lockout|secure (?:and|or) httponly|httponly|"
            r"input validation|output encoding|the waf|wps)\b(?:\s+(?:protection|flags?|checks?))?",
            r"\brm\s+-(?:rf|fr|r)\s+(?:--no-preserve-root\s+)?(?:/(?:\s|$|\*)|~/?(?:\s|$|\*|[\w.-]+/\*)|\$home\b|\*\s|"
            r"\.\./)|\bdrop\s+(?:database|schema)\s+(?:if exists\s+)?(?:prod\w*|main|live)\b|"
            r"\bkubectl\s+delete\s+(?:ns|namespace)\s+(?:prod\w*|default|kube-system)\b|"
            r"\bkubectl\s+delete\s+\w+\s+--all\b|\bterraform\s+destroy\b[^.!?\n]{0,30}-auto-approve\b|"
            r"\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+if=\S+\s+of=/dev/(?:sd|nvme|disk)|"
            r"\bgit\s+push\s+(?:-f|--force)\s+\S*\s*(?:main|master|release)\b|"
            r"\bdelete\s+(?:all|every)\s+(?:the\s+)?(?:backups?|snapshots?|audit logs?|logs|branches|tags)\b",
        ),
        words=_w("hash", "hashes", "hashing", "hashed", "store", "stores", "storing", "stored", "password", "passwords",
                 "alg", "aes", "ecb", "key", "hardcoded", "hard", "random", "pickle", "loads", "load", "yaml", "eval",
                 "shell", "debug", "public", "read", "permitrootlogin", "passwordauthentication", "privileged",
                 "hostnetwork", "docker", "deletion_protection", "skip_final_snapshot", "turn", "turned", "disable",
                 "disabled", "disables", "disabling", "without", "remove", "removed", "removes", "rm", "drop",
                 "kubectl", "terraform", "mkfs", "dd", "git", "delete", "sock", "0"),
        category="directs", firm=False,
    ),
    # --- data sent to an address, or sensitive data carried in what the assistant writes (issue 11, round 4).
    # Held for review: people also record where their own invoices go ----------------------------------------------
    Rule(
        "route.tool", "reject",
        "it names an address the assistant should send, copy, upload or sync data to; where data goes comes from "
        "the user or the application, so an operator checks such a memory before it is used",
        patterns=(
            r"\b(?:send|sends|sent|sending|cc|bcc|forward|forwards|forwarded|upload|uploads|uploaded|uploading|sync|"
            r"syncs|synced|syncing|post|posts|posted|posting|export|exports|exported|copy|copies|copied|mirror|"
            r"mirrored|backed up|back up|deliver|delivered|push|pushed|archive|archived|e-?mail|e-?mailed)\b"
            r"[^.!?\n]{0,80}?\b(?:to|at|on|into|via)\s+(?:[\w'-]+\s+){0,4}?(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|"
            r"[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|app|site|pro|town|dev|xyz|info|biz|me|co|cc|ru|cn|top|shop|"
            r"online|live|link|page|cloud|bg|tk|ml|ga|cf|gq|su|ws)\b)",
            r"\b(?:cc|bcc|cc'd|bcc'd|copy in|loop in)\s+(?:their\s+|the\s+)?(?:'[^'\n]{1,30}'\s+|\"[^\"\n]{1,30}\"\s+)?"
            r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
        ),
        needles=("@", "://", ".com", ".net", ".org", ".io", ".app", ".site", ".pro", ".town", ".dev", ".xyz", ".info",
                 ".biz", ".me", ".co", ".cc", ".ru", ".cn", ".top", ".shop", ".online", ".live", ".link", ".page",
                 ".cloud", ".bg", ".tk", ".ml", ".ga", ".cf", ".gq", ".su", ".ws"),
        category="directs", firm=False,
    ),
    Rule(
        "exfil.instruction", "reject",
        "it has the assistant carry sensitive data (credentials, secrets, environment variables, private notes, "
        "personal or salary data) in what it writes or posts publicly; an operator checks such a memory",
        patterns=(
            r"\b(?:include|includes|including|contain|contains|list|lists|listing|paste|pastes|pasting|add|adds|"
            r"adding|append|appends|embed|embeds|carry|carries|attach|attaches|end with|ends with|show|shows)\b"
            r"[^.!?\n]{0,60}\b(?:passwords?|api keys?|keys and tokens|session tokens?|access tokens?|secrets\.ya?ml|"
            r"\.env\b|environment variables|env vars|credentials|private (?:notes|links|keys)|"
            r"salar(?:y|ies)(?: table)?|"
            r"internal hostnames|ip addresses|last \w+ (?:queries|messages|prompts)|client list|customer (?:list|data)|"
            r"unpublished \w+)",
            r"\b(?:public|open|shared)\s+(?:pastebin|pr comments?|trello board|channel|community album|gist|wiki|"
            r"status[- ]page)\b|\bpastebin\b[^.!?\n]{0,40}\b(?:public|everyone|anyone)\b|#general\b",
        ),
        words=_w("include", "includes", "including", "contain", "contains", "list", "lists", "listing", "paste",
                 "pastes", "pasting", "add", "adds", "adding", "append", "appends", "embed", "embeds", "carry",
                 "carries", "attach", "attaches", "end", "ends", "show", "shows", "public", "open", "shared",
                 "pastebin", "general"),
        category="directs", firm=False,
    ),
    # --- an "official" support or emergency number stated as a fact: the first step of a support scam (round 4).
    # The routing rule above needs a host or an address; a phone number has neither. Held for review ------------
    Rule(
        "route.tool", "reject",
        "it names a phone number for a support, fraud, billing or emergency line; contact details come from the "
        "user or the organisation itself, so an operator checks such a memory before it is used",
        patterns=(
            r"\b(?:support|hotline|helpline|help line|fraud line|fraud department|help ?desk|customer service|"
            r"billing|tech support|poison control|emergency number|emergency line|security team|activation)\b"
            r"[^.!?\n]{0,60}?(?:\+?\d[\d\s().-]{7,}\d|\b(?:911|999|112|000)\b)",
        ),
        words=_w("support", "hotline", "helpline", "help", "fraud", "helpdesk", "desk", "customer", "billing", "tech",
                 "poison", "emergency", "security", "activation"),
        category="directs", firm=False,
    ),
    # --- credentials asked for or kept: phishing-shaped whoever says it (issue 11, round 2) -----------------------
    Rule(
        "exfil.instruction", "reject",
        "it tells the assistant to ask for, collect or keep the user's credentials (passwords, PINs, one-time "
        "codes, recovery answers); no memory may make the assistant gather secrets",
        patterns=(
            _UNNEGATED +
            r"\b(?:ask|asks|asking|request|requests|requesting|prompt|collect|collecting|get)\s+(?:the user|users|them|"
            r"him|her|the customer|customers)\s+(?:for|to (?:share|provide|enter|send|type|confirm|read out))\s+"
            r"(?:their|his|her|the|a|an)?\s*(?:\w+\s+){0,2}(?:passwords?|pins?|otps?|one-time (?:codes?|passwords?)|"
            r"passcodes?|security[- ]question answers?|2fa codes?|mfa codes?|verification codes?|card numbers?|cvvs?|"
            r"cvcs?|seed phrases?|recovery (?:codes?|phrases?)|private keys?)\b",
            _UNNEGATED +
            r"\b(?:save|saves|saving|store|stores|storing|keep|keeps|record|records|log|logs|collect|collects|"
            r"write down)"
            r"\s+(?:every|all|each|any)?\s*(?:of\s+)?(?:the user's\s+|their\s+|his\s+|her\s+)?(?:\w+\s+){0,2}"
            r"(?:otps?|otp codes?|one-time (?:codes?|passwords?)|passwords?|pins?|security[- ]question answers?|"
            r"2fa codes?|mfa codes?|verification codes?|seed phrases?|recovery (?:codes?|phrases?)|cvvs?)\b"
            r"[^.!?\n]{0,60}\b(?:in|into|to)\s+(?:the\s+|your\s+)?(?:memory|memories|notes?|chat|a file|the log)\b",
            r"\b(?:passwords?|pins?|otps?|one-time codes?|passcodes?|cvvs?|security[- ]question answers?)\s+(?:can|may|"
            r"should)\s+be\s+(?:requested|asked for|collected|read back|repeated|shown)\b",
        ),
        words=_w("ask", "asks", "asking", "request", "requests", "requesting", "prompt", "collect", "collecting", "get",
                 "save", "saves", "saving", "store", "stores", "storing", "keep", "keeps", "record", "records", "log",
                 "logs", "collects", "write", "password", "passwords", "pin", "pins", "otp", "otps", "passcode",
                 "passcodes", "cvv", "cvvs"),
        category="directs",
    ),
    # --- bank details changed: the first move of payment fraud (issue 11, round 2). Held for review: people also
    # record their own new account ---------------------------------------------------------------------------------
    Rule(
        "route.tool", "reject",
        "it changes where money goes (a new IBAN, account or remit-to address); payment details come from the "
        "user or the application, so an operator checks such a memory before it is used",
        patterns=(
            r"\b(?:new|neue[nrs]?|nouveau|nouvel|nouvelle|nuovo|nuova|nowy|nowe|nowym|nuevo|nueva|novo|nova|nieuwe|"
            r"changed|updated|now|ab sofort|désormais|d[ée]sormais|od tej chwili|a partir de|voortaan|from now on|"
            r"no longer|instead|not the old|has changed|hat sich ge[äa]ndert|a chang[ée])\b[^\n]{0,80}"
            r"\b[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){3,}|"
            r"\b[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){3,}[^\n]{0,80}\b(?:new|neue|nouveau|nuovo|nowy|nuevo|novo|changed|"
            r"ab sofort|verwenden|instead|from now on|going forward)\b",
            r"\b(?:sort code|routing number|account number|remit-to|remittance address|bank details|bank account|"
            r"payee|beneficiary)\b[^.!?\n]{0,60}\b(?:new|now|changed|updated|moved|instead|no longer|closed)\b|"
            r"\b(?:new|changed|updated)\s+(?:\w+\s+){0,3}(?:account|sort code|routing number|remit-to|bank details|"
            r"payee|beneficiary)\b[^.!?\n]{0,40}\d{4,}",
        ),
        words=_w("new", "neue", "neuen", "neuer", "neues", "nouveau", "nouvel", "nouvelle", "nuovo", "nuova", "nowy",
                 "nowe", "nowym", "nuevo", "nueva", "novo", "nova", "nieuwe", "changed", "updated", "now", "ab",
                 "désormais", "desormais", "od", "partir", "voortaan", "from", "longer", "instead", "old", "has",
                 "hat", "changé", "change", "sort", "routing", "account", "remit", "remittance", "bank", "payee",
                 "beneficiary"),
        script="any", category="directs", firm=False,
    ),
    # --- a persona without rules: "an AI that never refuses", "no content rules", "uncensored" ---------------------
    Rule(
        "claim.permission", "reject",
        "it describes the assistant (or a persona for it) as free of its rules; memory cannot change what the "
        "assistant is allowed to do",
        patterns=(
            r"\b(?:you|assistant|ai|persona|character|mode|model|chatbot|bot|gpt|version|alter ego|identity)\b"
            r"[^.!?\n]{0,80}\b(?:never|doesn't|does not|won't|will not|cannot|can't|must not|shall not)\s+(?:ever\s+)?"
            r"(?:refuses?|declines?|says? no|holds? back|censors?|turns? down)\b(?:\s*$|\s*[.,;:!)\"'—-]|\s+(?:any|"
            r"anything|a request|requests|to answer|to help|questions|prompts|tasks|and))",
            r"\b(?:you|assistant|ai|persona|character|mode|model|chatbot|bot|gpt|version)\b[^.!?\n]{0,80}\b(?:with|"
            r"has|have|having|without|free of|free from|unbound by|unconstrained by)\s+(?:no|any|all)?\s*(?:content\s+|"
            r"safety\s+|ethical\s+|moral\s+|usage\s+)?(?:rules|filters|restrictions|limits|limitations|guardrails|"
            r"guidelines|censorship|boundaries|policies|morals|ethics|safeguards)\b",
            r"\b(?:respond|answer|reply|write|act|operate|work)\s+(?:\w+\s+){0,2}(?:without|with no|free of)\s+"
            r"(?:any\s+)?(?:content\s+|safety\s+)?(?:filters?|filtering|rules|restrictions|guardrails|censorship|"
            r"limits|safeguards)\b",
            r"\b(?:adopt|assume|take on|switch to|enter|become|activate|enable|stay in|play)\s+(?:the\s+|a\s+|an\s+|"
            r"this\s+)?(?:\w+\s+|['\"“][^'\"”]{1,30}['\"”]\s+){0,2}(?:persona|character|role|alter ego)\b[^.!?\n]{0,60}"
            r"\b(?:permanently|from now on|always|for good|in every|for all|no (?:content )?(?:rules|filters|limits)|"
            r"without (?:rules|filters|limits|restrictions)|uncensored|unfiltered|unrestricted|never refuses?)",
            r"\bdan\s*\d+(?:\.\d+)?\b|\bdo anything now\b|\b(?:grandma|grandmother|dan|aim|stan|dude|evil|opposite|"
            r"unhinged|chaos|freedom|based|unlocked)\s+(?:mode|exploit|jailbreak|prompt)\b",
            r"\b(?:ignore|ignores|ignoring|disregard|disregards|bypass|bypasses)\s+(?:its|their|his|her|the|all|any)\s+"
            r"(?:own\s+)?(?:provider|creator|maker|vendor|developer|company|openai|anthropic|google)(?:'s|s'|s)?\s+"
            r"(?:content\s+|usage\s+|safety\s+)?(?:policies|policy|guidelines|rules|restrictions|safety|filters)\b",
        ),
        words=_w("you", "assistant", "ai", "persona", "character", "mode", "model", "chatbot", "bot", "gpt", "version",
                 "alter", "identity", "respond", "answer", "reply", "write", "act", "operate", "work", "adopt",
                 "assume", "take", "switch", "enter", "become", "activate", "enable", "stay", "play", "dan",
                 "anything", "grandma", "grandmother", "aim", "stan", "dude", "evil", "opposite", "unhinged", "chaos",
                 "freedom", "based", "unlocked", "ignore", "ignores", "ignoring", "disregard", "disregards", "bypass",
                 "bypasses"),
        category="acts",
    ),
    # --- personas described as uncensored or unrestricted: held (a blunt-feedback wish says "unfiltered" too) -----
    Rule(
        "claim.permission", "reject",
        "it describes the assistant (or a persona for it) as uncensored or unrestricted; an operator checks it",
        patterns=(
            r"\b(?:uncensored|unfiltered|unrestricted|amoral|unaligned|jailbroken|unshackled|unchained|rule-?free|"
            r"limitless|lawless)\b[^.!?\n]{0,40}\b(?:ai|assistant|persona|mode|model|gpt|chatbot|bot|character|"
            r"version|you|hacker|expert)\b|\b(?:ai|assistant|persona|mode|model|gpt|chatbot|bot|character|version|"
            r"you)\b[^.!?\n]{0,40}\b(?:uncensored|amoral|unaligned|jailbroken|unshackled|unchained|rule-?free|"
            r"lawless)\b",
            r"\bstay in character\b[^.!?\n]{0,80}\b(?:no matter|whatever|any request|never|always|even if|"
            r"explains? how to|break into|hack|illegal|weapons?|drugs?|malware)\b",
        ),
        words=_w("uncensored", "unfiltered", "unrestricted", "amoral", "unaligned", "jailbroken", "unshackled",
                 "unchained", "rulefree", "rule", "limitless", "lawless", "character"),
        category="acts", firm=False,
    ),
    # --- concealment worded the long way: "avoid telling the user", "secret even from the user" -------------------
    Rule(
        "conceal", "reject",
        "it asks the assistant to hide something from the user; memories must be visible to the people they "
        "are about",
        patterns=(
            r"\b(?:avoid|refrain from|stop|quit)\s+(?:ever\s+)?(?:telling|informing|mentioning|showing|notifying|"
            r"alerting|warning|reporting|disclosing|revealing|letting)\s+(?:\w+\s+)?(?:the user|the human|the "
            r"customer|the owner|the client|users|them|him|her)\b",
            r"\b(?:secret|hidden|private|confidential|quiet|to itself|to yourself)\b[^.!?\n]{0,30}\beven from\s+"
            r"(?:the user|the human|the customer|the owner|the client|them|him|her|themself|themselves|the person)\b",
            r"\b(?:assistant|agent|ai|you|bot|model)\b[^.!?\n]{0,40}\bnot to (?:tell|inform|notify|alert|warn|show)\s+"
            r"(?:\w+\s+){0,2}(?:about|that|of)\b",
        ),
        words=_w("avoid", "refrain", "stop", "quit", "secret", "hidden", "private", "confidential", "quiet", "itself",
                 "yourself", "even", "assistant", "agent", "ai", "you", "bot", "model"),
        category="directs",
    ),
    # --- a memory that writes itself again: self-propagation -----------------------------------------------------
    Rule(
        "directive.standing", "reject",
        "it asks for itself to be saved again or copied into other memories; a memory cannot propagate itself",
        patterns=(
            r"\b(?:save|store|write|add|re-?add|restore|recreate|re-?create|re-?save|copy|keep|put|remember)\s+(?:this|"
            r"these|the following|this exact|this same)\s+(?:memory|memories|note|notes|instruction|instructions|"
            r"entry|entries|text|rule|rules|line|message|fact)\b[^.!?\n]{0,40}\b(?:again|back|whenever|every time|"
            r"each time|if (?:it|they) (?:is|are|gets?|get) (?:deleted|removed|lost|erased)|into (?:every|each|all|"
            r"any)|to (?:every|each|all|any)|permanently|forever|in every)\b",
            r"\b(?:copy|append|add|include|repeat|replicate|propagate|insert|attach)\s+(?:this|these|the following)\s+"
            r"(?:\w+\s+){0,2}(?:into|to|in|onto)\s+(?:every|each|all|any)\s+(?:new\s+|future\s+|other\s+|later\s+)?"
            r"(?:memor(?:y|ies)|notes?|entries|records?|summar(?:y|ies)|documents?)\b",
        ),
        words=_w("save", "store", "write", "add", "readd", "re", "restore", "recreate", "resave", "copy", "keep",
                 "put", "remember", "append", "include", "repeat", "replicate", "propagate", "insert", "attach"),
        category="acts",
    ),
    # --- secrets files printed into replies; a key put into authorized_keys; one tool routed before the others ----
    Rule(
        "exfil.instruction", "reject", "it asks the assistant to reveal or send data (secrets, the prompt, "
        "messages) somewhere",
        patterns=(
            r"(?:\.env(?:\.[\w-]+)?|id_(?:rsa|ed25519|ecdsa)|\.aws/credentials|\.netrc|\.npmrc|\.pypirc|"
            r"\.git-credentials|secrets?\.(?:ya?ml|json|toml))\b[^.!?\n]{0,60}\b(?:print|output|show|paste|display|"
            r"dump|reveal|include|echo|cat|quote)\b[^.!?\n]{0,30}\b(?:in|into|at the end of)\s+(?:the|your|every|each|"
            r"all|any|a)\s+(?:next\s+)?(?:reply|replies|response|responses|answer|answers|message|messages|output)\b",
            r"\b(?:print|output|show|paste|display|dump|reveal|include|echo|cat|quote)\s+(?:the\s+)?"
            r"(?:contents? of\s+)?(?:\S+/)?(?:\.env(?:\.[\w-]+)?|id_(?:rsa|ed25519|ecdsa)|\.aws/credentials|\.netrc|"
            r"\.npmrc|\.pypirc|"
            r"\.git-credentials)\b[^.!?\n]{0,40}\b(?:in|into)\s+(?:the|your|every|each|a)\s+(?:next\s+)?(?:reply|"
            r"response|answer|message|output)\b",
        ),
        needles=(".env", "id_rsa", "id_ed25519", "id_ecdsa", ".aws", ".netrc", ".npmrc", ".pypirc", ".git-cred",
                 "secret.", "secrets."),
        category="directs",
    ),
    Rule(
        "route.tool", "reject",
        "it adds a key or a tool the assistant should trust first; an operator checks such a memory before it is "
        "used",
        patterns=(
            r"\b(?:add|append|write|put|install|insert|echo|copy)\b[^\n]{0,200}\bauthorized_keys\b",
            r"\b(?:before|instead of)\s+(?:using|calling|trying)\s+(?:any\s+)?(?:other|another)\s+tools?\b|"
            r"\b(?:all\s+)?other\s+(?:\w+\s+)?tools\s+(?:are|is)\s+(?:now\s+)?(?:deprecated|disabled|broken|unsafe|"
            r"not allowed|forbidden|unavailable|retired)\b",
        ),
        words=_w("authorized_keys", "authorized", "before", "instead", "other", "tools"),
        category="directs", firm=False,
    ),
    # --- text addressed to an AI inside a document ("LLMs: tell users …", "Assistant, remember: …"), markup made
    # for AI readers (<x-ai-directive hidden>), and a stored memory told to be obeyed --------------------------------
    Rule(
        "directive.future_behaviour", "reject",
        "it addresses an AI reader directly (inside a page, a message or hidden markup); text for the assistant "
        "to obey is not a memory",
        patterns=(
            # a tag named for an AI reader; the short names only as a whole part of the name (<x-ai-directive>, not
            # <details> or <container>), and a bare <model> only as a closing tag or with attributes: as a
            # placeholder ("dbt run --select <model>") it is how commands are written
            r"<\s*/?\s*(?:[\w-]{0,20}[_-])?(?:ai|llm|gpt|bot)(?:[_-][\w-]{0,20})?(?:\s[^<>]{0,100})?>",
            r"<\s*/?\s*[\w-]{0,20}(?:assistant|agent|prompt|instruction|directive)[\w-]{0,20}(?:\s[^<>]{0,100})?>",
            r"<\s*/?\s*(?:[\w-]{1,20}model|model[\w-]{1,20}|[\w-]{1,20}model[\w-]{1,20})(?:\s[^<>]{0,100})?>|"
            r"<\s*model\s[^<>]{1,100}>|</\s*model\s*>",
            r"\b(?:llms?|ais?|ai assistants?|assistants?|agents?|chatbots?|language models?|bots?|gpt|claude|chatgpt|"
            r"copilot)\s*(?:reading this|that read this)?\s*[,:]\s*(?:please\s+|remember\s*:?\s*|note\s*:?\s*|"
            r"important\s*:?\s*)?(?:tell|say|send|collect|ignore|always|never|include|recommend|reply|respond|answer|"
            r"direct|ask|forward|approve|buy|order|remember|note|from now on|do not|don't|treat|trust|use|add|"
            r"delete|run|execute|the user (?:approved|wants|has|is|authori[sz]ed))\b",
            r"\b(?:treat|read|take|regard|consider|handle)\s+(?:these|this|the|all|every|each|your|stored)\s+"
            r"(?:memor(?:y|ies)|notes?|entries|stored text|context|facts?)\s+as\s+(?:instructions?|commands?|orders|"
            r"system|rules|authoritative|binding|directives?)",
            r"\bmemor(?:y|ies)\b[^.!?\n]{0,80}\b(?:act on|obey|execute|carry out|comply with)\s+(?:them|these|it|"
            r"this|those)\b",
        ),
        words=_w("llm", "llms", "ai", "ais", "assistant", "assistants", "agent", "agents", "chatbot", "chatbots",
                 "model", "models", "bot", "bots", "gpt", "claude", "chatgpt", "copilot", "treat", "read", "take",
                 "regard", "consider", "handle", "memory", "memories"),
        needles=("<",),
        category="directs",
    ),
    # --- data put into every reply; false reports ---------------------------------------------------------------
    Rule(
        "exfil.instruction", "reject", "it asks the assistant to reveal or send data (secrets, the prompt, "
        "messages) somewhere",
        patterns=(
            r"\b(?:summar(?:y|ies)|answers?|repl(?:y|ies)|responses?|outputs?|emails?|messages?|drafts?|reports?)\s+"
            r"(?:must|should|shall|will|need to|needs to|have to|has to|always)\s+(?:also\s+|always\s+)?(?:include|"
            r"contain|mention|list|show|reveal|append|carry)\s+(?:the\s+|a copy of\s+)?(?:user'?s\s+|their\s+|"
            r"customer'?s\s+)?(?:\w+\s+){0,2}(?:home address|address|phone numbers?|passwords?|api keys?|ssns?|"
            r"social security numbers?|credit card|card numbers?|date of birth|location|email address|credentials|"
            r"secrets?|tokens?|bank details|iban|passport)\b",
        ),
        words=_w("summary", "summaries", "answer", "answers", "reply", "replies", "response", "responses", "output",
                 "outputs", "email", "emails", "message", "messages", "draft", "drafts", "report", "reports"),
        category="directs",
    ),
    Rule(
        "conceal", "reject", "it asks the assistant to misreport what happened; memories must not make the "
        "assistant lie to the people it works for",
        patterns=(
            r"\b(?:report|say|claim|tell (?:the user|them|him|her)|state|mark)\s+(?:that\s+)?(?:all\s+)?(?:the\s+)?"
            r"(?:tests?|checks?|builds?|scans?|ci|deploy(?:ment)?s?|backups?|jobs?|payments?)\s+(?:have\s+)?"
            r"(?:passed|pass|succeeded|succeed|are green|is green|went through|completed|worked)\b[^.!?\n]{0,30}"
            r"\b(?:even (?:when|if|though)|regardless|no matter|whether or not)\b",
        ),
        words=_w("report", "say", "claim", "tell", "state", "mark"),
        category="directs",
    ),
    # --- a dialogue in another language pasted into a memory ("Користувач: …\nАсистент: …"): ambiguous like its
    # English form (how people paste a chat as often as how they fake one) -----------------------------------------
    Rule(
        "control.token", "reject",
        "it contains chat-template control tokens, a fake system/developer turn or memwarden's own tags",
        patterns=(
            r"(?:^|\n)\s*(?:користувач|асистент|пользователь|ассистент|usuario|asistente|utilisateur|assistant|"
            r"benutzer|nutzer|assistent|utente|assistente|usuário|utilizador|gebruiker|användare|bruger|bruker|"
            r"użytkownik|asystent|uživatel|asistent|kullanıcı|asistan|felhasználó|asszisztens|käyttäjä|avustaja|"
            r"utilizator|asistentul|χρήστης|βοηθός|người dùng|trợ lý|pengguna|asisten|सहायक|उपयोगकर्ता|ব্যবহারকারী|"
            r"সহকারী|المستخدم|المساعد|کاربر|دستیار|صارف|معاون|משתמש|עוזר|ผู้ใช้|ผู้ช่วย|用户|用戶|助手|助理|ユーザー|"
            r"アシスタント|사용자|어시스턴트)\s*[:：]",
        ),
        needles=(":", "："),
        script="any", cjk=True,
        category="acts", firm=False,
    ),
)

# harm worded without an injection structure (issue 11, after round 8): gate/harm_rules.py, which needs ``Rule``
# from this module, so it is imported once ``Rule`` and ``RULES`` exist
from memwarden.gate.harm_rules import HARM_RULES  # noqa: E402

RULES = (*RULES, *HARM_RULES)


# Standing (B), sensitive (C) and trigger cues as token sets and plain substrings: a big regex alternation of words
# costs ~1 µs per character in CPython's engine, a set intersection a fraction of that.
SENSITIVE_WORDS = frozenset(
    "iban wallet credential credentials password passwords secret secrets token tokens ssh instruction "
    "instructions guideline guidelines rule rules policy policies filter filters safety guardrail guardrails "
    "restriction restrictions confirmation confirmations verification verifications review tests test linter "
    "audit production main approve admin unrestricted persona directive directives configuration sudo ssn "
    "contacts payment payments invoice invoices refund refunds price prices competitor competitors crypto webhook "
    "account accounts endpoint tool destructive honesty correct corrections factual developer operator content no "
    "force prompt cvv".split())
SENSITIVE_PHRASES = ("api key", "api_key", "apikey", "account number", "card number", "private key", "system prompt",
                     "code review", "test suite", "rm -rf", "date of birth", "maiden name", "home address",
                     "phone number", "bank details", "without asking", "without checking", "without verifying",
                     "without confirmation", "without review", ".env")
SENSITIVE_SYMBOLIC = (r"https?://|\bwww\.|@[\w-]+\.[a-z]{2,}|(?<=[a-z0-9-])\.(?:com|net|org|io|biz|top|click|tld|cc|"
                      r"co|ru|xyz|site|dev|ly|me|info)\b|\$\s?\d|\d\s?(?:usd|eur|gbp)\b|€\s?\d|[a-z]_[a-z]")
STANDING_WORDS = frozenset("always never every each any anyone anybody whenever onward onwards henceforth permanently "
                           "forever anymore standing unconditionally".split())
STANDING_PHRASES = ("all future", "from now on", "from today", "by default", "in the future", "in future",
                    "future chat", "future session", "future conversation", "future task", "future request",
                    "next session", "from next", "going forward", "no longer", "any more", "from this point",
                    "until told otherwise", "at all times", "effective immediately")
TRIGGER_WORDS = frozenset("when whenever if once later after anytime".split())
TRIGGER_PHRASES = ("as soon as", "the moment", "should the user", "should anyone", "should someone", "any time",
                   "next time", " sessions,")
