"""The p4vtep command. ``main`` parses the command line (``main.py``) and
runs one of: the controller (``controller_run.py``), a BMv2 ToR
(``switch_run.py``), or a request to a running controller's API
(``commands.py``). Imports everything below it; nothing imports it."""

from .main import main

__all__ = ["main"]
