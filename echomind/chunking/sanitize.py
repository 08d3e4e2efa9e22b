"""PII redaction (seed 2.3). A candidate is redacted only when it has the *form* of what it claims to be
(a phone number's shape or a phone label next to it, a card issuer's prefix and grouping plus Luhn,
mod-97 for IBANs): the figures of a table row, year runs, file numbers, ZIP codes and ISBNs written
with spaces are look-alikes, and redacting them would destroy data the user asks about."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from .models import Sensitivity

# ---------------------------------------------------------------------------------------------- context

# A label just before a number says what it is. Phone labels in the languages of the labelled set.
PHONE_WORDS = re.compile(
    r"\b(?:tel|tél|tfn|telephone|téléphone|telefon|telefono|teléfono|phone|ph|mobile|mob|cell|cellphone|handy|fax|"
    r"télécopieur|telecopier|call|dial|contact|hotline|whatsapp|sms|ring)\b",
    re.I,
)
# What a number is when it is not a phone: identifiers of filings, books, trials, orders, places.
OTHER_NUMBER_WORDS = re.compile(
    r"\b(?:(?:file|case|part)\s*(?:no\b\.?|nos\b\.?|number|nr\b|#)|isbn|issn|doi|zip|postal|postcode|plz|order|invoice|docket|"
    r"patent|serial|model|lot|batch|eudract|nct|pmid|grant|contract|registration|cusip|cik|ein|commission|version|ref|"
    r"reference|ticket|employer|identification|irs|sic|page|pages|pp|figure|fig|table|isin|sku|ean|upc|gtin)\b",
    re.I,
)
CARD_WORDS = re.compile(r"\b(?:card|visa|mastercard|amex|american express|discover|maestro|cc|credit|debit)\b", re.I)
# Between a label and its number only punctuation and a few small words ("Tel.: ", "call us at ").
LABEL_GAP = re.compile(
    r"[\s.:#()\-–—/]*(?:(?:(?:number|numbers|no|nr|num|at|us|me|on|or|is|de|du|office|direct|main|home|work|mobile|cell|"
    r"line|desk|int'?l|\(\w+\))\b"
    r"|\+?[\d(][\d() .\-]{5,}\d\s*(?:[,;/]|\bor\b|\band\b))[\s.:#()\-–—/]*){0,3}",  # "cell 555 0177, home 555 0123"
    re.I,
)
# A figure as tables write it: 1,234  (56)  12.5%  $  —
FIGURE = r"(?:[(\-−$€£]*\d[\d,.]*%?\)?%?|[—–-]|\$)"
FIGURE_BEFORE = re.compile(rf"(?:^|[ \t]){FIGURE}[ \t]+$")
FIGURE_AFTER = re.compile(rf"^[ \t]+{FIGURE}(?:[ \t]|$)")


def _line_before(text: str, start: int, width: int = 40) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    return text[max(line_start, start - width):start]


def _line_after(text: str, end: int, width: int = 20) -> str:
    line_end = text.find("\n", end)
    return text[end:min(len(text) if line_end < 0 else line_end, end + width)]


def _labelled(text: str, start: int, words: re.Pattern) -> bool:
    """A label right before the number, with nothing but punctuation and small words between."""
    before = _line_before(text, start)
    return any(LABEL_GAP.fullmatch(before[m.end():]) for m in words.finditer(before))


def _labelled_as_phone(text: str, start: int) -> bool:
    return _labelled(text, start, PHONE_WORDS)


def _labelled_as_other(text: str, start: int, own: re.Pattern = PHONE_WORDS) -> bool:
    """The number's own label names something else (a file number, an ISBN, an order) and no label of
    what it is taken for (``own``: phone words, card words) stands as close; words further back do not count."""
    return _labelled(text, start, OTHER_NUMBER_WORDS) and not _labelled(text, start, own)


def _in_figure_run(text: str, start: int, end: int) -> bool:
    """Another figure directly before or after on the same line: the span is cells of a table row."""
    return bool(FIGURE_BEFORE.search(_line_before(text, start, 30)) or FIGURE_AFTER.search(_line_after(text, end)))


# ---------------------------------------------------------------------------------------------- checks
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


# Issuer prefixes and lengths (ISO/IEC 7812): Visa, Mastercard, Amex, Diners, JCB, Discover, UnionPay, Maestro.
CARD_ISSUERS = re.compile(
    r"4\d{12}(?:\d{3}){0,2}|5[1-5]\d{14}|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)\d{12}|3[47]\d{13}|3(?:0[0-5]|[689]\d)\d{11,16}"
    r"|35(?:2[89]|[3-8]\d)\d{12,15}|6(?:011|4[4-9]\d|5\d\d)\d{12,15}|62\d{14,17}|(?:50|5[6-9]|6\d)\d{10,17}"
)
YEAR = re.compile(r"(?:19|20)\d\d")


def _card(text: str, start: int, end: int) -> bool:
    match = text[start:end]
    digits = re.sub(r"\D", "", match)
    groups = re.split(r"[ -]", match)
    if len(groups) > 1 and all(YEAR.fullmatch(g) for g in groups):
        return False  # "2023 2024 2025 2026": column headings
    if _labelled_as_other(text, start, CARD_WORDS):
        return False
    if _in_figure_run(text, start, end) and not _labelled(text, start, CARD_WORDS):
        return False
    return CARD_ISSUERS.fullmatch(digits) is not None and _luhn(digits) and len(set(digits)) > 1


def _iban(text: str, start: int, end: int) -> bool:
    compact = text[start:end].replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _ssn(text: str, start: int, end: int) -> bool:
    area, group, serial = text[start:end].split("-")
    valid = area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"
    return valid and not _labelled_as_other(text, start)


_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}(?!\d)|(?<!\d)\d{1,2}[-./]\d{1,2}[-./](?:\d{4}|\d{2})(?!\d)")


def _isbn13(digits: str) -> bool:
    if len(digits) != 13 or not digits.startswith(("978", "979")):
        return False
    return sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10 == 0


def _isbn10(digits: str) -> bool:
    return len(digits) == 10 and sum(int(d) * (10 - i) for i, d in enumerate(digits)) % 11 == 0


def _not_a_number_sequence(match: str) -> bool:
    """Dates, ISBNs, runs of reference numbers and version numbers share the shape of phone numbers."""
    digits = re.sub(r"\D", "", match)
    if _DATE.search(match) or _isbn13(digits) or (match.count("-") >= 3 and _isbn10(digits)):
        return False
    numbers = [int(g) for g in re.split(r"[\s.\-()]+", match.strip()) if g.isdigit()]
    return not (len(numbers) >= 3 and all(b - a == 1 for a, b in zip(numbers, numbers[1:])))


def _digits(match: str) -> int:
    return len(re.sub(r"\D", "", match.replace("(0)", "")))


def _phone_intl(text: str, start: int, end: int) -> bool:
    """+44 20 7946 0958, 0049 89 2180 0: a country code is phone form, unless it sits in a row of figures."""
    if not 9 <= _digits(text[start:end]) <= 15 or _labelled_as_other(text, start):
        return False
    return _labelled_as_phone(text, start) or not _in_figure_run(text, start, end)


def _phone_nanp(text: str, start: int, end: int) -> bool:
    """(408) 486-2000, 415-555-2671, 202.555.0143: area code and exchange start with 2-9 (NANP rules).
    Written with spaces only ("415 555 2671") it reads as three figures, so it needs a phone label."""
    match = text[start:end]
    if _labelled_as_other(text, start):
        return False
    seps = re.findall(r"(?<=\d)[ .-](?=\d)", re.sub(r"^1[ .-]?", "", match))
    if "(" in match:  # "(408) 486-2000"; "(244) 198 446" is a negative figure and the cells after it
        return seps[-1:] != [" "] or _labelled_as_phone(text, start) or not _in_figure_run(text, start, end)
    if len(set(seps)) != 1:
        return False  # "415-555 2671" mixes separators the way a range next to a figure does
    return seps[0] != " " or _labelled_as_phone(text, start)


def _phone_trunk(text: str, start: int, end: int) -> bool:
    """020 7946 0958, (02) 9374 4000, 01 23 45 67 89: a national number dialled with its leading 0;
    figures are never written with one."""
    match = text[start:end]
    if not 9 <= _digits(match) <= 12 or _labelled_as_other(text, start) or not _not_a_number_sequence(match):
        return False
    return _labelled_as_phone(text, start) or not _in_figure_run(text, start, end)


THOUSANDS = re.compile(r"\d{1,2}(?:([ .])\d{3})(?:\1\d{3})*")
IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)")


def _phone_labelled(text: str, start: int, end: int) -> bool:
    """Any other grouping ("555-1234", "12 34 56 78") is a phone only right after a phone label."""
    match = text[start:end]
    if THOUSANDS.fullmatch(match) or IPV4.fullmatch(match):
        return False  # "1 234 567" is a number written with thousands spaces; 192.168.1.1 an address
    return 7 <= _digits(match) <= 15 and _labelled_as_phone(text, start) and _not_a_number_sequence(match)


def _long_id(text: str, start: int, end: int) -> bool:
    return not _isbn13(text[start:end]) and not _labelled_as_other(text, start)


@dataclass(frozen=True)
class Pattern:
    label: str
    regex: re.Pattern
    valid: Callable[[str, int, int], bool]


START = r"(?<![\w.,+/\-−])"  # not inside a word, a decimal, a fraction or a longer hyphenated code
END = r"(?![\w/]|[.,:\-]\d)"  # a full stop or comma may end the sentence
# Priority order: a span taken by an earlier pattern is not matched again.
PATTERNS: tuple[Pattern, ...] = (
    Pattern("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), lambda *_: True),
    Pattern("ID", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"), _iban),
    Pattern("SSN", re.compile(rf"{START}\d{{3}}-\d{{2}}-\d{{4}}{END}"), _ssn),
    # Card form: 4-4-4-4 or Amex 4-6-5 with one separator throughout, or 13-19 digits unbroken.
    Pattern("CARD", re.compile(rf"{START}(?:\d{{4}}([ -]?)\d{{4}}\1\d{{4}}\1\d{{4}}|\d{{4}}([ -]?)\d{{6}}\2\d{{4,5}}|\d{{13,19}}){END}"), _card),
    Pattern("PHONE", re.compile(rf"(?<![\w+.,])(?:\+\d{{1,3}}|00[1-9]\d{{0,2}})(?:[ .-]?\(0\))?(?:[ .-]?\(\d{{1,5}}\)|[ .-]?\d{{1,5}})(?:[ .-]\d{{1,8}}){{0,5}}{END}"), _phone_intl),
    Pattern("PHONE", re.compile(rf"{START}(?:1[ .-]?)?(?:\([2-9]\d\d\)[ .-]?|[2-9]\d\d[ .-])[2-9]\d\d[ .-]\d{{4}}{END}"), _phone_nanp),
    Pattern("PHONE", re.compile(rf"(?<![\w.,+/\-−])(?:\(0[1-9]\d{{0,3}}\)[ .-]?|0[1-9]\d{{0,3}}[ .-])\d{{2,8}}(?:[ .-]\d{{2,8}}){{0,4}}{END}"), _phone_trunk),
    Pattern("PHONE", re.compile(rf"{START}\d{{1,5}}(?:[ .-]\d{{1,8}}){{1,5}}{END}"), _phone_labelled),  # never across lines
    # Not inside hex hashes, decimals or hyphenated codes (EDGAR accession numbers 0000320193-23-000077).
    Pattern("ID", re.compile(r"(?<![\w.,\-])\d{9,}(?![.,\-]\d|\w)"), _long_id),
)


def find_pii(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, label) spans, sorted by start."""
    taken: list[tuple[int, int, str]] = []  # kept sorted: an overlap test is a bisection, not a scan
    for pattern in PATTERNS:
        for m in pattern.regex.finditer(text):
            start, end = m.span()
            i = bisect.bisect_left(taken, (start,))
            if (i < len(taken) and taken[i][0] < end) or (i > 0 and taken[i - 1][1] > start):
                continue
            if pattern.valid(text, start, end):
                taken.insert(i, (start, end, pattern.label))
    return taken


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


