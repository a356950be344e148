"""Fabric and inventory files (YAML). Errors name the file, line and field."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..dataplane.targets import Target
from ..evpn.config import parse_evpn
from ..model.addressing import canonical_ip, ip_network, normalise_mac
from ..model.bit_rates import parse_bit_rate
from ..model.cpu_path_checks import check_cpu_path, slaac_warnings
from ..model.fabric import (
    DEFAULT_COPP,
    AllowedPair,
    CoppRate,
    Fabric,
    PuntClass,
    QosPolicy,
    Rates,
    RouterAdvertisements,
    Server,
    StaticRoute,
    Subnet,
    TlsFiles,
    Tor,
    Uplink,
    Vm,
    Vni,
    Vrf,
    punt_class_key,
)
from ..model.port_security import pair, parse_pair
from ..model.problems import Problem
from ..model.qos_bursts import burst_warnings, default_burst
from ..model.routing_checks import check_routing

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..state.etcd_connection import EtcdSettings


class ConfigError(ValueError):
    pass


class _Doc:
    """A YAML document with the line of every node, addressed by path."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines: dict[tuple, int] = {}
        # The text of each scalar YAML read as a number: an IPv6 address of
        # decimal groups (2001:0:0:0:0:0:0:1) is a base-60 integer to YAML 1.1
        # (addresses are read from the text: _address).
        self.texts: dict[tuple, str] = {}
        loader = None
        try:
            loader = yaml.SafeLoader(text)
            node = loader.get_single_node()
            self.data = self._convert(loader, node, ()) if node is not None else {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark else str(path)
            raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
        finally:
            if loader is not None:
                loader.dispose()

    def _convert(self, loader: yaml.SafeLoader, node: yaml.Node, path: tuple) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            result = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    self.lines[path + ("?",)] = key_node.start_mark.line + 1
                    raise self.error(path + ("?",), "keys must be plain names")
                key = key_node.value
                if key in result:
                    self.lines[path + (key,)] = key_node.start_mark.line + 1
                    raise self.error(path + (key,), "given twice")
                result[key] = self._convert(loader, value_node, path + (key,))
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self._convert(loader, item, path + (i,)) for i, item in enumerate(node.value)]
        if node.tag == "tag:yaml.org,2002:str":
            return node.value
        if node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
            self.texts[path] = node.value
        return loader.construct_object(node, deep=True)

    def error(self, path: tuple, message: str) -> ConfigError:
        line = None
        for cut in range(len(path), -1, -1):
            line = self.lines.get(path[:cut])
            if line is not None:
                break
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        return ConfigError(f"{where}: {field or '(top)'}: {message}")

    def list(self, path: tuple, required: bool = True) -> list:
        value = self.get(path, [] if not required else None)
        if not isinstance(value, list):
            raise self.error(path, "expected a list")
        return value

    def get(self, path: tuple, default: Any = None) -> Any:
        value: Any = self.data
        for part in path:
            if (isinstance(value, dict) and part in value) or (
                isinstance(value, list) and isinstance(part, int) and part < len(value)
            ):
                value = value[part]
            elif default is not None:
                return default
            else:
                raise self.error(path, "missing")
        return value

    def typed(self, path: tuple, kind: Callable, default: Any = ...) -> Any:
        try:
            value = self.get(path, None if default is ... else default)
        except ConfigError:
            if default is ...:
                raise
            return default
        if value is None and default is not ...:
            return default
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(path, f"expected an integer, got {value!r}")
        if kind is str and not isinstance(value, str):
            value = str(value)
        if kind is bool and not isinstance(value, bool):
            raise self.error(path, f"expected true or false, got {value!r}")
        return value


def _read(path: str | Path) -> _Doc:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return _Doc(path, text)


def _rates(doc: _Doc, path: tuple) -> Rates | None:
    if doc.get(path, {}) == {}:
        return None
    cir, pir = doc.typed(path + ("cir",), int), doc.typed(path + ("pir",), int)
    # A bucket left out gets a size TCP can use (qos_bursts.py says why).
    cburst = doc.typed(path + ("cburst",), int, None)
    pburst = doc.typed(path + ("pburst",), int, None)
    return Rates(
        cir,
        default_burst(cir) if cburst is None else cburst,
        pir,
        default_burst(pir) if pburst is None else pburst,
    )


def _link_rate(doc: _Doc, path: tuple) -> int | None:
    value = doc.typed(path, object, None)
    if value is None:
        return None
    try:
        return parse_bit_rate(value)
    except ValueError as exc:
        raise doc.error(path, str(exc)) from None


