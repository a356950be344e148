import re
from dataclasses import replace

import pytest
from fabric_fixture import two_tor_fabric, vms
from p4vtep.controller import Controller
from p4vtep.dataplane import limits
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.limits import CPU_PORT, DROP_PORT, RESERVED_PORTS, reserved_ports
from p4vtep.dataplane.targets import Target, profile
from p4vtep.model.validation import VM_NAME_MAX, ValidationError, check_fabric, validate


def problems(vm_list):
    with pytest.raises(ValidationError) as info:
        validate(two_tor_fabric(), vm_list)
    return [str(p) for p in info.value.problems]


def test_good_state_passes():
    validate(two_tor_fabric(), vms())


def test_duplicate_mac_in_a_vni_names_both_vms():
    bad = vms() + [replace(vms()[0], name="a9", vlan=99, ips=("192.168.1.9",))]
    assert problems(bad) == ["vm a9: mac: 00:00:0a:00:00:01 is already used by vm a1 in VNI 5000"]


def test_same_mac_in_two_vnis_is_fine():
    validate(
        two_tor_fabric(),
        vms() + [replace(vms()[0], name="b9", vni=6000, vlan=99, ips=("192.168.1.9",))],
    )


def test_duplicate_ip_in_a_vni():
    bad = vms() + [replace(vms()[1], name="a9", mac="00:00:0a:00:00:09", vlan=99)]
    assert problems(bad) == ["vm a9: ips: 192.168.1.2 is already used by vm a2 in VNI 5000"]


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("vlan", 0, "vm a1: vlan: 0 outside 1-4094"),
        ("vlan", 4095, "vm a1: vlan: 4095 outside 1-4094"),
        ("vni", 0, "vm a1: vni: 0 outside 1-16777215"),
        ("vni", 1 << 24, "vm a1: vni: 16777216 outside 1-16777215"),
        ("vni", 7000, "vm a1: vni: VNI 7000 is not defined in the fabric"),
        ("server", "nowhere", "vm a1: server: unknown server 'nowhere'"),
        ("qos", "platinum", "vm a1: qos: unknown QoS policy 'platinum'"),
        ("mac", "00:00:0a:00:00", "vm a1: mac: '00:00:0a:00:00' is not a MAC address"),
        ("mac", "01:00:5e:00:00:01", "vm a1: mac: 01:00:5e:00:00:01 is a multicast MAC"),
        ("ips", ("192.168.1.300",), "vm a1: ips: '192.168.1.300' is not an IPv4 address"),
    ],
)
def test_bad_field_is_named(field, value, message):
    bad = [replace(vms()[0], **{field: value})] + vms()[1:]
    assert problems(bad) == [message]


def test_vlan_reused_on_one_server():
    bad = vms() + [replace(vms()[3], name="b9", mac="00:00:0b:00:00:09", ips=())]
    assert problems(bad) == ["vm b9: vlan: VLAN 40 on server s12 is already vm b2"]


def test_every_problem_is_reported_at_once():
    bad = [replace(vms()[0], vlan=0, vni=0)] + vms()[1:]
    assert len(problems(bad)) == 2


NOT_HOST = "is not a unicast host address"
CTRL = "control or invisible character"


def fabric_problems(fabric) -> list[str]:
    return [str(p) for p in check_fabric(fabric)]


@pytest.mark.parametrize(
    "port,message",
    [
        (CPU_PORT, "port 255 is the CPU port (packet-in/out) on bmv2"),
        (DROP_PORT, "port 511 is reserved by the pipeline (drop port) on bmv2"),
        (512, "port 512 outside 0-511"),
        (-1, "port -1 outside 0-511"),
    ],
)
def test_server_and_uplink_refuse_reserved_ports(port, message):
    fabric = two_tor_fabric()
    fabric.servers["s11"] = replace(fabric.servers["s11"], port=port)
    assert fabric_problems(fabric) == [f"server s11: port: {message}"]
    with pytest.raises(ValidationError, match="server s11: port: "):
        Controller(fabric, bmv2_pipeline())

    fabric = two_tor_fabric()
    tor = fabric.tors["tor2"]
    fabric.tors["tor2"] = replace(tor, uplinks=(replace(tor.uplinks[0], port=port), tor.uplinks[1]))
    assert fabric_problems(fabric) == [f"tor tor2: uplinks.port: {message}"]


