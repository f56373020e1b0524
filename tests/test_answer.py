"""Answering as pure functions: citation checking, references and their fragments, the
extractive answer, follow-up queries, prompts, and `ask` with a plain search function.
No network and no model: hits are built by hand."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from askmd.answer.citations import CitationCheck, check_citations
from askmd.answer.display import BLOCK_LINES
from askmd.answer.exchange import ask
from askmd.answer.extractive import NOTHING_FOUND, extractive
from askmd.answer.followup import leans_on_context, merged_query, resolve
from askmd.answer.limits import MAX_QUERY_CHARS
from askmd.answer.prompt import SYSTEM_PROMPT, build_messages
from askmd.answer.references import references
from askmd.answer.result import Reference, Turn
from askmd.answer.sentences import FRAGMENT_CHARS, sentences
from askmd.search.hits import Hit
from askmd.terms import content_terms
from tests.conftest import ASK_JSON_FIELDS


def hit(
    n: int, text: str, source: str = "notes.md", chain: str = "Notes › Ops", start: int = 0
) -> Hit:
    start = start or 10 * n
    return Hit(n, 1.0 - n / 10, f"chunk-{n}", source, chain, start, start + 4, text)


OPS = hit(
    1,
    "The office is in Lisbon. Backups run nightly at 2am to S3. The cafeteria opens at noon.",
    source="ops.md",
    chain="Ops › Backups",
    start=3,
)
API = hit(
    2,
    "The API listens on port 8420. Metrics are exported to Prometheus.",
    source="api.md",
    chain="API › Network",
    start=20,
)


# --- check_citations -------------------------------------------------------------------

# (id, text, k, expected text, cited, invalid)
CITATIONS = [
    ("single", "Port 8420 [1].", 3, "Port 8420 [1].", [1], []),
    ("adjacent", "A [1][2].", 3, "A [1][2].", [1, 2], []),
    ("comma-list", "A [1, 2].", 3, "A [1][2].", [1, 2], []),
    ("range", "A [1-3].", 3, "A [1][2][3].", [1, 2, 3], []),
    ("reversed-range", "A [3-1].", 3, "A [1][2][3].", [1, 2, 3], []),
    ("en-dash-range", "A [1–2].", 3, "A [1][2].", [1, 2], []),
    ("and", "A [1 and 2].", 3, "A [1][2].", [1, 2], []),
    ("full-width-lenticular", "A 【1】.", 3, "A [1].", [1], []),
    ("full-width-brackets", "A ［1，2］.", 3, "A [1][2].", [1, 2], []),
    ("ideographic-comma", "A [1、2].", 3, "A [1][2].", [1, 2], []),
    ("footnote", "A [^1].", 3, "A [1].", [1], []),
    ("source-word", "A [Source 2].", 3, "A [2].", [2], []),
    ("sources-list", "A [sources 1, 2].", 3, "A [1][2].", [1, 2], []),
    ("chinese-source-word", "A [来源 1]。", 3, "A [1]。", [1], []),
    ("inner-spaces", "A [ 1 ].", 3, "A [1].", [1], []),
    ("leading-zero", "A [01].", 3, "A [1].", [1], []),
    ("out-of-range-with-space", "x [7].", 3, "x.", [], [7]),
    ("zero", "x [0].", 3, "x.", [], [0]),
    ("mixed-valid-invalid", "x [1, 7].", 3, "x [1].", [1], [7]),
    ("invalid-first-in-run", "x [7] [1].", 3, "x [1].", [1], [7]),
    ("invalid-last-in-run", "x [1] [7].", 3, "x [1].", [1], [7]),
    ("invalid-before-comma", "x [7], y", 3, "x, y", [], [7]),
    ("all-invalid-run", "[7][8]", 3, "", [], [7, 8]),
    ("range-partly-out", "x [1-5].", 3, "x [1][2][3].", [1, 2, 3], [4, 5]),
    ("no-sources", "x [1-3]", 0, "x", [], [1, 2, 3]),
    ("repeated-adjacent", "x [1][1].", 3, "x [1].", [1], []),
    ("repeated-spaced", "x [1] [1].", 3, "x [1].", [1], []),
    ("run-normalised-space", "x [1] [2].", 3, "x [1][2].", [1, 2], []),
    ("run-normalised-spaces", "x [1]  [2].", 3, "x [1][2].", [1, 2], []),
    ("run-normalised-tab", "x [1]\t[2].", 3, "x [1][2].", [1, 2], []),
    ("run-keeps-its-order", "x [2] [1].", 3, "x [2][1].", [2, 1], []),
    ("no-citations", "No citations here.", 3, "No citations here.", [], []),
    ("not-a-citation", "x [1,,2] [a] [] y", 3, "x [1,,2] [a] [] y", [], []),
    ("five-digits-out-of-range", "x [10000]", 3, "x", [], [10000]),
    ("inline-code", "use `arr[1]` here [1].", 3, "use `arr[1]` here [1].", [1], []),
    ("inline-code-invalid", "x `a[7]` y [7].", 3, "x `a[7]` y.", [], [7]),
    (
        "fenced-code",
        "```\narr[7] = arr[1]\n```\nok [1].",
        3,
        "```\narr[7] = arr[1]\n```\nok [1].",
        [1],
        [],
    ),
    ("tilde-fence", "~~~\n[7]\n~~~\n[7]", 3, "~~~\n[7]\n~~~\n", [], [7]),
    ("unclosed-fence", "ok [1].\n```\n[7]", 3, "ok [1].\n```\n[7]", [1], []),
    ("huge-range", "x [1-999].", 3, "x [1].", [1], [999]),
    ("range-over-limit-is-two-numbers", "x [1-60].", 100, "x [1][60].", [1, 60], []),
    (
        "range-at-limit",
        "x [1-51].",
        100,
        "x " + "".join(f"[{n}]" for n in range(1, 52)) + ".",
        list(range(1, 52)),
        [],
    ),
    (
        "first-appearance-order",
        "a [2]. b [1]. c [2] [3].",
        3,
        "a [2]. b [1]. c [2][3].",
        [2, 1, 3],
        [],
    ),
    ("invalid-no-duplicates", "a [7]. b [7][8]. c [8, 7].", 3, "a. b. c.", [], [7, 8]),
    ("docstring", "Port 8420 [1, 7]. Redis 【2】.", 2, "Port 8420 [1]. Redis [2].", [1, 2], [7]),
]


@pytest.mark.parametrize(
    ("text", "k", "expected", "cited", "invalid"),
    [pytest.param(*c[1:], id=c[0]) for c in CITATIONS],
)
def test_check_citations(text: str, k: int, expected: str, cited: list, invalid: list) -> None:
    assert check_citations(text, k) == CitationCheck(expected, cited, invalid)


_FORMS = [
    "[{a}]",
    "[{a}, {b}]",
    "[{a}-{b}]",
    "[{a} and {b}]",
    "【{a}】",
    "［{a}，{b}］",
    "[^{a}]",
    "[Source {a}]",
]
_CITATION_TOKEN = st.builds(
    lambda form, a, b: form.format(a=a, b=b),
    st.sampled_from(_FORMS),
    st.integers(0, 12),
    st.integers(0, 12),
)
_WORD = st.sampled_from(["The", "port", "is", "8420", "x", ".", ",", "Redis", "端口", "。"])
_TEXT = st.lists(
    st.tuples(st.one_of(_WORD, _CITATION_TOKEN), st.sampled_from([" ", "", "\n", ". ", "  "])),
    max_size=25,
).map(lambda pieces: "".join(token + sep for token, sep in pieces))


@given(_TEXT, st.integers(0, 8))
def test_check_citations_properties(text: str, k: int) -> None:
    out = check_citations(text, k)
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", out.text)]
    assert all(1 <= n <= k for n in numbers)
    assert out.cited == list(dict.fromkeys(numbers))
    assert len(out.invalid) == len(set(out.invalid))
    assert not any(1 <= n <= k for n in out.invalid)
    assert check_citations(out.text, k) == CitationCheck(out.text, out.cited, [])


@pytest.mark.parametrize("text", ["x [1 [7]]", "x [[7]1]"])
def test_removal_does_not_create_an_uncounted_citation(text: str) -> None:
    out = check_citations(text, 1)
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", out.text)]
    assert out.cited == list(dict.fromkeys(numbers))


# --- references ------------------------------------------------------------------------


def test_references_in_citation_order_with_hit_metadata() -> None:
    text = "The API uses port 8420 [2]. Backups are nightly at 2am [1]."
    refs = references(text, [2, 1], [OPS, API])
    assert [(r.n, r.source, r.heading_chain, r.line_start, r.line_end) for r in refs] == [
        (2, "api.md", "API › Network", 20, 24),
        (1, "ops.md", "Ops › Backups", 3, 7),
    ]
    assert refs[0].text == "The API listens on port 8420."
    assert refs[1].text == "Backups run nightly at 2am to S3."


@pytest.mark.parametrize(
    ("claim", "fragment"),
    [
        ("Backups happen at 2am [1].", "Backups run nightly at 2am to S3."),
        ("The cafeteria opens at noon [1].", "The cafeteria opens at noon."),
        ("The office is in Lisbon [1].", "The office is in Lisbon."),
        ("Something unrelated entirely [1].", "The office is in Lisbon."),  # first sentence
        ("Backups run nightly.[1]", "Backups run nightly at 2am to S3."),
        ("夜间备份【1】。", "The office is in Lisbon."),  # no shared word: first sentence
    ],
)
def test_reference_fragment_is_the_sentence_sharing_most_words(claim: str, fragment: str) -> None:
    checked = check_citations(claim, 1)
    [ref] = references(checked.text, checked.cited, [OPS])
    assert ref.text == fragment
    assert ref.text in OPS.text


def test_reference_fragment_uses_only_the_sentences_citing_it() -> None:
    text = "The cafeteria opens at noon [2]. Backups run at 2am [1]."
    cafeteria = hit(2, "Lunch is served daily. The cafeteria opens at noon.")
    refs = references(text, [2, 1], [OPS, cafeteria])
    assert [r.text for r in refs] == [
        "The cafeteria opens at noon.",
        "Backups run nightly at 2am to S3.",
    ]


def test_reference_fragments_are_verbatim_and_trimmed() -> None:
    long = hit(1, "Intro line. " + "The backup job copies " + "every file " * 40 + "to S3.")
    checked = check_citations("The backup job copies files [1].", 1)
    [ref] = references(checked.text, checked.cited, [long])
    assert ref.text in long.text
    assert ref.text.startswith("The backup job copies every file")
    assert len(ref.text) <= FRAGMENT_CHARS
    assert not ref.text.endswith(" ")


def test_reference_fragment_when_citation_follows_the_period() -> None:
    checked = check_citations("Backups run nightly at 2am. [1]", 1)
    [ref] = references(checked.text, checked.cited, [OPS])
    assert ref.text == "Backups run nightly at 2am to S3."


def test_reference_fragment_of_code_only_passage_is_verbatim() -> None:
    code = hit(1, "```\nport: 8420\nhost:  0.0.0.0\n```")
    [ref] = references("The port is 8420 [1].", [1], [code])
    assert ref.text in code.text


def test_reference_to_json_keys() -> None:
    ref = Reference(3, "a.md", "A › B", 5, 9, "Quoted.")
    assert ref.to_json() == {
        "n": 3,
        "source": "a.md",
        "heading_chain": "A › B",
        "line_start": 5,
        "line_end": 9,
        "page_start": None,
        "page_end": None,
        "text": "Quoted.",
        "supported": None,
    }
    paged = Reference(1, "m.pdf", "A", 3, 8, "Quoted.", page_start=12, page_end=13)
    assert (paged.to_json()["page_start"], paged.to_json()["page_end"]) == (12, 13)


def test_references_empty_when_nothing_cited() -> None:
    assert references("No citations.", [], [OPS]) == []


# --- sentences -------------------------------------------------------------------------

SENTENCES = [
    (
        "heading-and-blank-lines",
        "# Title\n\n## Sub heading\n\nThe server listens on 8420. It restarts nightly!\n\n",
        ["The server listens on 8420.", "It restarts nightly!"],
    ),
    (
        "fenced-code",
        "Before the code.\n```sh\nrun this command.\n```\nAfter the code ends.",
        ["Before the code.", "After the code ends."],
    ),
    ("tilde-fence", "~~~\nfenced code.\n~~~\nProse comes next.", ["Prose comes next."]),
    (
        "table-header-and-rule",
        "| Name | Port |\n|---|:---:|\n| api | 8420 |",
        ["| api | 8420 |"],
    ),
    (
        "list-markers",
        "- dash item here\n* star item here\n+ plus item here\n1. numbered item\n2) paren item\n"
        "> quoted line\n  - nested item here",
        [
            "dash item here",
            "star item here",
            "plus item here",
            "numbered item",
            "paren item",
            "quoted line",
            "nested item here",
        ],
    ),
    (
        "rules-and-comments",
        "---\n***\n<!-- hidden note -->\nText after rule.",
        ["Text after rule."],
    ),
    ("setext-heading", "Header row\n---\nBody text here.", ["Body text here."]),
    (
        "chinese",
        "服务监听端口8420。每天重启！真的吗？好的",
        ["服务监听端口8420。", "每天重启！", "真的吗？", "好的"],
    ),
    ("chinese-semicolon", "请看第一句；第二句。", ["请看第一句；", "第二句。"]),
    (
        "mixed",
        "Mixed 中文句子。English sentence. 再来一句！",
        ["Mixed 中文句子。", "English sentence.", "再来一句！"],
    ),
    (
        "question-and-tail",
        "Ends with question? Yes. Trailing",
        ["Ends with question?", "Yes.", "Trailing"],
    ),
    ("stopwords-only-dropped", "It is. What is this? Redis is fast.", ["Redis is fast."]),
    ("version-number-not-a-break", "Version 1.2 is out.", ["Version 1.2 is out."]),
    (
        "inline-code-not-a-break",
        "To list the largest files, run `du -ah . | sort -rh`. Then look. An odd ` stays.",
        ["To list the largest files, run `du -ah . | sort -rh`.", "Then look.", "An odd ` stays."],
    ),  # fmt: skip
    (
        "initials-and-titles-not-a-break",
        "- *The Left Hand of Darkness* by Ursula K. Le Guin. Then J. R. R. Tolkien, e.g. "
        "The Hobbit. Ask Dr. Okafor. We chose option A. It worked.",
        [
            "*The Left Hand of Darkness* by Ursula K. Le Guin.",
            "Then J. R. R. Tolkien, e.g. The Hobbit.",
            "Ask Dr. Okafor.",
            "We chose option A.",
            "It worked.",
        ],
    ),
    (
        "abbreviation-before-a-small-word-or-a-number-not-a-break",
        "- 10–15 May: Memmo Alfama, €1,210 total incl. breakfast. Policy no. HP-448120, "
        "renews in May. Is it free? No. It costs €5.",
        [
            "10–15 May: Memmo Alfama, €1,210 total incl. breakfast.",
            "Policy no. HP-448120, renews in May.",
            "Is it free?",
            "It costs €5.",  # "No." holds no content word
        ],
    ),
    (
        "end-inside-brackets-not-a-break",
        "烤 25 分钟（我家烤箱偏热，150 度正好；别的烤箱用 160 度）。"
        "Bake it (at 150 °C. Not hotter.) then rest. An open (bracket; stays open",
        [
            "烤 25 分钟（我家烤箱偏热，150 度正好；别的烤箱用 160 度）。",
            "Bake it (at 150 °C. Not hotter.) then rest.",
            "An open (bracket; stays open",
        ],
    ),
    (
        "tag-and-see-also-lines-are-no-sentences",
        "tags: #bread #baking\n#incident #postgres\n- #admin, #money\nSee also [[Budget]] and "
        "[[Taxes]].\nRelated: [[A]], [B](b.md)\n参见 [[预算]]。\n相关笔记：[[预算]]、[[税]]\n"
        "The #bread tag marks recipes. See also the budget for 2025.",
        ["The #bread tag marks recipes.", "See also the budget for 2025."],
    ),
    (
        "hard-wrapped-paragraph-is-one-text",
        "Baked two sourdough loaves in the morning. Took the kids to the climbing\n"
        "gym in the afternoon.",
        [
            "Baked two sourdough loaves in the morning.",
            "Took the kids to the climbing gym in the afternoon.",
        ],
    ),
    (
        "a-list-item-keeps-its-continuation-lines",
        "- Cook on medium heat,\n  stirring often.\n- Ordered a\n  new filter.",
        ["Cook on medium heat, stirring often.", "Ordered a new filter."],
    ),
    (
        "wrapped-at-the-editors-width-before-a-capital",
        "Afternoon: finally set up the offsite restic backup to the storage box so that\n"
        "Jellyfin and the photo library are both covered by the nightly snapshot now.",
        [
            "Afternoon: finally set up the offsite restic backup to the storage box so that "
            "Jellyfin and the photo library are both covered by the nightly snapshot now."
        ],
    ),
    (
        "wrapped-chinese-joins-without-a-space",
        "红烧肉先焯水再炒糖色，然后加生抽、老抽和料酒，倒入开水没过肉，转\n小火炖 60 分钟。",
        ["红烧肉先焯水再炒糖色，然后加生抽、老抽和料酒，倒入开水没过肉，转小火炖 60 分钟。"],
    ),
    (
        "short-lines-without-marks-are-lines-of-their-own",
        "Woke up late\nWent to the gym\n早上跑步\n下午看书",
        ["Woke up late", "Went to the gym", "早上跑步", "下午看书"],
    ),
    (
        "a-hard-break-keeps-its-line",
        "Gas leak  \nnumber below\\\nthird line",
        ["Gas leak", "number below", "third line"],
    ),
    ("empty", "", []),
    ("code-only", "```\ncode only.\n```", []),
]


@pytest.mark.parametrize(
    ("text", "expected"), [pytest.param(c[1], c[2], id=c[0]) for c in SENTENCES]
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("```\n~~~\nstill code here\n```\nProse line.", id="tilde-inside-backticks"),
        pytest.param("````\n```\ninner code\n```\n````\nProse line.", id="shorter-fence-inside"),
    ],
)
def test_sentences_fence_closes_only_on_matching_marker(text: str) -> None:
    assert sentences(text) == ["Prose line."]


# --- the extractive answer -------------------------------------------------------------

_LINE = re.compile(r"^- (?P<quote>.+?)(?P<trimmed> …)? \[(?P<n>\d+)\]$")


def _quoted(text: str) -> list[tuple[str, bool, int]]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        assert m, line
        out.append((m["quote"], bool(m["trimmed"]), int(m["n"])))
    return out


def _check_shape(text: str, refs: list[Reference], hits: list[Hit]) -> None:
    from askmd.answer.extractive import MORE_SENTENCES, PER_PASSAGE

    quoted = _quoted(text)
    assert 1 <= len(quoted) <= 3 + MORE_SENTENCES
    for quote, _, n in quoted:
        assert quote in hits[n - 1].text
        assert sum(1 for _, _, m in quoted if m == n) <= PER_PASSAGE
    assert [r.n for r in refs] == list(dict.fromkeys(n for _, _, n in quoted))
    for ref in refs:
        assert ref.text == next(q for q, _, n in quoted if n == ref.n)
        h = hits[ref.n - 1]
        assert (ref.source, ref.heading_chain, ref.line_start, ref.line_end) == (
            h.source,
            h.heading_chain,
            h.line_start,
            h.line_end,
        )


def test_extractive_picks_matching_sentences() -> None:
    text, refs = extractive("which port does the API listen on?", [OPS, API])
    # The metrics line shares only the heading's "API": it scores far under the sentence
    # that answers (extractive.RELATIVE) and is left out; the unrelated passage gives nothing.
    assert text == "- The API listens on port 8420. [2]"
    assert refs == [
        Reference(2, "api.md", "API › Network", 20, 24, "The API listens on port 8420.")
    ]


def test_a_hard_wrapped_sentence_is_quoted_whole() -> None:
    journal = (
        "Baked two sourdough loaves in the morning. Took the kids to the climbing\n"
        "gym in the afternoon.\n\n- Cook on medium heat,\n  stirring often."
    )
    text, refs = extractive("Where did I take the kids?", [hit(1, journal)])
    assert text == "- Took the kids to the climbing gym in the afternoon. [1]"
    assert refs[0].text == "Took the kids to the climbing gym in the afternoon."
    assert (refs[0].line_start, refs[0].line_end) == (10, 14)  # the passage's lines


def test_extractive_matching_sentence_beats_unrelated_one() -> None:
    hits = [hit(1, "The office is in Lisbon. The cache is Redis on port 6379.")]
    text, refs = extractive("what port does the cache use", hits)
    assert text == "- The cache is Redis on port 6379. [1]"
    _check_shape(text, refs, hits)


def test_a_sentence_that_repeats_what_is_quoted_gives_way_to_one_that_adds() -> None:
    # a reference page's table repeats the description the first passage gives; a
    # sentence most of whose words are already quoted says nothing new
    hits = [
        hit(1, "Renders a Markdown string to an HTML element.", chain="MarkdownRenderer"),
        hit(
            2,
            "Renders a Markdown string to an HTML element (inherited from MarkdownRenderer).",
            chain="MarkdownPreviewView",
        ),
        hit(
            3,
            "To render Markdown in a view, call MarkdownRenderer.render() with the element.",
            chain="Render",
        ),
    ]
    text, refs = extractive("How do I render a Markdown string into an HTML element?", hits)
    assert text.count("Renders a Markdown string to an HTML element") == 1, text
    assert "To render Markdown in a view" in text
    _check_shape(text, refs, hits)


def test_extractive_quotes_three_sentences_or_up_to_five_short_ones() -> None:
    port = [
        hit(1, "Port 1 is used. Port 2 is used. Port 3 is used. Port 4 is used."),
        hit(2, "Port 5 is used. Port 6 is used."),
    ]
    text, refs = extractive("port used", port)
    # Equal matches: earlier sentences chosen first, a passage's first sentence before
    # another's second, three at most from one passage; shown by passage, as written.
    # Short sentences say less each: five of them fit in SHORT_QUOTE.
    assert text.splitlines() == [
        "- Port 1 is used. [1]",
        "- Port 2 is used. [1]",
        "- Port 3 is used. [1]",
        "- Port 5 is used. [2]",
        "- Port 6 is used. [2]",
    ]
    assert [r.n for r in refs] == [1, 2]
    _check_shape(text, refs, port)

    long = " ".join(
        f"Port {n} is used by the {team} reporting service, which exports the {when} "
        f"figures for the {team} team."
        for n, team, when in [
            (1, "finance", "nightly"),
            (2, "sales", "weekly"),
            (3, "support", "hourly"),
            (4, "legal", "monthly"),
        ]
    )
    text, refs = extractive("port used", [hit(1, long), hit(2, long.replace("Port", "port"))])
    assert len(text.splitlines()) == 3  # three long sentences already say enough
    _check_shape(text, refs, [hit(1, long), hit(2, long.replace("Port", "port"))])


def test_extractive_prefers_the_sentence_that_gives_the_value_asked_for() -> None:
    hits = [
        hit(
            1,
            "Call requestSave whenever the content of the view changes, so the save is "
            "queued rather than written at once. The save that requestSave queues is "
            "written by the save method of the view, which your subclass overrides to "
            "persist the data. A delayed save is lost if the app quits before requestSave "
            "has fired, so call save directly before the view closes. The save is delayed "
            "by 2 seconds after the last change.",
        )
    ]
    # "how long" asks for a number (answer_kinds.py): the sentence that gives one is
    # quoted, though others share more of the question's words
    text, refs = extractive("How long is the save delayed after requestSave?", hits)
    assert "- The save is delayed by 2 seconds after the last change. [1]" in text.splitlines()
    _check_shape(text, refs, hits)


def test_extractive_leads_with_the_passage_of_its_best_sentence() -> None:
    budget = hit(
        1,
        "- Item: Phone (congstar) — Amount: €15 — Paid from: DKB\n"
        "- Emergency fund target: 6 months of expenses, about €18,000.",
        source="finance/accounts.md",
        chain="Accounts › Fixed costs (monthly)",
    )
    nas = hit(
        2,
        "Synology DS920+ in the hall closet, bought Nov 2021 from Alternate for €589.",
        source="homelab/nas.md",
        chain="NAS",
    )
    meaning = {
        "Item: Phone (congstar) — Amount: €15 — Paid from: DKB": 0.21,
        "Emergency fund target: 6 months of expenses, about €18,000.": 0.18,
        "Synology DS920+ in the hall closet, bought Nov 2021 from Alternate for €589.": 0.46,
    }
    # The search ranked the budget first ("costs" in its heading), and its lines pass on
    # that rank; the sentence that answers comes first all the same, with its passage,
    # and the passages keep their numbers.
    text, refs = extractive("How much did the NAS cost?", [budget, nas], meaning=meaning)
    lines = text.splitlines()
    assert lines[0] == (
        "- Synology DS920+ in the hall closet, bought Nov 2021 from Alternate for €589. [2]"
    ), text
    assert [r.n for r in refs][0] == 2
    _check_shape(text, refs, [budget, nas])


def test_extractive_skips_a_sentence_already_quoted() -> None:
    hits = [hit(1, "Redis listens on 6379."), hit(2, "Redis listens on 6379. Redis is a cache.")]
    text, refs = extractive("redis", hits)
    assert text == "- Redis listens on 6379. [1]\n- Redis is a cache. [2]"
    _check_shape(text, refs, hits)


def test_extractive_chinese() -> None:
    hits = [
        hit(1, "数据库每天凌晨两点备份。缓存使用Redis。"),
        hit(2, "服务监听端口8420。日志写入系统目录。"),
    ]
    text, refs = extractive("服务监听哪个端口？", hits)
    assert text == "- 服务监听端口8420。 [2]"
    _check_shape(text, refs, hits)
    text, refs = extractive("备份什么时候？", hits)
    assert text == "- 数据库每天凌晨两点备份。 [1]"
    _check_shape(text, refs, hits)


def test_extractive_finds_latin_word_inside_chinese_sentence() -> None:
    hits = [hit(1, "其他内容在这里。用docker部署服务。")]
    text, _ = extractive("docker 部署", hits)
    assert text == "- 用docker部署服务。 [1]"


def test_extractive_without_shared_terms_quotes_first_sentence_of_hit_1() -> None:
    text, refs = extractive("zebra giraffe", [OPS, API])
    assert text == "- The office is in Lisbon. [1]"
    assert [(r.n, r.text) for r in refs] == [(1, "The office is in Lisbon.")]


def test_extractive_trims_long_sentence() -> None:
    hits = [hit(1, "word " * 80 + "end.")]
    text, refs = extractive("word", hits)
    [(quote, trimmed, n)] = _quoted(text)
    assert trimmed and n == 1
    assert len(quote) <= FRAGMENT_CHARS
    assert hits[0].text.startswith(quote)
    assert text == f"- {quote} … [1]"
    assert refs[0].text == quote


@pytest.mark.parametrize(
    "texts",
    [
        pytest.param(["```\nport: 8420\n```"], id="code"),
        pytest.param(["# Heading only", "| a | b |\n|---|---|"], id="heading-and-table-head"),
        pytest.param([""], id="empty"),
    ],
)
def test_extractive_without_prose(texts: list[str]) -> None:
    hits = [hit(n, t) for n, t in enumerate(texts, start=1)]
    assert extractive("port", hits) == (NOTHING_FOUND, [])


def test_extractive_no_hits() -> None:
    assert extractive("port", []) == (NOTHING_FOUND, [])


_PROSE = st.lists(
    st.sampled_from(
        [
            "The API listens on port 8420.",
            "Redis is the cache.",
            "Backups run nightly!",
            "服务监听端口8420。",
            "```\ncode line.\n```",
            "# A heading",
            "- a list item about ports",
            "Ports are opened by the firewall team?",
        ]
    ),
    max_size=6,
).map("\n".join)


@given(st.lists(_PROSE, min_size=1, max_size=4), st.sampled_from(["port", "redis", "备份", "x"]))
def test_extractive_shape_property(texts: list[str], query: str) -> None:
    hits = [hit(n, t) for n, t in enumerate(texts, start=1)]
    text, refs = extractive(query, hits)
    if text == NOTHING_FOUND:
        assert refs == []
        assert all(sentences(h.text) == [] for h in hits)
    else:
        _check_shape(text, refs, hits)


# --- follow-up questions ---------------------------------------------------------------

HISTORY = [Turn("Which port does the API use?", "Which port does the API use?", "8420 [1].")]


@pytest.mark.parametrize(
    "question",
    [
        "and the metrics?",
        "what about its port?",
        "How do I restart it?",
        "那它呢？",
        "那怎么恢复呢？",
        "第一周呢？",
        "它几点运行？",
        "what does that mean?",
        "which worker does that?",
        "when do I delete the old one?",
        "what broke there?",
        "why?",
    ],
)
def test_a_question_that_points_back_may_lean_on_context(question: str) -> None:
    assert leans_on_context(question)


@pytest.mark.parametrize(
    "question",
    [
        "How are database backups scheduled nightly?",
        "Where is the Redis cache configured?",
        "数据库备份在什么时候进行？",
        # short, but with a subject of its own: nothing points back
        "what are properties?",
        "what is a vault?",
        "什么是属性？",
        "redis backups",
        "what is the capital of Australia?",
        # "it", "that", "there", "this" that point at nothing said before
        "is it possible to export all my photos?",
        "what is the command that publishes notes?",
        "is there a way to sync two folders?",
        "how do I delete this note?",
        "那个命令是什么？",
    ],
)
def test_a_question_with_no_sign_of_dependence_stands_alone(question: str) -> None:
    assert not leans_on_context(question)
    searched: list[str] = []
    query, _ = resolve(question, HISTORY, lambda q: searched.append(q) or [API], None)
    assert query == question and searched == [question]  # searched once, alone


def test_merged_query_reads_the_question_after_the_last_query() -> None:
    history = [Turn("q1", "first query", ""), Turn("and it?", "second query and it?", "")]
    assert merged_query("why?", history) == "second query and it? why?"


@given(st.text(max_size=600), st.sampled_from(["and the port?", "what about it?", "那它呢？"]))
def test_merged_query_is_capped(previous: str, question: str) -> None:
    query = merged_query(question, [Turn("q", previous, "")])
    assert len(query) <= MAX_QUERY_CHARS
    assert query.endswith(question)


def test_merged_query_keeps_the_end_when_capped() -> None:
    query = merged_query("and it?", [Turn("q", "w" * 1000, "")])
    assert query == "w" * (MAX_QUERY_CHARS - 8) + " and it?"


# A small vault, and a keyword search over it: what the passages say decides the query.
VAULT = [
    hit(1, "The graph view shows your notes as dots and links as lines.", "Graph view.md",
        "Graph view"),
    hit(2, "To create a template, put a note in the templates folder.", "Templates.md",
        "Templates"),
    hit(3, "A template can be deleted like any note; inserted copies stay.", "Templates.md",
        "Templates › Delete"),
    hit(4, "Photos up to 50 MB can be uploaded.", "upload.md", "Upload › Size"),
    hit(5, "The metrics port is 9420.", "ops.md", "Ops › Metrics port"),
    hit(6, "Delete a note from the file menu.", "Files.md", "Files › Delete"),
]  # fmt: skip


def keyword_search(query: str) -> list[Hit]:
    """The vault's passages sharing a term with the query, most shared terms first."""
    want = set(content_terms(query))

    def shared(h: Hit) -> int:
        return len(want & set(content_terms(f"{h.source} {h.heading_chain} {h.text}")))

    return sorted((h for h in VAULT if shared(h)), key=lambda h: (-shared(h), h.rank))


