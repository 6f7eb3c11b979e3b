"""``python -m sparsecert`` runs the ``sparsecert`` command line."""

import sys

from sparsecert.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
