"""Name <-> id lookups over a P4Info, and the bit widths needed to encode."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol, TypeVar

from google.protobuf import text_format

from .protos import p4info_pb2


class _Named(Protocol):
    """Any P4Info object: each has a preamble (id, name, alias)."""

    @property
    def preamble(self) -> p4info_pb2.Preamble: ...


_T = TypeVar("_T", bound=_Named)


class P4InfoError(KeyError):
    """A name that the P4Info does not define."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info_pb2.MatchField.MatchType


@dataclass(frozen=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


class P4Info:
    """An index over one P4Info message.

    Every object can be named by its fully qualified name
    (``VtepIngress.l2_forwarding.mac_table``) or by its alias (``mac_table``)
    as long as the alias is unique, which p4c guarantees.
    """

    def __init__(self, message: p4info_pb2.P4Info) -> None:
        self.message = message
        self._by_name: dict[tuple[str, str], _Named] = {}
        self._by_id: dict[int, _Named] = {}
        self._match_fields: dict[int, dict[str, MatchFieldInfo]] = {}
        self._match_fields_by_id: dict[int, dict[int, MatchFieldInfo]] = {}
        self._params: dict[int, dict[str, ParamInfo]] = {}
        self._params_by_id: dict[int, dict[int, ParamInfo]] = {}
        for kind in (
            "tables",
            "actions",
            "action_profiles",
            "counters",
            "direct_counters",
            "meters",
            "direct_meters",
            "controller_packet_metadata",
            "registers",
        ):
            for obj in getattr(message, kind):
                self._by_name[(kind, obj.preamble.name)] = obj
                self._by_name[(kind, obj.preamble.alias)] = obj
                self._by_id[obj.preamble.id] = obj
        for table in message.tables:
            fields = {
                mf.name: MatchFieldInfo(mf.id, mf.name, mf.bitwidth, mf.match_type)
                for mf in table.match_fields
            }
            self._match_fields[table.preamble.id] = fields
            self._match_fields_by_id[table.preamble.id] = {f.id: f for f in fields.values()}
        for action in message.actions:
            params = {p.name: ParamInfo(p.id, p.name, p.bitwidth) for p in action.params}
            self._params[action.preamble.id] = params
            self._params_by_id[action.preamble.id] = {p.id: p for p in params.values()}

    @classmethod
    def from_text(cls, text: str) -> P4Info:
        message = p4info_pb2.P4Info()
        text_format.Parse(text, message)
        return cls(message)

    # --- lookups -------------------------------------------------------------
    def _get(self, kind: str, name: str, message_type: type[_T]) -> _T:
        found = self._by_name.get((kind, name))
        if not isinstance(found, message_type):
            raise P4InfoError(f"P4Info has no {kind[:-1].replace('_', ' ')} named {name!r}")
        return found

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("tables", name, p4info_pb2.Table)

    def has_table(self, name: str) -> bool:
        """Whether the pipeline has a table of that name (an older build, or
        a profile that leaves a feature out, may not)."""
        try:
            self.table(name)
        except KeyError:
            return False
        return True

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("actions", name, p4info_pb2.Action)

    def action_profile(self, name: str) -> p4info_pb2.ActionProfile:
        return self._get("action_profiles", name, p4info_pb2.ActionProfile)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counters", name, p4info_pb2.Counter)

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self._get("meters", name, p4info_pb2.Meter)

    def controller_packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        return self._get("controller_packet_metadata", name, p4info_pb2.ControllerPacketMetadata)

    def name_of(self, object_id: int) -> str:
        return self._by_id[object_id].preamble.name

    def alias_of(self, object_id: int) -> str:
        return self._by_id[object_id].preamble.alias

    def match_field(self, table_id: int, name: str) -> MatchFieldInfo:
        try:
            return self._match_fields[table_id][name]
        except KeyError:
            raise P4InfoError(
                f"table {self.name_of(table_id)!r} has no match field {name!r}"
            ) from None

    def match_field_by_id(self, table_id: int, field_id: int) -> MatchFieldInfo:
        return self._match_fields_by_id[table_id][field_id]

    def param(self, action_id: int, name: str) -> ParamInfo:
        try:
            return self._params[action_id][name]
        except KeyError:
            raise P4InfoError(
                f"action {self.name_of(action_id)!r} has no parameter {name!r}"
            ) from None

    def param_by_id(self, action_id: int, param_id: int) -> ParamInfo:
        return self._params_by_id[action_id][param_id]

    def params(self, action_id: int) -> list[ParamInfo]:
        return list(self._params[action_id].values())


def pipeline_cookie(p4info_text: str, device_config: bytes) -> int:
    """A 64-bit cookie naming one (P4Info, device config) pair.

    The controller pushes the pipeline only when the switch reports another
    cookie, so restarting the controller does not wipe the switch.
    """
    digest = hashlib.sha256(p4info_text.encode() + b"\0" + device_config).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)
