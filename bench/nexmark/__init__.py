"""NEXMark on Jet, plain Python and Bytewax over the same events (issue 32).

``model`` holds the three event types, ``generator`` makes them as Beam's NEXMark generator
does, ``events`` pre-generates and shares them, ``source`` feeds them to a Jet job, ``queries``
defines the queries as Pipelines, ``oracle`` the same queries in plain Python, ``bytewax_queries``
some of them as Bytewax dataflows, and ``run`` times them all.
"""
