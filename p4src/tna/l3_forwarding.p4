// Routing between a tenant's subnets on Tofino: the tables and actions of
// ../include/control/l3_forwarding.p4 (same names, keys and parameters, so
// the P4Info is v1model's), laid out for Tofino's stages instead of BMv2's
// table applies:
// - L3Forwarding only looks up: the VRF's longest prefix, then the host
//   table, whose hit overrides it (host beats prefix). Its keys are ready as
//   soon as the VRF and the (decapsulated) IPv4 header are, so both lookups
//   sit beside ARP suppression and the MAC lookup, not after them.
// - RouteDecision, after the MAC lookup sent the frame to the router, turns
//   the result into the forwarding decision and the drop reasons, writing
//   metadata only.
// - RoutedRewrite, in egress, rewrites the frame: MACs, TTL - 1, the ICMP
//   echo reply. An ingress rewrite would make the flow hash and the underlay
//   wait for it (one stage each on Tofino 1's full ingress).
#ifndef P4VTEP_TNA_L3_FORWARDING_P4
#define P4VTEP_TNA_L3_FORWARDING_P4

// Non-global IPv6 addresses a routed frame may not carry (RFC 4291 2.4):
// link-local fe80::/10, multicast ff00::/8, and ::/8 (unspecified, loopback,
// IPv4-mapped and -compatible). Slices: Tofino tests at most 44 bits of PHV in
// one condition, never a 128-bit address.
#define IPV6_NOT_GLOBAL(addr) \
    (addr[127:118] == 10w0x3fa || addr[127:120] == 8w0xff || addr[127:120] == 8w0)

control L3Forwarding(inout headers_t hdr,
                     inout local_metadata_t meta)
                    (bit<32> host_table_size,
                     bit<32> prefix_table_size,
                     bit<32> ipv6_host_table_size,
                     bit<32> ipv6_prefix_table_size) {
    action route_to_local_vm(port_t port, vlan_id_t vlan_id, vm_index_t vm,
                             vni_index_t vni_index, mac_addr_t vm_mac, bit<1> policed) {
        meta.route.kind = ROUTE_LOCAL_VM;
        meta.route.port = port;
        meta.route.vlan_id = vlan_id;
        meta.route.vm = vm;
        meta.route.policed = policed;
        meta.route.vni_index = vni_index;
        meta.route.mac = vm_mac;
    }

    action route_to_remote_vtep(ipv4_addr_t vtep_ip, mac_addr_t router_mac, vni_t l3vni) {
        meta.route.kind = ROUTE_REMOTE_VTEP;
        meta.route.vtep_ip = vtep_ip;
        meta.route.mac = router_mac;
        meta.route.l3vni = l3vni;
    }

    action to_gateway() {
        meta.route.kind = ROUTE_GATEWAY;
    }

    action no_route() {
        meta.route.kind = ROUTE_NONE;
    }

#ifdef P4VTEP_IPV6
    // v1model's IPv6 twins; here the same result as the IPv4 actions (the
    // rewrite, in egress, reads the family from the header). To a local VM
    // also how far the payload is from too big for the VNI (saturating: 0
    // when it is too big), which RouteDecision tests for Packet Too Big: a
    // gateway cannot compare two 16-bit fields with `>`, and the ALU takes
    // action data as the subtraction's first operand only.
    action route_to_local_vm_v6(port_t port, vlan_id_t vlan_id, vm_index_t vm,
                                vni_index_t vni_index, mac_addr_t vm_mac, bit<1> policed,
                                bit<16> too_big_payload_len) {
        meta.route.kind = ROUTE_LOCAL_VM;
        meta.route.port = port;
        meta.route.vlan_id = vlan_id;
        meta.route.vm = vm;
        meta.route.policed = policed;
        meta.route.vni_index = vni_index;
        meta.route.mac = vm_mac;
        meta.route.payload_slack = too_big_payload_len |-| hdr.ipv6.payload_len;
    }

    action route_to_remote_vtep_v6(ipv4_addr_t vtep_ip, mac_addr_t router_mac, vni_t l3vni) {
        meta.route.kind = ROUTE_REMOTE_VTEP;
        meta.route.vtep_ip = vtep_ip;
        meta.route.mac = router_mac;
        meta.route.l3vni = l3vni;
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

#ifdef P4VTEP_IPV6
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

    apply {
        // Every frame that may be routed is looked up; only the decision
        // (RouteDecision) looks at whether it was sent to the router. The
        // two families' tables are in exclusive branches, so they can share
        // stages.
        if (hdr.ipv4.isValid()) {
            prefix_route.apply();
            host_route.apply();
        }
#ifdef P4VTEP_IPV6
        else if (hdr.ipv6.isValid()) {
            ipv6_prefix_route.apply();
            ipv6_host_route.apply();
        }
#endif
    }
}

// The decision on the lookups' result, for either family (`echo_request`:
// the family's echo request type and code; `too_big`: a local VM's VNI
// takes no packet this long, IPv6 only).
#define ROUTE_DECISION(echo_request, not_fragment, too_big) \
    if (meta.route.kind == ROUTE_LOCAL_VM) { \
        if (too_big) { \
            meta.drop_reason = DROP_PACKET_TOO_BIG; \
        } else { \
            meta.egress_port = meta.route.port; \
            meta.egress_vlan = meta.route.vlan_id; \
            meta.dst_vm = meta.route.vm; \
            meta.rx_policed = meta.route.policed; \
            meta.vni_index = meta.route.vni_index; \
            meta.routed = true; \
        } \
    } else if (meta.route.kind == ROUTE_REMOTE_VTEP) { \
        if (meta.from_fabric) { \
            /* Routed fabric to fabric: this ToR is no transit router. */ \
            meta.drop_reason = DROP_ROUTED_TRANSIT; \
        } else { \
            meta.remote_vtep = meta.route.vtep_ip; \
            meta.vni = meta.route.l3vni; \
            meta.do_encap = true; \
            meta.routed = true; \
        } \
    } else if (meta.route.kind == ROUTE_GATEWAY) { \
        if (!meta.from_fabric && hdr.icmp.isValid() && \
            hdr.icmp.type_code == echo_request && not_fragment) { \
            /* Echo reply from the gateway, back where the request came from. */ \
            meta.route.echo_reply = true; \
            meta.egress_port = meta.ingress_port; \
            meta.egress_vlan = meta.src_vlan; \
            meta.dst_vm = meta.src_vm; \
        } else { \
            meta.drop_reason = DROP_TO_GATEWAY; \
        } \
    } else { \
        meta.drop_reason = DROP_NO_TENANT_ROUTE; \
    }

// After the MAC lookup, for a frame it sent to the router and not dropped
// already (applied in L2Forwarding's hit branch, beside the L2 decision): the
// same decisions and drop reasons, in the same order, as v1model's
// L3Forwarding.
control RouteDecision(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        // The families' own checks first, then one decision on the lookups'
        // result (ROUTE_DECISION: the same for both).
        if (hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.ihl >= 5) {
            if (hdr.ipv4.ttl <= 1) {
                meta.drop_reason = DROP_TENANT_TTL_EXPIRED;
            } else {
                // (A fragment is the controller's: cpu_port.p4.)
                // (IPv4 over the MTU is not checked: docs/routing.md.)
                ROUTE_DECISION(ICMP_ECHO_REQUEST, hdr.ipv4.flags[0:0] == 0, false)
            }
        }
#ifdef P4VTEP_IPV6
        else if (hdr.ipv6.isValid() && hdr.ipv6.version == 6) {
            if (hdr.ipv6.hop_limit <= 1) {
                meta.drop_reason = DROP_TENANT_HOP_LIMIT;
            } else if (meta.route.kind != ROUTE_GATEWAY &&
                       (IPV6_NOT_GLOBAL(hdr.ipv6.dst_addr) ||
                        IPV6_NOT_GLOBAL(hdr.ipv6.src_addr))) {
                // Only the gateway itself takes a link-local address.
                meta.drop_reason = DROP_IPV6_SCOPE;
            } else {
                ROUTE_DECISION(ICMPV6_ECHO_REQUEST, true, meta.route.payload_slack == 0)
            }
        }
#endif
        else {
            meta.drop_reason = DROP_NOT_IP_ROUTED;
        }
    }
}

