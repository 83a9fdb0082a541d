"""The Magnetar Kubernetes operator (kopf): PulsarCluster, Tenant, Namespace and Topic.

Layout: :mod:`magnetar_operator.manifests` builds Kubernetes objects from a spec (pure
functions), :mod:`magnetar_operator.status` computes phases and conditions from observed
children (pure), :mod:`magnetar_operator.kube` is the one module that talks to the Kubernetes
API, :mod:`magnetar_operator.handlers` holds the thin kopf handlers, and
:mod:`magnetar_operator.main` is the ``magnetar-operator`` entry point. Installed with the
``operator`` extra (``pip install magnetar[operator]``).
"""