def test_every_reserved_port_is_refused():
    """RESERVED_PORTS is the list; validation refuses each member of it."""
    assert {CPU_PORT, DROP_PORT} == RESERVED_PORTS
    for port in RESERVED_PORTS:
        fabric = two_tor_fabric()
        fabric.servers["s12"] = replace(fabric.servers["s12"], port=port)
        assert len(fabric_problems(fabric)) == 1


@pytest.mark.parametrize(
    "target,cpu_port",
    [(Target.TOFINO, 64), (Target.TOFINO2, 2)],
)
def test_a_tofino_tor_refuses_its_own_cpu_port(target, cpu_port):
    """Each ToR is checked against its own chip: the CPU port moves with the
    target, and BMv2's reserved ports are ordinary ports on a Tofino."""
    assert profile(target).cpu_port == cpu_port
    assert set(reserved_ports(target)) == {cpu_port}
    message = f"port {cpu_port} is the CPU port (packet-in/out) on {target.value}"

    def tofino_fabric():
        fabric = two_tor_fabric()
        fabric.tors["tor1"] = replace(fabric.tors["tor1"], target=target.value)
        fabric.servers["s12"] = replace(fabric.servers["s12"], port=CPU_PORT)  # BMv2's: fine
        return fabric

    fabric = tofino_fabric()
    assert fabric_problems(fabric) == []
    fabric.servers["s11"] = replace(fabric.servers["s11"], port=cpu_port)
    assert fabric_problems(fabric) == [f"server s11: port: {message}"]
    with pytest.raises(ValidationError, match=re.escape(f"server s11: port: {message}")):
        Controller(fabric, bmv2_pipeline())

    fabric = tofino_fabric()
    tor = fabric.tors["tor1"]
    fabric.tors["tor1"] = replace(
        tor, uplinks=(replace(tor.uplinks[0], port=cpu_port), tor.uplinks[1])
    )
    assert fabric_problems(fabric) == [f"tor tor1: uplinks.port: {message}"]

    # The same port on the BMv2 ToR next to it is an ordinary port.
    fabric = tofino_fabric()
    fabric.servers["s21"] = replace(fabric.servers["s21"], port=cpu_port)
    fabric.servers["s22"] = replace(fabric.servers["s22"], port=cpu_port + 10)
    assert fabric_problems(fabric) == []


def test_bmv2_reserved_ports_are_its_cpu_and_drop_ports():
    assert dict(reserved_ports(Target.BMV2)) == {
        255: "the CPU port (packet-in/out)",
        511: "reserved by the pipeline (drop port)",
    }
    assert set(reserved_ports("bmv2")) == RESERVED_PORTS


def test_an_unknown_target_is_named():
    fabric = two_tor_fabric()
    fabric.tors["tor1"] = replace(fabric.tors["tor1"], target="tofino3")
    assert fabric_problems(fabric) == [
        "tor tor1: target: unknown target 'tofino3' (one of: bmv2, tofino, tofino2)"
    ]


def test_ordinary_ports_pass():
    fabric = two_tor_fabric()
    fabric.servers["s11"] = replace(fabric.servers["s11"], port=254)
    fabric.servers["s12"] = replace(fabric.servers["s12"], port=0)
    assert fabric_problems(fabric) == []


def test_traffic_class_limit_comes_from_the_pipeline():
    fabric = two_tor_fabric()
    fabric.vnis[5000] = replace(fabric.vnis[5000], traffic_class=8)
    assert fabric_problems(fabric) == ["vni tenant-a: traffic_class: 8 outside 0-7"]


def test_a_tor_name_may_not_look_like_an_external_vteps_index_key():
    """External VTEPs (EVPN) take replica ids from the ToRs' index space
    under keys "vtep:<IP>": no ToR may be named so."""
    fabric = two_tor_fabric()
    fabric.tors["vtep:10.0.0.9"] = replace(fabric.tors.pop("tor2"), name="vtep:10.0.0.9")
    for server in ("s21", "s22"):
        fabric.servers[server] = replace(fabric.servers[server], tor="vtep:10.0.0.9")
    assert fabric_problems(fabric) == ["tor vtep:10.0.0.9: name: may not start with 'vtep:'"]