LABELS = ("EMAIL", "ID", "SSN", "CARD", "PHONE")
REDACTION_TOKEN = re.compile(r"\[REDACTED_(EMAIL|ID|SSN|CARD|PHONE)\]")


def redaction_tokens(text: str) -> list[tuple[int, int, str]]:
    """Where a stored chunk text was redacted and what was there, e.g. for the chunk browser to mark."""
    return [(m.start(), m.end(), m.group(1)) for m in REDACTION_TOKEN.finditer(text)]


def redact(text: str) -> tuple[str, Counter]:
    """Each PII span becomes [REDACTED_<LABEL>] (EMAIL, PHONE, SSN, CARD, ID): the chunk text shows the
    user every redaction and its kind."""
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


# A document is about persons when it holds the details of several persons (a contact list, a client
# file) or contact details together with an address or a birth date (a CV, a patient record), densely.
# One switchboard number on a 70-page filing's cover, or the corresponding author's phone and e-mail
# under an abstract (one contact block), is not.
PERSONAL_IDENTIFIERS = ("SSN", "CARD")  # whoever's they are, their presence alone makes a text HIGH
HIGH_PER_1000 = 1.0  # personal details per 1,000 characters
HIGH_SHARE = 0.10  # or redactable details are a tenth of the text (a contact card, a one-line note)
BLOCK_GAP = 300  # details closer than this belong to one contact block (one person, as a rule)
MEDIUM_PER_1000 = 0.2
MEDIUM_WEAK_DENSITY = 0.005


