"""Instruments a worker reads around the timed region, never inside it."""