def _tls_files(doc: _Doc, path: tuple) -> TlsFiles | None:
    """PEM files {ca, cert, key} at ``path``, each of which must exist; None if absent."""
    if doc.get(path, {}) == {}:
        return None
    names = ("ca", "cert", "key")
    files = TlsFiles(*(doc.typed(path + (k,), str) for k in names))
    for k, f in zip(names, (files.ca, files.cert, files.key), strict=False):
        if not Path(f).is_file():
            raise doc.error(path + (k,), f"no such file: {f}")
    return files


def _target(doc: _Doc, path: tuple) -> str:
    """The ToR's chip (bmv2 unless given): which compiled pipeline it gets."""
    value = doc.typed(path, str, Target.BMV2.value)
    try:
        return Target.parse(value).value
    except ValueError as exc:
        raise doc.error(path, str(exc)) from None


def load_fabric(path: str | Path) -> Fabric:
    doc = _read(path)
    fabric = Fabric()
    for i, _ in enumerate(doc.list(("tors",))):
        p = ("tors", i)
        uplinks = tuple(
            Uplink(
                doc.typed(p + ("uplinks", j, "port"), int),
                normalise_mac(doc.typed(p + ("uplinks", j, "next_hop_mac"), str)),
            )
            for j, _ in enumerate(doc.list(p + ("uplinks",)))
        )
        tor = Tor(
            doc.typed(p + ("name",), str),
            doc.typed(p + ("p4runtime",), str),
            doc.typed(p + ("device_id",), int),
            doc.typed(p + ("vtep_ip",), str),
            normalise_mac(doc.typed(p + ("router_mac",), str)),
            uplinks,
            _tls_files(doc, p + ("tls",)),
            _target(doc, p + ("target",)),
            doc.typed(p + ("thrift_port",), int, None),
        )
        if tor.name in fabric.tors:
            raise doc.error(p + ("name",), f"ToR {tor.name!r} defined twice")
        fabric.tors[tor.name] = tor
    for i, _ in enumerate(doc.list(("servers",))):
        p = ("servers", i)
        server = Server(
            doc.typed(p + ("name",), str),
            doc.typed(p + ("tor",), str),
            doc.typed(p + ("port",), int),
            doc.typed(p + ("libvirt",), str, None),
            _link_rate(doc, p + ("link_rate",)),
        )
        if server.name in fabric.servers:
            raise doc.error(p + ("name",), f"server {server.name!r} defined twice")
        fabric.servers[server.name] = server
    for i, _ in enumerate(doc.list(("vnis",))):
        p = ("vnis", i)
        vni = Vni(
            doc.typed(p + ("vni",), int),
            doc.typed(p + ("name",), str),
            doc.typed(p + ("traffic_class",), int, 0),
            doc.typed(p + ("flood",), bool, True),
            doc.typed(p + ("vrf",), str, None),
            tuple(
                Subnet(
                    _prefix(doc, q + ("prefix",)),
                    _address(doc, q + ("gateway",)),
                    doc.typed(q + ("slaac",), bool, False),
                    doc.typed(q + ("on_link",), bool, True),
                )
                for q in _entries(doc, p + ("subnets",), ("prefix", "gateway", "slaac", "on_link"))
            ),
            _router_advertisements(doc, p + ("router_advertisements",)),
        )
        if vni.vni in fabric.vnis:
            raise doc.error(p + ("vni",), f"VNI {vni.vni} defined twice")
        fabric.vnis[vni.vni] = vni
    for i, _ in enumerate(doc.list(("qos_policies",), required=False)):
        p = ("qos_policies", i)
        policy = QosPolicy(
            doc.typed(p + ("name",), str), _rates(doc, p + ("tx",)), _rates(doc, p + ("rx",))
        )
        fabric.policies[policy.name] = policy
        for warning in burst_warnings(policy):
            log.warning("%s", doc.error(p, warning))  # (file:line: field: what)
    fabric.p4runtime_tls = _tls_files(doc, ("tls", "p4runtime"))
    fabric.api_tls = _tls_files(doc, ("tls", "api"))
    _load_routing(doc, fabric)
    # (after the routing model: EVPN advertises and accepts routes of its VRFs)
    fabric.evpn = parse_evpn(
        doc, fabric.vnis, (t.vtep_ip for t in fabric.tors.values()), fabric=fabric
    )
    return fabric


def _entries(doc: _Doc, path: tuple, keys: tuple[str, ...]) -> list[tuple]:
    """The paths of the list at ``path`` (optional), each a mapping with only
    ``keys``: a misspelt key is named, not ignored."""
    paths = []
    for i, item in enumerate(doc.list(path, required=False)):
        p = path + (i,)
        if not isinstance(item, dict):
            raise doc.error(p, f"expected a mapping with {', '.join(keys)}")
        unknown = sorted(set(item) - set(keys))
        if unknown:
            raise doc.error(p + (unknown[0],), f"unknown field (expected {', '.join(keys)})")
        paths.append(p)
    return paths


