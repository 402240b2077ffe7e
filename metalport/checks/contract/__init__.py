"""The contract stage: what a port's edits must hold, for every launch kind."""
