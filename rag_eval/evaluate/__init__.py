"""Per-tier case evaluation: one golden item + the system output → a CaseResult."""
