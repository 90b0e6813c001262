"""The aggregate functions, one module each: importing this package imports every module in it
(in the order of their names), and each module registers its functions (``spec.register``), so a
new function is a new module here plus its macros (``codegen_templates/aggregates/``)."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
