"""Base class and packet helpers for the p4vtep PTF conformance suite.

Every test gets a freshly pushed pipeline (so no state leaks between tests),
a primary P4Runtime connection, and the entry builders of the controller's
own library. ``VtepFabricTest`` installs the reference fabric described in
``fabric`` below; most tests start from it and add or break one thing.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from pathlib import Path

import ptf
import ptf.testutils as tu
from p4vtep.dataplane.artifacts import Pipeline
from p4vtep.dataplane.drop_reasons import DropReason
from p4vtep.dataplane.entries import (
    EGRESS_DROP_COUNTER,
    INGRESS_DROP_COUNTER,
    PipelineEntries,
    PortRole,
)
from p4vtep.dataplane.packet_io import (
    PacketInMeta,
    PacketOutMode,
    decode_packet_in,
    packet_out_metadata,
)
from p4vtep.model.fabric import Rates as MeterRates
from p4vtep.runtime.client import SwitchConnection
from ptf.base_tests import BaseTest
from ptf.mask import Mask
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw

__all__ = ["DropReason", "MeterRates", "tu"]  # re-exported for the tests

# --- the reference fabric ------------------------------------------------------
# Ports as BMv2 numbers them; PTF sees the same numbers on device 0.
ACCESS_PORT_1 = 1  # server 1: VFs of VMs a1, b1
ACCESS_PORT_2 = 2  # server 2: VFs of VMs a2, b2
UPLINK_1 = 3  # to spine 1
UPLINK_2 = 4  # to spine 2
UPLINKS = (UPLINK_1, UPLINK_2)
SPINE_MAC = {UPLINK_1: "00:5e:00:00:01:01", UPLINK_2: "00:5e:00:00:01:02"}

LOCAL_VTEP_IP = "10.0.0.1"
ROUTER_MAC = "00:aa:00:00:00:01"
REMOTE_VTEP_1 = "10.0.0.2"
REMOTE_VTEP_2 = "10.0.0.3"

VNI_A = 5000  # tenant A
VNI_B = 6000  # tenant B: same IP subnet as A
TC_A = 2
TC_B = 1


@dataclass(frozen=True)
class ReferenceVm:
    """A VM of the reference fabric, with the indices the controller would give it."""

    name: str
    vni: int
    mac: str
    ip: str
    port: int = 0  # local VMs: access port and VF VLAN
    vlan: int = 0
    index: int = 0  # local VMs: meter/counter index
    vtep: str = ""  # remote VMs: their VTEP


A1 = ReferenceVm("a1", VNI_A, "00:00:0a:00:00:01", "192.168.1.1", ACCESS_PORT_1, 10, 1)
A2 = ReferenceVm("a2", VNI_A, "00:00:0a:00:00:02", "192.168.1.2", ACCESS_PORT_2, 20, 2)
B1 = ReferenceVm("b1", VNI_B, "00:00:0b:00:00:01", "192.168.1.1", ACCESS_PORT_1, 30, 3)
B2 = ReferenceVm("b2", VNI_B, "00:00:0b:00:00:02", "192.168.1.2", ACCESS_PORT_2, 40, 4)
A3 = ReferenceVm("a3", VNI_A, "00:00:0a:00:00:03", "192.168.1.3", vtep=REMOTE_VTEP_1)
A4 = ReferenceVm("a4", VNI_A, "00:00:0a:00:00:04", "192.168.1.4", vtep=REMOTE_VTEP_2)
B3 = ReferenceVm("b3", VNI_B, "00:00:0b:00:00:03", "192.168.1.3", vtep=REMOTE_VTEP_1)
LOCAL_VMS = (A1, A2, B1, B2)
REMOTE_VMS = (A3, A4, B3)

# Flood groups and replica ids (what the controller would allocate).
VNI_INDEX = {VNI_A: 1, VNI_B: 2}
FLOOD_GROUP = {VNI_A: 1, VNI_B: 2}
REPLICA_ID = {"a1": 1, "a2": 2, "b1": 3, "b2": 4}
VTEP_REPLICA_ID = {
    (VNI_A, REMOTE_VTEP_1): 101,
    (VNI_A, REMOTE_VTEP_2): 102,
    (VNI_B, REMOTE_VTEP_1): 103,
}
# Which uplink carries the flood copies for each remote VTEP.
VTEP_FLOOD_UPLINK = {REMOTE_VTEP_1: UPLINK_1, REMOTE_VTEP_2: UPLINK_2}

ECMP_GROUP_ID = 1
BROADCAST = "ff:ff:ff:ff:ff:ff"


# --- packet builders -----------------------------------------------------------
def vm_frame(
    src: ReferenceVm,
    dst_mac: str,
    dst_ip: str,
    *,
    vlan: int | None = None,
    sport: int = 1234,
    dport: int = 80,
    payload_len: int = 64,
    tcp: bool = False,
    src_mac: str | None = None,
) -> Packet:
    """A frame as VM ``src`` sends it through its VF: tagged with the VF VLAN."""
    l4 = TCP(sport=sport, dport=dport, flags="S") if tcp else UDP(sport=sport, dport=dport)
    return (
        Ether(src=src_mac or src.mac, dst=dst_mac)
        / Dot1Q(vlan=src.vlan if vlan is None else vlan)
        / IP(src=src.ip, dst=dst_ip, ttl=64)
        / l4
        / Raw(b"\xab" * payload_len)
    )


def untag(frame: Packet) -> Packet:
    """The same frame without its 802.1Q tag."""
    if Dot1Q not in frame:
        return frame.copy()
    inner = frame[Dot1Q].payload.copy()
    return Ether(src=frame[Ether].src, dst=frame[Ether].dst, type=frame[Dot1Q].type) / inner


def retag(frame: Packet, vlan: int) -> Packet:
    """The frame as delivered to a VF with VLAN ``vlan``."""
    if Dot1Q in frame:
        frame = untag(frame)
    inner = frame[Ether].payload.copy()
    return Ether(src=frame[Ether].src, dst=frame[Ether].dst) / Dot1Q(vlan=vlan) / inner


def vxlan_packet(
    inner: Packet,
    *,
    vni: int,
    outer_src: str,
    outer_dst: str,
    src_mac: str,
    dst_mac: str,
    sport: int = 49152,
    dport: int = 4789,
    ttl: int = 64,
    flags: int = 0x08,
    tos: int = 0,
) -> Packet:
    return (
        Ether(src=src_mac, dst=dst_mac)
        / IP(src=outer_src, dst=outer_dst, ttl=ttl, id=0, flags=0, tos=tos)
        / UDP(sport=sport, dport=dport, chksum=0)
        / VXLAN(vni=vni, flags=flags)
        / inner
    )


def from_remote(
    inner: Packet, vni: int, remote_vtep: str, uplink: int = UPLINK_1, **kwargs
) -> Packet:
    """A VXLAN packet a remote VTEP sends us through a spine."""
    return vxlan_packet(
        inner,
        vni=vni,
        outer_src=remote_vtep,
        outer_dst=LOCAL_VTEP_IP,
        src_mac=SPINE_MAC[uplink],
        dst_mac=ROUTER_MAC,
        **kwargs,
    )


def expected_encap(inner: Packet, vni: int, remote_vtep: str, uplink: int, tos: int = 0) -> Mask:
    """What we must send toward ``remote_vtep``: every outer field checked
    except the UDP source port, which is a hash the test cannot predict (its
    range and stability are tested separately)."""
    pkt = vxlan_packet(
        inner,
        vni=vni,
        outer_src=LOCAL_VTEP_IP,
        outer_dst=remote_vtep,
        src_mac=ROUTER_MAC,
        dst_mac=SPINE_MAC[uplink],
        tos=tos,
    )
    pkt = Ether(bytes(pkt))  # fills lengths and the IPv4 checksum
    mask = Mask(pkt)
    mask.set_do_not_care_scapy(UDP, "sport")
    return mask


def arp_request(src: ReferenceVm, target_ip: str, vlan: int | None = None) -> Packet:
    return (
        Ether(src=src.mac, dst=BROADCAST)
        / Dot1Q(vlan=src.vlan if vlan is None else vlan)
        / ARP(op=1, hwsrc=src.mac, psrc=src.ip, hwdst="00:00:00:00:00:00", pdst=target_ip)
    )


# --- base classes --------------------------------------------------------------
class P4VtepTest(BaseTest):
    """A fresh pipeline and a primary P4Runtime session for each test."""

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.pipeline = Pipeline(
            Path(tu.test_param_get("p4info")), Path(tu.test_param_get("bmv2_json"))
        )
        self.p4info = self.pipeline.p4info
        self.entries = PipelineEntries(self.p4info)
        self.sw = SwitchConnection(
            tu.test_param_get("grpc_addr"), int(tu.test_param_get("device_id")), election_id=10
        )
        self.assertTrue(self.sw.connect(), "could not become primary")
        self.sw.set_pipeline(self.p4info.message, self.pipeline.device_config, self.pipeline.cookie)

    def tearDown(self) -> None:
        # BMv2 keeps multicast groups across SetForwardingPipelineConfig;
        # remove ours so the next test starts clean.
        self.sw.clear_multicast_groups()
        self.sw.close()
        BaseTest.tearDown(self)

    # --- counters ---------------------------------------------------------------
    def counter(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one index of an indexed counter."""
        [entity] = self.sw.read(self.entries.counter(name, index))
        data = entity.counter_entry.data
        return data.packet_count, data.byte_count

    def drops(self, reason: DropReason) -> int:
        return (
            self.counter(INGRESS_DROP_COUNTER, reason)[0]
            + self.counter(EGRESS_DROP_COUNTER, reason)[0]
        )

    def assert_dropped(self, send_port: int, pkt: Packet, reason: DropReason) -> None:
        """Send ``pkt``; nothing may come out and the drop counter of ``reason``
        must go up by exactly one."""
        before = self.drops(reason)
        tu.send_packet(self, send_port, pkt)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(reason), before + 1, f"drop reason {reason.name}")

    # --- the CPU port -------------------------------------------------------------
    def next_packet_in(self, timeout: float = 3.0) -> tuple[PacketInMeta, bytes]:
        """The next packet-in: its metadata (by name) and its payload."""
        try:
            packet = self.sw.packet_in.get(timeout=timeout)
        except queue.Empty:
            self.fail("no packet-in")
        return decode_packet_in(self.p4info, packet), packet.payload

    def assert_no_packet_in(self) -> None:
        """Nothing went to the controller (so far: call it after the frames'
        outcome is known, e.g. after verify_no_other_packets)."""
        if not self.sw.packet_in.empty():
            meta, payload = self.next_packet_in()
            self.fail(f"unexpected packet-in {meta}: {Ether(payload)!r}")

    def send_packet_out(
        self, frame: Packet | bytes, mode: PacketOutMode, egress_port: int = 0, vni: int = 0
    ) -> None:
        self.sw.send_packet_out(
            bytes(frame), packet_out_metadata(self.p4info, mode, egress_port, vni)
        )

    # --- receiving ----------------------------------------------------------------
    def collect(self, port: int, timeout: float = 1.0) -> list[bytes]:
        """Every packet that arrives on ``port`` until it has been quiet for ``timeout``."""
        packets = []
        while True:
            result = tu.dp_poll(self, port_number=port, timeout=timeout)
            if not isinstance(result, self.dataplane.PollSuccess):
                return packets
            packets.append(result.packet)

    def count_delivered(self, port: int, expected: list) -> int:
        """How many of ``expected`` (packets or masks) arrived on ``port``, each
        matched at most once, in any order; anything else fails the test."""
        remaining = [e if isinstance(e, Mask) else Mask(e) for e in expected]
        delivered = 0
        for raw in self.collect(port):
            match = next((m for m in remaining if m.pkt_match(raw)), None)
            if match is None:
                self.fail(f"unexpected packet on port {port}: {Ether(raw)!r}")
            remaining.remove(match)
            delivered += 1
        return delivered

    def receive_any(self, ports, timeout: float = 2.0) -> tuple[int, bytes]:
        result = tu.dp_poll(self, device_number=0, timeout=timeout)
        if not isinstance(result, self.dataplane.PollSuccess):
            self.fail(f"no packet received on any of ports {list(ports)}")
        self.assertIn(result.port, ports, f"packet on unexpected port {result.port}")
        return result.port, result.packet

    def verify_encap_any_uplink(
        self, inner: Packet, vni: int, remote_vtep: str, tos: int = 0
    ) -> tuple[int, Packet]:
        """One encapsulated copy on one uplink, exact but for the UDP source port."""
        port, raw = self.receive_any(UPLINKS)
        expected = expected_encap(inner, vni, remote_vtep, port, tos)
        if not expected.pkt_match(raw):
            self.fail(
                f"encapsulated packet on port {port} differs:\n"
                f"got      {Ether(raw)!r}\nexpected {expected.exp_pkt!r}"
            )
        return port, Ether(raw)


