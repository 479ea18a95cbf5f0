--- vsbench trial for MoonGen (libmoon API): send constant-rate UDP traffic between two
--- ports for a fixed time, count frames with the devices' own counters and, optionally,
--- measure latency with hardware-timestamped probes into a histogram.
---
--- Usage: MoonGen vsbench-trial.lua <dev0> <dev1> --rate-mpps R --size S --flows N --time T
---        [--bidirectional] [--latency --hist-file F --probe-rate P] [header fields]
---
--- --size excludes the 4 B CRC (60 = a 64 B frame), as everywhere in MoonGen. --rate-mpps is
--- per direction; the hardware rate limiter of TX queue 0 is set with setRateMpps.
---
--- Output read by vsbench (besides libmoon's own per-second and final device counter lines):
---   [REPORT] Device 0->1: Tx frames: <n> Rx frames: <m> frame loss: <n-m>
---   [REPORT] Latency probes: sent <a> received <b>
---   [Latency] Samples: ..., Average: ... ns, ...   (histogram:print)
--- and the histogram CSV (latency_ns,count per line). Probe frames travel dev0 -> dev1 on
--- queue 1 and are subtracted from the device counters in the [REPORT] lines.

local mg     = require "moongen"
local device = require "device"
local memory = require "memory"
local stats  = require "stats"
local ts     = require "timestamping"
local hist   = require "histogram"
local timer  = require "timer"
local log    = require "log"

-- UDP timestamping needs PTP event frames to UDP port 319 of at least 84 B on the wire.
local PTP_UDP_PORT = 319
local MIN_PROBE_SIZE = 80

function configure(parser)
	parser:description("vsbench: one constant-rate trial with device counters and a latency histogram.")
	parser:argument("dev0", "Port sending the first direction (DPDK port id)."):convert(tonumber)
	parser:argument("dev1", "Port receiving the first direction (DPDK port id)."):convert(tonumber)
	parser:option("--rate-mpps", "Rate per direction in Mpps."):default("0.1"):convert(tonumber)
	parser:option("--size", "Frame size without CRC (60 = 64 B frames)."):default("60"):convert(tonumber)
	parser:option("--flows", "Flows per direction."):default("1"):convert(tonumber)
	parser:option("--time", "Trial duration in seconds."):default("10"):convert(tonumber)
	parser:flag("--bidirectional", "Also send from dev1 to dev0.")
	parser:flag("--latency", "Measure latency with timestamped probes from dev0 to dev1.")
	parser:option("--hist-file", "Latency histogram CSV (latency_ns,count)."):default("histogram.csv")
	parser:option("--probe-rate", "Latency probes per second."):default("1000"):convert(tonumber)
	parser:option("--src-mac", "Source MAC of the first direction."):default("02:00:00:00:00:01")
	parser:option("--dst-mac", "Destination MAC of the first direction."):default("02:00:00:00:00:02")
	parser:option("--src-ip", "Source IPv4 of the first direction."):default("10.0.0.1")
	parser:option("--dst-ip", "Destination IPv4 of the first direction."):default("10.1.0.1")
	parser:option("--src-port", "UDP source port of the first direction."):default("1024"):convert(tonumber)
	parser:option("--dst-port", "UDP destination port of the first direction."):default("1024"):convert(tonumber)
	parser:option("--vary", "Fields changed per flow: src_ip,dst_ip,src_port,dst_port."):default("src_ip,dst_ip")
end

-- Header fields of direction 1 (dev0 -> dev1) or 2 (swapped).
local function directionFields(args, dir)
	local f = {
		srcMac = args.src_mac, dstMac = args.dst_mac,
		srcIp = args.src_ip, dstIp = args.dst_ip,
		srcPort = args.src_port, dstPort = args.dst_port,
	}
	if dir == 2 then
		f.srcMac, f.dstMac = f.dstMac, f.srcMac
		f.srcIp, f.dstIp = f.dstIp, f.srcIp
		f.srcPort, f.dstPort = f.dstPort, f.srcPort
	end
	return f
end

local function varied(args)
	local set = {}
	for name in args.vary:gmatch("[^,]+") do
		set[name] = true
	end
	return set
end

function loadTask(queue, dir, args)
	local f = directionFields(args, dir)
	local vary = varied(args)
	local mem = memory.createMemPool(function(buf)
		buf:getUdpPacket():fill{
			pktLength = args.size,
			ethSrc = f.srcMac, ethDst = f.dstMac,
			ip4Src = f.srcIp, ip4Dst = f.dstIp,
			udpSrc = f.srcPort, udpDst = f.dstPort,
		}
	end)
	local bufs = mem:bufArray()
	local srcIp, dstIp = parseIPAddress(f.srcIp), parseIPAddress(f.dstIp)
	local counter = 0
	while mg.running() do
		bufs:alloc(args.size)
		if args.flows > 1 then
			for _, buf in ipairs(bufs) do
				local pkt = buf:getUdpPacket()
				if vary.src_ip then pkt.ip4.src:set(srcIp + counter) end
				if vary.dst_ip then pkt.ip4.dst:set(dstIp + counter) end
				if vary.src_port then pkt.udp:setSrcPort((f.srcPort + counter) % 65536) end
				if vary.dst_port then pkt.udp:setDstPort((f.dstPort + counter) % 65536) end
				counter = incAndWrap(counter, args.flows)
			end
		end
		bufs:offloadUdpChecksums()
		queue:send(bufs)
	end
end

function latencyTask(txQueue, rxQueue, args)
	local f = directionFields(args, 1)
	local size = math.max(args.size, MIN_PROBE_SIZE)
	local timestamper = ts:newUdpTimestamper(txQueue, rxQueue)
	local h = hist:new()
	local pace = timer:new(1 / args.probe_rate)
	local sent, received = 0, 0
	while mg.running() do
		local lat = timestamper:measureLatency(size, function(buf)
			buf:getUdpPacket():fill{
				pktLength = size,
				ethSrc = f.srcMac, ethDst = f.dstMac,
				ip4Src = f.srcIp, ip4Dst = f.dstIp,
				udpSrc = f.srcPort, udpDst = PTP_UDP_PORT,
			}
		end)
		sent = sent + 1
		if lat then
			received = received + 1
			h:update(math.floor(lat + 0.5))
		end
		pace:wait()
		pace:reset()
	end
	h:print("Latency")
	h:save(args.hist_file)
	return sent, received
end

function master(args)
	local dev0 = device.config{port = args.dev0, rxQueues = 2, txQueues = 2}
	local dev1 = device.config{port = args.dev1, rxQueues = 2, txQueues = 2}
	device.waitForLinks()
	local dirs = {{tx = dev0, rx = dev1, name = ("%d->%d"):format(args.dev0, args.dev1)}}
	if args.bidirectional then
		table.insert(dirs, {tx = dev1, rx = dev0, name = ("%d->%d"):format(args.dev1, args.dev0)})
	end
	for _, d in ipairs(dirs) do
		d.txCtr = stats:newDevTxCounter(d.tx, "plain")
		d.rxCtr = stats:newDevRxCounter(d.rx, "plain")
	end
	mg.setRuntime(args.time)
	local tasks = {}
	for i, d in ipairs(dirs) do
		local queue = d.tx:getTxQueue(0)
		queue:setRateMpps(args.rate_mpps, args.size)
		tasks[i] = mg.startTask("loadTask", queue, i, args)
	end
	local latTask
	if args.latency then
		latTask = mg.startTask("latencyTask", dev0:getTxQueue(1), dev1:getRxQueue(1), args)
	end
	while mg.running() do
		for _, d in ipairs(dirs) do
			d.txCtr:update()
			d.rxCtr:update()
		end
		mg.sleepMillisIdle(10)
	end
	for _, t in ipairs(tasks) do
		t:wait()
	end
	local probesSent, probesReceived = 0, 0
	if latTask then
		probesSent, probesReceived = latTask:wait()
	end
	-- finalize() waits for in-flight frames, then prints libmoon's final counter lines
	for _, d in ipairs(dirs) do
		d.txCtr:finalize()
		d.rxCtr:finalize()
	end
	for i, d in ipairs(dirs) do
		local tx = d.txCtr.total - (i == 1 and probesSent or 0)
		local rx = d.rxCtr.total - (i == 1 and probesReceived or 0)
		print(("[REPORT] Device %s: Tx frames: %d Rx frames: %d frame loss: %d"):format(d.name, tx, rx, tx - rx))
	end
	print(("[REPORT] Latency probes: sent %d received %d"):format(probesSent, probesReceived))
	io.stdout:flush()
end
