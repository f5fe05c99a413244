"""Games for a person against any agent: the terminal game (``python -m agents.play``), move hints and the browser
game (``python -m agents.play.web``)."""
