"""``python -m p4vtep.cli``: the p4vtep command without its console script."""

import sys

from .main import main

sys.exit(main())
