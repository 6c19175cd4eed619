"""The product cites nothing a reader of the project cannot open: it states the fact instead.

No specification file names or sections, no paths outside the repository, no tracker numbers in
code, comments, docs, schemas or test names. Seeding a random generator (hypothesis, the soak) is fine.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCOPE = ["packages", "docs", "tests", "README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
# The words a citation uses, assembled from parts so that this file never quotes one itself.
SPEC, TRACKER, OUTSIDE = "se" + "ed", "iss" + "ue", "sha" + "red/"
FRAMEWORK_NOTES, TRANSPORT_NOTES = "FRAMEWORK" + "_FACTS", "TRANSPORT" + "_FACTS"
SECTION_SIGN = chr(0xA7)
CITATION = re.compile(
    rf"{SPEC} ?(section|0|{SECTION_SIGN})|{SPEC}'s|the {SPEC}|{SPEC}s"
    rf"|{SPEC}[-_ ](section|verbatim|fields|envelope|examples?|messages)|the_{SPEC}"
    rf"|{FRAMEWORK_NOTES}|{TRANSPORT_NOTES}|{TRACKER} ?#?[0-9]|{OUTSIDE}|this {TRACKER}"
    rf"|{SECTION_SIGN}",
    re.IGNORECASE,
)
RANDOM_SEED = re.compile(r"seed=|SOAK_SEED|random\.seed", re.IGNORECASE)
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".svg", ".woff", ".woff2", ".gz", ".whl"}


def _files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *SCOPE],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        paths = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        paths = [
            path
            for entry in SCOPE
            for path in ([ROOT / entry] if (ROOT / entry).is_file() else (ROOT / entry).rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
        ]
    return [p for p in paths if p.suffix not in BINARY]


def citations(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if CITATION.search(line) and not RANDOM_SEED.search(line)
    ]


@pytest.mark.parametrize(
    "line",
    [
        f'"""The recommended inbound answer ({SPEC} section 2)."""',
        f"# {SPEC.title()} 000 section 1: the envelope's fields",
        f"batched questions ({SPEC} 001 {SECTION_SIGN}2)",
        f"def test_envelope_follows_the_{SPEC}(self) -> None:",
        f"{SPEC.upper()}_FIELDS = [",
        f"def test_a_host_following_the_{SPEC}_verbatim_works() -> None:",
        f"({FRAMEWORK_NOTES} sections 1-2)",
        f"see {TRANSPORT_NOTES}",
        f"costs little more than the function ({TRACKER} 7).",
        f"## What {TRACKER} #12 changed",
        f"/work/{OUTSIDE}{SPEC}s/000_formats.txt",
    ],
)
def test_the_check_finds_citations(line: str) -> None:
    assert citations(line) == [line]


@pytest.mark.parametrize(
    "line",
    [
        "@settings(seed=1234)",
        'SEED = int(os.environ.get("AGENT_WAIT_SOAK_SEED") or 0)',
        "random.seed(0)",
        "The run is reproducible from its seed, which it prints.",
        "def issue_refund(order_id: str, amount: int) -> str:",
    ],
)
def test_the_check_lets_random_seeding_and_issue_refund_through(line: str) -> None:
    assert citations(line) == []


def test_nothing_cites_outside_the_project() -> None:
    files = _files()
    assert any(p.name == "_models.py" for p in files), "the file list missed packages/"
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for path in files
        for line in citations(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "state the fact instead of citing it:\n" + "\n".join(found)
