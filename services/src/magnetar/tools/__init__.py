"""The everyday tools behind ``magnetar produce``, ``consume`` and ``perf``.

They build on :mod:`magnetar.client` only (never on the broker or storage packages), so they
work against Magnetar and Apache Pulsar alike. The CLI modules stay wiring; the logic lives here.
"""
