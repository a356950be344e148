"""Picks up edits to the inventory file while the controller runs."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from ..controller import Controller
from ..events import DesiredStateChanged
from ..model.validation import ValidationError
from ..state.protocol import StateError
from .fabric_file import ConfigError, load_inventory

log = logging.getLogger(__name__)


class InventoryWatcher:
    """Reloads the file when its mtime/size change. A bad file is refused whole:
    the error is logged and published, and the VMs it declared stay as they were.
    A file the store could not take (no quorum, leadership lost) is read
    again on the next tick. The file is read when the watcher starts unless
    ``load_now`` read it first (a controller replica starts its watcher each
    time it begins to lead)."""

    def __init__(self, controller: Controller, path: str | Path, interval: float = 1.0) -> None:
        self.controller = controller
        self.path = Path(path)
        self.interval = interval
        self.last_error = ""
        self._seen: tuple[float, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="inventory")

    def load_now(self) -> None:
        """Load once; raise on a bad file (used at start-up)."""
        stat = self.path.stat()
        self.controller.replace_source("inventory", load_inventory(self.path))
        self._seen = (stat.st_mtime, stat.st_size)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self._poll()
            if self._stop.wait(self.interval):
                return

    def _poll(self) -> None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return
        if (stat.st_mtime, stat.st_size) == self._seen:
            return
        if self._seen is not None:
            # Let a writer that is not atomic finish before reading.
            time.sleep(min(0.1, self.interval))
            try:
                stat = os.stat(self.path)
            except OSError:
                return
        self._seen = (stat.st_mtime, stat.st_size)
        try:
            self.controller.replace_source("inventory", load_inventory(self.path))
            self.last_error = ""
        except (ConfigError, ValidationError) as exc:
            self.last_error = str(exc)
            log.error("inventory not applied: %s", exc)
            self.controller.bus.publish(DesiredStateChanged(vm="*", change=f"refused: {exc}"))
        except StateError as exc:
            self.last_error = str(exc)
            self._seen = None  # (not stored: read it again next time)
            log.warning("inventory not stored, retrying: %s", exc)
