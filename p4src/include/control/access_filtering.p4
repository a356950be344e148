// Access ingress: a frame from a server carries the VLAN of the SR-IOV VF it
// was sent on. (port, VLAN) names exactly one VM; that VM's MAC is the only
// source MAC accepted there (anti-spoofing).
#ifndef P4VTEP_ACCESS_FILTERING_P4
#define P4VTEP_ACCESS_FILTERING_P4

control AccessFiltering(inout headers_t hdr,
                        inout local_metadata_t meta,
                        in standard_metadata_t std)
                       (bit<32> binding_table_size,
                        bit<32> vm_count) {
    counter(vm_count, CounterType.packets_and_bytes) vm_tx_counter;

    action bind_vm(vni_t vni, vm_index_t vm, mac_addr_t vm_mac) {
        meta.vni = vni;
        meta.src_vm = vm;
        meta.vf_mac = vm_mac;
        meta.src_vlan = hdr.vlan.vid;
    }

    action unbound() {
        meta.drop_reason = DROP_UNKNOWN_VLAN;
    }

    table access_binding {
        key = {
            std.ingress_port : exact @name("port");
            hdr.vlan.vid     : exact @name("vlan_id");
        }
        actions = {
            bind_vm;
            @defaultonly unbound;
        }
        const default_action = unbound();
        size = binding_table_size;
    }

    apply {
        if (std.packet_length > MAX_TENANT_FRAME) {
            meta.drop_reason = DROP_OVERSIZE;
        } else if (!hdr.vlan.isValid()) {
            meta.drop_reason = DROP_UNTAGGED_ACCESS;
        } else if (hdr.vlan2.isValid()) {
            meta.drop_reason = DROP_DOUBLE_TAGGED;
        } else if (access_binding.apply().hit) {
            if (hdr.ethernet.src_addr != meta.vf_mac) {
                meta.drop_reason = DROP_SPOOFED_SOURCE;
            } else {
                vm_tx_counter.count((bit<32>) meta.src_vm);
            }
        }
    }
}

#endif  // P4VTEP_ACCESS_FILTERING_P4