// Egress: the rewrite of a routed frame or an echo reply. The checksums are
// finished in the egress deparser from route.checksum_inv.
control RoutedRewrite(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        if (meta.route.echo_reply) {
            // The request's TTL (hop limit) is kept, so the IPv4 checksum
            // stands (the addresses only swap; for ICMPv6 the pseudo-header
            // sums the same).
            if (hdr.ipv4.isValid()) {
                ipv4_addr_t requester = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = requester;
                hdr.icmp.type_code = ICMP_ECHO_REPLY;
                meta.route.checksum_change = ~ICMP_ECHO_REQUEST;   // type 8 -> 0
            } else {
                ipv6_addr_t requester6 = hdr.ipv6.src_addr;
                hdr.ipv6.src_addr = hdr.ipv6.dst_addr;
                hdr.ipv6.dst_addr = requester6;
                hdr.icmp.type_code = ICMPV6_ECHO_REPLY;
                // type 128 -> 129: ~0x8000 + 0x8100 = 0x0100 (RFC 1624)
                meta.route.checksum_change = 16w0x0100;
            }
            meta.route.checksum_inv = ~hdr.icmp.checksum;
            hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
            hdr.ethernet.src_addr = meta.gateway_mac;
        } else {
            hdr.ethernet.dst_addr = meta.route.mac;
            if (!meta.do_encap) {
                hdr.ethernet.src_addr = meta.gateway_mac;
            }   // (into the L3 VNI, VxlanEncap sets our router MAC)
            if (hdr.ipv4.isValid()) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                meta.route.checksum_inv = ~hdr.ipv4.hdr_checksum;
                meta.route.checksum_change = ~16w0x0100;            // TTL - 1
                meta.route.ipv4_checksum = true;
            } else {
                hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;       // (no checksum)
            }
        }
    }
}

#endif  // P4VTEP_TNA_L3_FORWARDING_P4