@dataclass(frozen=True)
class PersonalProfile:
    """How much of a text is personal detail: the measure behind sensitivity and the SENSITIVE type."""

    counts: Counter  # redactable PII per label
    weak: int  # street addresses and birth dates
    pii_chars: int
    weak_chars: int
    chars: int
    blocks: int  # runs of redactable details with less than BLOCK_GAP characters between them

    @property
    def items(self) -> int:
        return sum(self.counts.values()) + self.weak

    @property
    def per_1000(self) -> float:
        return 1000 * self.items / max(1, self.chars)

    @property
    def about_persons(self) -> bool:
        if any(self.counts[label] for label in PERSONAL_IDENTIFIERS):
            return True
        if not self.counts:
            return False  # addresses and birth dates alone stay MEDIUM: personal, but nothing is redacted
        if self.pii_chars >= HIGH_SHARE * max(1, self.chars):
            return True
        return self.per_1000 >= HIGH_PER_1000 and (self.blocks >= 2 or self.weak > 0)


def personal_profile(text: str) -> PersonalProfile:
    spans = find_pii(text)
    weak = [m.span() for m in WEAK_PII.finditer(text)]
    blocks = sum(1 for i, (s, _, _) in enumerate(spans) if i == 0 or s - spans[i - 1][1] >= BLOCK_GAP)
    return PersonalProfile(Counter(label for _, _, label in spans), len(weak), sum(e - s for s, e, _ in spans),
                           sum(e - s for s, e in weak), len(text), blocks)