@pytest.mark.parametrize(
    ("before", "question", "query", "source"),
    [  # a new question, short: searched alone
        ("what does the graph view show", "how do I create a template", "alone", "Templates.md"),
        ("what is the maximum upload size?", "and the metrics port?", "alone", "ops.md"),
        # a follow-up: the earlier topic and the new words meet in one passage
        ("how do I create a template", "and how do I delete it?", "merged", "Templates.md"),
        # nothing to search alone
        ("how do I create a template", "why?", "merged", "Templates.md"),
    ],
)
def test_an_ambiguous_question_is_searched_the_better_supported_way(
    before: str, question: str, query: str, source: str
) -> None:
    history = [Turn(before, before, "")]
    searched: list[str] = []
    chosen, hits = resolve(
        question, history, lambda q: searched.append(q) or keyword_search(q), None
    )
    expected = question if query == "alone" else f"{before} {question}"
    assert chosen == expected
    assert hits == keyword_search(expected) and hits[0].source == source
    assert searched[-1] == chosen  # the query used is the last one searched


PUBLISH = [
    hit(1, "Publish your notes as a website: pick the notes and press Publish.", "Publish.md",
        "Publish"),
    hit(2, "Properties are key-value pairs at the top of a note.", "Properties.md",
        "Properties"),
    hit(3, "Publish can show a note's properties as a table on the website.", "Publish.md",
        "Publish › Properties"),
]  # fmt: skip


