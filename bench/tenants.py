"""Tenants for the scale benchmarks (bench/change_cost.py; bench/churn.py and
bench/vm_move.py ``--tenants``): each tenant a VRF with one routed VNI, a /16 and its anycast
gateway, and VMs numbered within their tenant (MAC and IP unique per
tenant and number)."""

from __future__ import annotations

from collections.abc import Callable

from p4vtep.model.fabric import Fabric, Subnet, Vm, Vni, Vrf

VNI_BASE, L3VNI_BASE = 10_000, 60_000
ANYCAST_GATEWAY_MAC = "00:00:5e:00:01:01"
# A VM's number within its tenant is below this: its IP then stays inside
# the tenant's /16, below the gateway's address (.255.254).
MAX_VM_NUMBER = 65_534


def net_of(tenant: int) -> str:
    """The first two octets of the tenant's /16."""
    return f"{20 + (tenant >> 8)}.{tenant & 255}"


def add_tenants(fabric: Fabric, tenants: int) -> None:
    """``tenants`` VRFs ``t0``.. on the fabric, each with its routed VNI."""
    fabric.anycast_gateway_mac = ANYCAST_GATEWAY_MAC
    for k in range(tenants):
        fabric.vrfs[f"t{k}"] = Vrf(f"t{k}", L3VNI_BASE + k)
        net = net_of(k)
        subnet = Subnet(f"{net}.0.0/16", f"{net}.255.254")
        fabric.vnis[VNI_BASE + k] = Vni(VNI_BASE + k, f"t{k}", vrf=f"t{k}", subnets=(subnet,))


def tenant_vm(name: str, n: int, tenant: int, server: str, vlan: int) -> Vm:
    """The n-th VM of a tenant (n from 1, below ``MAX_VM_NUMBER``)."""
    if not 0 < n < MAX_VM_NUMBER:
        raise ValueError(f"VM number {n} of tenant {tenant} is outside 1-{MAX_VM_NUMBER - 1}")
    mac = "02:" + ":".join(
        f"{b:02x}" for b in (tenant >> 8, tenant & 255, n >> 16, n >> 8 & 255, n & 255)
    )
    return Vm(
        name, mac, (f"{net_of(tenant)}.{n >> 8 & 255}.{n & 255}",), VNI_BASE + tenant, server, vlan
    )


def spread_vms(tenants: int, count: int, servers_of: Callable[[int], tuple[str, ...]]) -> list[Vm]:
    """``count`` VMs named ``bg0``.., tenant by tenant, each tenant's over
    the four servers ``servers_of(tenant)`` gives; every four in a row share
    a VLAN (``1 + i // 4``), each on a server of its own (so at most
    16,376 VMs: VLANs end at 4,094)."""
    vms = []
    for i in range(count):
        n = i // (4 * tenants) * 4 + i % 4 + 1  # (its tenant's n-th)
        tenant = (i // 4) % tenants
        vms.append(tenant_vm(f"bg{i}", n, tenant, servers_of(tenant)[i % 4], 1 + i // 4))
    return vms
