"""Helpers shared by the benchmark scripts: number formatting, markdown tables, the machine's CPU model."""

from __future__ import annotations

import platform
from collections.abc import Sequence


def us(ns: float) -> str:
    return f"{ns / 1e3:,.0f}" if ns >= 1e5 else f"{ns / 1e3:,.1f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> str:
    """A markdown table padded so it also reads as aligned plain text."""
    right = right or [i > 0 for i in range(len(headers))]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).rjust(w) if r else str(c).ljust(w)
                                 for c, w, r in zip(cells, widths, right, strict=True)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if r else (":" + "-" * (w + 1))
                         for w, r in zip(widths, right, strict=True)) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
