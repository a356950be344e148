"""IPv6 tenants in the compiler: ND suppression beside ARP, IPv6 host and
prefix routes beside the IPv4 ones, the gateway's global and link-local
addresses (docs/routing.md). Entities are compared with what the
pipeline's entry builders make."""

from __future__ import annotations

from p4vtep.model.addressing import link_local


def test_the_link_local_address_of_a_mac_is_its_modified_eui64():
    """RFC 4291 appendix A: the U/L bit flipped, ff:fe in the middle, as a
    Linux interface with that MAC takes it."""
    assert link_local("00:00:5e:00:01:01") == "fe80::200:5eff:fe00:101"
    assert link_local("52:54:00:12:34:56") == "fe80::5054:ff:fe12:3456"
    assert link_local("02:00:00:00:00:00") == "fe80::ff:fe00:0"  # (U/L set: flipped to 0)
