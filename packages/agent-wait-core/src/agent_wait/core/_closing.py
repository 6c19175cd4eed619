"""``with thing:`` for anything that holds connections: ``close()`` on the way out."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Base class that makes ``with thing:`` call ``thing.close()`` on the way out."""

    def close(self) -> None:
        """Release what is held. Safe to call more than once."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
