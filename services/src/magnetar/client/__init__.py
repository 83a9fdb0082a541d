"""Magnetar's asyncio Pulsar client: pure Python, speaks the Pulsar binary protocol.

Works against Magnetar and Apache Pulsar alike; Magnetar's own tools build on it.
"""
