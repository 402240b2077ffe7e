"""The launch spec model: the spec, its expressions, schema checks and the spec recipe table."""
