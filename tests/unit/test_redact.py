"""Passwords are masked in their fields, whole; ordinary words equal to one are not."""

from __future__ import annotations

import logging
import re
import sys

import pytest

from zodbshootout.redact import MASK, RedactingFilter, find_secrets, redact

SPACED = "ab Spc3cret"


def config(dsn_password: str) -> str:
    return f"""
<zodb pg>
  <relstorage>
    <postgresql>
      dsn dbname=zodbshootout_eco user=zs password={dsn_password} host=127.0.0.1
    </postgresql>
  </relstorage>
</zodb>
"""


def test_a_password_that_is_an_ordinary_word_masks_only_its_field():
    text = config("zodbshootout")
    secrets = find_secrets(text)
    assert secrets == {"zodbshootout"}
    masked = redact(text, secrets)
    assert "dbname=zodbshootout_eco" in masked
    assert f"password={MASK} host" in masked
    hint = "the Python module 'psycopg2' is not installed: pip install '.[postgresql]'"
    assert redact(hint, secrets) == hint
    message = "zodbshootout: refused: its root holds keys other than 'zodbshootout'"
    assert redact(message, secrets) == message


@pytest.mark.parametrize("quote", ["'", '"'])
def test_a_quoted_password_with_a_space_is_masked_whole(quote):
    text = config(f"{quote}{SPACED}{quote}")
    secrets = find_secrets(text)
    assert secrets == {SPACED}
    masked = redact(text, secrets)
    assert f"password={quote}{MASK}{quote} host" in masked
    for word in SPACED.split():
        assert word not in masked
    # The same DSN as a driver quotes it back: escaped, unquoted, or as a keyword.
    for shown in (
        f"dsn=\"dbname=x password=\\'{SPACED}\\' host=h\"",
        f"connecting with password={SPACED} host=h",
        f"connect(**{{'host': 'h', 'password': '{SPACED}'}})",
    ):
        masked = redact(shown, secrets)
        assert "Spc3cret" not in masked, masked
        assert MASK in masked


def test_passwd_keys_urls_and_defines_are_masked():
    text = """
%define PW Pa55-w0rd
%define WORD letmein
<zodb my>
  <relstorage>
    <mysql>
      passwd $PW
    </mysql>
  </relstorage>
</zodb>
<zodb other>
  <relstorage>
    <mysql>
      passwd letmein
    </mysql>
  </relstorage>
</zodb>
"""
    secrets = find_secrets(text)
    assert secrets == {"Pa55-w0rd", "letmein"}
    masked = redact(text, secrets)
    assert "Pa55-w0rd" not in masked
    assert "letmein" not in masked
    assert f"%define PW {MASK}" in masked
    assert f"%define WORD {MASK}" in masked
    assert redact("mysql://zs:p%40ss@db/x", set()) == f"mysql://zs:{MASK}@db/x"
    assert redact("redis://zs:Pa55@w0rd@db/x", {"Pa55@w0rd"}) == f"redis://zs:{MASK}@db/x"
    assert redact("host=h passwd=x1y2 port=1", set()) == f"host=h passwd={MASK} port=1"


def test_a_password_that_is_no_ordinary_word_is_masked_wherever_it_stands_whole():
    secrets = {"Pa55-in-a-path-8Jw"}
    assert redact("/data/Pa55-in-a-path-8Jw/x.fs: no such file", secrets) == (
        f"/data/{MASK}/x.fs: no such file"
    )
    # Never a part of a longer word.
    assert redact("Pa55-in-a-path-8Jwx", secrets) == "Pa55-in-a-path-8Jwx"


def test_a_dsn_fragment_quoted_by_libpq_is_masked():
    message = 'invalid dsn: missing "=" after "Spc3cret" in connection info string'
    assert "Spc3cret" not in redact(message, {"ab"})


def test_masking_leaves_text_without_passwords_alone():
    text = "the password authentication failed for user zs (check the user and password)"
    assert redact(text, {"zodbshootout"}) == text
    libpq = 'connection failed:\npassword authentication failed for user "zs"'
    assert redact(libpq, {"zodbshootout"}) == libpq


UNQUOTED_SPACED = "Hd4Pg Se'cr\"3t"


def test_an_unquoted_password_with_a_space_is_masked_up_to_the_next_key():
    text = config(UNQUOTED_SPACED)
    secrets = find_secrets(text)
    assert UNQUOTED_SPACED in secrets
    for masked in (redact(text, secrets), redact(text, set())):
        assert f"password={MASK} host=127.0.0.1" in masked
        assert "Hd4Pg" not in masked
        assert "Se'cr" not in masked
    # At the end of a line, the rest of the line is the password.
    assert redact(f"dsn password={UNQUOTED_SPACED}\nnext", set()) == f"dsn password={MASK}\nnext"


@pytest.mark.parametrize(
    "password", ['tVOMMPw"prDZq9x', "Ab'Cd", "Ab)Cd,Ef;Gh", "Qa\"Wb Xc'Yd", "Xx}Yy]Zz&Ww"]
)
def test_an_unquoted_password_with_a_quote_or_a_comma_inside_is_masked_whole(password):
    """libpq reads an unquoted value up to a space: quotes and commas inside are its own.

    The adversarial run found the part after a quote in the result file.
    """
    text = config(password)
    secrets = find_secrets(text)
    assert password in secrets
    masked = redact(text, secrets)
    assert f"password={MASK} host=127.0.0.1" in masked, masked
    for fragment in re.findall(r"[A-Za-z0-9]{2,}", password):
        assert fragment not in masked, (fragment, masked)


def _record_of(error: BaseException) -> logging.LogRecord:
    try:
        raise error
    except type(error):
        return logging.LogRecord(
            "relstorage.adapters.connections", logging.ERROR, __file__, 1,
            "Reconnect %s failed", ("<LoadConnection>",), sys.exc_info(),
        )  # fmt: skip


def test_the_last_resort_drops_records_of_errors_the_tool_says_itself():
    """A server that is gone is said once by the tool, not again by each library."""
    said = RedactingFilter(one_line=True, said=lambda e: isinstance(e, ConnectionError))
    assert not said.filter(_record_of(ConnectionResetError(104, "reset")))
    other = _record_of(ValueError("something else"))
    assert said.filter(other)
    assert other.getMessage().endswith(
        "Reconnect <LoadConnection> failed: ValueError: something else"
    )
    # A bare record logged while such an error is handled is about it too.
    bare = logging.LogRecord("txn", logging.CRITICAL, __file__, 1, "A storage error", (), None)
    try:
        raise ConnectionResetError(104, "reset")
    except ConnectionResetError:
        assert not said.filter(bare)
    assert said.filter(bare)
    # --log and --debug (no one_line) keep every record.
    kept = RedactingFilter(said=lambda e: True)
    assert kept.filter(_record_of(ConnectionResetError(104, "reset")))
