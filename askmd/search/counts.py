"""Counts written in words or numerals, as questions write them ("fifty-five days ago",
"a hundred and one", 一百零一天前) and ranges of them ("2-3", "two or three", 三四天前).

A count that cannot be read is None, never 0: a question with "umpteen days ago" is
read without a date rather than as a question about today.
"""

from __future__ import annotations

import re

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = {"hundred": 100, "thousand": 1000}
WORD = "|".join([*_ONES, *_TENS, *_SCALES, "a", "an", "and"])
# one count in English: words joined by spaces or hyphens ("a hundred and one"), or digits
NUMBER_EN = rf"(?:\d{{1,5}}|(?:(?:{WORD})[\s-]+)*(?:{WORD}))"
RANGE_EN = rf"({NUMBER_EN})(?:\s*(?:-|–|to|or)\s*({NUMBER_EN}))?"

_DIGIT_ZH = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
_UNIT_ZH = {"十": 10, "百": 100, "千": 1000}
NUMBER_ZH = r"(?:\d{1,5}|[零一二两三四五六七八九十百千]{1,8})"


def english(text: str) -> int | None:
    """A count in English words or digits, or None."""
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    total = current = 0
    seen = False
    for word in re.split(r"[\s-]+", text):
        if word == "and":
            continue
        if word in ("a", "an"):
            current, seen = max(current, 1), True
        elif word in _ONES:
            current, seen = current + _ONES.index(word), True
        elif word in _TENS:
            current, seen = current + 10 * (_TENS.index(word) + 2), True
        elif word in _SCALES:
            total, current = total + max(current, 1) * _SCALES[word], 0
            seen = True
        else:
            return None
    return total + current if seen else None


def chinese(text: str) -> int | None:
    """A count in Chinese numerals (to the thousands: 一百零一, 三十五, 两百) or digits."""
    if text.isdigit():
        return int(text)
    total = digit = 0
    for char in text:
        if char in _DIGIT_ZH:
            digit = _DIGIT_ZH[char]
        elif char in _UNIT_ZH:
            if not digit and char != "十":
                return None  # 百 or 千 with no count before it
            total, digit = total + (digit or 1) * _UNIT_ZH[char], 0
        else:
            return None
    return total + digit


def chinese_range(text: str) -> tuple[int, int] | None:
    """三四 (three or four), 七八: two numerals a step apart are a range; a count is one."""
    if len(text) == 2 and all(c in _DIGIT_ZH for c in text):
        low, high = _DIGIT_ZH[text[0]], _DIGIT_ZH[text[1]]
        return (low, high) if high == low + 1 and low > 0 else None
    if len(text) > 2 and all(c in _DIGIT_ZH for c in text) and not text.isdigit():
        return None  # 一二三: no count a person writes
    count = chinese(text)
    return (count, count) if count else None


def english_range(first: str, second: str | None) -> tuple[int, int] | None:
    low = english(first)
    high = english(second) if second else low
    if not low or not high or high < low:
        return None
    return low, high
