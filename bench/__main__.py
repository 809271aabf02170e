"""``python -m bench``: run the whole benchmark (see bench/run.py).

B9, a hub of 100 servers from one mcp.json, is its own command: ``python -m bench.hub``.
The storm (issue 39: 20 processes sharing one sign-in through each shared store) is its own
command too: ``python -m bench.storm``.
B10, the 2026-07-28 revision beside the handshake era, is part of it and also runs alone:
``python -m bench.eras``.
"""

import sys

from bench.run import main

sys.exit(main())
