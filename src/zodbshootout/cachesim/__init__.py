"""Cache simulation (``zodbshootout cachesim``): replay cache traces through cache policies."""
