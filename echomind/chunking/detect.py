"""Document type by heuristics only (seed 2.2): SENSITIVE -> FAQ -> BOOK -> USER."""

from __future__ import annotations

import re

from .models import DocType
from .sanitize import personal_profile

QUESTION_LINE = re.compile(
    r"^[ \t]*(?:\d+[.)][ \t]*)?(?:Q[ \t]*\d*[ \t]*[:.)]|Question[ \t]*\d*[ \t]*[:.)]|Question[ \t]+\d+\b)|^[ \t]*(?:\d+[.)][ \t]*)?[A-Z][^\n]{3,200}\?[ \t]*$",
    re.M,
)
FAQ_MARKER = re.compile(r"\bFAQs?\b|frequently asked", re.I)
HEADING_LINE = re.compile(r"^[ \t]*(?:(?:chapter|section|part)\s+(?:\d+|[IVXLC]+)\b|#{1,6}\s+\S)", re.I | re.M)


def question_lines(text: str) -> list[re.Match]:
    return list(QUESTION_LINE.finditer(text))


def looks_like_faq(text: str, lines: list[str]) -> bool:
    count = len(question_lines(text))
    if count < 2:
        return False
    many = count >= 3 and count >= 0.10 * max(1, len(lines))
    return many or bool(FAQ_MARKER.search(text[:2000]))


def looks_like_long_form(text: str, lines: list[str], length: int) -> bool:
    breaks = text.count("\n\n")
    if length < 8000 or breaks < 5:
        return False
    headings = len(HEADING_LINE.findall(text))
    avg_line = length / max(1, len(lines))
    return headings >= 2 or (breaks >= 20 and length > 20_000) or (avg_line > 80 and length > 15_000)


def detect_document_type(text: str) -> DocType:
    # SENSITIVE means about persons (a CV, a contact list, a record), the same measure that makes
    # sensitivity HIGH; an abstract with its authors' e-mails or a filing with its switchboard number is not.
    if personal_profile(text).about_persons:
        return DocType.SENSITIVE
    lines = [line for line in text.splitlines() if line.strip()]
    if looks_like_faq(text, lines):
        return DocType.FAQ
    if looks_like_long_form(text, lines, len(text)):
        return DocType.BOOK
    return DocType.USER
