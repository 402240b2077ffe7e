"""Verdict-side checks: tolerances for comparing kernel output against torch."""
