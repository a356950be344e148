// What differs between architectures, for v1model (BMv2 simple_switch_grpc).
// The shared controls in ../include/control/ use only these names, so the
// same source yields the same P4Info names on every target; tna/arch.p4 is
// the Tofino counterpart. Keep the two files in step.
#ifndef P4VTEP_V1MODEL_ARCH_P4
#define P4VTEP_V1MODEL_ARCH_P4

// simple_switch_grpc must be started with --cpu-port 255.
#define CPU_PORT_VALUE 255

// v1model meter colours as BMv2 reports them (GREEN is 0, also when the
// meter is not configured).
#define METER_COLOR_YELLOW 1
#define METER_COLOR_RED    2

// Indexed packet+byte counter, and counting one index. Typed by the index
// (v1model 20200408, p4vtep.p4): a bit<32> index would cost BMv2 a cast into
// a temporary, one primitive per count.
#define PACKET_BYTE_COUNTER(name, size, index_type) \
    counter<index_type>(size, CounterType.packets_and_bytes) name
#define COUNT(name, index) name.count(index)
// The per-VM colour counters (policing.p4): 4 cells per VM. The same counter
// here; Tofino gives them narrower cells (tna/arch.p4).
// A VM's index ++ a meter colour: the colour counters' index (policing.p4).
// Only v1model's counters are typed by their index (TNA's take bit<32>).
// (19 bits, as port_security_index_t: both are counted through vm_cell.)
typedef bit<19> color_index_t;
// The cell of a counter with several cells per VM: VM index ++ cell within
// the VM, through one metadata field (ARCH_METADATA's vm_cell).
typedef bit<19> vm_cell_t;
// (Written in two slices, VM then cell: p4c's copy propagation would put an
// expression written whole back into the call, and with it the temporary.)
#define COUNT_VM_CELL(name, meta, vm, cell, cell_bits) \
    (meta).vm_cell[18:cell_bits] = (bit<(19 - cell_bits)>) (vm); \
    (meta).vm_cell[cell_bits - 1:0] = cell; \
    name.count((meta).vm_cell)
// ...so a control that only counts takes the metadata inout here (in on
// Tofino, where a control that may write it is ordered after its writers).
#define COUNTING_META inout
#define COLOR_COUNTER(name, size, index_type) PACKET_BYTE_COUNTER(name, size, index_type)
// Packet+byte counters with many cells per VM that Tofino gives 32-bit cells
// (the colour counters above, port_security_drop_counter): the same here.
#define NARROW_COUNTER(name, size, index_type) PACKET_BYTE_COUNTER(name, size, index_type)
// A count that every action of a table makes, default action included: in
// the actions on BMv2, where a count of its own would be a table apply of its
// own per packet (tna/arch.p4 counts after the table instead).
#define COUNT_IN_ACTION(name, index) COUNT(name, index)
#define COUNT_AFTER_TABLE(name, index)

// Direct counter: BMv2 counts every hit of the table by itself.
#define DIRECT_PACKET_BYTE_COUNTER(name) \
    direct_counter(CounterType.packets_and_bytes) name
#define DIRECT_COUNT(name)

// Byte meter array, typed by its index as the counters; EXECUTE_METER writes
// the colour into a bit<2>.
#define BYTE_METER(name, size, index_type) meter<index_type>(size, MeterType.bytes) name
#define EXECUTE_METER(name, index, color) name.execute_meter(index, color)
// Packet meter array (the CPU path's CoPP, cpu_port.p4): rates in packets/s.
#define PACKET_METER(name, size, index_type) meter<index_type>(size, MeterType.packets) name
// Where a frame's punt class lives (cpu_port.p4): in the metadata here; in
// the bridged header on Tofino, so that egress has it without a copy.
#define PUNT_CLASS(meta) meta.punt_class
// The CoPP meter's and counters' cell (cpu_port.p4): the class as it is, a
// field (a slice of it would cost a metadata field per call, ARCH_METADATA).
#define PUNT_CELL(meta) PUNT_CLASS(meta)
#define PUNT_CELL_TYPE punt_class_t

// The flow hash's key (flow_hash.p4): IPv4 and Ethernet addresses are
// widened into the IPv6 ones' fields; `ports` is TCP/UDP source ++
// destination, `kind` the protocol (IPv6: flow label ++ next header; L2:
// EtherType). A header, not a struct: p4c hands a header to the hash as it
// is, where a struct's fields would each be copied into a temporary; and
// BMv2 only invalidates a header per frame, where it zeroes each metadata
// field.
header flow_key_t {
    bit<128> src;
    bit<128> dst;
    bit<32>  ports;
    bit<32>  kind;
}

// ECMP: an action selector hashing the table's selector key with CRC16.
#define ECMP_SELECTOR(sel, members) \
    action_selector(HashAlgorithm.crc16, members, 16) sel
#define ECMP_IMPLEMENTATION(sel) sel

// Swaps two fields (a reply's addresses). By XOR, with no temporary: p4c
// makes a local variable a metadata field, which BMv2 zeroes for every frame
// (see ARCH_METADATA). Tofino swaps in one step (tna/arch.p4).
#define SWAP(type, a, b) a = a ^ b; b = a ^ b; a = a ^ b;

// The shared header parser takes the headers inout: BMv2 starts every packet
// with all headers invalid, and an out parameter would make p4c invalidate
// all 16 again (16 primitives per packet, about a quarter of what the parser
// costs on BMv2).
#define PARSER_HEADERS_DIRECTION inout

// Extra fields the architecture needs in local_metadata_t: a frame's queue's
// fill count (queue_admission.p4: BMv2 has no drop precedence of its own) and
// the index of its cell; the flow hash's key (flow_hash.p4); a per-VM
// counter's cell (COUNT_VM_CELL).
//
// BMv2 zeroes every metadata field of every frame, about 600 instructions a
// field on its throughput build (bench/NOTES.md), and p4c's BMv2 backend
// gives every expression passed to an extern (a counter's or register's
// index, a hash's field) a temporary field of its own, per call site. So the
// indices are computed into these few fields first, which every call site
// shares: one field each instead of one per call.
typedef bit<13> queue_index_t;  // flood ++ egress port ++ priority
typedef bit<19> queue_depth_t;  // v1model's enq_qdepth / deq_qdepth
#define ARCH_METADATA \
    queue_depth_t queue_fill; \
    queue_index_t queue_index; \
    flow_key_t    flow_key; \
    vm_cell_t     vm_cell;

// Parser hooks around the outer IPv4 header: v1model verifies the checksum in
// its verify_checksum control instead (so the parser has no checksum_ok to
// hand back: PARSER_CHECKS_IPV4_CHECKSUM is Tofino's).
#define IPV4_CHECKSUM_DECL
#define IPV4_CHECKSUM_VERIFY(hdr, checksum_ok)

// Port security's claimed IPv6 address of a Neighbor Advertisement (its
// target, parser.p4): BMv2's parser overwrites the source it wrote first.
#define CLAIM_NA_TARGET(claimed, hdr) claimed = hdr.nd.target;

// Port security's IPv4 source guard, short-cut: bind_vm carries the VM's
// first IPv4 address (`ipv4`, 0 for none), and a frame that claims it skips
// the guard's lookup. On BMv2 a table apply is the unit of cost (bench/NOTES.md),
// and nearly every frame of a VM claims its first address; Tofino looks the
// guard up beside the binding at no cost per frame, so its bind_vm has no
// `ipv4` (tests/test_p4info_parity.py). The guard still lists every address.
#define PORT_SECURITY_BOUND_IPV4

#endif  // P4VTEP_V1MODEL_ARCH_P4
