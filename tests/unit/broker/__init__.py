"""Broker unit tests."""
