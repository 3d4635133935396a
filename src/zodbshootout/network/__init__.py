"""The network as a variable: a delaying proxy between the workers and the servers (--rtt).

Nothing is imported here: the proxy runs as ``python -m
zodbshootout.network.proxy``, which should load the standard library only.
"""