def _prefix(doc: _Doc, path: tuple) -> str:
    """An IPv4 or IPv6 prefix, canonical (a.b.c.d/len; RFC 5952 for IPv6)
    when it parses; one that does not is kept as written for check_routing
    to report with its line."""
    text = doc.texts.get(path) or doc.typed(path, str)
    try:
        return str(ip_network(text))
    except ValueError:
        return text


def _address(doc: _Doc, path: tuple) -> str:
    """An IP address as written (if YAML read a number, its text), IPv6 in
    its canonical form (RFC 5952); what is not one, as text for the checks."""
    return canonical_ip(doc.texts.get(path) or doc.typed(path, str))


def _load_routing(doc: _Doc, fabric: Fabric) -> None:
    """The routing model (docs/routing.md): ``vrfs:`` and
    ``anycast_gateway_mac:``, then every routing check, each problem named
    with its line (the VNIs' ``vrf`` and ``subnets`` are read with the VNIs)."""
    for p in _entries(doc, ("vrfs",), ("name", "l3vni", "routes")):
        routes = tuple(
            StaticRoute(_prefix(doc, q + ("prefix",)), _address(doc, q + ("next_hop",)))
            for q in _entries(doc, p + ("routes",), ("prefix", "next_hop"))
        )
        vrf = Vrf(doc.typed(p + ("name",), str), doc.typed(p + ("l3vni",), int), routes)
        if vrf.name in fabric.vrfs:
            raise doc.error(p + ("name",), f"VRF {vrf.name!r} defined twice")
        fabric.vrfs[vrf.name] = vrf
    mac = doc.typed(("anycast_gateway_mac",), str, None)
    fabric.anycast_gateway_mac = None if mac is None else normalise_mac(mac)
    fabric.copp = _copp(doc)
    problems = check_routing(fabric) + check_cpu_path(fabric)
    if problems:
        rows = rows_of(fabric)
        raise ConfigError("; ".join(str(_located(doc, rows, p)) for p in problems))
    for vni in fabric.vnis.values():
        for at, warning in slaac_warnings(vni):
            log.warning("%s", _located(doc, rows_of(fabric), Problem("", "", warning, at)))


def rows_of(fabric: Fabric) -> dict[str, dict[Any, int]]:
    """Each keyed fabric list's position in the file, by key."""
    return {
        "tors": {name: i for i, name in enumerate(fabric.tors)},
        "vnis": {vni: i for i, vni in enumerate(fabric.vnis)},
        "vrfs": {name: i for i, name in enumerate(fabric.vrfs)},
    }


RA_KEYS = ("enabled", "interval", "router_lifetime", "mtu", "managed", "other")


def _router_advertisements(doc: _Doc, path: tuple) -> RouterAdvertisements:
    """A VNI's ``router_advertisements:`` (every key optional; the defaults
    are RouterAdvertisements'). check_cpu_path judges the values."""
    section = doc.get(path, {})
    if not isinstance(section, dict):
        raise doc.error(path, f"expected a mapping with {', '.join(RA_KEYS)}")
    unknown = sorted(set(section) - set(RA_KEYS))
    if unknown:
        raise doc.error(path + (unknown[0],), f"unknown field (expected {', '.join(RA_KEYS)})")
    d = RouterAdvertisements()
    return RouterAdvertisements(
        doc.typed(path + ("enabled",), bool, d.enabled),
        doc.typed(path + ("interval",), int, d.interval),
        doc.typed(path + ("router_lifetime",), int, d.router_lifetime),
        doc.typed(path + ("mtu",), int, d.mtu),
        doc.typed(path + ("managed",), bool, d.managed),
        doc.typed(path + ("other",), bool, d.other),
    )


