"""The command line, the only package that prints: arguments → options → run → render → export."""
