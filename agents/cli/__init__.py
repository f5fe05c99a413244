"""Floor 0: the command-line plumbing of every command: settings and YAML, shell hints, atomic writes, stop signals,
threads, the code version, the recorder."""
