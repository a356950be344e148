// Baseline for the data-plane benchmark: the least a switch can do.
// Forward by ingress port (one exact table), nothing else.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser L2Parser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control L2Ingress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action forward(bit<9> port) {
        std.egress_spec = port;
    }

    action drop() {
        mark_to_drop(std);
    }

    table port_forward {
        key = { std.ingress_port : exact @name("port"); }
        actions = { forward; drop; }
        const default_action = drop();
        size = 512;
    }

    apply { port_forward.apply(); }
}

control L2Egress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control L2Deparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.ethernet); }
}

V1Switch(L2Parser(), NoVerify(), L2Ingress(), L2Egress(), NoCompute(), L2Deparser()) main;
