"""Matchers: functions that find the code regions a card binds to (one module per family of cards).

Every module in this package is imported when the package is, so a new module only needs `@matcher(...)`.
"""

import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
