"""Games for a person against any agent, two faces of one human-match core (``agents.play.match``): the terminal
game (``python -m agents.play``) and the browser game (``python -m agents.play.web``); move hints."""
