"""Precondition checks that several cards share (a card's own checks live in its folder's rules module).

Every module in this package is imported when the package is, so a new module only needs `@check(...)`.
"""

import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
