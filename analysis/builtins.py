"""A package's built-in modules, imported once on first use, for the protocol and client registries.

Other threads wait while one thread imports them: a thread that saw the registry half filled
found no protocols (a parallel experiment's analysis recorded a run with no model requests).
The importing thread may re-enter (a module that registers itself while being imported).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from types import ModuleType


class BuiltinModules:
    def __init__(self, package: str, add: Callable[[ModuleType], None]) -> None:
        self.package = package
        self.add = add  # registers what one module defines
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    def load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                package = importlib.import_module(self.package)
                for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                    self.add(importlib.import_module(f"{self.package}.{info.name}"))
                self._loaded = True
            finally:
                self._loading = False
