"""``python -m bench``: run the whole benchmark (see bench/run.py).

B9, a hub of 100 servers from one mcp.json, is its own command: ``python -m bench.hub``.
"""

import sys

from bench.run import main

sys.exit(main())
