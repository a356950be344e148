"""How this process runs its BGP speaker (not the fabric's EVPN settings,
which are the fabric file's ``evpn:`` section, ``config.EvpnConfig``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EvpnOptions:
    """Given by whoever wires EVPN to a controller (the CLI takes the
    defaults; tests and embedders set them) and read by ``GoBgpSpeaker``."""

    # Put in front of the gobgpd command line, e.g. ("ip", "netns", "exec",
    # NS) to run the speaker in a network namespace.
    command_prefix: tuple[str, ...] = ()
    # Where gobgpd listens for BGP (its --api-hosts are private); () is
    # gobgpd's default, every address (when the config's listen_port is not -1).
    listen_addresses: tuple[str, ...] = ()
    # Source address of the sessions we open; None lets the kernel choose.
    local_address: str | None = None
    # This speaker's BGP identifier instead of the fabric file's
    # ``evpn.router_id`` (controller replicas: each its own).
    router_id: str | None = None
    # gobgpd's socket and log; None is a private temporary directory,
    # removed when the speaker stops.
    run_dir: Path | None = None
    log_level: str = "info"  # gobgpd --log-level
    # Learned routes are committed at most once per this many seconds
    # (``sources.evpn``): a burst goes to the switches in a few commits, not
    # one per route. A route with no commit in the window before it (a lone
    # one, the first of a burst) is committed at once.
    commit_window: float = 0.01

    def __post_init__(self) -> None:
        # Frozen means frozen: a list given by a caller is copied into a tuple.
        object.__setattr__(self, "command_prefix", tuple(self.command_prefix))
        object.__setattr__(self, "listen_addresses", tuple(self.listen_addresses))
        if self.run_dir is not None:
            object.__setattr__(self, "run_dir", Path(self.run_dir))


DEFAULTS = EvpnOptions()  # what the CLI runs with
