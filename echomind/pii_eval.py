"""A labelled PII test set and its precision/recall (``python -m echomind pii``).

Real formats from several countries, each placed in a sentence; look-alikes that must stay readable
(dates, times, versions, prices, ISBNs, big numbers, IP addresses, postcodes) are in the same text.
Recall: share of PII items wholly covered by redactions. Precision: share of redactions that overlap
a PII item.
"""

from __future__ import annotations

from collections import defaultdict

from .chunking.sanitize import find_pii

POSITIVES: dict[str, list[str]] = {
    "EMAIL": ["jane.doe@example.org", "bob+news@mail.co.uk", "r.ossi@studio-rossi.it", "info@kanzlei-weber.de", "a_b@x.io",
              "first.last@sub.domain.com", "HR-Team@Company.COM"],
    "PHONE": ["(415) 555-2671", "415-555-2671", "+1 415 555 2671", "1-800-555-0199", "+44 20 7946 0958", "020 7946 0958",
              "07700 900123", "+49 30 123456", "030 1234567", "+49 (0)30 1234 5678", "01 23 45 67 89", "+33 1 23 45 67 89",
              "+91 98765 43210", "03-1234-5678", "+31 6 12345678", "555-1234", "0049 89 2180 0",
              "+61 2 9374 4000", "+81 3-1234-5678", "(02) 9374 4000", "+39 06 6982 0000", "+34 912 345 678", "+1-202-555-0143",
              "202.555.0143", "+852 2123 4567"],
    "SSN": ["078-05-1120", "219-09-9999", "536-90-4399", "123-45-6789", "001-01-0001"],
    "CARD": ["4111 1111 1111 1111", "5500 0000 0000 0004", "3400 000000 00009", "6011000990139424", "4539-1488-0343-6467",
             "3530 1113 3330 0000", "378282246310005"],
    "ID": ["DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32", "FR14 2004 1010 0505 0001 3M02 606", "NL91ABNA0417164300",
           "884512930017", "5512004499", "ES91 2100 0418 4502 0005 1332", "CH93 0076 2011 6238 5295 7",
           "IT60 X054 2811 1010 0000 0123 456", "9876543210"],
}
LOOK_ALIKES = ["2024-03-15", "15/03/2024", "15.03.2024", "2003-03-07 08:42:38", "10:30:45", "10.4.2", "v2.11.0", "1.2.3.4",
               "$1,299.00", "1.299,00 €", "49,99 €", "978-0-306-40615-7", "0-306-40615-2", "9780306406157", "273.879.750",
               "1,000,000", "3.14159", "1998-2004", "12.5%", "192.168.1.1", "91356", "INV-2024-0042", "4539 1488 0343 6468",
               "ISO 9001:2015", "page 12 of 240", "+5 °C", "RFC 2616", "COVID-19", "B-52", "A4 210 x 297 mm",
               "2024/03/15", "v10.0.19045", "1.0.0-beta.2", "£12.50", "US$ 3,450", "ISBN 1-56619-909-3", "10 000 m", "Room 101",
               "3:45 PM", "1 234 567", "2021-22 season", "CVE-2021-44228", "order 2024-000123"]
TEMPLATES = ["Please note {x} for the file.", "Contact: {x}.", "The value {x} was recorded yesterday.", "({x})"]


def build() -> tuple[str, list[tuple[int, int, str]], list[tuple[int, int]]]:
    """The text, the labelled PII spans and the look-alike spans."""
    parts, pii, negatives, pos = [], [], [], 0
    items = [(label, value) for label, values in POSITIVES.items() for value in values] + [(None, v) for v in LOOK_ALIKES]
    for i, (label, value) in enumerate(items):
        template = TEMPLATES[i % len(TEMPLATES)]
        sentence = template.format(x=value)
        start = pos + sentence.index(value)
        (pii.append((start, start + len(value), label)) if label else negatives.append((start, start + len(value))))
        parts.append(sentence)
        pos += len(sentence) + 1
    return " ".join(parts), pii, negatives


def evaluate() -> dict:
    text, pii, negatives = build()
    found = find_pii(text)
    covered = lambda s, e: sum(min(e, fe) - max(s, fs) for fs, fe, _ in found if fs < e and s < fe) >= e - s
    per_label: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s, e, label in pii:
        per_label[label][1] += 1
        per_label[label][0] += covered(s, e)
    true_positive = [f for f in found if any(f[0] < e and s < f[1] for s, e, _ in pii)]
    false_positive = [text[f[0]:f[1]] for f in found if f not in true_positive]
    missed = [text[s:e] for s, e, _ in pii if not covered(s, e)]
    recall = sum(v[0] for v in per_label.values()) / len(pii)
    precision = len(true_positive) / len(found) if found else 1.0
    return {"recall": recall, "precision": precision, "items": len(pii), "look_alikes": len(negatives), "per_label": dict(per_label),
            "missed": missed, "false_positives": false_positive}
