"""The record of a run, its file, its statistics, and what is derived from saved runs."""
