"""``python -m mcpcore_demo``: run the demo server until interrupted."""

import sys

from ._main import main

if __name__ == "__main__":
    sys.exit(main())
