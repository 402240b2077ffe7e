"""What the tree holds for an op, read before planning: resolution, status and kind, existing kernels, legacy code."""
