"""Counters the fault and load suites fill in, printed at the end of the run."""

from __future__ import annotations

from collections import Counter

FIGURES: Counter[str] = Counter()