def test_a_short_new_question_is_not_merged_with_the_one_before() -> None:
    """A passage naming both topics once made "what are properties?" read as a follow-up."""
    before = "how do I publish my notes as a website?"
    searched: list[str] = []

    def search(query: str) -> list[Hit]:
        want = set(content_terms(query))
        found = [h for h in PUBLISH if want & set(content_terms(h.text))]
        searched.append(query)
        return sorted(found, key=lambda h: -len(want & set(content_terms(h.text))))

    query, hits = resolve("what are properties?", [Turn(before, before, "")], search, None)
    assert (query, searched) == ("what are properties?", ["what are properties?"])
    assert hits[0].source == "Properties.md"


def test_ask_answers_a_new_short_question_on_its_own() -> None:
    history = [Turn("what does the graph view show", "what does the graph view show", "")]
    result = ask("how do I create a template", history, keyword_search, None)
    assert result.query == "how do I create a template"
    assert "templates folder" in result.text and "graph" not in result.text.lower()
    assert result.to_json()["query"] == "how do I create a template"


# --- prompts ---------------------------------------------------------------------------


def test_build_messages() -> None:
    plain = hit(3, "  Plain text.\n", source="b.md", chain="", start=7)
    messages = build_messages("Which port?", [API, plain])
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": "Sources:\n\n"
            "[1] api.md › API › Network (lines 20–24)\n"
            "The API listens on port 8420. Metrics are exported to Prometheus.\n\n"
            "[2] b.md (lines 7–11)\nPlain text.\n\n"
            "Question: Which port?",
        },
    ]


