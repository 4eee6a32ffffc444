"""Small helpers every floor may use: atomic and guarded file writes (person_files)."""
