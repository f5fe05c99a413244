"""``python -m agents.play``: the terminal game (``agents.play.terminal.main``)."""

import sys

from agents.play.terminal import main

sys.exit(main())
