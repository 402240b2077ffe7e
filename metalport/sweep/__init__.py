"""Backlog sweeps: candidates and skip reasons, K runs at once to the review gate, one dashboard."""

from metalport.sweep.dashboard import SweepReport, load_report, refresh_dashboard, render_json, render_markdown
from metalport.sweep.lock import SweepLock
from metalport.sweep.model import OpOutcome, metalport_dir
from metalport.sweep.progress import SweepView, print_summary
from metalport.sweep.runner import SweepOptions, default_concurrency, run_sweep

__all__ = ["OpOutcome", "SweepLock", "SweepOptions", "SweepReport", "SweepView", "default_concurrency",
           "load_report", "metalport_dir", "print_summary", "refresh_dashboard", "render_json", "render_markdown",
           "run_sweep"]
