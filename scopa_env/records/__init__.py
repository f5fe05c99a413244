"""Game records and saved states: the record writer, a game to JSON and back."""
