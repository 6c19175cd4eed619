"""One helper for the lazy ``__init__`` of every agent-wait package (PEP 562)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], *, distribution: str | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package whose names import on first use.

    A plugin package's ``__init__`` is imported whenever agent-wait loads its plugins, so it
    must not import its transport or framework library; its public names resolve on first
    access instead, and are cached in the module. Keep the names visible to type checkers with
    ``if TYPE_CHECKING:`` imports::

        from typing import TYPE_CHECKING

        from agent_wait.core import lazy_exports

        if TYPE_CHECKING:
            from agent_wait.acme._announcer import AcmeAnnounce

        __all__ = ["AcmeAnnounce"]
        __getattr__, __dir__ = lazy_exports(__name__, {"AcmeAnnounce": "._announcer"})

    Args:
        package: The package's ``__name__``.
        homes: Each lazy name to the module that defines it: relative to the package
            (``"._announcer"``) or absolute.
        distribution: When given, ``__version__`` is that distribution's installed version.

    Returns:
        ``(__getattr__, __dir__)``: an unknown name raises :class:`AttributeError` naming the
        package (with a close match when there is one); ``dir()`` lists the lazy names too.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            if name == "__version__" and distribution is not None:
                from importlib.metadata import version

                return version(distribution)
            import difflib

            public = {*homes, *getattr(sys.modules[package], "__all__", ())}
            close = difflib.get_close_matches(name, sorted(public), n=1)
            hint = f"; did you mean {close[0]!r}?" if close and not name.startswith("__") else ""
            raise AttributeError(f"module {package!r} has no attribute {name!r}{hint}")
        value = getattr(importlib.import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        module = sys.modules[package]
        return sorted({*vars(module), *getattr(module, "__all__", ()), *homes})

    return __getattr__, __dir__


def forward(old: str, home: str, name: str | None = None, *, distribution: str) -> Any:
    """Load what moved from ``old`` to ``home``, warning that the old import path is deprecated.

    Loaded by name (importlib), so the module that forwards has no import of ``home``.

    Args:
        old: The deprecated dotted path (``agent_wait.core.answer``).
        home: The module it lives in now.
        name: The attribute of ``home`` to return; None returns the module itself.
        distribution: The distribution ``home`` ships in, named when it is not installed.

    Returns:
        The attribute, or the module.

    Raises:
        ImportError: ``distribution`` is not installed (an install hint, not a missing
            dependency of core).
    """
    import warnings

    new = home if name is None else f"{home}.{name}"
    warnings.warn(
        f"{old} moved to {new}; import it from {home} ({distribution}). The old path is removed "
        "in the next release.",
        DeprecationWarning,
        stacklevel=3,
    )
    try:
        module = importlib.import_module(home)
    except ModuleNotFoundError as error:
        if error.name is None or not home.startswith(error.name):
            raise
        raise ImportError(
            f"{old} moved to {new}, in the {distribution} distribution: pip install {distribution}",
            name=error.name,
        ) from error
    return module if name is None else getattr(module, name)
