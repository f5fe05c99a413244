"""Play Scopa in a browser (``scopa-web``, ``python -m agents.play.web``): a local server and a thin page.

``agents.play.web.game`` holds one match and its public view; ``agents.play.web.server`` the server (a Starlette app on
uvicorn: the ``web`` extra), the JSON API, its limits and the command line; ``static/`` the page (plain HTML, CSS,
JavaScript). docs/web.md has the options, the limits and the API.
"""