def _copp(doc: _Doc) -> dict[PuntClass, CoppRate]:
    """``copp:``: per punt class ``{pps, burst}``; a class left out keeps its
    default (DEFAULT_COPP), a burst left out is half its rate."""
    section = doc.get(("copp",), {})
    names = [punt_class_key(c) for c in PuntClass]
    if not isinstance(section, dict):
        raise doc.error(("copp",), f"expected a mapping of punt classes ({', '.join(names)})")
    copp = dict(DEFAULT_COPP)
    for key in section:
        p = ("copp", key)
        if key not in names:
            raise doc.error(p, f"unknown punt class (expected {', '.join(names)})")
        item = doc.get(p, {})
        if not isinstance(item, dict) or not set(item) <= {"pps", "burst"}:
            raise doc.error(p, "expected {pps, burst}")
        pps = doc.typed(p + ("pps",), int)
        burst = doc.typed(p + ("burst",), int, None)
        copp[PuntClass[key.upper()]] = CoppRate(pps, max(1, pps // 2) if burst is None else burst)
    return copp


def _located(doc: _Doc, rows: dict[str, dict[Any, int]], problem: Problem) -> ConfigError:
    """The problem as file:line: key: message. Its ``at`` names fabric
    objects by key (("vnis", 5000, ...)); the file has them by position."""
    at = problem.at
    if len(at) >= 2 and at[0] in rows:
        at = (at[0], rows[str(at[0])][at[1]]) + at[2:]
    return doc.error(at, problem.message)


def load_store(path: str | Path) -> EtcdSettings | None:
    """The fabric file's ``store:`` section: etcd settings, or None for the
    default SQLite store (section absent)::

        store:
          etcd:
            endpoints: [10.0.0.11:2379, 10.0.0.12:2379, 10.0.0.13:2379]
            prefix: /p4vtep
            tls: {ca: ..., cert: ..., key: ...}
    """
    from ..state.etcd_connection import EtcdSettings

    doc = _read(path)
    section = doc.get(("store",), {})
    if section == {}:
        return None
    if not isinstance(section, dict) or set(section) != {"etcd"}:
        raise doc.error(("store",), "expected exactly one store kind: etcd (or no store: SQLite)")
    p = ("store", "etcd")
    if not isinstance(doc.get(p, {}), dict):
        raise doc.error(p, "expected a mapping with endpoints, prefix, tls")
    unknown = set(doc.get(p, {})) - {"endpoints", "prefix", "tls"}
    if unknown:
        raise doc.error(
            p + (sorted(unknown)[0],), "unknown field (expected endpoints, prefix, tls)"
        )
    endpoints = doc.list(p + ("endpoints",))
    for i, endpoint in enumerate(endpoints):
        if not isinstance(endpoint, str):
            raise doc.error(p + ("endpoints", i), f"expected host:port, got {endpoint!r}")
    prefix = doc.typed(p + ("prefix",), str, "/p4vtep")
    try:
        return EtcdSettings(tuple(endpoints), prefix, _tls_files(doc, p + ("tls",)))
    except ValueError as exc:
        raise doc.error(p, str(exc)) from None


def load_inventory(path: str | Path) -> list[Vm]:
    doc = _read(path)
    vms = []
    for i, _ in enumerate(doc.list(("vms",))):
        p = ("vms", i)
        ips = doc.get(p + ("ips",), [])
        paths = (
            [p + ("ips", k) for k in range(len(ips))] if isinstance(ips, list) else [p + ("ips",)]
        )
        vms.append(
            Vm(
                name=doc.typed(p + ("name",), str),
                mac=normalise_mac(doc.typed(p + ("mac",), str)),
                ips=tuple(_address(doc, q) for q in paths),
                vni=doc.typed(p + ("vni",), int),
                server=doc.typed(p + ("server",), str),
                vlan=doc.typed(p + ("vlan",), int),
                qos=doc.typed(p + ("qos",), str, None),
                source="inventory",
                port_security=doc.typed(p + ("port_security",), bool, True),
                dhcp_server=doc.typed(p + ("dhcp_server",), bool, False),
                allowed_pairs=_pairs(doc, p + ("allowed_pairs",)),
            )
        )
    return vms


def _pairs(doc: _Doc, path: tuple) -> tuple[AllowedPair, ...]:
    """A VM's allowed pairs (docs/security.md): each ``PREFIX``, ``PREFIX,MAC``
    or ``{prefix: PREFIX, mac: MAC}``; a bare address is its host prefix.
    What is not a prefix or a MAC is kept for the checks to name."""
    pairs = []
    for i, item in enumerate(doc.list(path, required=False)):
        q = path + (i,)
        if isinstance(item, dict):
            unknown = sorted(set(item) - {"prefix", "mac"})
            if unknown:
                raise doc.error(q + (unknown[0],), "unknown field (expected prefix, mac)")
            prefix = doc.texts.get(q + ("prefix",)) or doc.typed(q + ("prefix",), str)
            pairs.append(pair(prefix, doc.typed(q + ("mac",), str, None)))
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            pairs.append(parse_pair(doc.texts.get(q) or str(item)))
        else:
            raise doc.error(q, f"expected PREFIX, PREFIX,MAC or {{prefix, mac}}, got {item!r}")
    return tuple(pairs)
