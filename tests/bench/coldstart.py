"""Benchmark 11b: a host's cold start, split into its import and build and its first message.

Each of row 11's host processes (``HOST_PROCESSES`` in run.py) runs with a clock read at its
first line, before its host part (``inbox = MemoryAnnounce()`` and what follows: the first
``handle_message``, or the hand-written run and ``publish_interrupts``) and at its end, and
lists the modules loaded by then. The whole process is timed from outside, as row 11 does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

TITLE = (
    "11b. cold start: import + build, then the first handle_message / hand-written host "
    "(whole process and first call)"
)
TARGET = 1.1
HOST_PART = "\ninbox = MemoryAnnounce()\n"
# Loaded by the agent-wait side on a start message and needed by it: agent-wait's own
# modules, pluggy (its hooks) and python-ulid (the question's event id). Anything else only
# the agent-wait side loads is reported and fails the row.
NEEDED = ("agent_wait", "pluggy", "ulid")


def timed(script: str) -> str:
    """``script`` reporting its phases and modules as one JSON line on stdout."""
    if script.count(HOST_PART) != 1:
        raise ValueError(
            "a host script must start its host part with one `inbox = MemoryAnnounce()`"
        )
    before, after = script.split(HOST_PART)
    return (
        "import time as _clock\n_t0 = _clock.perf_counter()\n"
        + before
        + "\n_t1 = _clock.perf_counter()"
        + HOST_PART
        + after
        + "\n_t2 = _clock.perf_counter()\nimport json as _json, sys as _sys\n"
        "print(_json.dumps({'setup': _t1 - _t0, 'first_call': _t2 - _t1, "
        "'modules': sorted(_sys.modules)}))\n"
    )


def _run(code: str, env: Mapping[str, str]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(env), check=True, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    return elapsed, json.loads(done.stdout.strip().splitlines()[-1])


def _top(modules: list[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


def cold_start(
    processes: Mapping[str, Mapping[str, str]], runs: int, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Benchmark 11b's fields (``Result``'s), one row per framework."""
    env = dict(os.environ if env is None else env)
    rows: list[dict[str, Any]] = []
    for framework, sides in processes.items():
        codes = {side: timed(code) for side, code in sides.items()}
        try:
            loaded = {side: _run(code, env)[1]["modules"] for side, code in codes.items()}
        except subprocess.CalledProcessError as error:
            rows.append({"framework": framework, "passed": None, "note": f"failed: {error}"})
            continue
        wall: dict[str, list[float]] = {side: [] for side in codes}
        phases: dict[str, dict[str, list[float]]] = {
            side: {"setup": [], "first_call": []} for side in codes
        }
        for index in range(runs):
            for side in list(codes) if index % 2 == 0 else list(reversed(codes)):
                elapsed, report = _run(codes[side], env)
                wall[side].append(elapsed)
                phases[side]["setup"].append(report["setup"])
                phases[side]["first_call"].append(report["first_call"])
        # Back-to-back pairs' ratios, as row 11: a pair shares the machine's spell.
        ratio = statistics.median(
            ours / plain for ours, plain in zip(wall["agent-wait"], wall["plain"], strict=True)
        )
        first = {side: statistics.median(values["first_call"]) for side, values in phases.items()}
        setup = {side: statistics.median(values["setup"]) for side, values in phases.items()}
        extra = sorted(
            name
            for name in _top(loaded["agent-wait"]) - _top(loaded["plain"])
            if name not in NEEDED and not name.startswith("_")
        )
        rows.append(
            {
                "framework": framework,
                "cold_start": True,
                "wall_seconds": {side: statistics.median(values) for side, values in wall.items()},
                "setup_seconds": setup,
                "first_call_seconds": first,
                "ratio": ratio,
                "ratio_first_call": first["agent-wait"] / first["plain"],
                "extra_modules": extra,
                "passed": ratio <= TARGET and not extra,
            }
        )
    measured = [row for row in rows if row["passed"] is not None]
    return {
        "name": "cold_start",
        "title": TITLE,
        "raw": {"runs_each": runs, "needed": list(NEEDED)},
        "ratio": max((row["ratio"] for row in measured), default=None),
        "target": f"whole process <= {TARGET} each framework; nothing loaded the plain host does "
        "not load but agent-wait's own, pluggy and python-ulid",
        "passed": all(row["passed"] for row in measured) if measured else None,
        "summary": "; ".join(
            f"{row['framework']}: {row['ratio']:.2f}x, first call {row['ratio_first_call']:.2f}x"
            if row["passed"] is not None
            else f"{row['framework']}: {row['note']}"
            for row in rows
        ),
        "rows": rows,
    }


def table_row(row: dict[str, Any]) -> str:
    """One framework's line in the Markdown table."""
    if row["passed"] is None:
        return f"| &nbsp;&nbsp;{row['framework']} | {row['note']} | | | skipped |"
    wall, setup, first = row["wall_seconds"], row["setup_seconds"], row["first_call_seconds"]
    extra = ", ".join(row["extra_modules"]) or "none"
    return (
        f"| &nbsp;&nbsp;{row['framework']} | process {wall['agent-wait'] * 1e3:.0f} ms vs "
        f"{wall['plain'] * 1e3:.0f} ms; import + build {setup['agent-wait'] * 1e3:.0f} ms vs "
        f"{setup['plain'] * 1e3:.0f} ms; first call {first['agent-wait'] * 1e3:.1f} ms vs "
        f"{first['plain'] * 1e3:.1f} ms ({row['ratio_first_call']:.2f}x); modules only "
        f"agent-wait loads: {extra} | {row['ratio']:.2f} | <= {TARGET}, none | "
        f"{'pass' if row['passed'] else '**MISS**'} |"
    )
