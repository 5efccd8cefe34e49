"""``python -m jobs``: the same command line as ``softgrade`` (jobs/cli/main.py)."""

import sys

from jobs.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
