"""What to measure: the ZConfig file's databases and the run's validated options."""
