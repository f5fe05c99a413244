"""Tournaments (``evaluate.py``): entries, deals, the schedule of games, ratings, the report and the Ray cluster."""