def test_build_messages_with_rewritten_query() -> None:
    [_, user] = build_messages("and its port?", [API], "the API and its port?")
    assert user["content"].endswith(
        "Question: and its port?\n(In this conversation that means: the API and its port?)"
    )


@pytest.mark.parametrize("query", ["", "Which port?"])
def test_build_messages_query_same_as_question(query: str) -> None:
    [_, user] = build_messages("Which port?", [API], query)
    assert user["content"].endswith("\n\nQuestion: Which port?")


# --- ask -------------------------------------------------------------------------------


def test_ask_extractive() -> None:
    searched: list[str] = []

    def search(query: str) -> list[Hit]:
        searched.append(query)
        return [OPS, API]

    result = ask("which port does the API listen on?", [], search, None)
    assert searched == ["which port does the API listen on?"]
    assert result.mode == "extractive"
    assert result.text.splitlines()[0] == "- The API listens on port 8420. [2]"
    assert result.citations == [r.n for r in result.references] == [2]
    assert result.invalid_citations == []
    assert result.hits == [OPS, API]
    assert result.retrieval_ms >= 0 and result.generation_ms >= 0
    data = result.to_json()
    assert list(data) == ASK_JSON_FIELDS
    assert data["references"] == [r.to_json() for r in result.references]
    assert data["answer"] == result.text


