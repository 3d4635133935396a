"""RelStorage: its storage kind and its helpers (statement counts, SQLite planner, MariaDB)."""
