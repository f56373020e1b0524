"""terms.py: search terms for English and Chinese alike (exact lists), the light stemmer,
stop words, and inputs that must not crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from askmd.terms import STOPWORDS, content_terms, has_cjk, stem, terms

# (id, text, terms(text), content_terms(text))
CASES = [
    # Latin words, lower-cased, in order, repeats kept
    ("words", "Hello World", ["hello", "world"], ["hello", "world"]),
    ("repeats-kept", "port port", ["port", "port"], ["port", "port"]),
    ("upper-case", "The Status", ["the", "status"], ["status"]),
    ("punctuation-between", "hello,world", ["hello", "world"], ["hello", "world"]),
    # identifiers: whole and as parts (parts stemmed, the whole token not)
    (
        "hyphenated",
        "docker-compose up",
        ["docker-compose", "docker", "compose", "up"],
        ["docker-compose", "docker", "compose"],
    ),
    ("hyphenated-upper", "Docker-Compose", ["docker-compose", "docker", "compose"], None),
    ("snake-upper", "ERR_CONN_42", ["err_conn_42", "err", "conn", "42"], None),
    ("dotted-file", "config.yaml", ["config.yaml", "config", "yaml"], None),
    ("trailing-period", "see config.yaml.", ["see", "config.yaml", "config", "yaml"], None),
    ("plain-identifier", "kubectl get pods", ["kubectl", "get", "pod"], None),
    ("parts-stemmed", "user-sessions", ["user-sessions", "user", "session"], None),
    ("path", "/usr/local/bin", ["usr/local/bin", "usr", "local", "bin"], None),
    ("version", "v1.2.3", ["v1.2.3", "v1", "2", "3"], None),
    ("date", "2024-01-15", ["2024-01-15", "2024", "01", "15"], None),
    ("number", "3.14", ["3.14", "3", "14"], None),
    ("leading-joiners", "--flag", ["flag"], ["flag"]),
    ("stopword-part", "the_end", ["the_end", "the", "end"], ["the_end", "end"]),
    ("stopword-parts-only", "does-it", ["does-it", "doe", "it"], ["does-it"]),
    # CJK: overlapping bigrams, a lone character a unigram
    ("cjk-bigrams", "配置文件", ["配置", "置文", "文件"], ["配置", "置文", "文件"]),
    ("cjk-lone", "中", ["中"], ["中"]),
    ("cjk-lone-each", "中 文", ["中", "文"], ["中", "文"]),
    ("cjk-punctuation-splits", "配置，文件", ["配置", "文件"], ["配置", "文件"]),
    ("kana", "カタカナ", ["カタ", "タカ", "カナ"], None),
    ("hangul", "한국어", ["한국", "국어"], None),
    # Chinese mixed with English (the Latin word after the CJK run, or after a space)
    ("cjk-then-latin", "使用Redis", ["使用", "redis"], ["使用", "redis"]),
    ("cjk-then-digits", "端口8420", ["端口", "8420"], ["端口", "8420"]),
    ("latin-space-cjk", "Docker 部署", ["docker", "部署"], ["docker", "部署"]),
    (
        "docstring-example",
        "Run docker-compose up; 配置文件",
        ["run", "docker-compose", "docker", "compose", "up", "配置", "置文", "文件"],
        ["run", "docker-compose", "docker", "compose", "配置", "置文", "文件"],
    ),
    # stop words go only from content_terms, and are checked before stemming
    ("question", "How does it work?", ["how", "doe", "it", "work"], ["work"]),
    ("does-alone", "does", ["doe"], []),
    # nothing to find
    ("empty", "", [], []),
    ("whitespace", " \t\n\u200b", [], []),
    ("punctuation-only", "...!!! ?? -- ,;:", [], []),
    ("stopwords-only", "what is it", ["what", "is", "it"], []),
    # emoji and other scripts
    ("emoji", "🎉 emoji 🚀", ["emoji"], ["emoji"]),
    ("emoji-inside", "a🎉b", ["a", "b"], ["b"]),
    ("cyrillic", "Привет мир", ["привет", "мир"], ["привет", "мир"]),
    ("greek", "Καλημέρα κόσμε", ["καλημέρα", "κόσμε"], None),
    ("arabic", "مرحبا", ["مرحبا"], None),
    ("precomposed-accent", "café", ["café"], ["café"]),
]


@pytest.mark.parametrize(("text", "expected"), [pytest.param(c[1], c[2], id=c[0]) for c in CASES])
def test_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(c[1], c[3], id=c[0]) for c in CASES if c[3] is not None],
)
def test_content_terms(text: str, expected: list[str]) -> None:
    assert content_terms(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "用docker部署服务", ["用", "docker", "部署", "署服", "服务"], id="cjk-latin-cjk"
        ),
        pytest.param(
            "使用Redis作为缓存", ["使用", "redis", "作为", "为缓", "缓存"], id="latin-then-cjk"
        ),
        pytest.param("8420端口", ["8420", "端口"], id="digits-then-cjk"),
    ],
)
def test_latin_word_followed_by_cjk_is_split(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_decomposed_and_composed_accents_give_the_same_term() -> None:
    assert terms("e\u0301cole") == terms("\u00e9cole") == ["\u00e9cole"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("listens", "listen"),
        ("listening", "listen"),
        ("listened", "listen"),
        ("ports", "port"),
        ("pods", "pod"),
        ("flies", "fly"),
        ("classes", "class"),
        ("glasses", "glass"),
        # -ss, -us, -is endings are not plurals
        ("class", "class"),
        ("access", "access"),
        ("status", "status"),
        ("focus", "focus"),
        ("analysis", "analysis"),
        ("this", "this"),
        # short words and short stems are left alone
        ("is", "is"),
        ("was", "was"),
        ("bus", "bus"),
        ("has", "has"),
        ("used", "used"),
        ("sing", "sing"),
        ("doing", "doing"),
        # only plain ASCII letters are stemmed
        ("v1s", "v1s"),
        ("cafés", "cafés"),
        ("配置", "配置"),
        ("", ""),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stem_joins_inflections_in_terms() -> None:
    assert terms("listens listening listened listen") == ["listen"] * 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", False),
        ("plain ascii", False),
        ("Привет", False),
        ("🎉", False),
        ("a中", True),
        ("カ", True),
        ("한", True),
        ("㐀", True),  # CJK extension A
    ],
)
def test_has_cjk(text: str, expected: bool) -> None:
    assert has_cjk(text) is expected


def test_every_stopword_is_dropped_alone() -> None:
    for word in sorted(STOPWORDS):
        assert content_terms(word) == [], word
        assert content_terms(word.upper()) == [], word


@given(st.text(max_size=80))
def test_any_text_gives_lowercase_terms_and_content_terms_is_a_subsequence(text: str) -> None:
    all_terms = terms(text)
    assert all(isinstance(t, str) and t and t == t.lower() for t in all_terms)
    remaining = iter(all_terms)
    assert all(t in remaining for t in content_terms(text))  # in order, a subsequence
    if has_cjk(text):
        assert any(has_cjk(t) for t in all_terms)


def test_cjk_share_counts_letters_and_digits_as_str_isalnum_does():
    """The share is counted by regular expressions; it must agree with the definition
    (CJK letters among `str.isalnum()` letters) on every code point, the kana marks and
    middle dots that sit in the CJK ranges but are not letters included."""
    from askmd.terms import _CJK, cjk_share

    def by_definition(text: str) -> float:
        letters = [c for c in text if c.isalnum()]
        return sum(1 for c in letters if _CJK.match(c)) / len(letters) if letters else 0.0

    points = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    assert [c for c in points if cjk_share(c) != by_definition(c)] == []
    texts = ["", "   ", "部署 回滚 deploy", "ア・イ゛ 12 ＡＢ", "snake_case 下划线_x", "한국어"]
    assert [cjk_share(t) for t in texts] == [by_definition(t) for t in texts]
    assert cjk_share("部署") == 1.0 and cjk_share("deploy") == 0.0
