"""The shipped training configs (``default``, ``strong``, ``quattro``, ``smoke``), installed as the package
``scopa_configs`` so that ``scopa-train --config strong`` finds them from any directory."""
