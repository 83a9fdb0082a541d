"""Thin kopf handlers: each reads its arguments, calls a shell module, patches status, emits
Events and turns a wait into ``kopf.TemporaryError``. :func:`build_registry` registers them on
a registry of their own (the entry point uses one; tests register only what they exercise).
"""

from magnetar_operator.handlers.registry import build_registry, configure, register_common

__all__ = ["build_registry", "configure", "register_common"]
