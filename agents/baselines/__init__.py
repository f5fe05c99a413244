"""The rule-based players without look-ahead (``random``, ``greedy``) and the batched move evaluation every
rule-based and search agent shares (``features``)."""
