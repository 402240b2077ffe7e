"""The judge stage: one acceptance standard for every launch kind (oracle, tolerances, explanations)."""
