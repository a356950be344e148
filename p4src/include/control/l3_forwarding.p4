// Routing between a tenant's subnets (symmetric IRB, RFC 9135) on the ToR.
//
// A frame reaches this control only when the MAC lookup sent it to the router:
// from a VM, a frame to the fabric's anycast gateway MAC in a routed VNI; from
// the fabric, a frame in a VRF's L3 VNI whose inner destination is this ToR's
// router MAC. The lookups sit beside the MAC lookup's result, not behind a
// second MAC table: (VRF, IP) in the host table first, then the VRF's longest
// prefix. The route's action rewrites the frame itself (MACs, TTL and its
// checksum): on BMv2 a rewrite after the lookup would cost a table apply of
// its own per routed frame (docs/routing.md).
#ifndef P4VTEP_L3_FORWARDING_P4
#define P4VTEP_L3_FORWARDING_P4

// One's-complement addition of a 16-bit word to a checksum (RFC 1624): the
// checksum after one header word drops by `delta` (TTL - 1: 0x0100; ICMP echo
// request to reply, type 8 -> 0: 0x0800). Valid whatever the IPv4 options.
#define CHECKSUM_ADD(field, delta) { \
    bit<17> sum = (bit<17>) field + (bit<17>) delta; \
    field = sum[15:0] + (bit<16>) sum[16:16]; \
}
#define DECREMENT_TTL(ipv4) \
    ipv4.ttl = ipv4.ttl - 1; \
    CHECKSUM_ADD(ipv4.hdr_checksum, 16w0x0100)

// An address a routed IPv6 frame may not carry, as source or destination
// (RFC 4291 2.4): link-local fe80::/10 (never routed, 2.5.6), multicast
// ff00::/8 (never a source, 2.7; a tenant's multicast is not routed), and
// ::/8 (unspecified, loopback, IPv4-mapped and -compatible: 2.5.2-2.5.5).
// The same test as the TNA program's (8- and 10-bit slices).
#define IPV6_NOT_GLOBAL(addr) \
    (addr[127:118] == 10w0x3fa || addr[127:120] == 8w0xff || addr[127:120] == 8w0)

control L3Forwarding(inout headers_t hdr,
                     inout local_metadata_t meta)
                    (bit<32> host_table_size,
                     bit<32> prefix_table_size,
                     bit<32> ipv6_host_table_size,
                     bit<32> ipv6_prefix_table_size) {
    // To a VM on this ToR, in whichever VNI of the VRF it lives.
    // (`policed`: the VM has a receive policy, as in to_local_vm.)
    action route_to_local_vm(port_t port, vlan_id_t vlan_id, vm_index_t vm,
                             vni_index_t vni_index, mac_addr_t vm_mac, bit<1> policed) {
        meta.egress_port = port;
        meta.egress_vlan = vlan_id;
        meta.dst_vm = vm;
        meta.rx_policed = policed;
        meta.vni_index = vni_index;
        meta.routed = true;
        hdr.ethernet.dst_addr = vm_mac;
        hdr.ethernet.src_addr = meta.gateway_mac;
        DECREMENT_TTL(hdr.ipv4)
    }

    // To the ToR (or any EVPN VTEP) that owns the destination: the VRF's L3
    // VNI, inner destination that VTEP's router MAC.
    // (The inner source MAC, this ToR's router MAC, is set by VxlanEncap.)
    action route_to_remote_vtep(ipv4_addr_t vtep_ip, mac_addr_t router_mac, vni_t l3vni) {
        meta.remote_vtep = vtep_ip;
        meta.vni = l3vni;
        meta.do_encap = true;
        meta.routed = true;
        hdr.ethernet.dst_addr = router_mac;
        DECREMENT_TTL(hdr.ipv4)
    }

    // A gateway IP of the VRF: the ToR itself (it answers echo requests).
    action to_gateway() {
        meta.to_gateway = true;
    }

    action no_route() {
        meta.drop_reason = DROP_NO_TENANT_ROUTE;
    }

#ifdef P4VTEP_IPV6
    // The IPv6 twins of the two route actions: the same decision, the hop
    // limit for the TTL (IPv6 has no header checksum).
    // Into the VM's VNI: a packet with a payload of `too_big_payload_len`
    // (the VNI's MTU - 39: 40 + payload over the MTU) or more is dropped as
    // DROP_PACKET_TOO_BIG, unrewritten, for the controller to quote in an
    // ICMPv6 Packet Too Big (RFC 4443 3.2). The limit is exclusive for
    // Tofino (tna/l3_forwarding.p4: its saturating subtraction takes action
    // data as the first operand only). The test sits in the action: on BMv2
    // one primitive per frame routed to a local VM, where a condition after
    // the lookup would cost every routed IPv6 frame. IPv4 is not checked
    // (docs/routing.md).
    action route_to_local_vm_v6(port_t port, vlan_id_t vlan_id, vm_index_t vm,
                                vni_index_t vni_index, mac_addr_t vm_mac, bit<1> policed,
                                bit<16> too_big_payload_len) {
        meta.egress_port = port;
        meta.egress_vlan = vlan_id;
        meta.dst_vm = vm;
        meta.rx_policed = policed;
        meta.vni_index = vni_index;
        if (hdr.ipv6.payload_len >= too_big_payload_len) {
            meta.drop_reason = DROP_PACKET_TOO_BIG;
        } else {
            meta.routed = true;
            hdr.ethernet.dst_addr = vm_mac;
            hdr.ethernet.src_addr = meta.gateway_mac;
            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
        }
    }

    action route_to_remote_vtep_v6(ipv4_addr_t vtep_ip, mac_addr_t router_mac, vni_t l3vni) {
        meta.remote_vtep = vtep_ip;
        meta.vni = l3vni;
        meta.do_encap = true;
        meta.routed = true;
        hdr.ethernet.dst_addr = router_mac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }

    // (VRF, IPv6 address): every IPv6 address of every VM of the VRF, and the
    // gateways' global and link-local addresses (to_gateway).
    table ipv6_host_route {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv6.dst_addr : exact @name("dst_ip");
        }
        actions = {
            route_to_local_vm_v6;
            route_to_remote_vtep_v6;
            to_gateway;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = ipv6_host_table_size;
    }

    table ipv6_prefix_route {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv6.dst_addr : lpm @name("dst_prefix");
        }
        actions = {
            route_to_local_vm_v6;
            route_to_remote_vtep_v6;
            @defaultonly no_route;
        }
        const default_action = no_route();
        size = ipv6_prefix_table_size;
    }
