"""Big databases and their upkeep: fill one (``zodbshootout fill``), time its maintenance.

:mod:`.fill` writes the objects, :mod:`.trees` names the containers' classes,
:mod:`.disk` checks the room first, :mod:`.runner` runs a fill on every
database of a configuration (a mode on run.skeleton).
"""
