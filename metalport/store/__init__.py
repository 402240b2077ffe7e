"""Shared run state in PostgreSQL (when a database URL is configured): records, checkpoints, portable runs."""

from metalport.store.pg import LIVE_STATUSES, DatabaseError, LeaseLost, RunBusy, RunStore, held_lease, open_store
from metalport.store.settings import FleetSettings, load_settings, safe_url

__all__ = ["LIVE_STATUSES", "DatabaseError", "LeaseLost", "RunBusy", "held_lease", "FleetSettings", "RunStore", "load_settings", "open_store", "safe_url"]
