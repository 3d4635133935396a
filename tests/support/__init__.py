"""Helpers the integration tests share (hosts in network namespaces, servers)."""
