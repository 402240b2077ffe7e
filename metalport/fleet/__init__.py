"""The fleet: one sweep across many machines on Temporal, run state in PostgreSQL (`metalport.store`)."""
