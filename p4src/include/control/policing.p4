// Per-VM two-rate three-colour meters (RFC 2698) and what each colour means
// (docs/qos.md). A VM's policy guarantees it its committed rate (CIR) and lets
// it use up to its peak rate (PIR) when there is room:
//   GREEN (within CIR)   -> committed: its queue admits it while it has room;
//   YELLOW (up to PIR)   -> excess: admitted only while its queue is not
//                           congested (drop precedence) and, when tunnelled,
//                           outer DSCP CS1 so that the underlay drops it first;
//   RED (above PIR)      -> dropped (METER_RED_TX / METER_RED_RX).
// Colours never choose the queue: every frame of a flow takes its VNI's class,
// so a flow that runs above its CIR is never reordered (RFC 2597). Where the
// colour is applied at the queue is the target's (v1model/queue_admission.p4,
// TNA's packet_color). Only a VM with a policy in that direction passes a
// meter: the entries that name a VM say whether it is policed (`policed`),
// since an unconfigured meter reads GREEN and unpoliced traffic is never
// committed. Every coloured frame is counted per VM and colour (index VM ++
// colour).
#ifndef P4VTEP_POLICING_P4
#define P4VTEP_POLICING_P4

// Ingress: what a local VM transmits (after its binding). Its colour is what
// counts toward the fabric (the uplinks); toward another local VM the
// receiver's meter decides (COMMITTED, below).
control TxPolicing(inout local_metadata_t meta)
                  (bit<32> vm_count) {
    BYTE_METER(vm_tx_meter, vm_count, vm_index_t);

    apply {
        EXECUTE_METER(vm_tx_meter, meta.src_vm, meta.tx_color);
        if (meta.tx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_TX;
        }
    }
}

// Ingress: the colour TxPolicing gave a frame, counted (RED too). A control
// of its own so that each target counts where it is cheapest: v1model right
// after the meter, Tofino at the end of ingress, where SRAM is free (its
// 32K cells beside the meter took the MAC table's stage: docs/tofino.md).
control TxColorCount(COUNTING_META local_metadata_t meta)
                    (bit<32> vm_count) {
#ifndef NO_COLOR_COUNTERS
    COLOR_COUNTER(vm_tx_color_counter, vm_count * COLORS_PER_VM, color_index_t);
#endif

    apply {
#ifndef NO_COLOR_COUNTERS
        COUNT_VM_CELL(vm_tx_color_counter, meta, meta.src_vm, meta.tx_color, 2);
#endif
    }
}

// Ingress: a unicast to a local VM with a receive policy, once the L2/L3
// decision has named the VM: its colour says whether the server's port
// admits the frame when its queue is congested (COMMITTED, below).
control RxPolicing(inout local_metadata_t meta)
                  (bit<32> vm_count) {
    BYTE_METER(vm_rx_meter, vm_count, vm_index_t);
#ifndef NO_COLOR_COUNTERS
    COLOR_COUNTER(vm_rx_color_counter, vm_count * COLORS_PER_VM, color_index_t);
#endif

    apply {
        EXECUTE_METER(vm_rx_meter, meta.dst_vm, meta.rx_color);
#ifndef NO_COLOR_COUNTERS
        COUNT_VM_CELL(vm_rx_color_counter, meta, meta.dst_vm, meta.rx_color, 2);
#endif
        if (meta.rx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_RX;
        }
    }
}

// Once the decision is made: whether a unicast frame is committed, i.e.
// covered by a guarantee: GREEN of the VM whose policy is about the link it
// takes. Toward the fabric that is the sender's transmit policy; toward a
// local VM the receiver's (the server link is what its guarantees are about,
// so a sender's GREEN toward an unpoliced local VM is not committed). Every
// other frame is excess: YELLOW, or a VM without a policy. An expression, not
// a control: on BMv2 it is then part of the one condition that uses it,
// where a control's assignment would be a table apply per packet.
#define COMMITTED(meta) \
    ((meta).do_encap ? ((meta).tx_policed == 1 && (meta).tx_color == METER_GREEN) \
                     : ((meta).rx_policed == 1 && (meta).rx_color == METER_GREEN))

// Egress: what is delivered to a local VM (unicast and every flood copy). A
// flood copy learns its VM only here (replication), after the queue admitted
// it for all copies at once: the VM's flood meter (its own bucket, the same
// rates) drops and counts RED; a YELLOW copy was admitted as the VNI's
// flood.
// (RX_METER_IN_EGRESS, Tofino 1: RxPolicing runs in egress for unicast and
// flood copies alike, so there is no flood meter of its own.)
control RxDelivery(inout local_metadata_t meta)
                  (bit<32> vm_count, bit<32> vni_count) {
#ifndef RX_METER_IN_EGRESS
    BYTE_METER(vm_rx_flood_meter, vm_count, vm_index_t);
    COLOR_COUNTER(vm_rx_flood_color_counter, vm_count * COLORS_PER_VM, color_index_t);
#endif
    PACKET_BYTE_COUNTER(vm_rx_counter, vm_count, vm_index_t);
    PACKET_BYTE_COUNTER(vni_rx_counter, vni_count, vni_index_t);

    apply {
#ifndef RX_METER_IN_EGRESS
        if (meta.flood_policed == 1) {
            EXECUTE_METER(vm_rx_flood_meter, meta.dst_vm, meta.rx_color);
            COUNT_VM_CELL(vm_rx_flood_color_counter, meta, meta.dst_vm, meta.rx_color, 2);
            if (meta.rx_color == METER_RED) {
                meta.drop_reason = DROP_METER_RED_RX;
            }
        }
#endif
        if (meta.drop_reason == DROP_NONE) {
            COUNT(vm_rx_counter, meta.dst_vm);
            COUNT(vni_rx_counter, meta.vni_index);
        }
    }
}

#endif  // P4VTEP_POLICING_P4
