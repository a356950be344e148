// Access ingress: a frame from a server carries the VLAN of the SR-IOV VF it
// was sent on. (port, VLAN) names exactly one VM; that VM's MAC, and the
// extra MACs the controller lists for the VF (allowed_source_mac), are the
// only source MACs accepted there (anti-spoofing). Port security then holds
// a guarded VM's addresses (port_security.p4).
#ifndef P4VTEP_ACCESS_FILTERING_P4
#define P4VTEP_ACCESS_FILTERING_P4

#ifdef P4VTEP_PORT_SECURITY
#include "port_security.p4"
#else
#define PORT_SECURITY_BIND(meta, vm_mac)
#endif

control AccessFiltering(inout headers_t hdr,
                        inout local_metadata_t meta,
                        in bool oversize)
                       (bit<32> binding_table_size,
                        bit<32> vm_count,
                        bit<32> source_mac_table_size,
                        bit<32> ipv4_guard_table_size,
                        bit<32> ipv6_guard_table_size) {
    PACKET_BYTE_COUNTER(vm_tx_counter, vm_count, vm_index_t);
#ifdef P4VTEP_PORT_SECURITY
    PortSecurity(source_mac_table_size, ipv4_guard_table_size,
                 ipv6_guard_table_size) port_security;
    PortSecurityChecks(vm_count) port_security_checks;
#endif

    // `vrf`: the VRF of the VM's VNI when it is routed, else 0. Known here, with
    // the VNI, the routing lookups can run beside the MAC lookup.
    // `policed`: the VM has a transmit policy (its frames pass vm_tx_meter).
    // `guarded`: its port security is on; `dhcp_server`: it may send DHCP
    // server messages (port_security.p4). `ipv4` (BMv2 only,
    // PORT_SECURITY_BOUND_IPV4): the VM's first IPv4 address, 0 for none.
    action bind_vm(vni_t vni, vm_index_t vm, mac_addr_t vm_mac
#ifdef P4VTEP_ROUTING
                   , vrf_t vrf
#endif
                   , bit<1> policed
                   , bit<1> guarded
                   , bit<1> dhcp_server
#ifdef PORT_SECURITY_BOUND_IPV4
                   , ipv4_addr_t ipv4
#endif
                  ) {
        meta.vni = vni;
        meta.tx_policed = policed;
        meta.guard_flags = guarded ++ dhcp_server;
#ifdef PORT_SECURITY_BOUND_IPV4
        meta.bound_ipv4 = ipv4;
#endif
        PORT_SECURITY_BIND(meta, vm_mac)
#ifdef P4VTEP_ROUTING
        meta.vrf = vrf;
#endif
        meta.src_vm = vm;
        // The XOR, not the MAC: Tofino compares at most 44 bits of PHV in one
        // condition, so the check below tests the difference in two halves.
        meta.src_mac_diff = hdr.ethernet.src_addr ^ vm_mac;
        meta.src_vlan = hdr.vlan.vid;
    }

    action unbound() {
        meta.drop_reason = DROP_UNKNOWN_VLAN;
    }

    table access_binding {
        key = {
            meta.ingress_port : exact @name("port");
            hdr.vlan.vid      : exact @name("vlan_id");
        }
        actions = {
            bind_vm;
            @defaultonly unbound;
        }
        const default_action = unbound();
        size = binding_table_size;
    }

    apply {
        // The binding is looked up first, beside the frame checks rather than
        // after them (one Tofino stage less); the checks below then overwrite
        // its miss reason in the order of precedence.
        if (hdr.vlan.isValid()) {
            access_binding.apply();
#ifdef PORT_SECURITY_BESIDE_BINDING
            port_security.apply(hdr, meta);   // (Tofino: no lookup waits for the binding)
#endif
        }
        if (oversize) {
            meta.drop_reason = DROP_OVERSIZE;
        } else if (!hdr.vlan.isValid()) {
            meta.drop_reason = DROP_UNTAGGED_ACCESS;
        } else if (hdr.vlan2.isValid()) {
            meta.drop_reason = DROP_DOUBLE_TAGGED;
        } else if (meta.drop_reason == DROP_NONE) {
            // Bound (a miss left DROP_UNKNOWN_VLAN). The source MAC is the
            // VM's, or one of the VF's extra MACs.
#ifndef P4VTEP_PORT_SECURITY
            // (Without port security: the VM's MAC only, in halves.)
            if (meta.src_mac_diff[47:24] != 0) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            } else if (meta.src_mac_diff[23:0] != 0) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            } else {
                COUNT(vm_tx_counter, meta.src_vm);
            }
#else
#ifdef PORT_SECURITY_BESIDE_BINDING
            if (!meta.mac_allowed && meta.src_mac_diff[47:24] != 0) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            } else if (!meta.mac_allowed && meta.src_mac_diff[23:0] != 0) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            }
#else
            // (BMv2: the lookups for bound frames only; the 48 bits at once)
            port_security.apply(hdr, meta);
            if (meta.src_mac_diff != 0 && !meta.mac_allowed) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            }
#endif
            else {
                COUNT(vm_tx_counter, meta.src_vm);
                port_security_checks.apply(hdr, meta);
            }
#endif  // P4VTEP_PORT_SECURITY
        }
    }
}

#endif  // P4VTEP_ACCESS_FILTERING_P4
