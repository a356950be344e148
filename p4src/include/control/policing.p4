// Per-VM two-rate three-colour meters (RFC 2698), one array per direction.
// RED is dropped. YELLOW loses its traffic class (best-effort queue) and, when
// tunnelled, gets DSCP CS1 on the outer header. Receive-side policing is the
// one a server cannot do itself: its NIC has already taken the packet.
#ifndef P4VTEP_POLICING_P4
#define P4VTEP_POLICING_P4

// Ingress: what a local VM transmits.
control TxPolicing(inout local_metadata_t meta,
                   inout standard_metadata_t std)
                  (bit<32> vm_count) {
    meter(vm_count, MeterType.bytes) vm_tx_meter;

    apply {
        vm_tx_meter.execute_meter((bit<32>) meta.src_vm, meta.tx_color);
        if (meta.tx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_TX;
        } else if (meta.tx_color == METER_YELLOW) {
            std.priority = TC_BEST_EFFORT;
        }
    }
}

// Egress: what is delivered to a local VM (unicast and every flood replica).
control RxPolicing(inout local_metadata_t meta,
                   inout standard_metadata_t std)
                  (bit<32> vm_count, bit<32> vni_count) {
    meter(vm_count, MeterType.bytes) vm_rx_meter;
    counter(vm_count, CounterType.packets_and_bytes) vm_rx_counter;
    counter(vni_count, CounterType.packets_and_bytes) vni_rx_counter;

    apply {
        vm_rx_meter.execute_meter((bit<32>) meta.dst_vm, meta.rx_color);
        if (meta.rx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_RX;
        } else {
            vm_rx_counter.count((bit<32>) meta.dst_vm);
            vni_rx_counter.count((bit<32>) meta.vni_index);
        }
    }
}

#endif  // P4VTEP_POLICING_P4
