"""Open a database, keep its state (zap, pack, fill), describe it, size its caches."""
