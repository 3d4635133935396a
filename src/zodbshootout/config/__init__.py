"""What to measure: the ZConfig file's databases and the --hosts list (the run's
options, which know the phases, are zodbshootout.options')."""
