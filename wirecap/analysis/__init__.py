"""Sans-I/O analysis over records and events: normalization, validation, stats, diff, reports."""
