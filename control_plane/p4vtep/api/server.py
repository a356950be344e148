"""The p4vtep.v1.Overlay gRPC service over a Controller: each call validates
its request, calls the controller and returns what ``messages`` builds."""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from concurrent import futures

import grpc

from ..controller import Controller, NotFound
from ..evpn import status as evpn_status
from ..evpn.service import EvpnService
from ..model.allocation import SpaceFull
from ..model.fabric import Vm
from ..model.tenant_routes import route_rows, vrf_rows
from ..model.validation import ValidationError
from ..runtime.client import P4RuntimeError
from ..state.protocol import Conflict, NotLeader, StoreUnavailable
from ..tls import server_credentials
from . import messages
from . import overlay_pb2 as pb
from . import overlay_pb2_grpc as pb_grpc
from .counters import CounterReader

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 1 << 20  # an AttachVM is a few hundred bytes
WAIT_SECONDS = 30.0
WORKER_THREADS = 8  # calls served at once; WatchEvents streams hold one each


def vm_to_pb(controller: Controller, vm: Vm) -> pb.VM:
    """The VM as the API shows it: with its ToR and why switches refused it."""
    errors = {
        name: sup.status.vm_errors[vm.name]
        for name, sup in controller.supervisors.items()
        if vm.name in sup.status.vm_errors
    }
    return messages.vm_to_pb(vm, tor=controller.tor_of(vm), error=messages.switch_errors(errors))


def _store_unavailable(exc: StoreUnavailable) -> str:
    """The store's own diagnosis (its retry advice is for the controller).
    A function of its own, so that no local of the handler's frame holds
    the error: a cycle through its traceback would keep the call until the
    collector runs (``state.batching.Request.outcome``)."""
    cause = exc.__cause__ if isinstance(exc.__cause__, StoreUnavailable) else exc
    return (
        f"desired-state store unavailable: {cause}; the change is not acknowledged "
        "and may still be applied when the store recovers: read it back before retrying"
    )


