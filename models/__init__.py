"""Models of the transformer family built on minigrad.nn."""
