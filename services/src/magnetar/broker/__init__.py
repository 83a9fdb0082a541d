"""The Pulsar broker: serves the binary protocol on port 6650 over managed ledgers.

* Names and policy documents are the common layer's: :mod:`magnetar.naming`,
  :mod:`magnetar.policies`.
* :mod:`.server` / :mod:`.connection` — the TCP listener and one ServerCnx per client.
* :mod:`.service` — BrokerService: topics by name, lookup, the admin's TopicService.
* :mod:`.persistent_topic`, :mod:`.non_persistent_topic`, :mod:`.producer`,
  :mod:`.subscription`, :mod:`.consumer` — the data plane.
* :mod:`.dispatch` — sans-I/O subscription cores (consumer selection, redelivery).
* :mod:`.standalone` — the standalone process (bookie + metadata + broker in one).
"""
