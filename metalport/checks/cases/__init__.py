"""The cases stage: the inputs a port is judged on (OpInfo samples, random, held-out, special values)."""
