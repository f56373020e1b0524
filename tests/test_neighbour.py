"""A value asked of one thing and given only for its neighbour (a port, a phone number, a
date or a check-in time of another thing in the same list, table or trip note) is said
beside the answer: a warning and a `neighbour` reason name whose value it was. A name
written in the other script or with other joiners counts as written. With the real
local models and index."""

from __future__ import annotations

import pytest

from askmd.answer.question import Question
from askmd.answer.reasons import render
from askmd.answer.units import units
from askmd.search.hits import Hit
from tests.conftest import synced_index

NOTES = {
    "homelab/containers.md": (
        "# Containers on the NAS\n\n"
        "| Service | Image | Port |\n|---|---|---|\n"
        "| Audiobookshelf | advplyr/audiobookshelf:2.17 | 13378 |\n"
        "| Paperless | paperless-ngx | 8000 |\n\n"
        "Jellyfin moved to the mini PC in March; it still needs its GPU passthrough\n"
        "sorting out before anyone watches anything on it.\n"
    ),
    "home/contacts.md": (
        "# Household contacts\n\n"
        "Emergency numbers:\n\n"
        "- Gas leak: 0800 111 999\n"
        "- Plumber (Dave Hughes): 07700 900123, reliable but books up fast\n"
        "- Landlord: Mrs Okafor, email only\n"
    ),
    "vehicles/car.md": (
        "# The car\n\nA 2017 Skoda Octavia estate, reg MA17 XYZ.\n\n"
        "The MOT is due on 2 March 2027; the last one passed with an advisory on the\n"
        "rear tyres.\n"
    ),
    "vehicles/bike.md": (
        "# The bike\n\nA Genesis Croix de Fer, bought second hand in 2024. Tubeless tyres,\n"
        "sealant topped up in the spring.\n"
    ),
    "travel/关西.md": (
        "# 关西之行\n\n## 大阪\n\n酒店在难波，走路到道顿堀五分钟。爸妈的航班下午\n"
        "两点四十落地关西机场。\n\n## 京都\n\n町屋民宿，下午四点以后可以入住，\n"
        "钥匙放在门口的密码箱里。\n"
    ),
    "home/network.md": (
        "# Home network\n\nThe WiFi network is called Chorlton-5G; the password is on the\n"
        "fridge.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("neighbour"), NOTES)


def ask(index, question: str):
    return index.ask(question, [], 5)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (
            "What port is Jellyfin listening on?",
            "the closest passages give a port for “Audiobookshelf”, not for “Jellyfin”: "
            "check that the answer is about it",
        ),
        ("What's the electrician's phone number?", "not for “electrician”: check"),
        ("When is the bike's MOT due?", "give a date for “The car”, not for “bike”: check"),
    ],
)
def test_a_neighbours_value_is_said_beside_the_answer(index, question: str, said: str) -> None:
    result = ask(index, question)
    (reason,) = [r for r in result.reasons if r.kind == "neighbour"]
    assert reason.given_for and reason.value
    assert said in render(reason, form="warn")
    assert reason.to_json() in result.to_json()["reasons"]
    # it advises: only another reason ("no number" close by) declines
    assert result.answered or any(r.kind != "neighbour" for r in result.reasons), result.text


def test_a_chinese_neighbour_is_named(index) -> None:
    result = ask(index, "大阪的酒店几点可以入住？")
    (reason,) = [r for r in result.reasons if r.kind == "neighbour"]
    assert "不是" in render(reason, cjk=True)


@pytest.mark.parametrize(
    "question",
    [
        "What port does Audiobookshelf listen on?",
        "What's the plumber's phone number?",
        "When is the car's MOT due?",
        "What time does my parents' flight land in Osaka?",  # the note writes 大阪
        "What's the Wi-Fi network called?",  # the note writes WiFi
        "京都的民宿几点可以入住？",
    ],
)
def test_the_things_own_value_is_answered(index, question: str) -> None:
    result = ask(index, question)
    assert result.answered is True, result.text
    assert not [r for r in result.reasons if r.kind in {"neighbour", "unmentioned"}]


@pytest.mark.parametrize("question", ["邮箱是多少？", "What's the landlord's email address?"])
def test_a_value_no_passage_gives_is_named_beside_the_answer(index, question: str) -> None:
    """An email address asked, and no unit of the closest passages gives one: said
    beside the answer ("Landlord: Mrs Okafor, email only" is worth reading), as the
    neighbour check advises rather than declines."""
    result = ask(index, question)
    assert result.lacking == ["email"]
    said = "没有给出邮箱" if question.startswith("邮") else "give no email address"
    assert said in (result.text if not result.answered else render(result.reasons[0], form="warn"))


def test_a_question_reads_the_thing_it_asks_about() -> None:
    assert [w.written for w in Question("What port is Jellyfin listening on?").subject] == [
        "Jellyfin"
    ]
    assert [w.written for w in Question("When is the motorbike's MOT due?").subject] == [
        "motorbike",
        "MOT",
    ]
    chinese = [w.written for w in Question("大阪那家酒店几点可以办入住？").subject]
    assert chinese[:2] == ["大阪", "酒店"] and "几点" not in chinese and "入住" not in chinese
    assert [k.name for k in Question("电工的电话是多少？").kinds] == ["phone"]


def test_units_join_hard_wrapped_sentences_and_keep_what_governs_them() -> None:
    text = NOTES["homelab/containers.md"] + "\n" + NOTES["home/contacts.md"]
    hit = Hit(1, 0.0, "c1", "homelab/containers.md", "Containers on the NAS", 1, 20, text)
    found = {u.text: u for u in units(hit)}
    row = found["| Audiobookshelf | advplyr/audiobookshelf:2.17 | 13378 |"]
    assert "| Service | Image | Port |" in row.governing and row.label == "Audiobookshelf"
    assert (
        "Jellyfin moved to the mini PC in March; it still needs its GPU passthrough "
        "sorting out before anyone watches anything on it." in found
    )
    item = found["Gas leak: 0800 111 999"]
    assert "Emergency numbers:" in item.governing and item.label == "Gas leak"


def test_prose_about_one_thing_worded_otherwise_is_not_a_neighbour(tmp_path) -> None:
    """A passage that gives one value of the kind asked (a release) is about one thing: a
    question worded otherwise ("separate", "first") is not asking for a neighbour's."""
    index = synced_index(tmp_path, {
        "plugins/popout.md": "# Pop-out windows\n\nObsidian 0.15.0 added pop-out windows on "
        "desktop: drag a tab out of the main window to open it on its own.\n",
        "plugins/rtl.md": "# Right-to-left\n\nObsidian renders Hebrew and Arabic text from "
        "right to left when the note's direction is set to it.\n",
    })  # fmt: skip
    result = ask(index, "Which Obsidian release first let desktop users open notes in "
                 "separate pop-out windows?")  # fmt: skip
    assert result.answered is True, result.text
    assert result.references[0].source == "plugins/popout.md"