def test_ask_follow_up_searches_the_standalone_query() -> None:
    searched: list[str] = []

    def search(query: str) -> list[Hit]:
        searched.append(query)
        return [API]

    result = ask("and the metrics?", HISTORY, search, None)
    assert searched[-1] == "Which port does the API use? and the metrics?"
    assert result.question == "and the metrics?"
    assert result.query == searched[-1]


def test_ask_nothing_found() -> None:
    result = ask("anything?", [], lambda query: [], None)
    assert result.text == NOTHING_FOUND
    assert result.references == [] and result.citations == []
    assert result.to_json()["answer"] == NOTHING_FOUND
    assert result.to_json()["references"] == []


def test_extractive_reads_a_sentence_with_its_heading() -> None:
    # The FAQ shape: the heading asks, the first sentence answers without repeating a word.
    faq = Hit(
        rank=1,
        score=0.6,
        chunk_id="faq.md#3",
        source="faq.md",
        heading_chain="FAQ > What is the maximum upload size?",
        line_start=10,
        line_end=13,
        text="## What is the maximum upload size?\n\n50 MB per photo. Larger files are "
        "rejected. Admins can raise the upload limit in the config.",
    )
    text, refs = extractive("what is the maximum upload size?", [faq])
    assert text.splitlines()[0] == "- 50 MB per photo. [1]"
    assert refs[0].text == "50 MB per photo."