@pytest.mark.parametrize(
    "ips,message",
    [
        (("0.0.0.0",), f"0.0.0.0 {NOT_HOST} (0.0.0.0/8: this network, unspecified)"),
        (("0.1.2.3",), f"0.1.2.3 {NOT_HOST} (0.0.0.0/8: this network, unspecified)"),
        (("127.0.0.1",), f"127.0.0.1 {NOT_HOST} (127.0.0.0/8: loopback)"),
        (("127.255.0.9",), f"127.255.0.9 {NOT_HOST} (127.0.0.0/8: loopback)"),
        (("224.0.0.1",), f"224.0.0.1 {NOT_HOST} (224.0.0.0/4: multicast)"),
        (("239.255.255.250",), f"239.255.255.250 {NOT_HOST} (224.0.0.0/4: multicast)"),
        (("255.255.255.255",), f"255.255.255.255 {NOT_HOST} (the limited broadcast address)"),
        (("240.0.0.1",), f"240.0.0.1 {NOT_HOST} (240.0.0.0/4: reserved)"),
        (("192.168.1.1", "10.0.0.1", "192.168.1.1"), "192.168.1.1 is listed twice"),
    ],
)
def test_a_vm_ip_must_be_a_unicast_host_address_once(ips, message):
    bad = [replace(vms()[0], ips=ips)] + vms()[1:]
    assert problems(bad) == [f"vm a1: ips: {message}"]


@pytest.mark.parametrize(
    "ip",
    [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.255.255",
        "100.64.0.1",
        "169.254.169.254",
        "192.0.2.7",
        "8.8.8.8",
        "1.0.0.0",
        "223.255.255.254",
    ],
)
def test_private_shared_link_local_and_public_ips_are_accepted_on_an_l2_vni(ip):
    """An L2-only VNI knows no subnet: x.x.x.255 or x.x.x.0 may be a host of
    a /23, and a link-local address is on-link (e.g. a metadata service)."""
    validate(two_tor_fabric(), [replace(vms()[0], ips=(ip,))] + vms()[1:])


def test_the_zero_mac_is_refused():
    bad = [replace(vms()[0], mac="00:00:00:00:00:00")] + vms()[1:]
    assert problems(bad) == ["vm a1: mac: 00:00:00:00:00:00 is the zero MAC, which no host has"]


@pytest.mark.parametrize(
    "name,message",
    [
        ("", "vm '': name: a name is required"),
        ("web\n1", f"vm 'web\\n1': name: contains U+000A (Cc: {CTRL})"),
        ("web\t1", f"vm 'web\\t1': name: contains U+0009 (Cc: {CTRL})"),
        ("web\x7f", f"vm 'web\\x7f': name: contains U+007F (Cc: {CTRL})"),
        ("web\x85", f"vm 'web\\x85': name: contains U+0085 (Cc: {CTRL})"),
        ("web\u2028", f"vm 'web\\u2028': name: contains U+2028 (Zl: {CTRL})"),
        ("web\u202e1", f"vm 'web\\u202e1': name: contains U+202E (Cf: {CTRL})"),
        ("w" * (VM_NAME_MAX + 1), f"vm {'w' * 65}: name: 65 characters, longer than 64"),
    ],
)
def test_a_vm_name_is_bounded_and_has_no_control_characters(name, message):
    assert VM_NAME_MAX == 64
    bad = [replace(vms()[0], name=name)] + vms()[1:]
    assert problems(bad) == [message]


@pytest.mark.parametrize("name", ["w" * VM_NAME_MAX, "web 1", "веб-1", "web_1.example"])
def test_printable_names_up_to_the_limit_are_accepted(name):
    validate(two_tor_fabric(), [replace(vms()[0], name=name)] + vms()[1:])


# --- IPv6 (issue 37) --------------------------------------------------------------

PIPELINE_WITHOUT_IPV6 = (
    "IPv6 tenant addresses need a pipeline with IPv6 tables "
    "(nd_suppression, ipv6_host_route, ipv6_prefix_route): this pipeline has none, "
    "it takes IPv4 only"
)
NOT_V6_HOST = "is not a VM's IPv6 address"


@pytest.fixture
def ipv6_pipeline(monkeypatch):
    """A pipeline with the IPv6 tables (the committed one; set here whatever
    P4VTEP_P4INFO names): the model's IPv6 rules apply."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", True)


@pytest.fixture
def pipeline_without_ipv6(monkeypatch):
    """A pipeline without the IPv6 tables (an older build): limits says so."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", False)


def test_the_committed_pipeline_takes_ipv6_addresses():
    assert limits.IPV6_SUPPORTED is True  # (its P4Info has the IPv6 tables: test_limits.py)
    validate(two_tor_fabric(), [replace(vms()[0], ips=("192.168.1.1", "2001:db8::10"))])


