"""Tag and untag between a VM's interface and its server port, in userspace:
a stand-in for a VF with a VLAN, where the kernel has no VLAN devices (no
8021q, no bridge VLAN filtering: e.g. in a container).

    python vlan_relay.py TRUNK ACCESS VLAN

Frames from ACCESS leave TRUNK with an 802.1Q tag for VLAN; frames arriving
on TRUNK with that tag go to ACCESS untagged. Runs until killed.
"""

from __future__ import annotations

import select
import socket
import struct
import sys

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID = 0x10


def main(trunk_name: str, access_name: str, vlan: int) -> None:
    trunk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    trunk.bind((trunk_name, 0))
    trunk.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    access = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    access.bind((access_name, 0))
    tag = struct.pack("!HH", 0x8100, vlan)
    while True:
        ready, _, _ = select.select([trunk, access], [], [])
        for sock in ready:
            data, ancillary, _, addr = sock.recvmsg(65535, socket.CMSG_SPACE(64))
            if addr[2] == PACKET_OUTGOING:
                continue
            if sock is access:
                trunk.send(data[:12] + tag + data[12:])
                continue
            # The kernel hands a received tag over as ancillary data.
            vid = None
            for level, kind, aux in ancillary:
                if level == SOL_PACKET and kind == PACKET_AUXDATA:
                    status, _, _, _, _, tci = struct.unpack("IIIHHH", aux[:18])
                    if status & TP_STATUS_VLAN_VALID:
                        vid = tci & 0x0FFF
            if vid is None and data[12:14] == b"\x81\x00":  # (tag left in the frame)
                vid = struct.unpack("!H", data[14:16])[0] & 0x0FFF
                data = data[:12] + data[16:]
            if vid == vlan:
                access.send(data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
