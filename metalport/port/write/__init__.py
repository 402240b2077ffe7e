"""The write stage: every edit a plan makes (kernel, host, registry rows, test lists), text in and text out."""
