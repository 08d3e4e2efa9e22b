"""The support check on its own: claims found in sentences, citations kept with their sentence, and a
streamed answer passed on a sentence at a time with the unsupported ones dropped."""

from __future__ import annotations

from dataclasses import dataclass

from echomind.grounding import checked_stream, claims_in, split_sentences, unsupported_claims


@dataclass
class B:
    number: int
    text: str


BLOCKS = [B(1, "NVIDIA paid a $1.35 billion acquisition termination cost to SoftBank in the first quarter of fiscal 2023."),
          B(2, "The Aurora X2 costs 499 euros and heats up in 25 seconds.")]


def test_claims_are_numbers_amounts_dates_and_names_but_not_a_sentences_first_word():
    claims = claims_in("Revenue grew 12% to $5.9 billion in October 2022, Jensen Huang said [1].")
    assert {"12%", "$5.9 billion", "2022", "Jensen Huang"} <= set(claims)
    assert "Revenue" not in claims and "October" not in claims  # first word; month names are not names
    assert claims_in("It is a fine machine.") == []


def test_citations_stay_with_their_sentence():
    assert split_sentences("- It costs 499 euros. [2]\n- It heats up fast. [2]") == ["- It costs 499 euros. [2]", "- It heats up fast. [2]"]
    assert split_sentences("It costs 499 euros [2]. It heats up in 25 seconds [2].") == ["It costs 499 euros [2].", "It heats up in 25 seconds [2]."]


def test_invented_figures_beside_real_citations_are_found():
    assert unsupported_claims("NVIDIA paid a termination cost of $1.35 billion [1].", BLOCKS) == []
    assert unsupported_claims("NVIDIA paid a termination cost of $3.5 million [1].", BLOCKS) == ["$3.5 million"]
    assert unsupported_claims("The Aurora X2 costs 499 euros [1].", BLOCKS) == ["499", "Aurora X2"]  # true, but not in the block it cites
    assert "Nexus Cloud" in unsupported_claims("NVIDIA bought Nexus Cloud [1].", BLOCKS)


def test_a_streamed_answer_loses_only_its_unsupported_sentences():
    removed = []
    pieces = ["NVIDIA paid $1.35 ", "billion to SoftBank [1]. It also paid ", "$4.6 trillion due to COVID-19 [1]. The Aurora X2 ",
              "costs 499 euros [2]."]
    out = "".join(checked_stream(iter(pieces), BLOCKS, removed))
    assert "$1.35 billion to SoftBank [1]." in out and "499 euros [2]" in out and "trillion" not in out
    assert len(removed) == 1 and "$4.6 trillion" in removed[0].unsupported
