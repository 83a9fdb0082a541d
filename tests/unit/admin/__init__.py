"""Admin HTTP layer tests."""
