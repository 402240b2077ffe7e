"""The fleet tests' services: `metalport.fleet.dev`'s PostgreSQL and Temporal dev server (throwaway folders)."""

from metalport.fleet.dev import Postgres, Temporal, free_port, postgres_bin

__all__ = ["Postgres", "Temporal", "free_port", "postgres_bin"]
