"""``python -m bench``: run the whole benchmark (see bench/run.py)."""

import sys

from bench.run import main

sys.exit(main())