# --- bracketed numbers written in the notes --------------------------------------------


@pytest.mark.parametrize(
    ("text", "k", "expected", "cited", "invalid"),
    [
        ("A [99999].", 3, "A.", [], [99999]),
        ("A [123456789012].", 3, "A.", [], [123456789012]),
        ("A [\u200b9].", 3, "A.", [], [9]),
        ("A [\u200b2\u2060].", 3, "A [2].", [2], []),
        ("A 【\ufeff2】.", 3, "A [2].", [2], []),
    ],
    ids=["five-digits", "twelve-digits", "zero-width-out-of-range", "zero-width-valid", "bom"],
)
def test_citation_checker_sees_through_long_numbers_and_invisible_characters(
    text: str, k: int, expected: str, cited: list[int], invalid: list[int]
) -> None:
    assert check_citations(text, k) == CitationCheck(expected, cited, invalid)


NOTE_CITES = hit(
    1,
    "The refund window is 30 days [2]. The job prints output [99] and 【3】 then exits. "
    "Index it with `arr[2]` first.",
    source="refunds.md",
    chain="Refunds",
)


def test_extractive_answer_does_not_present_a_notes_own_brackets_as_citations() -> None:
    text, refs = extractive("refund window days output job prints", [NOTE_CITES])
    assert "- The refund window is 30 days (2). [1]" in text.splitlines()
    assert "- The job prints output (99) and （3） then exits. [1]" in text.splitlines()
    checked = check_citations(text, 1)
    assert checked.cited == [1] and checked.invalid == [] and checked.text == text
    assert refs[0].text in NOTE_CITES.text  # the reference stays verbatim


