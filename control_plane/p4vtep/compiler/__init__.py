"""Desired state -> the P4Runtime entities each ToR must hold.

One builder per concern (``ports``, ``underlay``, ``flooding``, ``local_vm``,
``remote_vm``, ``routing``), all pure over (fabric, VMs, allocations) and
producing entities encoded once (``switch_state``; ``encode`` is the fast
path). ``desired`` holds the desired state and one ``incremental``
compiler per ToR, which turns each change into per-ToR deltas; ``full``
compiles a whole ToR and is the reference. ``learned`` is what EVPN and
static VTEPs tell about the world outside.
"""

from ..dataplane.limits import TOR_INDEX_MAX, VM_INDEX_MAX, VNI_INDEX_MAX, VTEP_REPLICA_BASE
from ..model.allocation import Allocations, allocate
from .desired import DesiredState
from .encode import Encoder
from .flooding import flood_group, flood_uplink
from .full import compile_tor
from .incremental import Change, TorCompiler
from .learned import Learned, LearnedMac
from .switch_state import Key, SwitchState, identity
from .underlay import ECMP_GROUP_ID

__all__ = [
    "ECMP_GROUP_ID",
    "TOR_INDEX_MAX",
    "VM_INDEX_MAX",
    "VNI_INDEX_MAX",
    "VTEP_REPLICA_BASE",
    "Allocations",
    "Change",
    "DesiredState",
    "Encoder",
    "Key",
    "Learned",
    "LearnedMac",
    "SwitchState",
    "TorCompiler",
    "allocate",
    "compile_tor",
    "flood_group",
    "flood_uplink",
    "identity",
]