#endif

    table host_route {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv4.dst_addr : exact @name("dst_ip");
        }
        actions = {
            route_to_local_vm;
            route_to_remote_vtep;
            to_gateway;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = host_table_size;
    }

    table prefix_route {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv4.dst_addr : lpm @name("dst_prefix");
        }
        actions = {
            route_to_local_vm;
            route_to_remote_vtep;
            @defaultonly no_route;
        }
        const default_action = no_route();
        size = prefix_table_size;
    }

    // Applied only to a frame nothing has dropped yet (p4vtep.p4 tests it with
    // to_router: one condition less per routed frame on BMv2).
    apply {
        if (meta.from_fabric && !meta.is_l3vni) {
            // A frame from the fabric to the gateway MAC of a tenant VNI, not
            // the VRF's L3 VNI (whose decap moved the tenant's IP header
            // already: tunnel.p4): decap left that header in inner_ipv4
            // (inner_ipv6). It moves here, where the lookups and rewrites
            // read hdr.ipv4 (hdr.ipv6: the underlay is IPv4, that slot is
            // free); with no VRF of that number it then meets no route, as on
            // Tofino (asymmetric IRB is not routed: docs/routing.md).
            hdr.ipv4 = hdr.inner_ipv4;
            hdr.inner_ipv4.setInvalid();
#ifdef P4VTEP_IPV6
            hdr.ipv6 = hdr.inner_ipv6;
            hdr.inner_ipv6.setInvalid();
#endif
        }
        if (hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.ihl >= 5) {
            if (hdr.ipv4.ttl <= 1) {
                // No ICMP time-exceeded is generated (docs/routing.md).
                meta.drop_reason = DROP_TENANT_TTL_EXPIRED;
            } else {
                if (!host_route.apply().hit) {
                    prefix_route.apply();
                }
                if (meta.to_gateway) {
                    // (A fragment is the controller's: the parser reads no
                    // ICMP header behind an offset, and MF is tested here.)
                    if (!meta.from_fabric && hdr.icmp.isValid() &&
                        hdr.icmp.type_code == ICMP_ECHO_REQUEST &&
                        hdr.ipv4.flags[0:0] == 0) {
                        // Echo reply from the gateway, back where the request
                        // came from; the request's TTL is kept, so the IP
                        // checksum stands (the addresses only swap).
                        SWAP(ipv4_addr_t, hdr.ipv4.src_addr, hdr.ipv4.dst_addr)
                        hdr.icmp.type_code = ICMP_ECHO_REPLY;
                        CHECKSUM_ADD(hdr.icmp.checksum, ICMP_ECHO_REQUEST)
                        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
                        hdr.ethernet.src_addr = meta.gateway_mac;
                        meta.egress_port = meta.ingress_port;
                        meta.egress_vlan = meta.src_vlan;
                        meta.dst_vm = meta.src_vm;
                    } else {
                        meta.drop_reason = DROP_TO_GATEWAY;
                    }
                } else if (meta.from_fabric && meta.do_encap) {
                    // Routed fabric to fabric: this ToR is no transit router.
                    meta.drop_reason = DROP_ROUTED_TRANSIT;
                }
            }
        }
#ifdef P4VTEP_IPV6
        else if (hdr.ipv6.isValid() && hdr.ipv6.version == 6) {
            if (hdr.ipv6.hop_limit <= 1) {
                // No ICMPv6 time-exceeded is generated (docs/routing.md).
                meta.drop_reason = DROP_TENANT_HOP_LIMIT;
            } else {
                // The host table first: it holds the gateway's addresses,
                // which take any source, link-local included (a VM pings
                // its router's link-local address from its own). Anything
                // else with a non-global source or destination is not
                // routed, whether a route would take it or not (the scope
                // decides before the prefix lookup, as on Tofino).
                // (The hit branches on apply() itself: a bool kept from it
                // costs BMv2 a table of its own per routed frame.)
                // A host hit that is not a gateway is a VM's address, which
                // is global: the model refuses any other for a VM, and the
                // EVPN intake never routes one (evpn/routes.py ipv6_scope).
                // Only the source's scope is left to test (on BMv2 each
                // slice of a 128-bit field is a wide-integer operation).
                if (ipv6_host_route.apply().hit) {
                    // Each outcome in the hit's own branch: a verdict carried
                    // past it would be tested again (a condition per frame).
                    if (meta.to_gateway) {
                        if (!meta.from_fabric && hdr.icmp.isValid() &&
                            hdr.icmp.type_code == ICMPV6_ECHO_REQUEST) {
                            // Echo reply from the gateway (global or
                            // link-local address). Type 128 -> 129 adds
                            // 0x0100 to the summed word, so the checksum loses
                            // it; swapping the addresses leaves the
                            // pseudo-header's sum as it was.
                            SWAP(ipv6_addr_t, hdr.ipv6.src_addr, hdr.ipv6.dst_addr)
                            hdr.icmp.type_code = ICMPV6_ECHO_REPLY;
                            CHECKSUM_ADD(hdr.icmp.checksum, 16w0xfeff)
                            hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
                            hdr.ethernet.src_addr = meta.gateway_mac;
                            meta.egress_port = meta.ingress_port;
                            meta.egress_vlan = meta.src_vlan;
                            meta.dst_vm = meta.src_vm;
                        } else {
                            meta.drop_reason = DROP_TO_GATEWAY;
                        }
                    } else if (IPV6_NOT_GLOBAL(hdr.ipv6.src_addr)) {
                        meta.drop_reason = DROP_IPV6_SCOPE;
                    } else if (meta.from_fabric && meta.do_encap) {
                        // Routed fabric to fabric: this ToR is no transit router.
                        meta.drop_reason = DROP_ROUTED_TRANSIT;
                    }
                } else if (IPV6_NOT_GLOBAL(hdr.ipv6.dst_addr) ||
                           IPV6_NOT_GLOBAL(hdr.ipv6.src_addr)) {
                    meta.drop_reason = DROP_IPV6_SCOPE;
                } else {
                    // (a miss is no_route; a prefix never leads to the gateway)
                    ipv6_prefix_route.apply();
                    if (meta.from_fabric && meta.do_encap) {
                        meta.drop_reason = DROP_ROUTED_TRANSIT;
                    }
                }
            }
        }
#endif
        else {
            meta.drop_reason = DROP_NOT_IP_ROUTED;
        }
    }
}

#endif  // P4VTEP_L3_FORWARDING_P4
