// What differs between architectures, for TNA / T2NA (Tofino 1 and 2). The
// v1model counterpart is ../v1model/arch.p4; keep the two files in step.
#ifndef P4VTEP_TNA_ARCH_P4
#define P4VTEP_TNA_ARCH_P4

// The CPU (PCIe) port: 64 on a Tofino 1 pipe 0 and 2 in the Tofino 2 model's
// usual port setup. The controller's copy is control_plane/p4vtep/targets.py.
#if __TARGET_TOFINO__ == 2
#define CPU_PORT_VALUE 2
#else
#define CPU_PORT_VALUE 64
#endif

// TNA meter colours (MeterColor_t): GREEN 0, YELLOW 1, RED 3.
#define METER_COLOR_YELLOW 1
#define METER_COLOR_RED    3

// The index type is v1model's concern (no cast primitive on BMv2); Tofino
// indexes every counter and meter with bit<32>, where a cast costs nothing.
#define PACKET_BYTE_COUNTER(name, size, index_type) \
    Counter<bit<64>, bit<32>>(size, CounterType_t.PACKETS_AND_BYTES) name
#define COUNT(name, index) name.count((bit<32>) (index))
// A counter with several cells per VM: VM index ++ cell within the VM
// (v1model/arch.p4 computes it into a field first; here it is the index).
#define COUNT_VM_CELL(name, meta, vm, cell, cell_bits) COUNT(name, (vm) ++ (cell))
#define COUNTING_META in
// The per-VM colour counters (policing.p4, 4 cells per VM: 32K cells at
// production sizes) have 32-bit cells, which the driver folds into the 64-bit
// counts P4Runtime reads: half the SRAM of 64-bit cells. With 64-bit cells
// Tofino 1's ingress had no SRAM left beside the ARP, route and MAC tables in
// the stages after the TX meter (docs/tofino.md, "QoS").
#define COLOR_COUNTER(name, size, index_type) \
    Counter<bit<32>, bit<32>>(size, CounterType_t.PACKETS_AND_BYTES) name
// The same 32-bit cells for the other counters with many cells per VM
// (port_security_drop_counter: 8 per VM, 64K at production sizes).
#define NARROW_COUNTER(name, size, index_type) \
    Counter<bit<32>, bit<32>>(size, CounterType_t.PACKETS_AND_BYTES) name
// A count that every action of a table makes, default action included: after
// the table on Tofino, whose default action cannot address a counter by a
// field (that takes the hash distribution unit); v1model counts in the actions.
#define COUNT_IN_ACTION(name, index)
#define COUNT_AFTER_TABLE(name, index) COUNT(name, index)

// A direct counter on Tofino counts only in the actions that call count().
#define DIRECT_PACKET_BYTE_COUNTER(name) \
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) name
#define DIRECT_COUNT(name) name.count()

#define BYTE_METER(name, size, index_type) Meter<bit<32>>(size, MeterType_t.BYTES) name
// Packet meter array (the CPU path's CoPP, cpu_port.p4): rates in packets/s.
#define PACKET_METER(name, size, index_type) Meter<bit<32>>(size, MeterType_t.PACKETS) name
// Where a frame's punt class lives (cpu_port.p4): in the bridged byte that
// egress reads (bridged.p4), written there by the punting table itself (a
// copy after that table would be a stage of its own at the end of Tofino 1's
// ingress). (A profile without the CPU path has only the l2 trap: the
// metadata field.)
#ifdef P4VTEP_CPU_PATH
#define PUNT_CLASS(meta) meta.bridged_punt.punt_class
#else
#define PUNT_CLASS(meta) meta.punt_class
#endif
// The CoPP meter's and counters' cell (cpu_port.p4): the class's low 3 bits
// (v1model/arch.p4 takes the class whole).
#define PUNT_CELL(meta) PUNT_CLASS(meta)[2:0]
#define PUNT_CELL_TYPE bit<3>
// PuntDecision is tna/punt_decision.p4's: its table drops or punts itself.
#define PUNT_DECISION_IN_ARCH
#define EXECUTE_METER(name, index, color) color = (bit<2>) name.execute((bit<32>) (index))

// The flow hash (flow_hash.p4) reads the L4 ports from local_metadata_t.
#define FLOW_HASH_L4_PORTS
#define FLOW_HASHER(name) Hash<bit<16>>(HashAlgorithm_t.CRC32) name;
#define FLOW_HASH(name, dst, ...) dst = name.get({ __VA_ARGS__ })

// The selector picks one of up to 16 members per group with a CRC16 of the
// table's selector key. P4Runtime sees the profile (standard P4Info folds the
// selector into it), so the profile carries v1model's name.
#define ECMP_SELECTOR(sel, members) \
    Hash<bit<16>>(HashAlgorithm_t.CRC16) sel##_hash; \
    @name(#sel) ActionProfile(members) sel##_members; \
    ActionSelector(sel##_members, sel##_hash, SelectorMode_t.FAIR, 16, members / 4) sel##_groups
#define ECMP_IMPLEMENTATION(sel) sel##_groups

// Swaps two fields (a reply's addresses): the action unit writes both at
// once (v1model/arch.p4 swaps by XOR instead).
#define SWAP(type, a, b) { type swapped = a; a = b; b = swapped; }

// The shared header parser takes the headers out, as the TNA parser has them
// (passed on inout, p4c-tofino warns they may be uninitialized); the
// invalidation that implies costs nothing in hardware.
#define PARSER_HEADERS_DIRECTION out

// Ingress hands egress its decisions in a bridged header (tna/bridged.p4);
// the route lookups leave their result in route (tna/route_result.p4).
#ifdef P4VTEP_CPU_PATH
#define ARCH_METADATA bridged_punt_t bridged_punt; bridged_t bridged; route_result_t route;
#else
#define ARCH_METADATA bridged_t bridged; route_result_t route;
#endif

// The Checksum extern verifies the outer IPv4 header in the parser. Tofino
// cannot assign a parser field twice, so the caller starts checksum_ok at
// false and this ORs the result in.
// (The parser hands its verdict back in local_metadata_t.checksum_ok.)
#define PARSER_CHECKS_IPV4_CHECKSUM
#define IPV4_CHECKSUM_DECL Checksum() ipv4_checksum;
#define IPV4_CHECKSUM_VERIFY(hdr, checksum_ok) \
    ipv4_checksum.add(hdr.ipv4); \
    checksum_ok = ipv4_checksum.verify() || checksum_ok;

// Port security's claimed IPv6 address of a Neighbor Advertisement (its
// target, parser.p4): Tofino 1's parser cannot write a field twice on one
// path (p4c-tofino: "does not support clear-on-write semantic"), and the
// source is written first, so the control writes the target instead, in a
// stage before the guard's lookup (port_security.p4).
#define CLAIM_NA_TARGET(claimed, hdr)
#define NA_TARGET_CLAIMED_IN_CONTROL

#endif  // P4VTEP_TNA_ARCH_P4
