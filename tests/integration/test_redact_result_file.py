"""A password with a space, unquoted, stays out of a real run's result file."""

from __future__ import annotations


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


UNQUOTED_SPACED = "Hd4Pg Se'cr\"3t"


def test_an_unquoted_password_with_a_space_stays_out_of_the_result_file(tmp_path):
    import contextlib
    import io

    from zodbshootout.cli import entry

    from support.local import free_port

    path = tmp_path / "pg.conf"
    path.write_text(
        config(UNQUOTED_SPACED).replace("127.0.0.1", f"127.0.0.1 port={free_port()}")
        + "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"
    )
    saved = tmp_path / "run.json"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main([str(path), "--threads", "-n", "5", "-r", "1", "-o", str(saved)])
    assert code == 1, err.getvalue()
    written = out.getvalue() + err.getvalue() + saved.read_text(encoding="utf-8")
    assert "password=***" in saved.read_text(encoding="utf-8")
    for fragment in ("Hd4Pg", "Se'cr", 'cr\\"3t', "3t host"):
        assert fragment not in written, fragment
