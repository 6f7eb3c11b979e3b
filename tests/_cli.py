"""Shared check for the command line's error contract: one line, no traceback."""

from __future__ import annotations


def one_error_line(capsys) -> str:
    """The single ``sparsecert: error:`` line on stderr (and nothing else), returned."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sparsecert: error:"), err
    return lines[0]
