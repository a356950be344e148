"""Head-end replication of broadcast, unknown unicast and multicast, with
split horizon."""

from base import (
    A1,
    A2,
    A3,
    B1,
    B2,
    BROADCAST,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
    UPLINK_1,
    VNI_A,
    VNI_B,
    VTEP_FLOOD_UPLINK,
    VtepFabricTest,
    expected_encap,
    from_remote,
    retag,
    tu,
    untag,
    vm_frame,
)


class BumTest(VtepFabricTest):
    def verify_flood(self, frame, receivers, vni, vteps):
        """Exactly one copy per local receiver (on its VLAN) and per remote VTEP."""
        for vm in receivers:
            tu.verify_packet(self, retag(frame, vm.vlan), vm.port)
        inner = untag(frame)
        for vtep in vteps:
            port = VTEP_FLOOD_UPLINK[vtep]
            tu.verify_packet(self, expected_encap(inner, vni, vtep, port), port)
        tu.verify_no_other_packets(self)


class BroadcastFromAccessTest(BumTest):
    """a1 broadcasts: a2 and both VNI A VTEPs get one copy each; a1's own VF
    and tenant B's VFs (b1 shares a1's port) get nothing."""

    def runTest(self):
        frame = vm_frame(A1, BROADCAST, "192.168.1.255")
        tu.send_packet(self, A1.port, frame)
        self.verify_flood(frame, [A2], VNI_A, [REMOTE_VTEP_1, REMOTE_VTEP_2])


class BroadcastOtherTenantTest(BumTest):
    """b1 broadcasts: b2, and VTEP 1 only (the only remote VTEP hosting VNI B)."""

    def runTest(self):
        frame = vm_frame(B1, BROADCAST, "192.168.1.255")
        tu.send_packet(self, B1.port, frame)
        self.verify_flood(frame, [B2], VNI_B, [REMOTE_VTEP_1])


class MulticastFromAccessTest(BumTest):
    def runTest(self):
        frame = vm_frame(A2, "01:00:5e:01:02:03", "239.1.2.3")
        tu.send_packet(self, A2.port, frame)
        self.verify_flood(frame, [A1], VNI_A, [REMOTE_VTEP_1, REMOTE_VTEP_2])


class UnknownUnicastFromAccessTest(BumTest):
    def runTest(self):
        frame = vm_frame(A1, "00:00:0a:00:00:77", "192.168.1.77")
        tu.send_packet(self, A1.port, frame)
        self.verify_flood(frame, [A2], VNI_A, [REMOTE_VTEP_1, REMOTE_VTEP_2])


class BroadcastFromFabricTest(BumTest):
    """BUM decapsulated from the fabric goes to local VFs only, never back
    into the fabric: it takes the VNI's one flood group, and egress drops its
    copies toward the two remote VTEPs (counted as split horizon)."""

    def runTest(self):
        from base import DropReason

        before = self.drops(DropReason.SPLIT_HORIZON)
        inner = untag(vm_frame(A3, BROADCAST, "192.168.1.255"))
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        self.verify_flood(inner, [A1, A2], VNI_A, [])
        self.assertEqual(self.drops(DropReason.SPLIT_HORIZON), before + 2)


class FloodGroupRemovedTest(BumTest):
    """A VNI whose flood group is taken away floods nowhere (counted)."""

    def runTest(self):
        from base import TC_A, VNI_INDEX, DropReason

        self.sw.modify(self.entries.vni_config(VNI_A, VNI_INDEX[VNI_A], TC_A, 0))
        self.assert_dropped(
            A1.port, vm_frame(A1, BROADCAST, "192.168.1.255"), DropReason.NO_FLOOD_GROUP
        )
