"""Notes say what they lack as well as what they have: a value the notes say is not
known is declined, quoting them. With the real local models and index."""

from __future__ import annotations

import pytest

from tests.conftest import synced_index

NOTES = {
    "work/ward.md": (
        "# Ward 7 contacts\n\n"
        "- Ward clerk: Priya Shah, ext. 4471, mornings only\n"
        "- Charge nurse: Tom Reilly, ext. 4475\n"
        "- Matron (cardiology): Steve Okoro, new since Sept -- don't have his extension\n"
        "  yet, ask at the nurses' station\n"
    ),
    "home/bins.md": (
        "# Bins\n\n"
        "- Black bin (general waste): Tuesday, fortnightly.\n"
        "- Blue bin (paper): Tuesday, the other week.\n"
        "- Brown bin (glass and cans): no idea, Mrs Patel puts ours out with hers.\n"
    ),
    "家/小区.md": (
        "# 小区\n\n"
        "物业服务中心电话 0571-8890 2231，工作日 8:30 到 17:30。\n\n"
        "小区居委会今年在换届，听说有事也可以找居委会，但我没有他们电话。\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("unknown"), NOTES)


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        ("What's the matron's extension?", "don't have his extension"),
        ("When does the brown bin go out?", "no idea"),
        ("居委会电话是多少？", "我没有他们电话"),
    ],
)
def test_a_value_the_notes_say_is_not_known_is_declined_quoting_them(
    index, question: str, quoted: str
) -> None:
    result = index.ask(question, [], 5)
    assert result.answered is False, result.text
    reason = next(r for r in result.reasons if r.kind == "unknown")
    assert quoted in reason.items[0]
    assert quoted in result.text  # the decline quotes what the notes say
    assert "。”。" not in result.text and ".”." not in result.text


@pytest.mark.parametrize(
    "question",
    [
        "What's the ward clerk's extension?",
        "When does the black bin go out?",
        "物业电话是多少？",
        "Do I have the matron's extension?",  # asks whether, not for a value
    ],
)
def test_a_value_the_notes_give_is_answered(index, question: str) -> None:
    result = index.ask(question, [], 5)
    assert result.answered is True, result.text
    assert "unknown" not in [r.kind for r in result.reasons]
