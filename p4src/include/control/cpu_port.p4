// The CPU path (issue 39): frames to the controller (packet-in) and from it
// (packet-out).
//
// Punting. Only a frame ingress drops anyway can be punted: PuntDecision
// looks its drop reason up in punt_policy (the controller's entries: drop
// reason -> punt class) and the top level sends it to the CPU port instead
// of dropping it, still counted under its drop reason. Nothing on the
// forwarding paths changes. An l2 entry's trap (mac_table punt_to_cpu) is
// class PUNT_CLASS_L2_TRAP. In egress CpuPort polices each class (CoPP: one
// packet meter per class; RED is dropped and counted) and tells the
// controller where the frame came from in packet_in.
//
// Packet-out. PORT: out of the port it names, untouched (the top level).
// ROUTE and FLOOD: CpuInjection makes the frame look like one from a local
// VM (tagged, VLAN 0) in the VRF or VNI the controller names, and the
// ordinary stages route it (l3_forwarding, from the VRF's L3 VNI) or flood
// it (CpuFlood: the VNI's flood group). Access filtering and port security
// are skipped (they belong to a VF), and a frame from the CPU is never
// punted back to it.
#ifndef P4VTEP_CPU_PORT_P4
#define P4VTEP_CPU_PORT_P4
#ifdef P4VTEP_CPU_PATH   // (a profile without it: tna/p4vtep.p4)

// Ingress, first: a packet-out in ROUTE or FLOOD mode. The frame (untagged;
// for ROUTE its Ethernet source is the anycast gateway MAC, which the route
// actions write as a local VM's source) gets a VF tag as a VM's frame has,
// so that delivery retags it and encap strips it as they do a VM's.
control CpuInjection(inout headers_t hdr,
                     inout local_metadata_t meta) {
    apply {
        meta.from_cpu = true;
        meta.vni = hdr.packet_out.vni;
        if (hdr.packet_out.mode == PACKET_OUT_ROUTE) {
            // A VRF is named by its L3 VNI: vni_config gives its traffic class.
#ifdef P4VTEP_ROUTING
            meta.vrf = hdr.packet_out.vni;
            meta.to_router = true;
            meta.gateway_mac = hdr.ethernet.src_addr;
#else
            meta.drop_reason = DROP_NOT_IP_ROUTED;
#endif
        } else if (hdr.packet_out.mode == PACKET_OUT_FLOOD) {
            meta.cpu_flood = true;
        } else {
            meta.drop_reason = DROP_MALFORMED;   // no such mode
        }
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = 0;
        hdr.vlan.ether_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = ETHERTYPE_VLAN;
        hdr.packet_out.setInvalid();
    }
}

// Ingress, in place of the MAC lookup: a FLOOD packet-out goes to its VNI's
// flood group (local VFs tagged, remote VTEPs encapsulated), whatever its
// destination MAC. An L3 VNI floods nowhere.
control CpuFlood(inout local_metadata_t meta) {
    apply {
        if (meta.flood_group == 0) {
            meta.drop_reason = DROP_NO_FLOOD_GROUP;
        } else {
            meta.mcast_grp = meta.flood_group;
        }
    }
}

// Ingress, for a frame being dropped: whether the controller wants it
// instead. A frame from the CPU is dropped, never punted back. (Tofino has
// its own, with the same names: tna/punt_decision.p4.)
#ifndef PUNT_DECISION_IN_ARCH
control PuntDecision(inout local_metadata_t meta)
                    (bit<32> punt_policy_size) {
    action punt(punt_class_t punt_class) {
        meta.punt_class = punt_class;
    }

    // Dropped: the top level drops what has no class.
    action drop_frame() { }

    table punt_policy {
        key = {
            meta.drop_reason : exact @name("drop_reason");
        }
        actions = {
            punt;
            @defaultonly drop_frame;
        }
        const default_action = drop_frame();
        size = punt_policy_size;
    }

    apply {
        // (An l2 trap's class, if the frame met one before its drop, is not
        // the drop's.)
        meta.punt_class = PUNT_CLASS_NONE;
        if (!meta.from_cpu) {
            punt_policy.apply();
        }
    }
}
#endif

// Egress, on the CPU port: control-plane policing per class, then the
// packet_in header. `copp_drop`: RED, the top level drops it.
control CpuPort(inout headers_t hdr,
                inout local_metadata_t meta,
                out bool copp_drop) {
    // Index: the class (PUNT_CLASS_COUNT cells: the controller writes
    // classes 1-6), PUNT_CELL (arch.p4).
    PACKET_METER(copp_meter, PUNT_CLASS_COUNT, PUNT_CELL_TYPE);
    PACKET_BYTE_COUNTER(punt_counter, PUNT_CLASS_COUNT, PUNT_CELL_TYPE);
    PACKET_BYTE_COUNTER(copp_drop_counter, PUNT_CLASS_COUNT, PUNT_CELL_TYPE);

    apply {
        bit<2> color;
        EXECUTE_METER(copp_meter, PUNT_CELL(meta), color);
        if (color == METER_RED) {
            copp_drop = true;
            COUNT(copp_drop_counter, PUNT_CELL(meta));
        } else {
            copp_drop = false;
            COUNT(punt_counter, PUNT_CELL(meta));
            hdr.packet_in.setValid();
            hdr.packet_in._pad = 0;
            hdr.packet_in.ingress_port = meta.ingress_port;
            hdr.packet_in.reason = PUNT_CLASS(meta);
            hdr.packet_in.vni = meta.vni;
            hdr.packet_in._pad2 = 0;
            hdr.packet_in.vlan = meta.src_vlan;
        }
    }
}

#endif  // P4VTEP_CPU_PATH
#endif  // P4VTEP_CPU_PORT_P4