def _errors(method: Callable) -> Callable:
    """Map controller errors to gRPC status codes with a message to act on."""

    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except ValidationError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except NotFound as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except SpaceFull as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except (ConnectionError, P4RuntimeError) as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        # Controller replicas: writes go to the leader (the message names
        # it); a change that raced another replica's is not committed.
        except NotLeader as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except Conflict as exc:
            context.abort(grpc.StatusCode.ABORTED, f"{exc}; retry")
        except StoreUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, _store_unavailable(exc))

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class OverlayService(pb_grpc.OverlayServicer):
    def __init__(self, controller: Controller, evpn: EvpnService | None = None) -> None:
        """``evpn``: the EVPN service running beside the controller
        (``sources.evpn.EvpnSource.service``), if the fabric has one."""
        self.c = controller
        self.evpn = evpn
        self.counters = CounterReader(controller)

    def _applied(self, wait: bool, version: int) -> bool:
        return self.c.wait_version(version, WAIT_SECONDS) if wait else False

    @_errors
    def AttachVM(self, request, context):
        vm = messages.vm_from_pb(request.vm, source="api")
        version = self.c.attach(vm)
        return messages.vm_response(
            vm_to_pb(self.c, vm), version, self._applied(request.wait, version)
        )

    @_errors
    def DetachVM(self, request, context):
        version = self.c.detach(request.name)
        return messages.detach_response(version, self._applied(request.wait, version))

    @_errors
    def MigrateVM(self, request, context):
        # Unlike attach and detach, an unset wait waits (as MigrateVM did
        # before it had the field); the controller's make-before-break goes
        # on without the caller when it does not.
        wait = request.wait if request.HasField("wait") else True
        version = self.c.migrate(
            request.name, request.server, request.vlan or None, timeout=WAIT_SECONDS, wait=wait
        )
        return messages.vm_response(
            vm_to_pb(self.c, self.c.get(request.name)), version, self._applied(wait, version)
        )

    @_errors
    def GetVM(self, request, context):
        return vm_to_pb(self.c, self.c.get(request.name))

    @_errors
    def ListVMs(self, request, context):
        vms = sorted(self.c.vms.values(), key=lambda v: v.name)
        return messages.list_vms_response(
            vm_to_pb(self.c, vm)
            for vm in vms
            if (not request.vni or vm.vni == request.vni)
            and (not request.server or vm.server == request.server)
        )

    @_errors
    def SetQoS(self, request, context):
        version = self.c.set_qos(request.name, request.qos or None)
        return messages.vm_response(vm_to_pb(self.c, self.c.get(request.name)), version)

    @_errors
    def SetPortSecurity(self, request, context):
        version = self.c.set_port_security(
            request.name,
            port_security=(request.port_security if request.HasField("port_security") else None),
            dhcp_server=request.dhcp_server if request.HasField("dhcp_server") else None,
            clear_pairs=request.clear_pairs,
            remove_pairs=[messages.pair_from_pb(p) for p in request.remove_pairs],
            add_pairs=[messages.pair_from_pb(p) for p in request.add_pairs],
        )
        return messages.vm_response(
            vm_to_pb(self.c, self.c.get(request.name)),
            version,
            self._applied(request.wait, version),
        )

    @_errors
    def ListSwitches(self, request, context):
        return messages.list_switches_response(
            {name: sup.status for name, sup in self.c.supervisors.items()}
        )

    @_errors
    def GetCounters(self, request, context):
        counters = self.counters.collect(list(request.vms) or None, list(request.vnis) or None)
        return messages.counters_response(counters)

    def _evpn(self, context):
        """The EVPN service, or FAILED_PRECONDITION without one."""
        service = self.evpn
        if service is None:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "EVPN is not configured: the fabric file has no evpn: section (docs/evpn.md)",
            )
        return service

    @_errors
    def EvpnPeers(self, request, context):
        service = self._evpn(context)
        return messages.evpn_peers_response(
            service.config.asn,
            service.config.router_id,
            evpn_status.peer_reports(service),
            evpn_status.refusals(service),
        )

    @_errors
    def EvpnRoutes(self, request, context):
        service = self._evpn(context)
        return messages.evpn_routes_response(
            evpn_status.route_reports(service, request.vni or None)
        )

    @_errors
    def ListVrfs(self, request, context):
        rows = vrf_rows(self.c.fabric, self.c.vms.values())
        return messages.list_vrfs_response(rows)

    @_errors
    def ListRoutes(self, request, context):
        if request.vrf and request.vrf not in self.c.fabric.vrfs:
            raise NotFound(f"no VRF named {request.vrf!r}")
        rows = route_rows(self.c.fabric, self.c.vms.values(), request.vrf or None)
        return messages.list_routes_response(rows)

    def WatchEvents(self, request, context):
        subscription = self.c.bus.subscribe()
        try:
            while context.is_active():
                try:
                    event = subscription.get(timeout=0.5)
                except queue.Empty:
                    continue
                yield messages.event_to_pb(event)
        finally:
            self.c.bus.unsubscribe(subscription)


def serve(
    controller: Controller,
    address: str,
    credentials: grpc.ServerCredentials | None = None,
    evpn: EvpnService | None = None,
) -> grpc.Server:
    """Start the service on ``address``; bounded threads and request size.
    ``evpn``: what EvpnPeers and EvpnRoutes read (None: they answer
    FAILED_PRECONDITION)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKER_THREADS),
        options=[
            ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
            ("grpc.max_concurrent_streams", 64),
        ],
        maximum_concurrent_rpcs=256,
    )
    pb_grpc.add_OverlayServicer_to_server(OverlayService(controller, evpn), server)
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    log.info("Overlay API on %s", address)
    return server


__all__ = ["OverlayService", "serve", "server_credentials"]
