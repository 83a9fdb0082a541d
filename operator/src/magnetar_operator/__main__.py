"""``python -m magnetar_operator``: the same as ``magnetar-operator``."""

from magnetar_operator.main import main

main()
