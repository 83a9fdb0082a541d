"""The Pulsar broker: serves the binary protocol on port 6650 over managed ledgers.

* Names and policy documents are the common layer's: :mod:`magnetar.naming`,
  :mod:`magnetar.policies`.
* :mod:`.server` / :mod:`.connection` — the TCP listener and one ServerCnx per client.
* :mod:`.producer_requests` / :mod:`.consumer_requests` — a ServerCnx's producer and consumer
  commands, each seeing the connection as a :mod:`.transport_cnx` TransportCnx.
* :mod:`.service` — BrokerService: topics by name, lookup; it composes
  :mod:`.topic_admin`'s TopicAdmin, the admin's TopicService.
* :mod:`.persistent_topic`, :mod:`.non_persistent_topic`, :mod:`.producer`,
  :mod:`.subscription`, :mod:`.consumer` — the data plane.
* :mod:`.dispatch` — sans-I/O subscription cores (consumer selection, redelivery).
* :mod:`.process` — the ``magnetar broker`` process: start-up and ordered shutdown.
"""