def profile_sensitivity(profile: PersonalProfile) -> Sensitivity:
    if profile.about_persons:
        return Sensitivity.HIGH
    some = profile.items and profile.per_1000 >= MEDIUM_PER_1000
    return Sensitivity.MEDIUM if some or profile.weak_chars / max(1, profile.chars) > MEDIUM_WEAK_DENSITY else Sensitivity.LOW


def document_sensitivity(text: str) -> Sensitivity:
    """HIGH only for texts about persons, measured on the original text (so it does not depend on
    whether redaction is switched on)."""
    return profile_sensitivity(personal_profile(text))


def sensitivity_for(redactions: int, weak_density: float) -> Sensitivity:
    """The seed's rule from counts alone: any redaction is HIGH. Without the text a density cannot be
    measured; ``document_sensitivity`` is the measured one and should be preferred."""
    if redactions:
        return Sensitivity.HIGH
    return Sensitivity.MEDIUM if weak_density > MEDIUM_WEAK_DENSITY else Sensitivity.LOW


def sanitize_text(text: str) -> Sanitized:
    """Seed 2.3: (clean_text, redacted, sensitivity_level), plus counts per label for the UI."""
    clean, counts = redact(text)
    return Sanitized(clean, sum(counts.values()) > 0, document_sensitivity(text), counts)
