"""Games played by policies: the policy interface, the one batched game driver, the learner's games."""
