"""``python -m jet``: the ``jet`` command."""

from jet.launcher import main

main()