class VtepFabricTest(P4VtepTest):
    """The reference fabric: two access ports with two tenants, two uplinks in
    one ECMP group toward the remote VTEPs, head-end flood groups."""

    configure_local_vtep = True

    def setUp(self) -> None:
        super().setUp()
        self.install_reference_fabric(self.sw)

    def install_reference_fabric(self, sw: SwitchConnection) -> None:
        """The reference fabric's entries on ``sw`` (this test's switch, or
        a probe switch: test_qos.py)."""
        e = self.entries
        updates = [
            e.port_role(ACCESS_PORT_1, PortRole.ACCESS),
            e.port_role(ACCESS_PORT_2, PortRole.ACCESS),
            e.port_role(UPLINK_1, PortRole.FABRIC),
            e.port_role(UPLINK_2, PortRole.FABRIC),
            e.my_vtep(LOCAL_VTEP_IP),
        ]
        for vni in (VNI_A, VNI_B):
            updates.append(
                e.vni_config(
                    vni,
                    VNI_INDEX[vni],
                    TC_A if vni == VNI_A else TC_B,
                    FLOOD_GROUP[vni],
                )
            )
        for vm in LOCAL_VMS:
            updates += [
                e.access_binding(vm.port, vm.vlan, vm.vni, vm.index, vm.mac),
                e.mac_to_local_vm(vm.vni, vm.mac, vm.port, vm.vlan, vm.index),
                e.arp_suppression(vm.vni, vm.ip, vm.mac),
                e.replica_to_vm(REPLICA_ID[vm.name], vm.vlan, vm.index),
            ]
        for vm in REMOTE_VMS:
            updates += [
                e.mac_to_remote_vtep(vm.vni, vm.mac, vm.vtep),
                e.arp_suppression(vm.vni, vm.ip, vm.mac),
            ]
        for (_vni, vtep), rid in VTEP_REPLICA_ID.items():
            uplink = VTEP_FLOOD_UPLINK[vtep]
            updates.append(e.replica_to_vtep(rid, vtep, SPINE_MAC[uplink]))
        members = [e.next_hop_member(port, port, SPINE_MAC[port]) for port in UPLINKS]
        sw.insert(*updates, *members)
        sw.insert(e.ecmp_group(ECMP_GROUP_ID, [m.member_id for m in members]))
        sw.insert(e.underlay_route("10.0.0.0", 24, group_id=ECMP_GROUP_ID))
        for vni in (VNI_A, VNI_B):
            local = [(vm.port, REPLICA_ID[vm.name]) for vm in LOCAL_VMS if vm.vni == vni]
            remote = [
                (VTEP_FLOOD_UPLINK[vtep], rid)
                for (v, vtep), rid in VTEP_REPLICA_ID.items()
                if v == vni
            ]
            sw.insert(e.flood_group(FLOOD_GROUP[vni], local + remote))
        if self.configure_local_vtep:
            sw.modify(e.local_vtep(LOCAL_VTEP_IP, ROUTER_MAC))
