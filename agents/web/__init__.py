"""Play Scopa in a browser (``scopa-web``, ``python -m agents.web``): a local server and a thin page.

``agents.web.game`` holds one match and its public view; ``agents.web.server`` the HTTP server, the JSON API and
the command line; ``static/`` the page (plain HTML, CSS, JavaScript). docs/web.md has the options and the API.
"""