@pytest.mark.usefixtures("pipeline_without_ipv6")
def test_a_pipeline_without_the_ipv6_tables_refuses_every_ipv6_address_saying_why():
    bad = [replace(vms()[0], ips=("192.168.1.1", "2001:db8::10", "fe80::1"))] + vms()[1:]
    assert problems(bad) == [
        f"vm a1: ips: 2001:db8::10: {PIPELINE_WITHOUT_IPV6}",
        f"vm a1: ips: fe80::1: {PIPELINE_WITHOUT_IPV6}",  # (only that is said)
    ]


@pytest.mark.usefixtures("ipv6_pipeline")
@pytest.mark.parametrize(
    "ips",
    [
        ("2001:db8::10",),
        ("fd00:a::1", "192.168.1.1"),
        ("192.168.1.1", "2001:db8::1", "10.0.0.1", "fd12:3456:789a:1::1"),
        tuple(f"10.0.0.{i}" for i in range(1, 9)) + tuple(f"2001:db8::{i}" for i in range(1, 9)),
    ],
)
def test_a_vm_holds_ipv4_and_ipv6_addresses_in_any_mix(ips):
    validate(two_tor_fabric(), [replace(vms()[0], ips=ips)] + vms()[1:])


@pytest.mark.usefixtures("ipv6_pipeline")
@pytest.mark.parametrize(
    "ips,message",
    [
        (("::",), f":: {NOT_V6_HOST} (::/128: unspecified)"),
        (("::1",), f"::1 {NOT_V6_HOST} (::1/128: loopback)"),
        (("ff02::1",), f"ff02::1 {NOT_V6_HOST} (ff00::/8: multicast)"),
        (("fe80::1",), f"fe80::1 {NOT_V6_HOST} (fe80::/10: link-local)"),
        (("::ffff:192.0.2.1",), f"::ffff:192.0.2.1 {NOT_V6_HOST} (::ffff:0:0/96: IPv4-mapped)"),
        (
            ("64:ff9b::1",),
            f"64:ff9b::1 {NOT_V6_HOST} "
            "(only global unicast 2000::/3 and unique local fc00::/7 are)",
        ),
        (("2001:db8::1", "2001:db8::1"), "2001:db8::1 is listed twice"),
        (("2001:db8::g",), "'2001:db8::g' is not an IPv6 address"),
        (("2001:db8::1/64",), "'2001:db8::1/64' is not an IPv6 address"),
        (
            ("fe80::1%eth0",),
            "'fe80::1%eth0' is not an IPv6 address (a tenant address has no zone id)",
        ),
        (
            tuple(f"2001:db8::{i}" for i in range(1, 10)),
            "9 IPv6 addresses: a VM has at most 8 IPv4 and 8 IPv6 addresses",
        ),
        (
            tuple(f"10.0.0.{i}" for i in range(1, 10)),
            "9 IPv4 addresses: a VM has at most 8 IPv4 and 8 IPv6 addresses",
        ),
    ],
)
def test_a_vm_ipv6_address_is_global_unicast_or_unique_local_once(ips, message):
    bad = [replace(vms()[0], ips=ips)] + vms()[1:]
    assert problems(bad) == [f"vm a1: ips: {message}"]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_two_spellings_of_an_ipv6_address_are_one_address():
    """The inputs store the canonical form (RFC 5952); a VM built in code with
    another spelling is refused, and still counted as the same address."""
    bad = [replace(vms()[0], ips=("2001:db8::1", "2001:0db8:0:0::0001"))] + vms()[1:]
    assert problems(bad) == [
        "vm a1: ips: 2001:0db8:0:0::0001 is not in canonical form (RFC 5952): "
        "write it as 2001:db8::1",
        "vm a1: ips: 2001:db8::1 is listed twice",
    ]
    twin = replace(vms()[1], ips=("2001:DB8::1",))  # a2, VNI 5000 as a1
    assert problems([replace(vms()[0], ips=("2001:db8::1",)), twin]) == [
        "vm a2: ips: 2001:DB8::1 is not in canonical form (RFC 5952): write it as 2001:db8::1",
        "vm a2: ips: 2001:db8::1 is already used by vm a1 in VNI 5000",
    ]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_ipv6_addresses_are_unique_per_vni_like_ipv4():
    a1 = replace(vms()[0], ips=("192.168.1.1", "2001:db8::1"))
    b1 = replace(vms()[2], ips=("192.168.1.1", "2001:db8::1"))  # VNI 6000: fine
    validate(two_tor_fabric(), [a1, vms()[1], b1, vms()[3]])
    a2 = replace(vms()[1], ips=("192.168.1.2", "2001:db8::1"))
    assert problems([a1, a2]) == ["vm a2: ips: 2001:db8::1 is already used by vm a1 in VNI 5000"]