def test_sources_given_to_the_model_carry_no_citation_like_brackets() -> None:
    [_, user] = build_messages("refund window?", [NOTE_CITES])
    source = user["content"].split("\n", 3)[3]
    assert "30 days (2)" in source and "output (99)" in source and "（3）" in source
    assert "`arr[2]`" in source  # code is left as written
    assert check_citations(source.replace("`arr[2]`", ""), 1).cited == []


def test_ask_extractive_with_bracketed_numbers_in_the_note_cites_only_real_sources() -> None:
    result = ask("how long is the refund window", [], lambda q: [NOTE_CITES], None)
    assert result.citations == [1] and result.invalid_citations == []
    prose = re.sub(r"`[^`]*`", "", result.text)  # `arr[2]` is code, quoted as written
    assert "[2]" not in prose and "[99]" not in prose


# --- what an extractive answer quotes ----------------------------------------------------

EMBED = hit(
    1,
    "## Embed a note\n\nTo embed a note:\n\n```md\n![[Daily notes]]\n```\n\n"
    "The embed updates when the note changes.",
    source="Embed files.md",
    chain="Embed files › Embed a note",
)
STEPS = hit(
    1,
    "## 新建笔记\n\n要创建新笔记：\n\n1. 点击左侧的“新建笔记”。\n2. 输入标题。\n3. 按回车。\n\n"
    "笔记保存在当前文件夹。",
    source="笔记.md",
    chain="笔记 › 新建笔记",
)


def test_a_sentence_ending_in_a_colon_brings_its_code_block() -> None:
    text, refs = extractive("how do I embed a note", [EMBED])
    assert text.startswith("- To embed a note: [1]\n  ```md\n  ![[Daily notes]]\n  ```")
    assert refs[0].text == "To embed a note:"


def test_a_sentence_ending_in_a_full_width_colon_brings_its_steps() -> None:
    text, _ = extractive("要创建新笔记", [STEPS])
    lines = text.splitlines()
    assert lines[:4] == [
        "- 要创建新笔记： [1]",
        "  1. 点击左侧的“新建笔记”。",
        "  2. 输入标题。",
        "  3. 按回车。",
    ]
    assert text.count("输入标题") == 1  # a step is not quoted a second time


def test_an_introduced_block_is_cut_to_a_size_limit() -> None:
    steps = "\n".join(f"- step number {i} of the long install" for i in range(40))
    long = hit(1, f"To install the long way:\n{steps}\n", source="install.md", chain="Install")
    text, _ = extractive("install the long way", [long])
    block = text.split("\n", 1)[1].splitlines()
    assert len(block) == BLOCK_LINES + 1 and block[-1] == "  …"
    assert block[0] == "  - step number 0 of the long install"


TLDR_STYLE = hit(
    1,
    "# jenv\n\n> Manage the Java environment.\n\n- Set the global JDK version:\n\n"
    "`jenv global {{version}}`\n\n- Set the JDK version for the current shell session:\n\n"
    "`jenv shell {{version}}`\n",
    source="jenv.md",
    chain="jenv",
)


def test_a_sentence_ending_in_a_colon_brings_the_paragraph_it_introduces() -> None:
    text, _ = extractive("set the global JDK version", [TLDR_STYLE])
    assert text.splitlines()[:2] == [
        "- Set the global JDK version: [1]",
        "  `jenv global {{version}}`",
    ]


REFERENCE_PAGE = hit(
    1,
    "## Plugin.registerObsidianProtocolHandler() method\n\nRegister a handler for obsidian:// "
    "URLs.\n\n**Signature:**\n\n```typescript\nregisterObsidianProtocolHandler(action: string, "
    "handler: ObsidianProtocolHandler): void;\n```\n\n## Parameters\n\nThe action string.\n",
    source="Plugin/registerObsidianProtocolHandler.md",
    chain="Plugin.registerObsidianProtocolHandler() method",
)


def test_a_short_label_after_a_sentence_brings_the_code_it_introduces() -> None:
    # a reference page: the description, then "Signature:" and the signature itself
    text, _ = extractive("How do I handle obsidian:// URLs in my plugin?", [REFERENCE_PAGE])
    assert text.splitlines()[:4] == [
        "- Register a handler for obsidian:// URLs. [1]",
        "  ```typescript",
        "  registerObsidianProtocolHandler(action: string, handler: ObsidianProtocolHandler)"
        ": void;",
        "  ```",
    ]
    assert text.count("registerObsidianProtocolHandler(action") == 1


@pytest.mark.parametrize(
    "after",
    [
        "Usage:\n\nRun it from the project folder.\n",  # a label, but no code follows it
        "\n```sh\nnpm run dev\n```\n",  # code with no label: not said to belong to it
        "This one is a whole sentence that ends in a colon, not a label:\n\n```sh\nnpm test\n```\n",
    ],
)
def test_only_a_short_label_and_code_are_brought_by_a_sentence(after: str) -> None:
    note = hit(1, f"The dev server reloads the plugin on save.\n\n{after}", chain="Dev server")
    text, _ = extractive("does the dev server reload the plugin on save", [note])
    assert text.splitlines()[0] == "- The dev server reloads the plugin on save. [1]"
    assert "npm" not in text.split("[1]", 1)[1].split("\n- ", 1)[0]


def test_the_first_passage_found_is_not_crowded_out_by_a_lower_one() -> None:
    # the search ranks meaning first; a fourth passage listing every variant shares as
    # many words but should not take the place of the first passage's own sentences
    first = hit(
        1,
        "A command can be limited to some conditions. To do so, consider using "
        "checkCallback() instead of callback. A checking argument is passed to the "
        "callback, to tell a preliminary check from the action.",
        source="commands.md",
        chain="Commands › Conditional commands",
    )
    fourth = hit(
        4,
        "Use callback if the command runs unconditionally. Use checkCallback if the command "
        "only runs under certain conditions. Use editorCallback if the command needs the "
        "editor.",
        source="reference.md",
        chain="Reference › Command",
    )
    others = [hit(2, "Ribbon icons start actions.", "r.md"), hit(3, "Settings are saved.", "s.md")]
    question = "How can I make a command only available when some condition is true?"
    text, _ = extractive(question, [first, *others, fourth])
    assert text.count("[1]") >= 2, text


