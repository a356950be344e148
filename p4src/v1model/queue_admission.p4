// Drop precedence at BMv2's egress queues (docs/qos.md, "Drop precedence on
// each target").
//
// Every frame takes its VNI's queue whatever its colour, so a flow that runs
// above its guarantee is never reordered; the colour decides only what a
// congested queue still takes in. A committed frame (policing.p4's
// COMMITTED: GREEN of the VM whose guarantee is about that link) is admitted
// while the queue has room; an excess frame (YELLOW, or any frame of a VM
// without a policy) only while fewer than EXCESS_QUEUE_DEPTH frames wait, so
// the last QUEUE_CAPACITY - EXCESS_QUEUE_DEPTH places are kept for committed
// traffic and excess can never crowd it out.
//
// A switch's traffic manager does this itself (TNA: packet_color and the
// queue's colour limits). BMv2 does not, and its ingress cannot see the
// queues, so the pipeline keeps a fill count per queue (egress port ++
// priority): ingress adds 1 for every unicast frame it hands to the queue,
// and egress sets the count to the queue's true depth (deq_qdepth) whenever a
// frame leaves. Between two departures the count follows every arrival; what
// it does not see (flood copies, frames BMv2 dropped at a full queue) is
// corrected at the next departure. Flood copies are replicated after
// ingress: they are not admitted by colour (their RED is dropped in egress,
// policing.p4).
//
// Invariant: QUEUE_CAPACITY is BMv2's queue size, simple_switch's default of
// 64 frames per port and priority, which p4vtep never changes.
#ifndef P4VTEP_V1MODEL_QUEUE_ADMISSION_P4
#define P4VTEP_V1MODEL_QUEUE_ADMISSION_P4

#define QUEUE_CAPACITY 64
#define EXCESS_QUEUE_DEPTH 48
#define PRIORITIES_PER_PORT 8   // simple_switch_grpc --priority-queues 8

// Shared by ingress (admissions) and egress (departures): declared at the top
// level, which v1model allows for externs. Cells: flood ++ egress port ++
// priority. A flood (its copies are queued after ingress, by BMv2) has no
// queue of its own yet: its admission reads and writes the upper half, which
// nothing else uses.
register<queue_depth_t, queue_index_t>(2 * PORT_COUNT * PRIORITIES_PER_PORT) queue_fill;

// Ingress, in the block that hands a frame to the queues (all of it there, so
// that on BMv2 it adds primitives to that block's action, not a table apply):
// one more frame in its queue, and whether the queue was congested for it.
// The count goes up for a frame about to be dropped too: it is dropped only
// where the count is at EXCESS_QUEUE_DEPTH already, and the next departure
// sets it right.
// (The cell's index and the new count are computed into metadata fields
// first: an expression passed to the register costs BMv2 a metadata field of
// its own per call, v1model/arch.p4.) queue_fill ends one above the depth
// the frame found.
control QueueAdmission(inout local_metadata_t meta) {
    apply {
        // (In two slices: p4c's copy propagation would put an expression
        // written whole back into the calls, and with it the temporaries.)
        meta.queue_index[12:3] = (bit<1>) (meta.mcast_grp != 0) ++ meta.egress_port;
        meta.queue_index[2:0] = meta.traffic_class;
        queue_fill.read(meta.queue_fill, meta.queue_index);
        meta.queue_fill = meta.queue_fill + 1;
        queue_fill.write(meta.queue_index, meta.queue_fill);
    }
}

// Whether the frame QueueAdmission counted must be dropped: excess (not
// COMMITTED) of a unicast while its queue is congested, i.e. the depth it
// found was EXCESS_QUEUE_DEPTH or more.
#define QUEUE_CONGESTED_FOR(meta) \
    ((meta).queue_fill > EXCESS_QUEUE_DEPTH && (meta).mcast_grp == 0 && !COMMITTED(meta))

// Egress, wherever a frame goes on from (each exit, beside what it does
// anyway, again for BMv2's sake): it left its queue, and what waits behind it
// is the true depth. (v1model has no queue id in egress: the priority
// ingress set is the queue, as BMv2 keeps it.)
control QueueDeparted(in standard_metadata_t std, inout local_metadata_t meta) {
    apply {
        meta.queue_index[12:3] = 1w0 ++ std.egress_port;
        meta.queue_index[2:0] = std.priority;
        queue_fill.write(meta.queue_index, std.deq_qdepth);
    }
}

#endif  // P4VTEP_V1MODEL_QUEUE_ADMISSION_P4
