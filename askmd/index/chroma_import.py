"""Import chromadb without the `overrides` package's signature checks.

Chroma decorates its methods with `overrides.override`, which disassembles the calling
frame and compares signatures on every decorated method as the module is imported: a
large share of every command's start (docs/benchmarks/speed.md). The checks are for
Chroma's developers; they find nothing at run time. While chromadb is first imported,
`override` only marks the method (what `EnforceOverrides` reads); the package is put back
afterwards, so code that imports it later gets it unchanged.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_IMPORTING = threading.Lock()
# The modules a client loads when it is made (by name, from Chroma's settings), imported
# here so that their methods are marked too.
_LOADED_BY_CLIENTS = (
    "chromadb.api.rust",
    "chromadb.api.fastapi",
    "chromadb.telemetry.product.posthog",
)


def _mark(method=None, **_options):
    if method is None:  # @override(check_signature=False)
        return _mark
    method.__override__ = True
    return method


def imported() -> ModuleType:
    """The chromadb module, imported on first use."""
    with _IMPORTING:
        if "chromadb" in sys.modules:
            return sys.modules["chromadb"]
        import overrides

        saved = overrides.override, overrides.overrides
        overrides.override = overrides.overrides = _mark
        try:
            import chromadb

            for name in _LOADED_BY_CLIENTS:
                try:
                    importlib.import_module(name)
                except ImportError:  # another Chroma version: its checks then run later
                    pass
        finally:
            overrides.override, overrides.overrides = saved
        return chromadb
