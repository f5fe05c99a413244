"""The oracle: the plain-Python reference engine and the record checker that replays records on it."""
