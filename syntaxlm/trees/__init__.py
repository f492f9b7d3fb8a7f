"""Trees: the constituency ``Tree`` and dependency ``DepTree`` values, their readers, writers,
cleaning and transforms. Pure Python, no torch."""
