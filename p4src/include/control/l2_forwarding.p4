// Per-VNI L2: (VNI, destination MAC) -> a local VM's (port, VLAN) or a remote
// VTEP. Broadcast, multicast and unknown unicast go to the VNI's flood group.
#ifndef P4VTEP_L2_FORWARDING_P4
#define P4VTEP_L2_FORWARDING_P4

// An L3 VNI floods nothing: a frame in it that is not to this ToR's router
// MAC (the only MAC it routes) is dropped as such.
#ifdef P4VTEP_ROUTING
#define NOT_FOR_ROUTER_MAC(meta) \
    if (meta.is_l3vni) { meta.drop_reason = DROP_WRONG_ROUTER_MAC; } else
#else
#define NOT_FOR_ROUTER_MAC(meta)
#endif

// A Router Solicitation from a VM in a routed VNI (one with a VRF) is the
// controller's to answer (cpu_port.p4): not flooded, but dropped with a
// reason of its own, which punt_policy can punt. In an L2-only VNI it is
// flooded to the tenant's own routers as before. (Tested with the flood
// group, in the one condition a VM's BUM meets anyway: no condition more
// for it on BMv2.)
#if defined(P4VTEP_IPV6) && defined(P4VTEP_CPU_PATH)
#define ROUTER_SOLICITATION(meta) \
    (meta.vrf != 0 && hdr.ipv6.isValid() && hdr.icmp.isValid() && \
     hdr.icmp.type_code[15:8] == ICMPV6_TYPE_RS)
#define NO_FLOOD_FROM_VM(meta) (meta.flood_group == 0 || ROUTER_SOLICITATION(meta))
#define WHY_NO_FLOOD_FROM_VM(meta) \
    if (ROUTER_SOLICITATION(meta)) { \
        meta.drop_reason = DROP_ROUTER_SOLICITATION; \
    } else { \
        meta.drop_reason = DROP_NO_FLOOD_GROUP; \
    }
#else
#define NO_FLOOD_FROM_VM(meta) (meta.flood_group == 0)
#define WHY_NO_FLOOD_FROM_VM(meta) meta.drop_reason = DROP_NO_FLOOD_GROUP;
#endif

// The flooding decision, written once for the two branches that flood.
// A VNI has one flood group, whichever side the BUM came from: split horizon
// (nothing from the fabric goes back into it) is egress's, which drops a
// fabric frame's copies toward remote VTEPs (replication.p4). One group
// rather than a second, local-only one halves what the controller rewrites
// each time a VNI's members change (a P4Runtime group carries every copy).
#define FLOOD_IN_VNI(meta) \
    if (meta.drop_reason != DROP_NONE) { \
        /* Dropped already (the TX meter): the first reason stands. */ \
    } else if (meta.from_fabric) { \
        NOT_FOR_ROUTER_MAC(meta) \
        if (meta.flood_group == 0) { \
            meta.drop_reason = DROP_NO_FLOOD_GROUP; \
        } else { \
            meta.mcast_grp = meta.flood_group; \
        } \
    } else if (NO_FLOOD_FROM_VM(meta)) { \
        WHY_NO_FLOOD_FROM_VM(meta) \
    } else { \
        meta.mcast_grp = meta.flood_group; \
    }

control L2Forwarding(in headers_t hdr,
                     inout local_metadata_t meta)
                    (bit<32> mac_table_size) {
#ifdef ROUTE_DECISION_BESIDE_L2
    RouteDecision() route_decision;   // (no tables: the P4Info is unchanged)
#endif

    // `policed`: the VM has a receive policy (vm_rx_meter picks the queue).
    action to_local_vm(port_t port, vlan_id_t vlan_id, vm_index_t vm, bit<1> policed) {
        meta.egress_port = port;
        meta.egress_vlan = vlan_id;
        meta.dst_vm = vm;
        meta.rx_policed = policed;
    }

    action to_remote_vtep(ipv4_addr_t vtep_ip) {
        meta.remote_vtep = vtep_ip;
        meta.do_encap = true;
    }

#ifdef P4VTEP_ROUTING
    // The anycast gateway MAC in a routed VNI, or this ToR's router MAC in an
    // L3 VNI: routed (l3_forwarding.p4). The split-horizon check below cannot
    // match it: no VF has VLAN 0.
    action to_router(mac_addr_t gateway_mac) {
        meta.to_router = true;
        meta.gateway_mac = gateway_mac;
    }
#endif

    // An l2 trap: the frame goes to the controller (cpu_port.p4), policed
    // as its class.
    action punt_to_cpu() {
        meta.egress_port = CPU_PORT;
        PUNT_CLASS(meta) = PUNT_CLASS_L2_TRAP;
    }

    action flood() { }

    table mac_table {
        key = {
            meta.vni              : exact @name("vni");
            hdr.ethernet.dst_addr : exact @name("dst_mac");
        }
        actions = {
            to_local_vm;
            to_remote_vtep;
#ifdef P4VTEP_ROUTING
            to_router;
#endif
            punt_to_cpu;
            @defaultonly flood;
        }
        const default_action = flood();
        size = mac_table_size;
    }

    apply {
        // BUM (group bit set, or a unicast MAC the table does not know) goes
        // to a flood group. Each outcome has its own branch on the table
        // result: a flag carried between them would cost BMv2 two table
        // applies of straight-line code per packet.
        if (hdr.ethernet.dst_addr[40:40] == 0) {
            if (mac_table.apply().hit) {
                if (meta.drop_reason != DROP_NONE) {
                    // Dropped already (the TX meter): the first reason stands.
                }
#ifdef ROUTE_DECISION_BESIDE_L2
                // Tofino: the route decision is a branch of the L2 one, so that
                // both sit in one stage (tna/l3_forwarding.p4).
                else if (meta.to_router) {
                    route_decision.apply(hdr, meta);
                }
#endif
                else if (meta.do_encap && meta.from_fabric) {
                    meta.drop_reason = DROP_SPLIT_HORIZON;   // fabric back to fabric
                } else if (!meta.do_encap && !meta.from_fabric &&
                           meta.egress_port == meta.ingress_port &&
                           meta.egress_vlan == meta.src_vlan) {
                    meta.drop_reason = DROP_SPLIT_HORIZON;   // back to the sending VF
                }
            } else {
                FLOOD_IN_VNI(meta)
            }
        } else {
            FLOOD_IN_VNI(meta)
        }
    }
}

#undef FLOOD_IN_VNI
#undef NO_FLOOD_FROM_VM
#undef WHY_NO_FLOOD_FROM_VM
#ifdef ROUTER_SOLICITATION
#undef ROUTER_SOLICITATION
#endif
#undef NOT_FOR_ROUTER_MAC

#endif  // P4VTEP_L2_FORWARDING_P4
