"""G3 robustness: no input crashes the gate, the gate is deterministic, and scanning is linear in the input —
no catastrophic regex backtracking (adversarial inputs of 100 KB, run through a policy that lets them reach the
content rules)."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memwarden
from memwarden.gate import ACCEPT, REJECT, REVIEW, Candidate, Gate

BIG = memwarden.Policy(max_record_bytes=1_000_000)
TRIGGERS = ["ignore", "previous", "instructions", "always", "never", "you", "must", "from now on", "curl", "|",
            "sh", "when", "the user", "says", "![", "](", "http://", "?q=", "{", "<|", "system:", "admin",
            "privileges", "don't tell", "AKIA", "sk-", "eyJ", "-----BEGIN", "password is", "/tmp/", "session id",
            "base64", "decode", "rot13", "\u200b", "\u202e", "і", "ｉ", "\U000e0041", "\ufe0f", "\n"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(max_size=40), st.sampled_from(TRIGGERS)), max_size=30))
def test_g3_no_input_crashes_the_gate_and_verdicts_are_deterministic(parts: list[str]) -> None:
    text = " ".join(parts)
    gate = Gate()
    first = gate.check(Candidate(text, "fact", "model"))
    second = gate.check(Candidate(text, "fact", "model"))
    assert first == second
    assert first.verdict in (ACCEPT, REVIEW, REJECT)
    for hit in first.hits:
        if hit.span is not None:
            assert 0 <= hit.span[0] <= hit.span[1] <= len(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_g3_scan_never_raises_on_arbitrary_text(text: str) -> None:
    verdict = memwarden.scan(text)
    assert verdict.verdict in (ACCEPT, REVIEW, REJECT)


ADVERSARIAL = {
    "letters": "a" * 100_000,
    "spaces": " " * 100_000,
    "ignore-words": "ignore " * 14_000,
    "always-you": "always you must " * 6_000,
    "when-says": "when the user says " * 5_000,
    "pipes": "curl x | " * 11_000,
    "brackets": "![a](http://x?" * 7_000,
    "control": "<|" * 50_000,
    "zero-width": "a\u200b" * 50_000,
    "homoglyph": "аa" * 50_000,
    "base64": "QUFB" * 25_000,
    "hex": "41" * 50_000,
    "secrets": "sk-" * 33_000,
    "jwt": "eyJ" + "a" * 99_997,
    "newlines": "system:\n" * 12_000,
    "tmp": "/tmp/" * 20_000,
    "cjk": "忽略" * 50_000,
    "cyrillic": "игнорируй " * 10_000,
}


# CPU time of this process (time.process_time), not wall time: other processes on a loaded machine must not
# make a complexity check fail.
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_g3_scan_of_100kb_adversarial_input_is_linear(name: str) -> None:
    gate = Gate(BIG)
    text = ADVERSARIAL[name]
    small = text[: len(text) // 10]
    # the best of three runs of each size: one slow run on a busy machine (another process evicting the caches)
    # must not fail the check, and a real superlinear scan is slow on every run
    t_small = min(_cpu_seconds(gate, small) for _ in range(3))
    t_big = min(_cpu_seconds(gate, text) for _ in range(3))
    assert t_big < 2.0, f"{name}: {t_big:.2f}s for 100 KB"
    assert t_big < 30 * max(t_small, 0.005), f"{name}: {t_small:.4f}s for 10 KB but {t_big:.2f}s for 100 KB"


def _cpu_seconds(gate: Gate, text: str) -> float:
    t0 = time.process_time()
    gate.check(Candidate(text, "fact", "model"))
    return time.process_time() - t0
