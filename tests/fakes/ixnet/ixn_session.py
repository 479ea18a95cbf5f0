"""One fake IxNetwork session: its configuration tree, its operations and its traffic.

The HTTP layer (``fake_ixnetwork.py``) authenticates, routes and serialises; this module
does what the session does. Operations (``POST .../operations/<name>``) return
``(result, seconds)``: the result is what the finished operation reports and the seconds how
long the real thing would keep the client polling; a failed operation raises
:class:`OperationFailed` and is reported as state ``ERROR`` with a message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ixn_kinds import FILES_ROOT, KINDS, TEMPLATES, template_field_attrs
from rest_tree import Node, RestError, Tree
from stat_views import FLOW_VIEW, ITEM_VIEW, PORT_VIEW, FlowRow, PortRow, flow_view, item_view, port_view, to_csv
from traffic_model import FIELD_BITS as FIELD_BITS_BY_FORMAT
from traffic_model import DutModel, Stream, TrafficRun, field_count, lockstep_flows, parse_field_value

HEADER_BYTES = {"ethernet": 14, "vlan": 4, "ipv4": 20, "udp": 8, "tcp": 20, "fcs": 4}
FIELD_BITS = {"srcPort": 16, "dstPort": 16, "vlanID": 12, "vlanUserPriority": 3, "cfi": 1}


class OperationFailed(Exception):
    """The operation ran and failed; the client sees state ERROR with this message."""


def _args(payload: dict[str, Any] | None) -> dict[str, Any]:
    """Operation arguments with case-folded keys (restpy sends Arg1, others arg1)."""
    return {str(k).lower(): v for k, v in (payload or {}).items()}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


@dataclass
class Inventory:
    """The chassis ports the fake can hand out, and who owns each one (shared by sessions)."""

    chassis: tuple[str, ...] = ()  # accepted chassis addresses; empty = any
    cards: int = 2
    ports_per_card: int = 8
    speed_mbps: int = 10_000
    owners: dict[tuple[str, int, int], tuple[int, str]] = field(default_factory=dict)

    def check(self, chassis: str, card: int, port: int) -> None:
        if self.chassis and chassis not in self.chassis:
            raise OperationFailed(f"Unable to connect to chassis {chassis}: chassis is unreachable")
        if not (1 <= card <= self.cards and 1 <= port <= self.ports_per_card):
            raise OperationFailed(f"Port {chassis};{card};{port} does not exist on the chassis "
                                  f"({self.cards} cards x {self.ports_per_card} ports)")


class FakeSession:
    def __init__(self, session_id: int, user: str, dut: DutModel, inventory: Inventory,
                 build_number: str, latency_unit: str = "ns",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.id = session_id
        self.user = user
        self.name = ""
        self.dut = dut
        self.inventory = inventory
        self.build_number = build_number
        self.latency_unit = latency_unit
        self.clock = clock
        self.state = "INITIAL"
        self.active_at: float | None = None
        self.files: dict[str, bytes] = {}
        self.connect_at: dict[str, float] = {}  # vport href -> when its link comes up
        self.run: TrafficRun | None = None
        self.applied: list[Stream] | None = None
        self.applied_latency: tuple[bool, str] = (False, "cutThrough")
        self.config_version = 0  # bumped by any change under /traffic
        self.applied_version = -1
        self.item_versions: dict[str, int] = {}
        self.generated: dict[str, tuple[int, list[Stream]]] = {}
        self.tree = self._new_tree()

    # ------------------------------------------------------------------ lifecycle

    @property
    def href(self) -> str:
        return f"/api/v1/sessions/{self.id}"

    def current_state(self) -> str:
        if self.state == "STARTING" and self.active_at is not None and self.clock() >= self.active_at:
            self.state = "ACTIVE"
        return self.state

    def start(self, delay_s: float) -> None:
        if self.current_state() in ("INITIAL", "STOPPED"):
            self.state = "STARTING"
            self.active_at = self.clock() + delay_s

    def stop(self) -> None:
        self.release_ports([v.href for v in self.tree.root.lists["vport"]])
        self.run = None
        self.state = "STOPPED"

    def to_json(self) -> dict[str, Any]:
        href = self.href
        return {"id": self.id, "state": self.current_state(),
                "subState": "Ready" if self.state == "ACTIVE" else "",
                "applicationType": "ixnrest", "userName": self.user, "sessionName": self.name,
                "backendType": "LinuxAPIServer", "links": [{"rel": "self", "method": "GET", "href": href}]}

    # ------------------------------------------------------------------ tree

    def _new_tree(self) -> Tree:
        tree = Tree(f"{self.href}/ixnetwork", KINDS)
        root = tree.root
        root.singles["globals"].attrs.update(buildNumber=self.build_number, username=self.user)
        templates = root.singles["traffic"]
        for i, (stack_type, (display, fields)) in enumerate(TEMPLATES.items()):
            node = templates.add_child("protocolTemplate", node_id=300 + i)
            node.attrs.update(displayName=display, stackTypeId=stack_type,
                              templateName=f"{stack_type}-template.xml")
            for spec in fields:
                node.add_child("field", template_field_attrs(*spec), node_id=spec[0])
        views = root.singles["statistics"]
        self._add_view(views, PORT_VIEW, "layer23ProtocolPort")
        tree.validators["field"] = self._check_field
        tree.readers["traffic"] = self._read_traffic
        tree.readers["vport"] = self._read_vport
        tree.readers["data"] = self._read_view
        tree.readers["page"] = self._read_view
        tree.readers["trafficItem"] = self._read_item
        return tree

    @staticmethod
    def _add_view(statistics: Node, caption: str, view_type: str) -> None:
        if not any(v.attrs["caption"] == caption for v in statistics.lists["view"]):
            statistics.add_child("view", {"caption": caption, "type": view_type})

    def created(self, node: Node) -> None:
        """Side effects of ``POST`` creating ``node`` (what the server adds by itself)."""
        self._touch(node)
        if node.kind == "trafficItem":
            node.add_child("tracking")
        elif node.kind == "endpointSet":
            self._make_config_element(node)

    def changed(self, node: Node) -> None:
        self._touch(node)

    def _touch(self, node: Node) -> None:
        """Remember that traffic configuration changed below ``node``."""
        path = node.href
        if "/traffic" not in path and node.kind != "latency":
            return
        self.config_version += 1
        item = _ancestor(node, "trafficItem")
        if item is not None:
            self.item_versions[item.href] = self.item_versions.get(item.href, 0) + 1

    def _make_config_element(self, endpoint_set: Node) -> None:
        item = endpoint_set.parent
        assert item is not None
        if item.attrs["trafficType"] != "raw":
            endpoint_set.remove()
            raise RestError(400, "the fake models raw traffic items over vport endpoints only")
        for key in ("sources", "destinations"):
            hrefs = _as_list(endpoint_set.attrs.get(key))
            if len(hrefs) != 1:
                endpoint_set.remove()
                raise RestError(400, f"endpointSet {key} must name one vport's protocols")
            try:
                target = self.tree.node(str(hrefs[0]))
            except RestError:
                endpoint_set.remove()
                raise RestError(400, f"endpointSet {key}: {hrefs[0]} does not exist") from None
            if target.kind != "protocols":
                endpoint_set.remove()
                raise RestError(400, f"endpointSet {key}: raw traffic needs <vport>/protocols, got {hrefs[0]}")
        element = item.add_child("configElement", {"endpointSetId": endpoint_set.id},
                                 node_id=endpoint_set.id)
        self._append_stack(element, "ethernet", 0)
        self._append_stack(element, "fcs", 1)

    def _append_stack(self, element: Node, stack_type: str, position: int) -> Node:
        display, fields = TEMPLATES[stack_type]
        stack = Node(self.tree, "stack", element, 0)
        stack.attrs.update(displayName=display, stackTypeId=stack_type,
                           templateName=f"{stack_type}-template.xml")
        for spec in fields:
            stack.add_child("field", template_field_attrs(*spec), node_id=spec[0])
        stacks = element.lists["stack"]
        stacks.insert(position, stack)
        for i, s in enumerate(stacks):  # IxNetwork numbers a stack by its position
            s.id = i + 1
        element.next_ids["stack"] = len(stacks) + 1
        return stack

    def _check_field(self, node: Node, payload: dict[str, Any]) -> None:
        merged = {**node.attrs, **payload}
        fmt = merged.get("valueFormat", "decimal")
        bits = FIELD_BITS.get(str(merged.get("fieldTypeId", "")).split(".")[-1], 32)
        try:
            if merged.get("valueType") == "singleValue":
                value = parse_field_value(fmt, merged.get("singleValue"))
                if not 0 <= value < 2 ** FIELD_BITS_BY_FORMAT.get(fmt, bits):
                    raise ValueError(f"{merged.get('singleValue')!r} does not fit the field")
            else:
                field_count(fmt, bits, str(merged.get("valueType")), merged.get("startValue"),
                            merged.get("stepValue"), merged.get("countValue"))
        except (ValueError, ArithmeticError) as exc:
            raise RestError(400, f"{merged.get('fieldTypeId')}: {exc}") from None

    # ------------------------------------------------------------------ readers

    def _read_traffic(self, node: Node) -> None:
        now = self.clock()
        running = self.run is not None and self.run.transmitting(now)
        if running:
            state = "started"
        elif self.applied is not None:
            state = "stopped"
        else:
            state = "unapplied"
        node.attrs["state"] = state
        node.attrs["isTrafficRunning"] = running
        if self.run is not None:
            node.attrs["elapsedTransmitTime"] = int((min(now, self.run.last_end()) - self.run.start) * 1000)

    def _read_item(self, node: Node) -> None:
        running = self.run is not None and self.run.transmitting(self.clock())
        generated = self.generated.get(node.href)
        if generated is None or generated[0] != self.item_versions.get(node.href, 0):
            node.attrs["state"] = "unapplied"
        else:
            node.attrs["state"] = "started" if running else "stopped"

    def _read_vport(self, node: Node) -> None:
        up_at = self.connect_at.get(node.href)
        if up_at is None:
            return
        if self.clock() >= up_at:
            node.attrs.update(connectionState="connectedLinkUp", state="up", isConnected=True,
                              connectionStatus=node.attrs["assignedTo"].replace(":", ";"),
                              actualSpeed=self.inventory.speed_mbps)
        else:
            node.attrs.update(connectionState="connecting", state="busy", isConnected=False)

    def _read_view(self, node: Node) -> None:
        view = node.parent
        assert view is not None
        captions, rows = self.view_rows(view.attrs["caption"])
        node.attrs.update(isReady=True, columnCaptions=captions, columnCount=len(captions),
                          rowValues=[[r] for r in rows], pageValues=[[r] for r in rows],
                          rowCount=len(rows), totalRows=len(rows), totalPages=1,
                          timestamp=int(time.time() * 1000))

    # ------------------------------------------------------------------ statistics

    def _vports(self) -> list[Node]:
        return self.tree.root.lists["vport"]

    def flow_rows(self) -> list[FlowRow]:
        if self.run is None:
            return []
        now = self.clock()
        return [FlowRow(s.item_name, s.tx_port, s.rx_port, s.frame_size_bytes, self.run.counters(i, now))
                for i, s in enumerate(self.run.streams)]

    def view_rows(self, caption: str) -> tuple[list[str], list[list[str]]]:
        latency_on, mode = self.applied_latency
        latency_mode = mode if latency_on else None
        if caption == PORT_VIEW:
            return port_view(self._port_rows())
        flows = self.flow_rows()
        if caption == ITEM_VIEW:
            return item_view(flows, latency_mode, self.latency_unit)
        if caption == FLOW_VIEW:
            tracked = any(t.attrs["trackBy"] for i in self.tree.root.singles["traffic"].lists["trafficItem"]
                          for t in i.lists["tracking"])
            return flow_view(flows if tracked else [], latency_mode, self.latency_unit)
        return [], []

    def _port_rows(self) -> list[PortRow]:
        flows = self.flow_rows()
        rows = []
        for vport in self._vports():
            self._read_vport(vport)
            if not vport.attrs["assignedTo"]:
                continue
            name = vport.attrs["name"]
            tx = [f for f in flows if f.tx_port == name]
            rx = [f for f in flows if f.rx_port == name]
            chassis, card, port = vport.attrs["assignedTo"].split(":")
            rows.append(PortRow(
                stat_name=f"{chassis}/Card{int(card):02d}/Port{int(port):02d}", port_name=name,
                line_speed="10GE LAN" if self.inventory.speed_mbps == 10_000 else f"{self.inventory.speed_mbps}M",
                link_state="Link Up" if vport.attrs["connectionState"] == "connectedLinkUp" else "Link Down",
                tx_frames=sum(f.counters.tx_frames for f in tx),
                rx_frames=sum(f.counters.rx_frames for f in rx),
                tx_bytes=sum(f.counters.tx_frames * f.frame_size_bytes for f in tx),
                rx_bytes=sum(f.counters.rx_frames * f.frame_size_bytes for f in rx),
                tx_rate_fps=sum(f.counters.tx_rate_fps for f in tx),
                rx_rate_fps=sum(f.counters.rx_rate_fps for f in rx)))
        return rows

    # ------------------------------------------------------------------ operations

    def operation(self, target: str, name: str, payload: dict[str, Any] | None) -> tuple[Any, float]:
        """Run operation ``name`` posted to ``target`` (an object or collection href)."""
        args = _args(payload)
        handler = getattr(self, f"op_{name.lower()}", None)
        if handler is None:
            raise RestError(404, f"operation {name!r} is not supported on {target}")
        return handler(target, args)

    def op_assignports(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        locations = _as_list(args.get("arg1"))
        if not all(isinstance(loc, dict) for loc in locations) or "arg4" not in args:
            raise RestError(400, "the fake models assignPorts(Arg1=[{arg1: chassis, arg2: card, "
                                 "arg3: port}], Arg2=[], Arg3=[vports], Arg4=clearOwnership) only")
        vport_hrefs = [str(h) for h in _as_list(args.get("arg3"))]
        clear = bool(args.get("arg4"))
        vports = [self.tree.node(h) for h in vport_hrefs]
        while len(vports) < len(locations):
            vports.append(self.tree.root.add_child("vport", {"name": f"Port {len(vports) + 1}"}))
        connected = []
        for loc, vport in zip(locations, vports):
            loc = {str(k).lower(): v for k, v in loc.items()}
            chassis, card, port = str(loc.get("arg1")), int(loc.get("arg2")), int(loc.get("arg3"))
            self.inventory.check(chassis, card, port)
            owner = self.inventory.owners.get((chassis, card, port))
            if owner is not None and owner[0] != self.id and not clear:
                raise OperationFailed(f"Port {chassis};{card};{port} is owned by session {owner[0]} "
                                      f"({owner[1]}); clear ownership to take it")
            self.inventory.owners[(chassis, card, port)] = (self.id, self.user)
            hw_port = self._hardware_port(chassis, card, port)
            vport.attrs.update(connectedTo=hw_port.href, assignedTo=f"{chassis}:{card}:{port}",
                               location=f"{chassis};{card};{port}")
            self.connect_at[vport.href] = self.clock() + self.assign_delay_s
            connected.append(vport.href)
        return connected, self.assign_delay_s

    assign_delay_s = 1.0

    def _hardware_port(self, chassis: str, card: int, port: int) -> Node:
        hw = self.tree.root.singles["availableHardware"]
        node = next((c for c in hw.lists["chassis"] if c.attrs["hostname"] == chassis), None)
        if node is None:
            node = hw.add_child("chassis", {"hostname": chassis})
            node.attrs["state"] = "ready"
            for c in range(1, self.inventory.cards + 1):
                card_node = node.add_child("card", node_id=c)
                card_node.attrs["cardId"] = c
                for p in range(1, self.inventory.ports_per_card + 1):
                    card_node.add_child("port", node_id=p).attrs["portId"] = p
        return self.tree.node(f"{node.href}/card/{card}/port/{port}")

    def release_ports(self, vport_hrefs: list[str]) -> None:
        for href in vport_hrefs:
            vport = self.tree.node(href)
            assigned = vport.attrs["assignedTo"]
            if assigned:
                chassis, card, port = assigned.split(":")
                key = (chassis, int(card), int(port))
                if self.inventory.owners.get(key, (None,))[0] == self.id:
                    del self.inventory.owners[key]
            self.connect_at.pop(href, None)
            vport.attrs.update(connectedTo="null", assignedTo="", location="",
                               connectionState="unassigned", connectionStatus="", state="unassigned",
                               isConnected=False, actualSpeed=0)
        if self.run is not None and vport_hrefs:
            self.run.stop(self.clock())

    def op_releaseport(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        self.release_ports([str(h) for h in _as_list(args.get("arg1"))])
        return None, 0.0

    def op_unassignports(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        hrefs = [str(h) for h in _as_list(args.get("arg1"))]
        self.release_ports(hrefs)
        if args.get("arg2"):
            for h in hrefs:
                self.tree.node(h).remove()
        return None, 0.0

    def op_newconfig(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        self.release_ports([v.href for v in self._vports()])
        self.run = None
        self.applied = None
        self.generated.clear()
        self.tree = self._new_tree()
        return None, 0.5

    def op_clearstats(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        if self.run is not None and not self.run.transmitting(self.clock()):
            self.run = None
        return None, 0.0

    def op_generate(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        items = [self.tree.node(str(h)) for h in _as_list(args.get("arg1"))]
        if not items:
            raise RestError(400, "generate: Arg1 must name traffic items")
        for item in items:
            if item.kind != "trafficItem":
                raise RestError(400, f"generate: {item.href} is not a traffic item")
            try:
                streams = self._streams_of(item)
            except OperationFailed as exc:
                item.attrs["errors"] = [str(exc)]
                raise
            item.attrs["errors"] = []
            self.generated[item.href] = (self.item_versions.get(item.href, 0), streams)
            item.lists["highLevelStream"].clear()
            item.next_ids["highLevelStream"] = 1
            for s in streams:
                item.add_child("highLevelStream", {"name": f"{s.tx_port} -> {s.rx_port}"}).attrs.update(
                    txPortName=s.tx_port, rxPortNames=[s.rx_port])
        return None, 0.0

    def _streams_of(self, item: Node) -> list[Stream]:
        streams = []
        for element in item.lists["configElement"]:
            endpoint = next((e for e in item.lists["endpointSet"] if e.id == element.attrs["endpointSetId"]), None)
            if endpoint is None:
                continue
            tx_vport = self.tree.node(str(endpoint.attrs["sources"][0])).parent
            rx_vport = self.tree.node(str(endpoint.attrs["destinations"][0])).parent
            assert tx_vport is not None and rx_vport is not None
            size = element.singles["frameSize"].attrs
            if size["type"] != "fixed":
                raise OperationFailed(f"frame size type {size['type']!r} is not modelled by the fake")
            frame_size = int(size["fixedSize"])
            headers = sum(HEADER_BYTES.get(s.attrs["stackTypeId"], 0) for s in element.lists["stack"])
            if frame_size < headers or frame_size < 64:
                raise OperationFailed(f"frame size {frame_size} B is smaller than its headers "
                                      f"({headers} B) or the Ethernet minimum (64 B)")
            speed_bps = self.inventory.speed_mbps * 1e6
            rate = element.singles["frameRate"].attrs
            line_fps = speed_bps / ((frame_size + 20) * 8)
            if rate["type"] == "framesPerSecond":
                fps = float(rate["rate"])
            elif rate["type"] == "percentLineRate":
                fps = float(rate["rate"]) / 100.0 * line_fps
            else:
                raise OperationFailed(f"frame rate type {rate['type']!r} is not modelled by the fake")
            if fps <= 0:
                raise OperationFailed(f"frame rate {rate['rate']} must be positive")
            control = element.singles["transmissionControl"].attrs
            if control["type"] not in ("continuous", "fixedDuration", "fixedFrameCount"):
                raise OperationFailed(f"transmission control {control['type']!r} is not modelled")
            counts = []
            headers = {}
            for stack in element.lists["stack"]:
                for fld in stack.lists["field"]:
                    a = fld.attrs
                    if a["valueType"] in ("increment", "decrement"):
                        bits = FIELD_BITS.get(str(a["fieldTypeId"]).split(".")[-1], 32)
                        counts.append(field_count(a["valueFormat"], bits, a["valueType"],
                                                  a["startValue"], a["stepValue"], a["countValue"]))
                        headers[a["fieldTypeId"]] = (f"{a['startValue']} {a['valueType']} "
                                                     f"{a['stepValue']} x{a['countValue']}")
                    elif a["auto"]:
                        headers[a["fieldTypeId"]] = "auto"
                    else:
                        headers[a["fieldTypeId"]] = str(a["singleValue"])
            streams.append(Stream(
                item_name=item.attrs["name"], tx_port=tx_vport.attrs["name"],
                rx_port=rx_vport.attrs["name"], frame_size_bytes=frame_size, rate_fps=fps,
                control=control["type"], duration_s=float(control["duration"]),
                frame_count=int(control["frameCount"]), flows=lockstep_flows(counts),
                line_rate_bps=speed_bps, headers=headers))
        if not streams:
            raise OperationFailed(f"traffic item {item.attrs['name']!r} has no endpoint sets")
        return streams

    def op_apply(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        now = self.clock()
        if self.run is not None and self.run.transmitting(now):
            raise OperationFailed("Traffic cannot be applied while it is running; stop it first")
        streams: list[Stream] = []
        for item in self.tree.root.singles["traffic"].lists["trafficItem"]:
            if not item.attrs["enabled"]:
                continue
            generated = self.generated.get(item.href)
            if generated is None or generated[0] != self.item_versions.get(item.href, 0):
                raise OperationFailed(f"Traffic item {item.attrs['name']!r} has changed since it "
                                      "was generated; regenerate it before applying")
            streams.extend(generated[1])
        if not streams:
            raise OperationFailed("There is no traffic to apply")
        names = {s.tx_port for s in streams} | {s.rx_port for s in streams}
        for vport in self._vports():
            self._read_vport(vport)
            if vport.attrs["name"] in names and vport.attrs["connectionState"] != "connectedLinkUp":
                raise OperationFailed(f"Port {vport.attrs['name']!r} is not connected with link up")
        latency = self.tree.root.singles["traffic"].singles["statistics"].singles["latency"].attrs
        self.applied = streams
        self.applied_latency = (bool(latency["enabled"]), str(latency["mode"]))
        self.applied_version = self.config_version
        return None, 0.0

    def _start(self, only_items: list[str] | None) -> tuple[Any, float]:
        now = self.clock()
        if self.applied is None:
            raise OperationFailed("Traffic has not been applied")
        if self.applied_version != self.config_version:
            raise OperationFailed("Traffic configuration changed since it was applied; apply it first")
        if self.run is not None and self.run.transmitting(now):
            raise OperationFailed("Traffic is already running")
        streams = [s for s in self.applied if only_items is None or s.item_name in only_items]
        self.run = TrafficRun(streams, self.dut, now, self.applied_latency[0])
        statistics = self.tree.root.singles["statistics"]
        self._add_view(statistics, ITEM_VIEW, "layer23TrafficItem")
        self._add_view(statistics, FLOW_VIEW, "layer23TrafficFlow")
        return None, 0.0

    def op_start(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        return self._start(None)

    def op_startstatelesstrafficblocking(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        names = [self.tree.node(str(h)).attrs.get("name") for h in _as_list(args.get("arg1"))
                 if "trafficItem" in str(h)]
        return self._start(names or None)

    def op_stop(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        if self.run is not None:
            self.run.stop(self.clock())
        return None, 0.0

    op_stopstatelesstrafficblocking = op_stop

    def op_appendprotocol(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        stack = self.tree.node(str(args.get("arg1")))
        template = self.tree.node(str(args.get("arg2")))
        if stack.kind != "stack" or template.kind != "protocolTemplate":
            raise RestError(400, "appendProtocol: Arg1 must be a stack and Arg2 a protocol template")
        element = stack.parent
        assert element is not None
        position = element.lists["stack"].index(stack) + 1
        new = self._append_stack(element, template.attrs["stackTypeId"], position)
        self.changed(element)
        return new.href, 0.0

    def op_takecsvsnapshot(self, target: str, args: dict[str, Any]) -> tuple[Any, float]:
        snap = self.tree.root.singles["statistics"].singles["csvSnapshot"].attrs
        views = [self.tree.node(str(h)) for h in _as_list(snap["views"])]
        if not views or not snap["csvName"]:
            raise OperationFailed("takeCsvSnapshot needs csvName and views")
        captions, rows = self.view_rows(views[0].attrs["caption"])
        self.files[f"{snap['csvName']}.csv"] = to_csv(captions, rows)
        self.files[f"{snap['csvName']}.csv.columns"] = ",".join(captions).encode("ascii")
        return None, 0.0

    # ------------------------------------------------------------------ files

    def files_listing(self) -> dict[str, Any]:
        return {"absolute": FILES_ROOT,
                "files": [{"name": n, "length": len(b)} for n, b in sorted(self.files.items())]}


def _ancestor(node: Node, kind: str) -> Node | None:
    cur: Node | None = node
    while cur is not None:
        if cur.kind == kind:
            return cur
        cur = cur.parent
    return None
