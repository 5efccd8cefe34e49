"""How hard a new password is to guess: zxcvbn-style rules, written here (issue 31).

A person's password is usually built from guessable parts: a word, a name, a year, a run
such as ``abcd`` or ``1234``, characters repeated. Following zxcvbn (Wheeler, "zxcvbn:
Low-Budget Password Strength Estimation", USENIX Security 2016), the password is split into
the cheapest sequence of such parts, each costing the guesses an attacker who tries that
kind of part first would need (log2, in bits); characters no part explains cost what
guessing them one by one does. A password must cost at least `MIN_GUESS_BITS`, zxcvbn's
"safely unguessable" score 3 (10^8 guesses): with argon2id at ~0.1 s a guess, that is
~10^7 CPU-seconds offline, and the sign-in back-off makes it hopeless online.

So ``Summer2024`` (a common word, capitalised, and a year), ``ada12345`` (another account's
name and a run of digits) and ``ABCDEFGH`` (a run) are refused; ``correct horse battery``
and a random ``x7#kQ2mz`` pass. A password of one kind of character only (only lower-case
letters, only capitals, only digits, only symbols) must also be at least
`MIN_ONE_CLASS_CHARS` long.

The words are the first 10,000 of each zxcvbn 4.5.0 frequency list (`WORDS_FILE`, MIT); no
dependency is added: the rules fit in this file and the list is data (the zxcvbn packages on
PyPI are unmaintained ports of the 2016 JavaScript).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

#: A new password must cost at least this many bits (10^8 guesses, zxcvbn's score 3).
MIN_GUESS_BITS = math.log2(1e8)
#: A password of one kind of character only needs at least this many characters.
MIN_ONE_CLASS_CHARS = 12
WORDS_FILE = resources.files("store").joinpath("password_words.txt")
# Substitutions people make in words ("p@ssw0rd"), undone before looking words up.
_LEET = str.maketrans(
    {
        "4": "a",
        "@": "a",
        "8": "b",
        "3": "e",
        "1": "i",
        "!": "i",
        "0": "o",
        "$": "s",
        "5": "s",
        "7": "t",
        "+": "t",
        "2": "z",
        "9": "g",
        "|": "l",
    }
)
_KEYBOARD_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_ALPHABETS = ("abcdefghijklmnopqrstuvwxyz", "0123456789")
_YEAR = re.compile(r"19\d\d|20[0-3]\d")
_MIN_PART = 3  # shorter words, runs and repeats are cheaper guessed character by character


@dataclass(frozen=True)
class Part:
    """One guessable part of a password: its kind, where it is, and what it costs."""

    kind: str  # "name", "word", "year", "run", "repeat" or "characters"
    start: int
    end: int
    bits: float


@functools.cache
def word_ranks() -> dict[str, int]:
    """Each word of `WORDS_FILE` and its rank (1: the most common), read once."""
    ranks: dict[str, int] = {}
    lines = WORDS_FILE.read_text(encoding="utf-8").splitlines()
    for line in lines:
        word = line.strip()
        if word and not word.startswith("#") and word not in ranks:
            ranks[word] = len(ranks) + 1
    return ranks


def _case_bits(text: str) -> float:
    """What the capitals of a word add: none for lower case, one bit for a capital first
    letter or all capitals, else the choice of which letters are capitals."""
    letters = [c for c in text if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    if upper == 0:
        return 0.0
    if upper == len(letters) or (upper == 1 and text[:1].isupper()):
        return 1.0
    return math.log2(sum(math.comb(len(letters), k) for k in range(1, upper + 1)))


def _leet_bits(text: str) -> float:
    """What undoing substitutions (``@`` for ``a``) adds: one bit per substituted character."""
    return float(sum(c != c.translate(_LEET) for c in text.lower()))


def _word_part(text: str, start: int, names: frozenset[str]) -> Part | None:
    """``text`` as an account's name or a common word (forwards, reversed or substituted)."""
    lower = text.lower()
    plain = lower.translate(_LEET)
    extra = _case_bits(text) + _leet_bits(text)
    if lower in names or plain in names:
        return Part("name", start, start + len(text), 1.0 + extra)
    ranks = word_ranks()
    found = [(ranks[w], bonus) for w, bonus in ((plain, 0.0), (plain[::-1], 1.0)) if w in ranks]
    if not found:
        return None
    rank, reversed_bits = min(found)
    return Part("word", start, start + len(text), math.log2(rank) + 1 + reversed_bits + extra)


