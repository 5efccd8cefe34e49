"""Password strength (issue 31): zxcvbn-style rules refuse passwords built from guessable
parts (another account's name plus digits, a word and a year, a run), and the rule is said."""

from __future__ import annotations

import pytest

from store import users
from store.passwords import MIN_GUESS_BITS, guess_bits, guessable_parts, strength_problem

PASSWORD = "correct horse battery"


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("ada12345", "an account's name and a run"),  # another account's name plus digits
        ("Summer2024", "a common word or password and a year"),
        ("ABCDEFGH", "one kind of character"),
        ("P@ssw0rd2024!", "a common word or password and a year"),  # substitutions undone
        ("asdfghjkl789", "a run"),  # a keyboard row and a run of digits
        ("wrong password", "a common word or password"),
        ("xxxxxxxxab12", "a repeated character"),
        ("evilsmith99", "an account's name"),  # a part of the name alice.smith
    ],
)
def test_guessable_passwords_are_refused_with_what_they_are_built_from(store, password, why):
    users.add_user("ada", "admin", PASSWORD, path=store)
    users.add_user("alice.smith", "member", PASSWORD, path=store)
    with pytest.raises(ValueError, match=why):
        users.add_user("mo", "member", password, path=store)
    with pytest.raises(ValueError, match=why):
        users.set_password("ada", password, path=store)
    assert users.verify_password("ada", PASSWORD, path=store) is not None


@pytest.mark.parametrize(
    "password",
    ["correct horse battery", "x7#kQ2mz", "Knee-Grading-Lab-2024", "zebra-piano-7", "Tr0ub4dor&3"],
)
def test_hard_to_guess_passwords_are_accepted(password):
    assert users.password_problem(password, "mo", ["ada", "alice.smith"]) is None


def test_the_estimate_splits_a_password_into_its_guessable_parts():
    kinds = [p.kind for p in guessable_parts("Summer2024") if p.kind != "characters"]
    assert kinds == ["word", "year"]
    assert guess_bits("Summer2024") < MIN_GUESS_BITS <= guess_bits("correct horse battery")
    assert guess_bits("ada12345", ["ada"]) < guess_bits("ada12345")  # a name is cheap


def test_the_message_never_repeats_the_password():
    problem = strength_problem("Summer2024")
    assert problem is not None and "summer" not in problem.lower() and "2024" not in problem


def test_the_rule_is_stated_on_the_accounts_form(home):
    from store.db import init_schema
    from tests.helpers.pages import signed_in

    path = home / "softgrade.duckdb"
    init_schema(path)
    at = signed_in("accounts", "ada", "admin", path).run()
    assert not at.exception
    assert any(users.PASSWORD_RULE in str(c.value) for c in at.caption)
