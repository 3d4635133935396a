"""Failure reasons fit a footnote: one line, a sane length."""

from zodbshootout.reasons import MAX_REASON_CHARS, one_line

RELSTORAGE_LOCK_ERROR = (
    "UnableToLockRowsToModifyError: Acquiring a lock during commit failed: "
    "database is locked(No debug info.)\nStored Objects <HPTPCTemporaryStorage count=10000>\n"
    + "=" * 67
    + "\n| OID | Length | Previous TID |\n"
    + "\n".join(f"{oid} | 196 | 291949328017706734" for oid in range(113, 10113))
)


def test_a_table_of_object_ids_is_cut_to_its_first_line():
    assert one_line(RELSTORAGE_LOCK_ERROR) == (
        "UnableToLockRowsToModifyError: Acquiring a lock during commit failed: "
        "database is locked(No debug info.)"
    )


def test_a_long_line_is_cut_at_a_word_with_an_ellipsis():
    text = "word " * 100
    cut = one_line(text, limit=50)
    assert len(cut) <= 50
    assert cut.endswith("…")
    assert cut[:-1].split() == ["word"] * len(cut[:-1].split())


def test_a_long_word_is_cut_where_the_limit_is():
    cut = one_line("x" * 500)
    assert cut == "x" * (MAX_REASON_CHARS - 1) + "…"


def test_short_reasons_stay_as_they_are_without_extra_spaces():
    assert one_line("  worker 1 died   (killed by SIGKILL) ") == "worker 1 died (killed by SIGKILL)"
    assert one_line("\n\nsecond line first\nthird") == "second line first"