def _run_part(text: str, start: int) -> Part | None:
    """``text`` as a run: the next letter or digit each time, or along a keyboard row."""
    lower = text.lower()
    for line in _ALPHABETS + _KEYBOARD_ROWS:
        for direction, ordered in ((0.0, line), (1.0, line[::-1])):
            if lower in ordered:
                base = 4 if lower[0] in "az019q" else len(line)
                bits = math.log2(base * len(text)) + direction + _case_bits(text)
                return Part("run", start, start + len(text), bits)
    return None


def _repeat_part(text: str, start: int) -> Part | None:
    """``text`` as one character repeated."""
    if len(set(text)) != 1:
        return None
    return Part("repeat", start, start + len(text), math.log2(_class_size(text[0]) * len(text)))


def _year_part(text: str, start: int) -> Part | None:
    """``text`` as a year from 1900 to 2039."""
    return Part("year", start, start + 4, math.log2(140)) if _YEAR.fullmatch(text) else None


def _class_size(char: str) -> int:
    """How many characters a guesser tries in place of ``char``: its kind's number."""
    if char.isdigit():
        return 10
    if char.isalpha():
        return 26
    return 33


def _parts_at(password: str, start: int, names: frozenset[str]) -> Iterable[Part]:
    """Every guessable part that starts at ``start``."""
    longest = min(len(password), start + 40)
    for end in range(start + _MIN_PART, longest + 1):
        text = password[start:end]
        for make in (_year_part, _run_part, _repeat_part):
            if (part := make(text, start)) is not None:
                yield part
        if (part := _word_part(text, start, names)) is not None:
            yield part


def guessable_parts(password: str, names: Iterable[str] = ()) -> list[Part]:
    """The cheapest split of ``password`` into guessable parts and single characters.

    Args:
        password: The password as typed.
        names: Account names (this account's and the others'); a name's parts (split at
            ``.``, ``_``, ``@``, ``-``) count too.
    """
    known = frozenset(
        piece
        for name in names
        for piece in [name.lower(), *re.split(r"[._@-]+", name.lower())]
        if len(piece) >= _MIN_PART
    )
    n = len(password)
    best: list[tuple[float, list[Part]]] = [(0.0, [])] + [(math.inf, [])] * n
    for start in range(n):
        cost, parts = best[start]
        if cost == math.inf:
            continue
        single = Part("characters", start, start + 1, math.log2(_class_size(password[start])))
        for part in (single, *_parts_at(password, start, known)):
            if cost + part.bits < best[part.end][0]:
                best[part.end] = (cost + part.bits, [*parts, part])
    return best[n][1]


def guess_bits(password: str, names: Iterable[str] = ()) -> float:
    """log2 of the guesses `guessable_parts` says the password needs."""
    return sum(part.bits for part in guessable_parts(password, names))


_KIND_WORDS = {
    "name": "an account's name",
    "word": "a common word or password",
    "year": "a year",
    "run": "a run such as abcd or 1234",
    "repeat": "a repeated character",
}


def strength_problem(password: str, names: Iterable[str] = ()) -> str | None:
    """Why ``password`` is too easy to guess, or None. Names the kinds of part it is built
    from, never the password or its parts (the message may be shown or logged)."""
    core = password.strip()
    kinds = {_character_kind(c) for c in core}
    if len(kinds) == 1 and len(core) < MIN_ONE_CLASS_CHARS:
        return (
            f"it has one kind of character only; mix letters, digits and symbols or use at "
            f"least {MIN_ONE_CLASS_CHARS} characters"
        )
    parts = guessable_parts(core, names)
    if sum(p.bits for p in parts) >= MIN_GUESS_BITS:
        return None
    found = [k for k in _KIND_WORDS if any(p.kind == k for p in parts)]
    built = " and ".join(_KIND_WORDS[k] for k in found) or "too few characters"
    return f"it is too easy to guess: it is built from {built}"


def _character_kind(char: str) -> str:
    if char.isdigit():
        return "digit"
    if char.isalpha():
        return "upper" if char.isupper() else "lower"
    return "symbol"
