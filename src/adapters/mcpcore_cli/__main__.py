"""``python -m mcpcore_cli``: the same as the ``mcpcore`` console script."""

from __future__ import annotations

from ._app import main

raise SystemExit(main())
