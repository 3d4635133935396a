# The metadata lives in pyproject.toml; this file only lets older tools
# (zc.buildout among them) install the package in development mode.
from setuptools import setup

setup()
