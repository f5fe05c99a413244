"""The engines: the batched numpy core, the observation, the compiled single-game kernel and its one-game face."""
