"""The variants of a versions run, before its comparison: what each one had installed.

One row per variant: its Python, the version of every package the variants
differ in (the rest are alike; the file lists them all), the environment's
installer and whether this run built it or found it in the cache; then how
the rounds were interleaved.  Aligned text or Markdown (for a pull request).
"""

from __future__ import annotations

from zodbshootout.results.versions import VersionsResult, differing_packages


def _environment(record_environment: dict[str, object], installer: str) -> str:
    seconds = record_environment.get("build_seconds")
    if record_environment.get("built") and isinstance(seconds, (int, float)):
        return f"{installer}, built in {seconds:.0f} s"
    return f"{installer}, cached"


def variant_rows(versions: VersionsResult) -> tuple[list[str], list[list[str]]]:
    """The heading and one row per variant."""
    packages = differing_packages(versions.variants)
    heading = ["variant", "Python", *(name for name, _found in packages), "environment"]
    rows = []
    for index, record in enumerate(versions.variants):
        rows.append(
            [
                record.name,
                record.python.get("version", "?"),
                *(found[index] or "-" for _name, found in packages),
                _environment(record.environment, record.installer),
            ]
        )
    return heading, rows


def rounds_line(versions: VersionsResult) -> str:
    """How the variants took turns: rounds, order, and a note if interrupted."""
    done = len({record.round for record in versions.rounds})
    seed = f", seed {versions.seed}" if versions.order == "shuffle" else ""
    line = (
        f"{done} round(s) of {len(versions.variants)} variants, interleaved "
        f"({versions.order}{seed}): zodbshootout {' '.join(versions.command)}"
    )
    if versions.interrupted:
        line += f" (interrupted: {done} of {versions.rounds_planned} rounds)"
    return line


def format_variants(versions: VersionsResult, format_name: str) -> list[str]:
    """The variants as aligned text (``table``) or ``markdown``; nothing for csv and json,
    whose readers want the comparison alone (the versions file has the rest)."""
    heading, rows = variant_rows(versions)
    if format_name == "markdown":
        escape = [[cell.replace("|", "\\|") for cell in row] for row in [heading, *rows]]
        return [
            "| " + " | ".join(escape[0]) + " |",
            "|" + "|".join("---" for _cell in heading) + "|",
            *("| " + " | ".join(row) + " |" for row in escape[1:]),
            "",
            rounds_line(versions),
            "",
        ]
    if format_name != "table":
        return []
    widths = [max(len(row[i]) for row in [heading, *rows]) for i in range(len(heading))]
    return [
        *(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [heading, *rows]
        ),
        rounds_line(versions),
        "",
    ]
