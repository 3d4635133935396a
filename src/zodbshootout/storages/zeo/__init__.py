"""ZEO: its storage kind, the ``<embeddedzeo>`` section, and the servers the tool starts."""
