"""Run ``agent-wait config check`` on a list of announcer entries, in process."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from agent_wait.host._cli import main


def config_check(
    monkeypatch: pytest.MonkeyPatch, entries: list[dict[str, Any]], *flags: str
) -> tuple[int, list[str], str]:
    """Exit code, the lines printed for the announcer entries, and stderr.

    The entry point's lines, printed after them, are left out (it is the embedded default here).
    """
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(entries))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["config", "check", *flags])
    lines = out.getvalue().splitlines()[1:]
    entry = next(i for i, line in enumerate(lines) if line.startswith("  entry "))
    assert lines[entry + 1].strip().startswith("ok: "), lines[entry:]
    return code, lines[:entry], err.getvalue()


def assert_connect_tells_right_from_wrong(
    monkeypatch: pytest.MonkeyPatch, right: dict[str, Any], wrong: dict[str, Any]
) -> list[str]:
    """``--connect`` passes ``right`` and fails ``wrong``, which a plain check calls ok.

    Returns the lines of the ``--connect`` run.
    """
    code, lines, err = config_check(monkeypatch, [right, wrong])
    assert code == 0, lines
    assert [line.strip().split(":")[0] for line in lines[1::2]] == ["ok", "ok"]
    code, lines, err = config_check(monkeypatch, [right, wrong], "--connect")
    assert code == 1
    assert lines[1].strip().startswith("ok: "), lines
    assert lines[1].endswith("; connected"), lines
    assert lines[3].strip().startswith("built: "), lines
    assert lines[4].strip().startswith("error: cannot connect: "), lines
    assert "1 of 2 announcers failed to build or connect" in err
    return lines
