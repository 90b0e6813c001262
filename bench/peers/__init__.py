"""Peers: the same query written for the systems grizzly-py is compared against.

``base`` holds the ``Peer`` interface and result normalization; ``ysb_*`` modules implement
YSB per system (``ysb.c`` is the hand-written C ceiling). Heavy libraries are imported in a
peer's ``setup()``, so that a missing one makes only that peer missing.
"""
