"""``python -m agents.play.web``: the browser game's server (``agents.play.web.server.main``)."""

import sys

from agents.play.web.server import main

sys.exit(main())
