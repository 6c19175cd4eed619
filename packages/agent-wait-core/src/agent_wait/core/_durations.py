"""ISO 8601 durations as agent-wait accepts them.

Only fixed-length units are accepted (weeks, days, hours, minutes, seconds): years and months
have no fixed length, so ``expires_at`` would be ambiguous.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import timedelta

_DURATION = re.compile(
    r"""
    ^P(?!$)
    (?:(?P<weeks>\d+(?:[.,]\d+)?)W)?
    (?:(?P<days>\d+(?:[.,]\d+)?)D)?
    (?:T(?=\d)
        (?:(?P<hours>\d+(?:[.,]\d+)?)H)?
        (?:(?P<minutes>\d+(?:[.,]\d+)?)M)?
        (?:(?P<seconds>\d+(?:[.,]\d+)?)S)?
    )?$
    """,
    re.VERBOSE,
)
_UNIT_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
_CALENDAR_UNITS = re.compile(r"^P(?:\d+(?:[.,]\d+)?[YM])")
# Python's timedelta tops out near 2.7 million years; a century is already absurd for a question.
_MAX = timedelta(days=36_525)


def parse_duration(value: object, field: str) -> timedelta:
    """Parse a positive duration from an ISO 8601 string or a number of seconds.

    Args:
        value: ``"PT15M"``, ``"P3D"``, ``"P1DT12H"``, ``"PT0.5S"``, or positive seconds
            (``int``/``float``).
        field: The name of the field being parsed, used in error messages.

    Returns:
        The duration.

    Raises:
        ValueError: The value is not a positive fixed-length duration; the message names
            the field and value.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ValueError(f"{field}: expected an ISO 8601 duration or seconds, got bool {value!r}")
    elif isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds):
            raise ValueError(f"{field}: duration must be finite, got {value!r}")
    elif isinstance(value, str):
        text = value.strip().upper()
        if _CALENDAR_UNITS.match(text):
            raise ValueError(
                f"{field}: {value!r} uses years or months, which have no fixed length; "
                "use days or weeks (e.g. 'P30D')"
            )
        # ISO 8601 is ASCII; upper() and \d would let in other scripts' digits ("P\u0663D") and
        # letters that upper-case to ASCII ("PT1\u017f" -> "PT1S").
        match = _DURATION.match(text) if value.strip().isascii() else None
        if match is None:
            raise ValueError(
                f"{field}: {value!r} is not an ISO 8601 duration such as 'PT15M', 'P3D' or "
                "'P1DT12H', nor a number of seconds"
            )
        # Summed as seconds: timedelta(**parts) raises OverflowError on lengths that the range
        # check below refuses with a proper message.
        seconds = sum(
            float(v.replace(",", ".")) * _UNIT_SECONDS[k] for k, v in match.groupdict().items() if v
        )
    else:
        raise ValueError(
            f"{field}: expected an ISO 8601 duration string or seconds, got "
            f"{type(value).__name__} {value!r}"
        )
    if seconds <= 0:
        raise ValueError(f"{field}: duration must be positive, got {value!r}")
    if seconds > _MAX.total_seconds():
        raise ValueError(f"{field}: duration {value!r} is longer than 100 years")
    duration = timedelta(seconds=seconds)
    if not duration:  # rounds to zero at timedelta's microsecond resolution
        raise ValueError(f"{field}: duration {value!r} is shorter than a microsecond")
    return duration


@functools.lru_cache(maxsize=1024)
def format_duration(duration: timedelta) -> str:
    """Render a duration in canonical ISO 8601 form (``P3D``, ``PT15M``, ``P1DT0.5S``).

    Cached: a process asks with a handful of policies, and this runs for every envelope.
    """
    total_us = round(duration.total_seconds() * 1_000_000)
    days, rest_us = divmod(total_us, 86_400_000_000)
    hours, rest_us = divmod(rest_us, 3_600_000_000)
    minutes, rest_us = divmod(rest_us, 60_000_000)
    seconds, micros = divmod(rest_us, 1_000_000)
    out = "P"
    if days:
        out += f"{days}D"
    clock = ""
    if hours:
        clock += f"{hours}H"
    if minutes:
        clock += f"{minutes}M"
    if seconds or micros:
        clock += (
            f"{seconds}.{micros:06d}".rstrip("0").rstrip(".") + "S" if micros else f"{seconds}S"
        )
    if clock:
        out += "T" + clock
    return out if out != "P" else "PT0S"
