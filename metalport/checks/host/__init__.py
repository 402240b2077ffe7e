"""The host model: how the emulated host launches a port's kernels (elementwise launchers and launch specs)."""
