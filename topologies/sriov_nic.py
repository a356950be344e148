#!/usr/bin/env python3
"""A server NIC as SR-IOV makes it look to the network: each VM owns a VF, the
VF puts the VM's frames on the wire tagged with the VF's VLAN and hands the VM
only frames of that VLAN, untagged. No switching between VFs, no overlay work.

Runs in the server's network namespace, moving frames between the uplink and
one interface per VF with raw sockets (the kernel here has neither 802.1Q
devices nor bridge VLAN filtering, so the NIC is modelled in user space).

    sriov_nic.py --uplink s11-eth0 --vfs vfs.json      # {"s11-eth1": 11, ...}

The VF file is re-read when it changes (a VM migrating in gets a new VF).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct

ETH_P_ALL = 0x0003
TPID = 0x8100
SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID = 0x10
PACKET_OUTGOING = 4


def open_socket(ifname: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((ifname, 0))
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return sock


def receive(sock: socket.socket) -> tuple[bytes, int | None] | None:
    """One frame and its VLAN id (None if untagged); None for our own sends."""
    data, ancillary, _, addr = sock.recvmsg(65535, socket.CMSG_SPACE(64))
    if addr[2] == PACKET_OUTGOING:
        return None
    for level, kind, aux in ancillary:
        if level == SOL_PACKET and kind == PACKET_AUXDATA:
            status, _, _, _, _, tci, _ = struct.unpack("IIIHHHH", aux[:20])
            if status & TP_STATUS_VLAN_VALID:  # the kernel took the tag off
                return data, tci & 0x0FFF
    if len(data) >= 18 and struct.unpack("!H", data[12:14])[0] == TPID:
        return data[:12] + data[16:], struct.unpack("!H", data[14:16])[0] & 0x0FFF
    return data, None


def load_vfs(path: str) -> dict[str, int]:
    with open(path, encoding="utf-8") as handle:
        return {name: int(vlan) for name, vlan in json.load(handle).items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uplink", required=True)
    parser.add_argument("--vfs", required=True, help="JSON file: interface -> VLAN")
    args = parser.parse_args()
    uplink = open_socket(args.uplink)
    vf_socks: dict[str, socket.socket] = {}
    vlan_of: dict[int, int] = {}  # socket fd -> VLAN
    sock_of_vlan: dict[int, socket.socket] = {}
    seen = None

    def refresh() -> None:
        nonlocal seen
        stat = os.stat(args.vfs)
        if (stat.st_mtime_ns, stat.st_size) == seen:
            return
        seen = (stat.st_mtime_ns, stat.st_size)
        wanted = load_vfs(args.vfs)
        for name in list(vf_socks):
            if name not in wanted:
                sock = vf_socks.pop(name)
                sock_of_vlan.pop(vlan_of.pop(sock.fileno()), None)
                sock.close()
        for name, vlan in wanted.items():
            if name not in vf_socks:
                try:
                    sock = open_socket(name)
                except OSError:
                    continue  # the interface is not there yet; next pass
                vf_socks[name] = sock
            vlan_of[vf_socks[name].fileno()] = vlan
            sock_of_vlan[vlan] = vf_socks[name]

    while True:
        refresh()
        readable, _, _ = select.select([uplink, *vf_socks.values()], [], [], 0.2)
        for sock in readable:
            try:
                got = receive(sock)
            except OSError:
                continue
            if got is None:
                continue
            frame, vlan = got
            try:
                if sock is uplink:
                    target = sock_of_vlan.get(vlan) if vlan is not None else None
                    if target is not None:
                        target.send(frame)
                elif vlan is None:  # a VM cannot choose its VLAN
                    tag = struct.pack("!HH", TPID, vlan_of[sock.fileno()])
                    uplink.send(frame[:12] + tag + frame[12:])
            except OSError:
                pass  # e.g. a VF interface that just went away


if __name__ == "__main__":
    main()
