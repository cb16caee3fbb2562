"""A job's launch across its process tree, and the process hooks of the client.

``membership`` tells which processes are one job, ``records`` is what they share of each
artifact (the open, the newest version read before it), ``tree`` reads ``/proc``, and
``hooks`` is the one place the client installs fork, exit and signal hooks.
"""
