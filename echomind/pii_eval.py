"""A labelled PII test set and its precision/recall (``python -m echomind pii``).

Two parts. Formats: real formats from several countries, each placed in a sentence, with look-alikes
that must stay readable (dates, times, versions, prices, ISBNs, big numbers, IP addresses, postcodes)
in the same text. Lines: lines as real documents print them, taken verbatim from the shared corpora
(the two 10-Q filings parsed with ``echomind.parsing.parse_bytes``, the 49 documents, SciFact, SQuAD)
and, marked "constructed", lines written in the forms documents of the same kinds use (other filings'
covers and rows, a CV, a contact sheet, a book list), so the set is not fitted to the shared files. A line is labelled with every PII string in it; the rest
of the line must come through untouched. Real PII stays in: the filings' cover phones, authors'
contacts under abstracts, and some PII we do not find (a phone written with spaces and no label).

Recall: share of PII items wholly covered by redactions. Precision: share of redactions that overlap
a PII item.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Line:
    text: str
    source: str  # a shared file ("filings/2023 Q3 AAPL.pdf", "scifact/4890578") or "constructed: <kind>"
    pii: tuple[tuple[str, str], ...] = ()  # (label, exact substring)


AAPL, NVDA = "filings/2023 Q3 AAPL.pdf", "filings/2022 Q3 NVDA.pdf"
LINES: tuple[Line, ...] = (
    # The 10-Q covers: registrant's phone is real PII; file numbers, EINs, ZIP codes are not.
    Line("Commission File Number: 001-36743", AAPL),
    Line("California 94-2404110", AAPL),
    Line("Cupertino, California 95014", AAPL),
    Line("Washington, D.C. 20549", AAPL),
    Line("(408) 996-1010", AAPL, (("PHONE", "(408) 996-1010"),)),
    Line("For the quarterly period ended July 1, 2023", AAPL),
    Line("Commission file number: 0-23985", NVDA),
    Line("Delaware 94-3177549", NVDA),
    Line("2788 San Tomas Expressway", NVDA),
    Line("Santa Clara, California 95051", NVDA),
    Line("(408) 486-2000", NVDA, (("PHONE", "(408) 486-2000"),)),
    # Their financial statements: rows of figures, negative figures in parentheses, year headings.
    Line("Adjustment for net (gains)/losses realized and included in net income 58 95 185 140", AAPL),
    Line("U.S. Treasury securities 25,134 — (1,725) 23,409 338 5,091 17,980", AAPL),
    Line("Commercial paper 718 — — 718 28 690 —", AAPL),
    Line("Balance as of July 1, 2023 184,716 $ 135.08 $ 35,829", AAPL),
    Line("Open market and privately negotiated purchases 42,676 $ 184.34 42,676", AAPL),
    Line("2022 2021 2022 2021", NVDA),
    Line("Interest income 88 7 152 20", NVDA),
    Line("Sales, general and administrative 183 152 498 416", NVDA),
    Line("Sales, general and administrative 631 557 1,815 1,603", NVDA),
    Line("technology 442 (244) 198 446 (221) 225", NVDA),
    Line("Deferred revenue (1) 338 300", NVDA),
    Line("Deferred revenue (2) 213 202", NVDA),
    Line("Automotive 251 135 609 441", NVDA),
    Line("OEM and Other 73 234 371 970", NVDA),
    Line("equity awards 16 39 22 39", NVDA),
    Line("dilutive 36 2 29 21", NVDA),
    Line("Additions 3 5 141 20", NVDA),
    Line("Certificates of deposit 316 — — 316 58 258", NVDA),
    Line("administrative expenses 631 557 74 13 % 1,815 1,603 212 13 %", NVDA),
    Line("3.50% Notes Due 2040 17.4 3.54% 1,000 1,000", NVDA),
    Line("Gross profit 53.6 65.2 55.1 64.7", NVDA),
    Line("2024 188", NVDA),
    Line("September 26, 2022 - October 30, 2022 17 $ 123.96 17 $ 8.28", NVDA),
    Line("judgment in the United States Court of Appeals for the Ninth Circuit, case number 21-15604. Oral argument on the appeal was held on May 10,", NVDA),
    Line("# In accordance with Item 601(b)(32)(ii) of Regulation S-K and SEC Release Nos. 33-8238 and 34-47986, Final Rule: Management's Reports on", NVDA),
    # Rows quoted in issue 11 from other 10-Q filings; rows and cover lines written the way other filings print
    # them (real registrants' published addresses and switchboard numbers).
    Line("Interest income 234 88 572 152", "issue 11: another 10-Q"),
    Line("Deferred revenue 1,164 977 2,144 1,862", "constructed: 10-Q"),
    Line("2023 2024 2025 2026", "issue 11: another 10-Q"),
    Line("2025 2026 2027 2028 Thereafter Total", "constructed: 10-Q"),
    Line("Principal payments 2024 2025 2026 2027 2028", "constructed: 10-Q"),
    Line("Operating lease liabilities 1 379 1 512", "constructed: 10-Q"),
    Line("Commission file number 1-4174", "constructed: 10-Q"),
    Line("Registration No. 333-268711", "constructed: 10-Q"),
    Line("Redmond, Washington 98052-6399", "constructed: 10-Q"),
    Line("One Microsoft Way, Redmond, Washington 98052-6399 (425) 882-8080", "constructed: 10-Q", (("PHONE", "(425) 882-8080"),)),
    Line("1600 Amphitheatre Parkway Mountain View, CA 94043 (650) 253-0000", "constructed: 10-Q", (("PHONE", "(650) 253-0000"),)),
    Line("Registrant's telephone number, including area code: (206) 266-1000", "constructed: 10-Q", (("PHONE", "(206) 266-1000"),)),
    Line("Austin, Texas 78725 (512) 516-8177", "constructed: 10-Q", (("PHONE", "(512) 516-8177"),)),
    Line("Dublin 2, Ireland D02 X525 +353 1 234 5678", "constructed: 20-F", (("PHONE", "+353 1 234 5678"),)),
    # The 49 shared documents.
    Line("(818) 708-8131 TELEX #298949 LINN UR", "docs/groundtruth_linn.txt", (("PHONE", "(818) 708-8131"),)),
    Line("0 Utilizes ultra high—speed, 8 MHZ 80186 16 bit computer internally for FAST operation.", "docs/groundtruth_linn.txt"),
    Line("Téléphone : +01-819-564-4857", "docs/pdf_GeoBase_UML.pdf", (("PHONE", "+01-819-564-4857"),)),
    Line(" 1-800-661-2638 (Canada et États-Unis)", "docs/pdf_GeoBase_UML.pdf", (("PHONE", "1-800-661-2638"),)),
    Line("Télécopieur : +01-819-564-5698", "docs/pdf_GeoBase_UML.pdf", (("PHONE", "+01-819-564-5698"),)),
    Line("Courriel : geoginfo@RNCan.gc.ca", "docs/pdf_GeoBase_UML.pdf", (("EMAIL", "geoginfo@RNCan.gc.ca"),)),
    Line("National Hydro Network, Data Model – Edition 1.0 2004-06", "docs/pdf_GeoBase_UML.pdf"),
    Line("Updated: 2004-06-02 17:00:40", "docs/pdf_GeoBase_UML.pdf"),
    Line("OMB Number: 4040-0004", "docs/pdf_SF424_page2.pdf"),
    Line("A. Nicole Clowers, Managing Director, Congressional Relations, (202) 512-4400", "docs/pdf_bad_invalid-structure-pdfminer.pdf",
         (("PHONE", "(202) 512-4400"),)),
    Line("0 0.0335 0.0409 /C00.9393 0.0003 24.0910 2.8163", "docs/pdf_embedded-images-tables.pdf"),
    Line("10 0.0382 0.0086 /C00.5356 1.24E-05 246.080 0.0919", "docs/pdf_embedded-images-tables.pdf"),
    Line("273.879.750", "docs/pdf_google-doc-document.pdf"),
    # SciFact abstracts and SQuAD paragraphs.
    Line("Corresponding author. Tel.: +31-20-5665-633; fax: +31-20-914-738; e-mail a.c.vanderwal@amc.uva.nl", "scifact/4890578",
         (("PHONE", "+31-20-5665-633"), ("PHONE", "+31-20-914-738"), ("EMAIL", "a.c.vanderwal@amc.uva.nl"))),
    Line("Mutation of these E-MAIL j-massague@ski.mskcc.org; FAX (212) 717-3298. Article and publication are at", "scifact/39291138",
         (("EMAIL", "j-massague@ski.mskcc.org"), ("PHONE", "(212) 717-3298"))),
    Line("EUDRACT NUMBER AND CLINICALTRIALSGOV IDENTIFIER 2004-002245-12 and NCT00110123.", "scifact/35301079"),
    Line("increasing from a low of 8277 (95% uncertainty estimate 5353-10 649) in 1992, to a peak of 11 302 (6790-13 722) in 2010.", "scifact/3716075"),
    Line("were identified using clinical criteria among 2 901 019 adults admitted to study hospitals in 2014 (6.0% incidence).", "scifact/4824840"),
    Line("Literature search identified 824 eligible studies comprising 2 530 706 subjects (cases: 261 386 (10.3%))", "scifact/14729253"),
    Line("endothelial activation, and monocyte recruitment9 10 11 12 13 14 ; growth, with smooth muscle cell (SMC) proliferation", "scifact/19332616"),
    Line("(median age in 1995 1.55 years vs. 2.33 in 2000, P<0.0001)", "scifact/19824183"),
    Line("In 1979, 1120 men were re-examined, and in 1986 945 men attended follow up.", "scifact/39368721"),
    Line("A positive relationship between baPWV and serum cystatin C (Y=1109.0548+329.9102X, r2=0.056, p<0.001)", "scifact/23439808"),
    Line("Relative to women who weighed 3.000-3.499 kg, the risk was 0.96 (CI 0.80-1.16)", "scifact/16322674"),
    Line("mean difference, 1027 μL; 95% CI, 556-1498 μL).", "scifact/7965928"),
    Line("to provide an accuracy of 365.2425 days of the year", "squad/Yuan_dynasty_25"),
    # Documents about persons, and book lists and catalogues, as users keep them (not shared).
    Line("Jane Smith · Mobile: 0412 345 678 · jane.smith@example.com", "constructed: CV",
         (("PHONE", "0412 345 678"), ("EMAIL", "jane.smith@example.com"))),
    Line("Phone: 12 34 56 78 (Copenhagen office)", "constructed: contact sheet", (("PHONE", "12 34 56 78"),)),
    Line("For questions call 555-0134 after 6 pm.", "constructed: letter", (("PHONE", "555-0134"),)),
    Line("cell 312 555 0177, home 312 555 0123", "constructed: contact sheet", (("PHONE", "312 555 0177"), ("PHONE", "312 555 0123"))),
    Line("Tel. +41 44 668 18 00, Fax +41 44 668 18 01", "constructed: letter", (("PHONE", "+41 44 668 18 00"), ("PHONE", "+41 44 668 18 01"))),
    Line("Maria Rossi, 415 555 2671", "constructed: contact sheet", (("PHONE", "415 555 2671"),)),
    Line("Card on file: 4111-1111-1111-1111 exp 09/27", "constructed: receipt", (("CARD", "4111-1111-1111-1111"),)),
    Line("ISBN 978 0 306 40615 7", "constructed: book list"),
    Line("ISBN 0 306 40615 2 (paperback)", "constructed: book list"),
    Line("EAN 4006381333931", "constructed: catalogue"),
    Line("PMID: 31452104", "constructed: reference list"),
    Line("Shipping to 1600 Pennsylvania Ave NW, Washington, DC 20500-0003", "constructed: letter"),
    Line("Population 1 234 567 in 2021, 1 250 112 in 2022", "constructed: report"),
)


def build() -> tuple[str, list[tuple[int, int, str]], list[tuple[int, int]]]:
    """The text, the labelled PII spans and the look-alike spans (a PII-free line is one look-alike)."""
    parts, pii, negatives, pos = [], [], [], 0
    items = [(label, value) for label, values in POSITIVES.items() for value in values] + [(None, v) for v in LOOK_ALIKES]
    for i, (label, value) in enumerate(items):
        template = TEMPLATES[i % len(TEMPLATES)]
        sentence = template.format(x=value)
        start = pos + sentence.index(value)
        (pii.append((start, start + len(value), label)) if label else negatives.append((start, start + len(value))))
        parts.append(sentence)
        pos += len(sentence) + 1
    text = " ".join(parts)
    for line in LINES:  # each on its own line, as the parser gives it
        offset = len(text) + 1
        text += "\n" + line.text
        for label, value in line.pii:
            start = offset + line.text.index(value)
            pii.append((start, start + len(value), label))
        if not line.pii:
            negatives.append((offset, offset + len(line.text)))
    return text, pii, negatives


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
