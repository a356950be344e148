"""BGP EVPN (RFC 7432, RFC 8365) for p4vtep: routes, the fabric-file section,
the learned-state table with MAC mobility, and a GoBGP speaker driven over
its gRPC API. See docs/evpn.md."""
