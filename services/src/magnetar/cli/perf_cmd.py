"""magnetar perf (stub)."""
