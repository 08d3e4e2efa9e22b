"""PII redaction (seed 2.3): regex candidates, checked by validators (Luhn, mod-97, date shapes) so
look-alikes such as dates, versions, prices and ISBNs stay readable."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from .models import Sensitivity


def _luhn(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 13 <= len(digits) <= 19 and _luhn(digits) and len(set(digits)) > 1


def _iban(match: str) -> bool:
    compact = match.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _ssn(match: str) -> bool:
    area, group, serial = match.split("-")
    return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"


_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}(?!\d)|(?<!\d)\d{1,2}[-./]\d{1,2}[-./](?:\d{4}|\d{2})(?!\d)")


def _phone(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    if not 7 <= len(digits) <= 15 or _DATE.search(match):
        return False
    if "." in match and re.search(r"\s", match.strip()):
        return False  # "0 0.0335 0.0409": a row of decimals in a table, not a phone
    if re.fullmatch(r"\d{1,3}(?:\.\d{3})+", match.strip()):
        return False  # 273.879.750 is a number with thousands separators
    if match.count("-") >= 3 and (_isbn13(digits) or _isbn10(digits)):
        return False  # 978-0-306-40615-7 is a book
    international = match.lstrip().startswith(("+", "(")) or match.lstrip().startswith("00")
    if international:
        return True
    if len(set(re.findall(r"[ \t.-]", match.strip()))) > 1:
        return False  # "1457.60-2761.80", "5353-10 649": ranges and figures, not a phone dialled locally
    groups = re.split(r"[\s.\-()]+", match.strip())
    numbers = [int(g) for g in groups if g.isdigit()]
    if len(numbers) == 2 and "-" in match and numbers[1] > numbers[0]:
        return False  # "400-1000", "12442-12448": a range (costs local numbers like 555-1234: precision first)
    if len(numbers) >= 3 and all(b - a == 1 for a, b in zip(numbers, numbers[1:])):
        return False  # "9 10 11 12 13 14": reference numbers
    if "." in match and len(groups) <= 3 and any(len(g) == 1 for g in groups):
        return False  # a version number, not a phone
    return len(digits) >= 9 or re.fullmatch(r"\d{3}-\d{4}", match.strip()) is not None


def _isbn13(digits: str) -> bool:
    if len(digits) != 13 or not digits.startswith(("978", "979")):
        return False
    return sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10 == 0


def _isbn10(digits: str) -> bool:
    return len(digits) == 10 and sum(int(d) * (10 - i) for i, d in enumerate(digits)) % 11 == 0


def _long_id(match: str) -> bool:
    return not _isbn13(match)


@dataclass(frozen=True)
class Pattern:
    label: str
    regex: re.Pattern
    valid: Callable[[str], bool] = lambda _m: True


# Priority order: a span taken by an earlier pattern is not matched again.
PATTERNS: tuple[Pattern, ...] = (
    Pattern("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    Pattern("ID", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"), _iban),
    Pattern("SSN", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), _ssn),
    Pattern("CARD", re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?!\d|\.\d)"), _card),  # a full stop may end the sentence
    Pattern(
        "PHONE",
        re.compile(r"(?<![\w.+/-])(?:(?:\+|00)\d{1,3}[ \t.-]?|1[ \t.-])?(?:\(\d{1,5}\)[ \t.-]?)?\d{1,5}(?:[ \t.-]\d{1,8}){1,5}(?![\w/]|[.:-]\d)"),  # never across lines
        _phone,
    ),
    Pattern("ID", re.compile(r"(?<![\w.,])\d{9,}(?![.,]\d|\w)"), _long_id),  # not inside hex hashes or codes
)


def find_pii(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, label) spans, sorted by start."""
    taken: list[tuple[int, int, str]] = []
    for pattern in PATTERNS:
        for m in pattern.regex.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e, _ in taken):
                continue
            if pattern.valid(m.group()):
                taken.append((start, end, pattern.label))
    return sorted(taken)


def pii_density(text: str) -> float:
    """Fraction of characters that are part of a PII match (seed 2.2)."""
    if not text:
        return 0.0
    return sum(e - s for s, e, _ in find_pii(text)) / len(text)


@dataclass
class Sanitized:
    clean_text: str
    redacted: bool
    sensitivity_level: Sensitivity
    counts: Counter


def redact(text: str) -> tuple[str, Counter]:
    spans = find_pii(text)
    counts: Counter = Counter(label for _, _, label in spans)
    out, pos = [], 0
    for start, end, label in spans:
        out.append(text[pos:start])
        out.append(f"[REDACTED_{label}]")
        pos = end
    out.append(text[pos:])
    return "".join(out), counts


# Personal but not redacted: street addresses and birth dates make a document MEDIUM (seed 2.3's
# "PII density > 0.005 but no redaction", which could never happen if both used the same patterns).
WEAK_PII = re.compile(
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Boulevard|Blvd|Drive|Dr)\b\.?"
    r"|\b(?:DOB|D\.O\.B\.|date of birth|born on)\b[:\s]*[\w ,./-]{0,20}",
    re.I,
)


def weak_pii_density(text: str) -> float:
    if not text:
        return 0.0
    return sum(len(m.group()) for m in WEAK_PII.finditer(text)) / len(text)


def sensitivity_for(redactions: int, weak_density: float) -> Sensitivity:
    if redactions:
        return Sensitivity.HIGH
    return Sensitivity.MEDIUM if weak_density > 0.005 else Sensitivity.LOW


def sanitize_text(text: str) -> Sanitized:
    """Seed 2.3: (clean_text, redacted, sensitivity_level), plus counts per label for the UI."""
    clean, counts = redact(text)
    total = sum(counts.values())
    return Sanitized(clean, total > 0, sensitivity_for(total, weak_pii_density(text)), counts)
