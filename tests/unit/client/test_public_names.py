"""The client's public face: ``from magnetar.client import ...`` gives the real classes.

What a user imports from the package must be the objects the implementation modules use
(an ``except magnetar.client.ReceiveTimeout`` catches what ``receive`` raises), every public
error must be a ClientError that says whether it is retryable, and the package keeps a single
``__all__``.
"""

from __future__ import annotations

import importlib
import pkgutil

import magnetar.client
from magnetar.client import (
    EARLIEST,
    Client,
    ClientError,
    Consumer,
    MessageId,
    PartitionedProducer,
    Producer,
    Reader,
    ReceiveTimeout,
)
from magnetar.client import client as client_module
from magnetar.client import consumer as consumer_module
from magnetar.client import errors as errors_module
from magnetar.client import partitioned_producer as partitioned_module
from magnetar.client import producer as producer_module
from magnetar.client import reader as reader_module
from magnetar.protocol import message_id as message_id_module


def test_every_public_name_resolves_once() -> None:
    names = magnetar.client.__all__
    assert len(names) == len(set(names))
    missing = [name for name in names if not hasattr(magnetar.client, name)]
    assert missing == []


def test_public_names_are_the_implementation_objects() -> None:
    assert Client is client_module.Client
    assert Producer is producer_module.Producer
    assert PartitionedProducer is partitioned_module.PartitionedProducer
    assert Consumer is consumer_module.Consumer
    assert Reader is reader_module.Reader
    assert MessageId is message_id_module.MessageId
    assert EARLIEST is message_id_module.EARLIEST
    assert ReceiveTimeout is errors_module.ReceiveTimeout


def test_every_client_error_is_public_and_says_if_retryable() -> None:
    defined = {
        name
        for name, value in vars(errors_module).items()
        if isinstance(value, type) and issubclass(value, ClientError)
    }
    assert defined <= set(magnetar.client.__all__)
    for name in defined:
        assert isinstance(getattr(magnetar.client, name).retryable, bool)


def test_only_the_package_declares_all() -> None:
    declaring = [
        info.name
        for info in pkgutil.iter_modules(magnetar.client.__path__, "magnetar.client.")
        if hasattr(importlib.import_module(info.name), "__all__")
    ]
    assert declaring == []
