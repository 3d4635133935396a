"""The phases: records, the classic phases, the extra benchmarks, and the caches each empties."""
