"""Test kit: start real servers (etcd, bookies, brokers) on free loopback ports, wait for them."""
