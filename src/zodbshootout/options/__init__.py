"""What a run measures and how: the options, validated against the phases and
object shapes they name, as plain data.

Beside ``config/`` (the ZConfig file) rather than inside it: the storage kinds
read the configuration file, and these options read the phase registry, which
reads the storage kinds; one package holding both was an import cycle.
"""
