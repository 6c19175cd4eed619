"""Every Python block in README.md and docs/ runs as written, or says it is a fragment and why.

A block runs in a fresh interpreter in an empty directory with a home of its own, offline. A
block that cannot run alone (it continues the page, needs a server, a cloud account or a
package the suite does not install) is preceded by ``<!-- fragment: what it needs -->``. A block
that includes a file of docs/examples (``--8<--``) is run by the test named for that file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?:python|\{\.python[^}]*\})[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
FRAGMENT = re.compile(r"<!-- fragment: (.+?) -->\s*$")
INCLUDE = re.compile(r'^--8<-- "examples/([\w.]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    fragment: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = FRAGMENT.search(before)
            found.append(
                Block(
                    str(page.relative_to(ROOT)),
                    text.count("\n", 0, match.start()) + 1,
                    match.group(1),
                    marker.group(1).strip() if marker else None,
                )
            )
    return found


BLOCKS = blocks()
RUNNABLE = [b for b in BLOCKS if b.fragment is None and not INCLUDE.search(b.code)]


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_block_runs(block: Block, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_WAIT_")}
    # The embedded defaults (the sqlite inbox) go under the block's own home.
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{block} does not run as written:\n{done.stderr}"


def test_every_fragment_says_what_it_needs() -> None:
    vague = [str(b) for b in BLOCKS if b.fragment is not None and len(b.fragment) < 12]
    assert vague == []


def test_an_included_example_is_run_by_its_own_test() -> None:
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py"))
    for block in BLOCKS:
        for name in INCLUDE.findall(block.code):
            assert name in tests, f"{block}: docs/examples/{name} is run by no test"


def test_most_blocks_run() -> None:
    # The collector finds the blocks (a broken pattern would make every test above vacuous).
    assert len(BLOCKS) > 100
    assert len(RUNNABLE) >= 20
