"""Golden sets: the format, loading, gold resolution and validation."""
