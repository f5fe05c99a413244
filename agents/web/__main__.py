"""``python -m agents.web``: the browser game's server (``agents.web.server.main``)."""

import sys

from agents.web.server import main

sys.exit(main())