def test_a_colon_before_a_heading_brings_nothing() -> None:
    alone = hit(1, "Steps for the release:\n\n## Later\n", chain="Release")
    text, _ = extractive("steps for the release", [alone])
    assert text == "- Steps for the release: [1]"  # nothing else is near: it points there
    note = hit(1, "Steps for the release:\n\n## Later\n\nNothing here yet.\n", chain="Release")
    text, _ = extractive("steps for the release", [note])
    assert text == "- Nothing here yet. [1]"  # quoted beside another, the label gives way


def test_a_table_row_is_quoted_as_its_cells_under_their_column_names() -> None:
    table = hit(
        1,
        "| Method | Modifiers | Description |\n| --- | --- | --- |\n"
        "| `loadData()` |  | Load settings data. |\n"
        "| [[Notes\\|saveData()]] |  | Save settings data. |\n",
        chain="Plugin › Methods",
    )
    text, refs = extractive("load settings data", [table])
    assert text.splitlines()[0] == "- Method: `loadData()` — Description: Load settings data. [1]"
    assert refs[0].text == "| `loadData()` |  | Load settings data."  # the file, verbatim
    numbers = hit(
        1,
        "| env | replicas | max surge |\n|:--|--:|--:|\n"
        "| production | 6 | 2 |\n| staging | 2 | 1 |\n",
        chain="Deploy › Sizes",
    )
    text, _ = extractive("staging replicas", [numbers])
    assert "- env: staging — replicas: 2 — max surge: 1 [1]" in text.splitlines()


def test_a_table_row_without_its_header_in_the_passage_is_shown_as_its_cells() -> None:
    """A long table chunked past its header: the row's cells, nothing made up."""
    rows = hit(1, "| `loadData()` |  | Load settings data. |\n| `x()` |  | Other. |\n")
    text, _ = extractive("load settings data", [rows])
    assert text.splitlines()[0] == "- `loadData()` — Load settings data. [1]"


def test_sentences_are_shown_in_the_order_of_their_passages() -> None:
    """The search ranked the first passage best (it reads meaning); a later passage that
    repeats more of the question's words does not go before it."""
    hits = [
        hit(1, "Disable suspend in the power settings to keep the laptop awake.", "power.md"),
        hit(2, "A laptop can sleep. Sleep saves power on a laptop.", "sleep.md"),
    ]
    text, refs = extractive("stop the laptop going to sleep to save power", hits)
    assert text.splitlines()[0].endswith("[1]")
    assert [r.n for r in refs][0] == 1


def test_a_chinese_question_quotes_the_english_sentence_that_answers_it() -> None:
    note = hit(
        1,
        "Plugins are listed in the community directory. "
        "Call saveData() to keep the settings on disk.",
        source="Plugin data.md",
        chain="Plugin data",
    )
    text, _ = extractive("插件怎么保存设置？", [note])  # "how does a plugin save settings"
    assert text == "- Call saveData() to keep the settings on disk. [1]"


def test_a_question_is_not_quoted_as_an_answer() -> None:
    faq = hit(
        1,
        "**How do I reset my password?**\n\nUse the link on the sign-in page.\n",
        source="faq.md",
        chain="FAQ",
    )
    text, _ = extractive("how do I reset my password?", [faq])
    assert text == "- Use the link on the sign-in page. [1]"


def test_a_sentence_cut_inside_bold_text_shows_no_lone_marker() -> None:
    # "；" ends a sentence inside a bold span: the quote would end in a lone "**"
    note = hit(
        1,
        "简单地说：**最近 7 天可以恢复到任意时间点；再往前只有每周日的备份（保留 8 周）**。"
        "超过 12 个月的数据库状态是找不回来的。",
        source="备份.md",
        chain="备份 › 保留策略",
    )
    text, refs = extractive("每周日的备份保留多久", [note])
    assert "- 再往前只有每周日的备份（保留 8 周）。 [1]" in text.splitlines(), text
    assert "**" not in text
    assert "**" in refs[0].text  # the reference quotes the file as written


def test_links_are_shown_as_their_display_text_and_references_stay_verbatim() -> None:
    note = hit(
        1,
        "Open [[Settings]]. Read about [[Internal links#Link to a heading|headings]] in "
        "[the guide](https://example.com/guide) and [[Daily notes#Template]] `[[kept]]`.",
        source="links.md",
        chain="Links",
    )
    text, refs = extractive("open settings headings guide daily notes", [note])
    assert sorted(text.splitlines()) == [
        "- Open Settings. [1]",
        "- Read about headings in the guide and Daily notes › Template `[[kept]]`. [1]",
    ]
    assert "[[Internal links#Link to a heading|headings]]" in refs[0].text


def test_a_task_box_is_shown_as_a_checkbox_and_the_reference_stays_verbatim() -> None:
    note = hit(
        1,
        "Done this week:\n- [x] Renewed the passport, it cost €85.\n- [ ] Book the dentist.\n\n"
        "## Later\n\n- [X] Paid the car insurance premium of €412.\n",
        source="todo.md",
        chain="Weekly review",
    )
    text, refs = extractive("How much did the passport renewal cost?", [note])
    assert text.splitlines()[0] == "- ☑ Renewed the passport, it cost €85. [1]"
    assert refs[0].text == "[x] Renewed the passport, it cost €85."
    text, _ = extractive("What did I get done this week?", [note])
    assert text.splitlines()[:3] == [
        "- Done this week: [1]",
        "  - ☑ Renewed the passport, it cost €85.",
        "  - ☐ Book the dentist.",
    ]
    text, _ = extractive("How much was the car insurance premium?", [note])
    assert text.splitlines()[0] == "- ☑ Paid the car insurance premium of €412. [1]"
    text, _ = extractive("what does `[x]` mean", [hit(1, "In code, `[x]` is a list.")])
    assert text == "- In code, `[x]` is a list. [1]"


def test_a_label_that_introduces_nothing_is_not_quoted() -> None:
    # "要点：" then a heading (the section ends) or the passage's end: nothing to show
    note = hit(
        1,
        "烤面包要点：\n\n## 温度\n\n面包用 250 度烤 20 分钟，再开盖烤 25 分钟。\n\nKey points:",
        source="面包.md",
        chain="面包",
    )
    text, _ = extractive("烤面包的要点是什么？", [note])
    assert "要点：" not in text and "Key points:" not in text, text
    assert "250 度" in text
